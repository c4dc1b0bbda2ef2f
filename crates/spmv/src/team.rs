//! A persistent team of pinned threads with a static schedule.
//!
//! A [`Team`] starts one thread per [`Layout`] slot, pins it to that slot's
//! CPU for its whole life, and runs jobs on all of them at once:
//! [`Team::run`] calls the same closure on every thread with a [`Ctx`]
//! that says which thread it is (its index never changes, so with a static
//! split the same thread always handles the same chunk, which is what makes
//! binding that chunk to the thread's node pay) and offers a barrier and
//! deterministic sum reductions.
//!
//! The layout comes from the foundation crate's scatter mapping (threads
//! spread over nodes first), reordered so that the threads of one node have
//! consecutive indices, as Algorithm 1 of the MASA paper assumes: thread
//! `t` handles chunk `t`, so the chunks of one node are contiguous.
//!
//! Waiting spins briefly, then yields, and (between jobs) parks, so a team
//! on a busy or oversubscribed machine does not burn the cores others need.

use core::cell::Cell;
use core::fmt;
use core::marker::PhantomData;
use core::ops::Range;
use std::any::Any;
use std::panic::{self, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, mpsc};
use std::thread::{self, JoinHandle, Thread};

use crossbeam_utils::CachePadded;
use skelaff_numa_alloc::{Mapping, NodeSet, Topology, pin};

use crate::error::{Error, Result};

/// Where one team thread runs.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct ThreadSlot {
    /// The CPU it is pinned to.
    pub cpu: usize,
    /// The NUMA node of that CPU.
    pub node: usize,
}

/// The CPUs of a team, thread 0 first, grouped by node (the threads of a
/// node have consecutive indices).
///
/// # Examples
///
/// ```
/// use skelaff_numa_alloc::{SyntheticSpec, Topology};
/// use skelaff_spmv::Layout;
///
/// let topo = Topology::synthetic(SyntheticSpec {
///     nodes: 2, caches_per_node: 1, cores_per_cache: 2, pus_per_core: 1, memory_only_nodes: 0,
/// })?;
/// // Scatter deals CPUs 0, 2, 1, 3; grouping by node gives 0, 1 | 2, 3.
/// let l = Layout::scatter(&topo, 4)?;
/// assert_eq!(l.slots().iter().map(|s| (s.cpu, s.node)).collect::<Vec<_>>(), [(0, 0), (1, 0), (2, 1), (3, 1)]);
/// assert_eq!(l.threads_per_node(), vec![(0, 2), (1, 2)]);
/// // Two threads: one per node.
/// assert_eq!(Layout::scatter(&topo, 2)?.threads_per_node(), vec![(0, 1), (1, 1)]);
/// # Ok::<(), skelaff_spmv::Error>(())
/// ```
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Layout {
    slots: Vec<ThreadSlot>,
}

impl Layout {
    /// `threads` threads laid out by [`Mapping::Scatter`], grouped by node.
    ///
    /// # Errors
    ///
    /// [`Error::ZeroThreads`]; [`Error::Numa`] when no CPU is usable.
    pub fn scatter(topo: &Topology, threads: usize) -> Result<Layout> {
        if threads == 0 {
            return Err(Error::ZeroThreads);
        }
        let plan = Mapping::Scatter.plan(topo, threads)?;
        let fallback = topo.allowed_nodes().first().unwrap_or(0);
        let mut slots: Vec<ThreadSlot> =
            plan.slots.iter().map(|s| ThreadSlot { cpu: s.cpu, node: s.node.unwrap_or(fallback) }).collect();
        // Stable: within a node, keep the scatter order.
        slots.sort_by_key(|s| s.node);
        Ok(Layout { slots })
    }

    /// A layout from explicit slots (regrouped by node, stably).
    ///
    /// # Errors
    ///
    /// [`Error::ZeroThreads`] for no slots.
    pub fn from_slots(mut slots: Vec<ThreadSlot>) -> Result<Layout> {
        if slots.is_empty() {
            return Err(Error::ZeroThreads);
        }
        slots.sort_by_key(|s| s.node);
        Ok(Layout { slots })
    }

    /// The slots, thread 0 first.
    pub fn slots(&self) -> &[ThreadSlot] {
        &self.slots
    }

    /// Number of threads.
    pub fn threads(&self) -> usize {
        self.slots.len()
    }

