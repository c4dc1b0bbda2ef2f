//! The background copy team: one thread per node with CPUs, pinned there,
//! standing in for the DMA engines the paper offloads bulk copies to.
//!
//! A [`Job`] is a list of chunks (a destination range, and a source range or
//! a value to fill with), grouped by the node the destination lives on. Each
//! team thread takes chunks of its own node's group first and then helps
//! with the others; a caller that waits for the job takes chunks too, so a
//! synchronous bulk operation runs on the team plus the caller. Chunks are
//! claimed with one atomic increment each; the job is done when every chunk
//! is.
//!
//! The team starts on first use and lives as long as the process (its
//! threads park when there is nothing to copy). If it cannot start, bulk
//! operations run on the caller alone.

use core::mem::MaybeUninit;
use core::ptr;
use core::sync::atomic::{AtomicUsize, Ordering};
use std::collections::VecDeque;
use std::sync::Arc;

use parking_lot::{Condvar, Mutex};
use skelaff_numa_alloc::Topology;
use skelaff_numa_alloc::pin::{self, Birthplace};

use crate::error::{Error, Result};

/// What a job does to each chunk.
pub(crate) enum Op {
    /// Copy `len` bytes from `src` to `dst` (the ranges do not overlap).
    Copy,
    /// Fill `dst` with copies of `value`, via the element type's fill.
    Fill {
        /// The element's bytes.
        value: Box<[MaybeUninit<u8>]>,
        /// Writes the element read from `value` over `bytes` bytes at `dst`.
        fill: unsafe fn(dst: *mut u8, bytes: usize, value: *const MaybeUninit<u8>),
    },
    /// Writes a zero byte to every `page_size`-th byte of fresh (zero)
    /// memory, mapping each page where its policy says.
    Touch {
        /// The page size.
        page_size: usize,
    },
}

/// A piece of a job.
pub(crate) struct Chunk {
    pub(crate) dst: *mut u8,
    /// Null except for [`Op::Copy`].
    pub(crate) src: *const u8,
    pub(crate) len: usize,
}

/// The chunks destined for one node: `chunks[first..end]`, where `next`
/// starts at `first` and hands out one index per claim.
struct Group {
    node: usize,
    end: usize,
    next: AtomicUsize,
}

/// A bulk operation in flight.
pub(crate) struct Job {
    // Invariant (promised by whoever builds the job, see `Job::new`): every
    // chunk's `dst..dst+len` is writable memory that nothing else reads or
    // writes until the job is done, and `src..src+len` readable memory that
    // nothing writes until then.
    op: Op,
    chunks: Vec<Chunk>,
    groups: Vec<Group>,
    remaining: AtomicUsize,
    done: Mutex<bool>,
    finished: Condvar,
}

// SAFETY: the raw pointers in the chunks are only dereferenced under the
// job's invariant (exclusive destinations, unchanging sources until done),
// which its builder promised; every other field is thread-safe.
unsafe impl Send for Job {}
// SAFETY: as above; chunks are claimed through atomics, each exactly once.
unsafe impl Sync for Job {}

impl Job {
    /// A job over `chunks`, each tagged with its destination's node.
    ///
    /// # Safety
    ///
    /// Until [`Job::is_done`] is true (or [`Job::wait`] returned):
    /// - every destination range is valid for writes and is neither read
    ///   nor written by anything but this job;
    /// - every source range (for [`Op::Copy`]) is valid for reads and is not
    ///   written by anything;
    /// - for [`Op::Fill`], `fill` may be called on every destination range
    ///   with `value`.
    pub(crate) unsafe fn new(op: Op, mut tagged: Vec<(usize, Chunk)>) -> Job {
        tagged.sort_by_key(|(node, _)| *node);
        let mut groups: Vec<Group> = Vec::new();
        for (i, (node, _)) in tagged.iter().enumerate() {
            match groups.last_mut() {
                Some(g) if g.node == *node => g.end = i + 1,
                _ => groups.push(Group { node: *node, end: i + 1, next: AtomicUsize::new(i) }),
            }
        }
        let chunks: Vec<Chunk> = tagged.into_iter().map(|(_, c)| c).collect();
        let n = chunks.len();
        Job { op, chunks, groups, remaining: AtomicUsize::new(n), done: Mutex::new(n == 0), finished: Condvar::new() }
    }

    /// Bytes the job writes.
    pub(crate) fn bytes(&self) -> usize {
        self.chunks.iter().map(|c| c.len).sum()
    }

    /// Works on chunks until none is left to claim: those of `node` first.
    pub(crate) fn work(&self, node: usize) {
        let own = self.groups.iter().position(|g| g.node == node);
        if let Some(g) = own {
            self.drain(&self.groups[g]);
        }
        for (i, g) in self.groups.iter().enumerate() {
            if Some(i) != own {
                self.drain(g);
            }
        }
    }

    fn drain(&self, g: &Group) {
        loop {
            let i = g.next.fetch_add(1, Ordering::Relaxed);
            if i >= g.end {
                return;
            }
            // SAFETY: `i` was claimed by this thread alone (the atomic
            // increment hands out each index once), and the job's invariant
            // covers the chunk's ranges.
            unsafe { self.run_chunk(&self.chunks[i]) };
            if self.remaining.fetch_sub(1, Ordering::AcqRel) == 1 {
                *self.done.lock() = true;
                self.finished.notify_all();
            }
        }
    }

