//! What every worker (and helper) of a run reaches: the skeleton and its
//! data, the unit pool and its termination signal, the run's settings, the
//! SkelAff switch, the mover of pages, and what the workers hand back.

use std::any::Any;
use std::ops::Deref;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Instant;

use parking_lot::Mutex;
use skelaff_locality::Sampling;
use skelaff_numa_alloc::NodeSet;

use crate::access_profile::FinishedSampler;
use crate::affinity::{Home, Resolver};
use crate::assist::Assist;
use crate::config::PagePolicy;
use crate::moves::PageMover;
use crate::pool::{Pool, Route, Signal};
use crate::report::{Decision, DecisionAt};
use crate::skeleton::Skeleton;

/// The skeleton or its data, as a [`Worklist`](crate::Worklist) keeps
/// them: borrowed ([`Builder::build`](crate::Builder::build)) or shared
/// with the caller ([`Builder::build_owned`](crate::Builder::build_owned)).
pub(crate) enum Held<'a, T> {
    Borrowed(&'a T),
    Owned(Arc<T>),
}

impl<T> Clone for Held<'_, T> {
    fn clone(&self) -> Self {
        match self {
            Held::Borrowed(r) => Held::Borrowed(r),
            Held::Owned(a) => Held::Owned(a.clone()),
        }
    }
}

impl<T> Deref for Held<'_, T> {
    type Target = T;

    #[inline]
    fn deref(&self) -> &T {
        match self {
            Held::Borrowed(r) => r,
            Held::Owned(a) => a,
        }
    }
}

/// How a run reaches the skeleton and its shared data: borrowed for a run
/// its caller waits for ([`Borrowed`]), or kept alive by the run itself
/// for one it does not ([`Kept`], an awaited run).
pub(crate) trait Hold<S: Skeleton>: Sync {
    fn skeleton(&self) -> &S;
    fn shared(&self) -> &S::Shared;
}

/// The skeleton and its data, borrowed for the run.
pub(crate) struct Borrowed<'a, S: Skeleton>(pub(crate) &'a S, pub(crate) &'a S::Shared);

impl<S: Skeleton> Hold<S> for Borrowed<'_, S> {
    #[inline]
    fn skeleton(&self) -> &S {
        self.0
    }
    #[inline]
    fn shared(&self) -> &S::Shared {
        self.1
    }
}

/// The skeleton and its data kept alive by the run (`'static` borrows or
/// shared ownership), for a run that may outlive its caller's frame.
pub(crate) struct Kept<S: Skeleton + 'static>(pub(crate) Held<'static, S>, pub(crate) Held<'static, S::Shared>);

impl<S: Skeleton + Send + 'static> Hold<S> for Kept<S>
where
    S::Shared: Send,
{
    #[inline]
    fn skeleton(&self) -> &S {
        &self.0
    }
    #[inline]
    fn shared(&self) -> &S::Shared {
        &self.1
    }
}

/// How the run's workers run, fixed for the run (from the builder and the
/// topology).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Settings {
    /// The STM settings; the mode of the workers' transactions follows
    /// from `assisted` and `access_profile` (see [`worker`](crate::worker::worker)).
    pub(crate) stm: skelaff_stm::Config,
    /// The workers' transactions are assisted.
    pub(crate) assisted: bool,
    /// The one worker of the run takes the solo gate (see `Builder::solo`).
    pub(crate) solo: bool,
    /// Whether the workers' writing commits move the STM's clock.
    pub(crate) clock: skelaff_stm::ClockPolicy,
    pub(crate) policy: PagePolicy,
    pub(crate) allowed_nodes: NodeSet,
    pub(crate) page_size: usize,
    /// Sample each worker's accesses this way (`None`: no profile).
    pub(crate) access_profile: Option<Sampling>,
    /// Queue units on their data's node ([`Skeleton::affinity`]).
    pub(crate) affinity: bool,
}

/// The first failure of a run: a worker's (or the run's) panic or error.
#[derive(Debug, Clone)]
pub(crate) struct Failure {
    pub(crate) worker: Option<usize>,
    pub(crate) cause: Cause,
}

/// What a [`Failure`] was.
#[derive(Debug, Clone)]
pub(crate) enum Cause {
    /// A panic, or an error of the user's code, as its message.
    Panic(String),
    /// The worker's STM access sampler would not start.
    Sampler(skelaff_stm::SamplerError),
}

