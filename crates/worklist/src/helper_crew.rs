//! A [`WorkerPool`](crate::WorkerPool)'s helper threads: one per worker
//! whose layout names a helper place, created and pinned there once (on
//! the first run that places a helper, see `WorkerPool::helper_threads`),
//! parked between runs in a crew of their own (the `crew` module's
//! hand-off, the same as the workers'), and joined when the pool drops.
//!
//! Nothing here knows what a helper does: a run hands the crew a job
//! `Fn(index)` (the `helper_run` module's, which runs the run's helper
//! body for the workers it placed, and returns at once for the others),
//! exactly as it hands the workers' crew theirs. What the threads could
//! not get (a thread the OS refused, a CPU that could not be taken) is
//! kept per worker and recorded in every run that places that helper, as
//! when each run created its helpers.

use std::sync::Arc;
use std::sync::mpsc;
use std::thread::JoinHandle;

use parking_lot::Mutex;
use skelaff_numa_alloc::pin::{self, Birthplace};

use crate::crew::Crew;
use crate::placement::ThreadLayout;

/// What became of one worker's helper thread when the pool made them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Slot {
    /// The layout names no helper place for this worker: no thread.
    NoPlace,
    /// A thread, serving the helper crew as its thread `crew_index`;
    /// `not_pinned` says which CPU it could not be born on, and why (it
    /// then runs wherever the pool's creator could).
    Thread { crew_index: usize, not_pinned: Option<(usize, String)> },
    /// The OS refused the thread: why.
    NotStarted(String),
}

/// A pool's helper threads and the crew they serve.
pub(crate) struct HelperThreads {
    pub(crate) crew: Arc<Crew>,
    /// Per worker of the pool.
    pub(crate) slots: Vec<Slot>,
    /// The helper crew's thread `j` is the helper of worker `workers[j]`.
    pub(crate) workers: Vec<usize>,
    /// Held by a run from the moment it gives its workers' job to the
    /// workers' crew until it has given its helpers' job to this crew, so
    /// that runs reach both crews in the same order (see
    /// `HelperSet::run_beside`).
    pub(crate) order: Mutex<()>,
    handles: Vec<JoinHandle<()>>,
}

impl HelperThreads {
    /// Creates the helper thread of every worker of `layout` that has a
    /// helper place, born on that place's CPU (unpinned where it has none;
    /// where the CPU is refused, unpinned and noted). `on_start` runs
    /// first on each thread. Never fails: what could not be had is noted
    /// in the slots.
    pub(crate) fn spawn(layout: &ThreadLayout, on_start: impl Fn() + Clone + Send + 'static) -> HelperThreads {
        // The crew's size is the number of threads the OS gave, known only
        // once they are all asked for: each thread waits for its crew and
        // index before it serves (and returns if it never gets them).
        let mut slots = Vec::with_capacity(layout.workers.len());
        let mut started = Vec::new();
        for (index, worker) in layout.workers.iter().enumerate() {
            let Some(place) = worker.helper else {
                slots.push(Slot::NoPlace);
                continue;
            };
            let name = format!("skelaff-helper-{index}");
            let mut not_pinned = None;
            let spawned = match place.cpu {
                Some(cpu) => match spawn_one(name.clone(), Birthplace::Cpu(cpu), &on_start) {
                    Err(skelaff_numa_alloc::Error::Spawn { source, .. }) => Err(source.to_string()),
                    Err(e) => {
                        not_pinned = Some((cpu, e.to_string()));
                        spawn_one(name, Birthplace::Inherited, &on_start).map_err(|e| e.to_string())
                    }
                    Ok(h) => Ok(h),
                },
                None => spawn_one(name, Birthplace::Inherited, &on_start).map_err(|e| e.to_string()),
            };
            match spawned {
                Ok((tx, handle)) => {
                    slots.push(Slot::Thread { crew_index: started.len(), not_pinned });
                    started.push((index, tx, handle));
                }
                Err(error) => slots.push(Slot::NotStarted(error)),
            }
        }
        let crew = Arc::new(Crew::new(started.len()));
        let mut workers = Vec::with_capacity(started.len());
        let mut handles = Vec::with_capacity(started.len());
        for (crew_index, (worker, tx, handle)) in started.into_iter().enumerate() {
            // Cannot fail: the thread keeps its receiver until it got this.
            let _ = tx.send((crew.clone(), crew_index));
            workers.push(worker);
            handles.push(handle);
        }
        HelperThreads { crew, slots, workers, order: Mutex::new(()), handles }
    }

    /// The number of helper threads.
    pub(crate) fn threads(&self) -> usize {
        self.handles.len()
    }

    /// Stops the threads (once no run is current or queued) and joins them.
    pub(crate) fn join(self) {
        self.crew.shutdown();
        for h in self.handles {
            let _ = h.join();
        }
    }
}

/// The way a helper thread learns which crew it serves, and as which thread.
type Enrol = mpsc::Sender<(Arc<Crew>, usize)>;

/// Starts one helper thread at `place` that waits to be enrolled, then
/// runs `on_start` and serves its crew until the crew shuts down.
fn spawn_one(
    name: String,
    place: Birthplace,
    on_start: &(impl Fn() + Clone + Send + 'static),
) -> Result<(Enrol, JoinHandle<()>), skelaff_numa_alloc::Error> {
    let (tx, rx) = mpsc::channel::<(Arc<Crew>, usize)>();
    let on_start = on_start.clone();
    let handle = pin::spawn_pinned(name, place, move || {
        // No message: the pool was dropped while being made (a panic
        // between the spawn and the enrolment); nothing to serve.
        if let Ok((crew, crew_index)) = rx.recv() {
            on_start();
            crew.serve(crew_index);
        }
    })?;
    Ok((tx, handle))
}