    /// # Safety
    ///
    /// The chunk is claimed by the caller alone, under the job's invariant.
    unsafe fn run_chunk(&self, c: &Chunk) {
        match &self.op {
            // SAFETY: distinct, valid ranges per the job's invariant.
            Op::Copy => unsafe { ptr::copy_nonoverlapping(c.src, c.dst, c.len) },
            // SAFETY: the builder promised `fill` fits every destination.
            Op::Fill { value, fill } => unsafe { fill(c.dst, c.len, value.as_ptr()) },
            Op::Touch { page_size } => {
                for off in (0..c.len).step_by(*page_size) {
                    // SAFETY: inside the exclusive destination range.
                    unsafe { c.dst.add(off).write_volatile(0) };
                }
            }
        }
    }

    /// Whether every chunk is done.
    pub(crate) fn is_done(&self) -> bool {
        self.remaining.load(Ordering::Acquire) == 0
    }

    /// Blocks until every chunk is done.
    pub(crate) fn wait(&self) {
        let mut done = self.done.lock();
        while !*done {
            self.finished.wait(&mut done);
        }
    }
}

/// One team thread's queue.
#[derive(Default)]
struct Queue {
    jobs: Mutex<VecDeque<Arc<Job>>>,
    ready: Condvar,
}

/// The team: a queue per thread.
pub(crate) struct CopyTeam {
    queues: Vec<(usize, Arc<Queue>)>,
}

static TEAM: Mutex<Option<Arc<CopyTeam>>> = Mutex::new(None);

impl CopyTeam {
    /// The process's team, started on first use.
    pub(crate) fn get() -> Result<Arc<CopyTeam>> {
        let mut slot = TEAM.lock();
        if let Some(t) = slot.as_ref() {
            return Ok(t.clone());
        }
        let team = Arc::new(CopyTeam::start()?);
        *slot = Some(team.clone());
        Ok(team)
    }

    fn start() -> Result<CopyTeam> {
        let topo = Topology::get()?;
        let mut nodes: Vec<usize> = topo.nodes_with_cpus().iter().collect();
        if nodes.is_empty() {
            nodes.extend(topo.allowed_nodes().first());
        }
        let mut queues = Vec::new();
        for node in nodes {
            let queue = Arc::new(Queue::default());
            let q = queue.clone();
            // Born on the node: its home node (crate::home) follows from its mask.
            pin::spawn_pinned(format!("arrays-copy-{node}"), Birthplace::Node(node), move || serve(node, &q))
                .map_err(|source| Error::CopyTeamStart { node, source })?;
            queues.push((node, queue));
        }
        Ok(CopyTeam { queues })
    }

    /// Hands `job` to every team thread.
    pub(crate) fn submit(&self, job: &Arc<Job>) {
        for (_, q) in &self.queues {
            q.jobs.lock().push_back(job.clone());
            q.ready.notify_one();
        }
    }

    /// The nodes of the team's threads.
    #[cfg(test)]
    pub(crate) fn nodes(&self) -> Vec<usize> {
        self.queues.iter().map(|(n, _)| *n).collect()
    }
}

fn serve(node: usize, q: &Queue) {
    loop {
        let job = {
            let mut jobs = q.jobs.lock();
            loop {
                if let Some(j) = jobs.pop_front() {
                    break j;
                }
                q.ready.wait(&mut jobs);
            }
        };
        job.work(node);
    }
}

/// Jobs smaller than this run on the caller alone: waking the team costs
/// more than the copy.
pub(crate) const INLINE_BYTES: usize = 1 << 20;

/// Chunk size: large enough that claiming is free, small enough to balance.
pub(crate) const CHUNK_BYTES: usize = 1 << 20;

/// Runs `job` on the team and the caller, and returns when it is done.
pub(crate) fn run_sync(job: Job) {
    if job.bytes() < INLINE_BYTES {
        job.work(crate::home::home_node());
        return;
    }
    let job = Arc::new(job);
    if let Ok(team) = CopyTeam::get() {
        team.submit(&job);
    }
    job.work(crate::home::home_node());
    job.wait();
}

/// Starts `job` on the team and returns at once; if the team cannot start,
/// runs it on the caller before returning.
pub(crate) fn run_async(job: Job) -> Arc<Job> {
    let job = Arc::new(job);
    match CopyTeam::get() {
        Ok(team) => team.submit(&job),
        Err(_) => job.work(crate::home::home_node()),
    }
    job
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_job_runs_every_chunk_once_across_team_and_caller() {
        let n = 1usize << 20;
        let src: Vec<u32> = (0..n as u32).collect();
        let mut dst = vec![0u32; n];
        let chunk = 1000;
        let tagged: Vec<(usize, Chunk)> = (0..n)
            .step_by(chunk)
            .enumerate()
            .map(|(k, i)| {
                let len = chunk.min(n - i) * 4;
                // SAFETY-free pointer arithmetic inside both vectors.
                (
                    k % 3,
                    Chunk {
                        dst: dst.as_mut_ptr().wrapping_add(i).cast(),
                        src: src.as_ptr().wrapping_add(i).cast(),
                        len,
                    },
                )
            })
            .collect();
        // SAFETY: the chunks are disjoint ranges of `dst` and `src`, which
        // nothing else touches until `run_sync` returns.
        let job = unsafe { Job::new(Op::Copy, tagged) };
        assert_eq!(job.bytes(), n * 4);
        run_sync(job);
        assert_eq!(src, dst);
        assert!(!CopyTeam::get().unwrap().nodes().is_empty());
    }

    #[test]
    fn an_empty_job_is_done_at_once() {
        // SAFETY: no chunks.
        let job = unsafe { Job::new(Op::Copy, Vec::new()) };
        assert!(job.is_done());
        job.wait();
    }
}