    /// The node of thread `t`.
    ///
    /// # Panics
    ///
    /// If `t >= threads()`.
    pub fn node_of(&self, t: usize) -> usize {
        self.slots[t].node
    }

    /// The nodes used, with how many threads each has, in thread order.
    pub fn threads_per_node(&self) -> Vec<(usize, usize)> {
        let mut v: Vec<(usize, usize)> = Vec::new();
        for s in &self.slots {
            match v.last_mut() {
                Some((n, c)) if *n == s.node => *c += 1,
                _ => v.push((s.node, 1)),
            }
        }
        v
    }

    /// The set of nodes used.
    pub fn nodes(&self) -> NodeSet {
        self.slots.iter().map(|s| s.node).collect()
    }

    /// For each node used, the range of thread indices on it.
    pub fn node_groups(&self) -> Vec<(usize, Range<usize>)> {
        let mut start = 0;
        self.threads_per_node()
            .into_iter()
            .map(|(n, c)| {
                let r = start..start + c;
                start += c;
                (n, r)
            })
            .collect()
    }
}

/// Spins, then yields: the wait used by barriers and by the caller of
/// [`Team::run`]. Returns whether the waiter should now park (only used
/// between jobs).
#[inline]
fn backoff(step: &mut u32) -> bool {
    const SPINS: u32 = 1 << 12;
    const YIELDS: u32 = 1 << 8;
    *step = step.saturating_add(1);
    if *step <= SPINS {
        core::hint::spin_loop();
        false
    } else if *step <= SPINS + YIELDS {
        thread::yield_now();
        false
    } else {
        true
    }
}