/// What the workers hand back besides their reports, gathered when the
/// run ends.
#[derive(Default)]
pub(crate) struct Outcome {
    decisions: Mutex<Vec<DecisionAt>>,
    /// The first failure; later ones are dropped.
    failure: OnceLock<Failure>,
    /// The workers' recorders, as each stops.
    samplers: Mutex<Vec<FinishedSampler>>,
}

impl Outcome {
    /// A worker's recorder, stopped.
    pub(crate) fn sampler_done(&self, finished: FinishedSampler) {
        self.samplers.lock().push(finished);
    }

    /// The recorders handed back so far.
    pub(crate) fn take_samplers(&self) -> Vec<FinishedSampler> {
        std::mem::take(&mut *self.samplers.lock())
    }

    /// The decisions recorded so far.
    pub(crate) fn take_decisions(&self) -> Vec<DecisionAt> {
        std::mem::take(&mut *self.decisions.lock())
    }

    /// The first failure, if any.
    pub(crate) fn failure(&self) -> Option<&Failure> {
        self.failure.get()
    }
}

/// What every worker (and helper) of a run reaches.
pub(crate) struct RunState<S: Skeleton, H: Hold<S>> {
    pub(crate) data: H,
    pub(crate) _skeleton: std::marker::PhantomData<fn() -> S>,
    pub(crate) pool: Pool<S::Unit>,
    pub(crate) signal: Signal,
    /// The run's clock.
    pub(crate) start: Instant,
    pub(crate) settings: Settings,
    /// Raised (SkelAff) once a worker's transaction generated units.
    pub(crate) generating: AtomicBool,
    /// What moves the pages as the run goes (a migration rule's thread,
    /// the applied oracle), when something does.
    pub(crate) mover: Option<Arc<dyn PageMover>>,
    pub(crate) outcome: Outcome,
}

impl<S: Skeleton, H: Hold<S>> RunState<S, H> {
    /// The skeleton.
    #[inline]
    pub(crate) fn skeleton(&self) -> &S {
        self.data.skeleton()
    }

    /// Its shared data.
    #[inline]
    pub(crate) fn shared(&self) -> &S::Shared {
        self.data.shared()
    }

    /// Records a decision about `worker` (or the whole run), timed from the start.
    pub(crate) fn decide(&self, worker: Option<usize>, decision: Decision) {
        self.outcome.decisions.lock().push(DecisionAt { at: self.start.elapsed(), worker, decision });
    }

    /// Where affinity scheduling sends `unit`: the queue of the node its
    /// data is on, or the inbox of the worker it names (`None`: no
    /// preference, or a node with no worker).
    pub(crate) fn home_queue(&self, resolver: &mut Resolver, unit: &S::Unit) -> Option<Route> {
        match resolver.home(self.skeleton().affinity(unit, self.shared())) {
            Home::Node(n) => self.pool.queue_of(n).map(Route::Node),
            Home::Worker(w) => Some(Route::Worker(w)),
            Home::Anywhere | Home::Unresolved => None,
        }
    }

    /// SkelAff: a worker's transaction generated units; whether one had
    /// before. Release: a worker that sees it raised binds before it runs
    /// a generated unit.
    #[inline]
    pub(crate) fn raise_generating(&self) -> bool {
        self.generating.swap(true, Ordering::Release)
    }

    /// Records the first failure and stops every worker.
    pub(crate) fn fail(&self, worker: Option<usize>, message: String) {
        self.fail_with(worker, Cause::Panic(message));
    }

    /// As [`fail`](Self::fail), for a failure that is not a message.
    pub(crate) fn fail_with(&self, worker: Option<usize>, cause: Cause) {
        let _ = self.outcome.failure.set(Failure { worker, cause });
        self.signal.stop();
    }
}

/// Calls [`Assist::finish`] when dropped: the worker's way out, unwinding included.
pub(crate) struct Finish<'l, S: Skeleton, A: Assist<S>> {
    pub(crate) assist: &'l A,
    pub(crate) channel: &'l A::Channel,
}

impl<S: Skeleton, A: Assist<S>> Drop for Finish<'_, S, A> {
    fn drop(&mut self) {
        self.assist.finish(self.channel);
    }
}

/// What a panic said, as text.
pub(crate) fn panic_message(p: &(dyn Any + Send)) -> String {
    p.downcast_ref::<String>()
        .cloned()
        .or_else(|| p.downcast_ref::<&str>().map(|s| (*s).to_owned()))
        .unwrap_or_else(|| "a panic with a non-string payload".to_owned())
}