/// A job as the workers see it: a pointer to the caller's closure.
#[derive(Clone, Copy)]
struct JobPtr(*const (dyn Fn(&Ctx<'_>) + Sync));

// SAFETY: the pointee is `Sync` (so it may be called from any thread), and
// `Team::run` keeps it alive until every worker is done with it.
unsafe impl Send for JobPtr {}

/// One reduction slot per thread: up to four sums, as `f64` bits.
type Slot = CachePadded<[AtomicU64; MAX_SUMS]>;

/// The most sums one [`Ctx::sums`] call reduces.
pub const MAX_SUMS: usize = 4;

struct Inner {
    threads: usize,
    /// Bumped once per job (and at shutdown); workers wait for a change.
    epoch: CachePadded<AtomicU64>,
    /// Workers that have not finished the current job.
    remaining: CachePadded<AtomicUsize>,
    job: Mutex<Option<JobPtr>>,
    caller: Mutex<Option<Thread>>,
    shutdown: AtomicBool,
    /// Set when a thread panicked during the current job: barriers give up.
    abort: AtomicBool,
    panic: Mutex<Option<Box<dyn Any + Send>>>,
    bar_count: CachePadded<AtomicUsize>,
    bar_gen: CachePadded<AtomicUsize>,
    /// Two sets of reduction slots, used alternately (see `Ctx::sums`).
    sums: [Vec<Slot>; 2],
    slots: Vec<ThreadSlot>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // The mutexes guard plain data that a panic cannot leave half-written.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

thread_local! {
    static IN_TEAM: Cell<bool> = const { Cell::new(false) };
}

/// A team of pinned threads. See the [module docs](self).
///
/// # Examples
///
/// ```
/// use skelaff_numa_alloc::Topology;
/// use skelaff_spmv::{Layout, Team};
///
/// let team = Team::new(Layout::scatter(Topology::get()?, 2)?)?;
/// let totals = team.run_collect(|ctx| ctx.sum(ctx.index() as f64 + 1.0));
/// assert_eq!(totals, vec![3.0, 3.0]); // every thread sees the same sum
/// # Ok::<(), skelaff_spmv::Error>(())
/// ```
pub struct Team {
    inner: Arc<Inner>,
    handles: Vec<JoinHandle<()>>,
    workers: Vec<Thread>,
    layout: Layout,
    run_lock: Mutex<()>,
}

impl Team {
    /// Starts one pinned thread per slot of `layout`.
    ///
    /// # Errors
    ///
    /// [`Error::TeamStart`] if a thread cannot be spawned; [`Error::Numa`]
    /// if pinning it is refused (a CPU this process may not use).
    pub fn new(layout: Layout) -> Result<Team> {
        let n = layout.threads();
        let new_slots = || (0..n).map(|_| CachePadded::new(Default::default())).collect::<Vec<Slot>>();
        let inner = Arc::new(Inner {
            threads: n,
            epoch: CachePadded::new(AtomicU64::new(0)),
            remaining: CachePadded::new(AtomicUsize::new(0)),
            job: Mutex::new(None),
            caller: Mutex::new(None),
            shutdown: AtomicBool::new(false),
            abort: AtomicBool::new(false),
            panic: Mutex::new(None),
            bar_count: CachePadded::new(AtomicUsize::new(0)),
            bar_gen: CachePadded::new(AtomicUsize::new(0)),
            sums: [new_slots(), new_slots()],
            slots: layout.slots().to_vec(),
        });
        let mut team =
            Team { inner: inner.clone(), handles: Vec::new(), workers: Vec::new(), layout, run_lock: Mutex::new(()) };
        let (ready_tx, ready_rx) = mpsc::channel::<(usize, Result<()>)>();
        for (t, slot) in team.layout.slots().iter().copied().enumerate() {
            let inner = inner.clone();
            let ready = ready_tx.clone();
            let h = thread::Builder::new()
                .name(format!("spmv-team-{t}"))
                .spawn(move || {
                    let pinned = pin::pin_to_cpu(slot.cpu).map_err(Error::from);
                    let ok = pinned.is_ok();
                    let _ = ready.send((t, pinned));
                    if ok {
                        worker(&inner, t);
                    }
                })
                .map_err(|e| Error::TeamStart { thread: t, reason: e.to_string() })?;
            team.workers.push(h.thread().clone());
            team.handles.push(h);
        }
        drop(ready_tx);
        for _ in 0..n {
            match ready_rx.recv() {
                Ok((_, Ok(()))) => {}
                Ok((_, Err(e))) => return Err(e),
                Err(_) => return Err(Error::TeamStart { thread: n, reason: "a team thread exited".into() }),
            }
        }
        Ok(team)
    }

    /// A team of `threads` threads laid out by [`Layout::scatter`] on this machine.
    ///
    /// # Errors
    ///
    /// As [`Layout::scatter`] and [`Team::new`].
    pub fn with_threads(threads: usize) -> Result<Team> {
        Team::new(Layout::scatter(Topology::get()?, threads)?)
    }

    /// Number of threads.
    pub fn threads(&self) -> usize {
        self.inner.threads
    }

    /// Where each thread runs.
    pub fn layout(&self) -> &Layout {
        &self.layout
    }

    /// Runs `f` on every thread of the team and returns when all are done.
    /// Calls from several threads are served one after the other.
    ///
    /// # Panics
    ///
    /// Re-raises the first panic of a team thread (the others stop at their
    /// next barrier); the team stays usable. Panics if called from inside a
    /// job of any team (that would deadlock).
    pub fn run<F: Fn(&Ctx<'_>) + Sync>(&self, f: F) {
        assert!(!IN_TEAM.with(Cell::get), "Team::run called from a team thread: nested team jobs would deadlock");
        let _serial = lock(&self.run_lock);
        let inner = &*self.inner;
        let job: &(dyn Fn(&Ctx<'_>) + Sync) = &f;
        // SAFETY: erasing the lifetime is sound because this function does
        // not return (nor unwind) before `remaining` is 0, i.e. before every
        // worker has returned from calling the job; workers catch panics,
        // so they always get there.
        let job: JobPtr = JobPtr(unsafe {
            core::mem::transmute::<*const (dyn Fn(&Ctx<'_>) + Sync + '_), *const (dyn Fn(&Ctx<'_>) + Sync + 'static)>(
                job,
            )
        });
        // Every worker finished the previous job, so the barrier is idle.
        inner.bar_count.store(0, Ordering::Relaxed);
        inner.abort.store(false, Ordering::Relaxed);
        *lock(&inner.job) = Some(job);
        *lock(&inner.caller) = Some(thread::current());
        inner.remaining.store(inner.threads, Ordering::Relaxed);
        inner.epoch.fetch_add(1, Ordering::Release);
        for w in &self.workers {
            w.unpark();
        }
        let mut step = 0;
        while inner.remaining.load(Ordering::Acquire) != 0 {
            if backoff(&mut step) {
                thread::park();
            }
        }
        *lock(&inner.job) = None;
        if let Some(p) = lock(&inner.panic).take() {
            panic::resume_unwind(p);
        }
    }

    /// Runs `f` on every thread and returns each thread's result, thread 0 first.
    ///
    /// # Panics
    ///
    /// As [`Team::run`].
    pub fn run_collect<R: Send, F: Fn(&Ctx<'_>) -> R + Sync>(&self, f: F) -> Vec<R> {
        let out: Vec<Mutex<Option<R>>> = (0..self.threads()).map(|_| Mutex::new(None)).collect();
        self.run(|ctx| {
            let r = f(ctx);
            *lock(&out[ctx.index()]) = Some(r);
        });
        out.into_iter().filter_map(|m| m.into_inner().unwrap_or_else(|e| e.into_inner())).collect()
    }
}

fn worker(inner: &Inner, t: usize) {
    IN_TEAM.with(|c| c.set(true));
    let mut seen = 0u64;
    loop {
        let mut step = 0;
        loop {
            let e = inner.epoch.load(Ordering::Acquire);
            if e != seen {
                seen = e;
                break;
            }
            if backoff(&mut step) {
                thread::park();
            }
        }
        if inner.shutdown.load(Ordering::Acquire) {
            return;
        }
        let job = *lock(&inner.job);
        if let Some(JobPtr(f)) = job {
            let ctx = Ctx { index: t, inner, parity: Cell::new(0), _not_sync: PhantomData };
            // SAFETY: `Team::run` keeps the closure alive until `remaining`
            // reaches 0, which happens only after this call returns.
            let r = panic::catch_unwind(AssertUnwindSafe(|| unsafe { (*f)(&ctx) }));
            if let Err(p) = r {
                inner.abort.store(true, Ordering::Release);
                let mut slot = lock(&inner.panic);
                if slot.is_none() {
                    *slot = Some(p);
                }
            }
        }
        if inner.remaining.fetch_sub(1, Ordering::AcqRel) == 1 {
            if let Some(c) = lock(&inner.caller).as_ref() {
                c.unpark();
            }
        }
    }
}

impl Drop for Team {
    fn drop(&mut self) {
        self.inner.shutdown.store(true, Ordering::Release);
        self.inner.epoch.fetch_add(1, Ordering::Release);
        for w in &self.workers {
            w.unpark();
        }
        for h in self.handles.drain(..) {
            let _ = h.join();
        }
    }
}

impl fmt::Debug for Team {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Team").field("layout", &self.layout).finish()
    }
}

/// What a team thread knows inside a job: its index, and the team's
/// barrier and reductions. Every thread must make the same sequence of
/// `barrier`/`sum`/`sums` calls in a job.
pub struct Ctx<'a> {
    index: usize,
    inner: &'a Inner,
    /// Which set of reduction slots the next `sums` uses.
    parity: Cell<usize>,
    _not_sync: PhantomData<*const ()>,
}

impl Ctx<'_> {
    /// This thread's index, `0..threads()`.
    pub fn index(&self) -> usize {
        self.index
    }

    /// Number of threads in the team.
    pub fn threads(&self) -> usize {
        self.inner.threads
    }

    /// Where this thread runs.
    pub fn slot(&self) -> ThreadSlot {
        self.inner.slots[self.index]
    }

    /// Waits until every thread of the team has called `barrier` (the same
    /// number of times). Everything a thread wrote before it is visible to
    /// every thread after it.
    ///
    /// # Panics
    ///
    /// If another thread of the team panicked during this job.
    pub fn barrier(&self) {
        let inner = self.inner;
        if inner.threads == 1 {
            return;
        }
        let generation = inner.bar_gen.load(Ordering::Acquire);
        if inner.bar_count.fetch_add(1, Ordering::AcqRel) + 1 == inner.threads {
            inner.bar_count.store(0, Ordering::Relaxed);
            inner.bar_gen.store(generation.wrapping_add(1), Ordering::Release);
            return;
        }
        let mut step = 0;
        while inner.bar_gen.load(Ordering::Acquire) == generation {
            if inner.abort.load(Ordering::Acquire) {
                panic!("team job abandoned: another team thread panicked");
            }
            if backoff(&mut step) {
                thread::yield_now();
            }
        }
    }

    /// The sum over all threads of `v`, the same on every thread (added in
    /// thread order, so it is deterministic for a given thread count).
    /// Includes a barrier.
    ///
    /// # Panics
    ///
    /// As [`Ctx::barrier`].
    pub fn sum(&self, v: f64) -> f64 {
        self.sums([v])[0]
    }

    /// Several sums with one barrier (`N <= MAX_SUMS`).
    ///
    /// # Panics
    ///
    /// As [`Ctx::barrier`]; at compile time if `N > MAX_SUMS`.
    pub fn sums<const N: usize>(&self, v: [f64; N]) -> [f64; N] {
        const { assert!(N <= MAX_SUMS, "at most MAX_SUMS sums per call") };
        // Two slot sets used alternately: a thread writes set P for call k
        // only after passing the barrier of call k-1, which every thread
        // reaches only after it finished reading set P for call k-2.
        let set = &self.inner.sums[self.parity.get()];
        self.parity.set(self.parity.get() ^ 1);
        for (slot, x) in set[self.index].iter().zip(v) {
            slot.store(x.to_bits(), Ordering::Relaxed);
        }
        self.barrier();
        let mut out = [0.0; N];
        for s in set.iter() {
            for (o, slot) in out.iter_mut().zip(s.iter()) {
                *o += f64::from_bits(slot.load(Ordering::Relaxed));
            }
        }
        out
    }
}

impl fmt::Debug for Ctx<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Ctx").field("index", &self.index).field("threads", &self.inner.threads).finish()
    }
}

/// A slice that the threads of a team write in disjoint parts, in phases
/// separated by barriers.
///
/// # Examples
///
/// ```
/// use skelaff_spmv::{SharedMut, Team};
///
/// let team = Team::with_threads(2)?;
/// let mut v = vec![0usize; 10];
/// let shared = SharedMut::new(&mut v);
/// team.run(|ctx| {
///     let r = if ctx.index() == 0 { 0..5 } else { 5..10 };
///     // SAFETY: the two threads write disjoint halves; nobody reads.
///     let part = unsafe { shared.range_mut(r.clone()) };
///     part.iter_mut().zip(r).for_each(|(x, i)| *x = i * i);
/// });
/// assert_eq!(v[9], 81);
/// # Ok::<(), skelaff_spmv::Error>(())
/// ```
#[derive(Clone, Copy)]
pub struct SharedMut<'a, T> {
    ptr: *mut T,
    len: usize,
    _borrow: PhantomData<&'a mut [T]>,
}

// SAFETY: a `SharedMut` is a `&mut [T]` whose users promise (through the
// unsafe methods) not to create overlapping references; sending or sharing
// it is then like sending parts of the slice, which needs `T: Send`.
unsafe impl<T: Send> Send for SharedMut<'_, T> {}
// SAFETY: as above; shared views require `T: Sync` as well.
unsafe impl<T: Send + Sync> Sync for SharedMut<'_, T> {}

impl<'a, T> SharedMut<'a, T> {
    /// Wraps `s` for the duration of the borrow.
    pub fn new(s: &'a mut [T]) -> Self {
        SharedMut { ptr: s.as_mut_ptr(), len: s.len(), _borrow: PhantomData }
    }

    /// Length.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The elements in `r`, mutably.
    ///
    /// # Safety
    ///
    /// While the returned slice lives, no other reference (shared or
    /// mutable, from any thread) to an element of `r` may exist.
    ///
    /// # Panics
    ///
    /// If `r` is not inside the slice.
    #[allow(clippy::mut_from_ref)]
    pub unsafe fn range_mut(&self, r: Range<usize>) -> &mut [T] {
        assert!(r.start <= r.end && r.end <= self.len, "range {r:?} outside a slice of {}", self.len);
        // SAFETY: in bounds (checked); exclusivity is the caller's promise.
        unsafe { core::slice::from_raw_parts_mut(self.ptr.add(r.start), r.end - r.start) }
    }

    /// The elements in `r`, shared.
    ///
    /// # Safety
    ///
    /// While the returned slice lives, no thread may hold a mutable
    /// reference to an element of `r`.
    ///
    /// # Panics
    ///
    /// If `r` is not inside the slice.
    pub unsafe fn range(&self, r: Range<usize>) -> &[T] {
        assert!(r.start <= r.end && r.end <= self.len, "range {r:?} outside a slice of {}", self.len);
        // SAFETY: in bounds (checked); absence of writers is the caller's promise.
        unsafe { core::slice::from_raw_parts(self.ptr.add(r.start), r.end - r.start) }
    }

    /// The whole slice, shared.
    ///
    /// # Safety
    ///
    /// While the returned slice lives, no thread may hold a mutable
    /// reference to any element (no `range_mut` result may be alive).
    pub unsafe fn as_slice(&self) -> &[T] {
        // SAFETY: the pointer and length come from a live `&mut [T]`;
        // absence of writers is the caller's promise.
        unsafe { core::slice::from_raw_parts(self.ptr, self.len) }
    }
}

impl<T> fmt::Debug for SharedMut<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SharedMut").field("len", &self.len).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use skelaff_numa_alloc::SyntheticSpec;

    #[test]
    fn threads_run_pinned_with_fixed_indices() {
        let topo = Topology::get().unwrap();
        let team = Team::with_threads(3).unwrap();
        for _ in 0..3 {
            let seen = team.run_collect(|ctx| (ctx.index(), ctx.slot(), pin::current_cpu().unwrap()));
            for (t, (i, slot, cpu)) in seen.into_iter().enumerate() {
                assert_eq!(i, t);
                assert_eq!(slot, team.layout().slots()[t]);
                assert_eq!(cpu, slot.cpu, "thread {t} runs on its CPU");
                assert!(topo.allowed_cpus().contains(cpu));
            }
        }
    }

    #[test]
    fn barriers_and_sums_order_phases() {
        let team = Team::with_threads(3).unwrap();
        let mut data = vec![0.0f64; 30];
        let shared = SharedMut::new(&mut data);
        let out = team.run_collect(|ctx| {
            let t = ctx.index();
            let mut acc = Vec::new();
            for round in 0..50 {
                // SAFETY: thread t writes only its tenth-block; reads happen after the barrier.
                unsafe { shared.range_mut(t * 10..t * 10 + 10) }.fill((round * 3 + t) as f64);
                ctx.barrier();
                // SAFETY: nobody writes between the two barriers.
                let all: f64 = unsafe { shared.as_slice() }.iter().sum();
                let [a, b] = ctx.sums([all, 1.0]);
                acc.push((a, b));
                ctx.barrier();
            }
            acc
        });
        for round in 0..50 {
            let want: f64 = (0..3).map(|t| ((round * 3 + t) * 10) as f64).sum::<f64>() * 3.0;
            for per_thread in &out {
                assert_eq!(per_thread[round], (want, 3.0));
            }
        }
    }

    #[test]
    fn a_panic_propagates_and_the_team_survives() {
        let team = Team::with_threads(2).unwrap();
        let r = panic::catch_unwind(AssertUnwindSafe(|| {
            team.run(|ctx| {
                if ctx.index() == 1 {
                    panic!("boom in thread 1");
                }
                ctx.barrier(); // would wait forever without the abort flag
            })
        }));
        let msg = r.unwrap_err().downcast::<&str>().map(|b| *b).unwrap_or("");
        assert_eq!(msg, "boom in thread 1");
        assert_eq!(team.run_collect(|ctx| ctx.sum(1.0)), vec![2.0, 2.0]);
    }

    #[test]
    fn nested_runs_are_refused() {
        let team = Team::with_threads(1).unwrap();
        let r = panic::catch_unwind(AssertUnwindSafe(|| team.run(|_| team.run(|_| {}))));
        assert!(r.is_err());
        assert_eq!(team.run_collect(|c| c.index()), vec![0]);
    }

    #[test]
    fn layouts_group_threads_by_node() {
        let topo = Topology::synthetic(SyntheticSpec {
            nodes: 4,
            caches_per_node: 1,
            cores_per_cache: 2,
            pus_per_core: 1,
            memory_only_nodes: 1,
        })
        .unwrap();
        let l = Layout::scatter(&topo, 6).unwrap();
        assert_eq!(l.threads_per_node(), vec![(0, 2), (1, 2), (2, 1), (3, 1)]);
        assert_eq!(l.node_groups()[1], (1, 2..4));
        assert_eq!(l.nodes().len(), 4);
        assert!(matches!(Layout::scatter(&topo, 0), Err(Error::ZeroThreads)));
        assert!(matches!(Layout::from_slots(vec![]), Err(Error::ZeroThreads)));
    }
}
