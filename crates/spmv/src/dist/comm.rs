//! [`Mpi`] and [`RankComm`]: MPI set up for a team per rank, and the few
//! collective steps the distributed operators take — agreeing on failure,
//! sums that come out the same on every rank, gathering vectors.
//!
//! MPI is initialised at the `Serialized` thread level: any thread may call
//! MPI, but no two at once. The types keep it so (see [`RankComm`]'s type
//! invariant): [`Mpi`] and [`RankComm`] stay on the thread that initialised
//! MPI, which talks to MPI outside team jobs; inside a job it started,
//! thread 0 of the rank's team talks to MPI (halo exchanges, reductions)
//! through a [`Lent`] communicator while that thread waits in
//! [`Team::run`](crate::Team::run).

use core::fmt;
use core::marker::PhantomData;

use mpi::Threading;
use mpi::datatype::{Equivalence, Partition, PartitionMut};
use mpi::environment::Universe;
use mpi::topology::{Communicator, SimpleCommunicator};
use mpi::traits::CommunicatorCollectives;

use crate::error::{Error, Result};
use crate::team::TeamMember;

/// The exit code of a job that a panicking rank ended.
pub const PANIC_EXIT_CODE: i32 = 70;

/// MPI, initialised for this crate; dropping it finalises MPI.
///
/// It stays on the thread that initialised MPI (it is neither `Send` nor
/// `Sync`), and so does every [`RankComm`] it makes: see
/// [`RankComm`]'s type invariant.
///
/// # Examples
///
/// ```no_run
/// use skelaff_spmv::dist::Mpi;
///
/// let mpi = Mpi::init()?;
/// let comm = mpi.world();
/// println!("rank {} of {}", comm.rank(), comm.size());
/// # Ok::<(), skelaff_spmv::Error>(())
/// ```
///
/// Another thread cannot make communicators from it:
///
/// ```compile_fail
/// use skelaff_spmv::dist::Mpi;
///
/// let mpi = Mpi::init()?;
/// std::thread::scope(|s| {
///     s.spawn(|| mpi.world().barrier());
/// });
/// # Ok::<(), skelaff_spmv::Error>(())
/// ```
pub struct Mpi {
    universe: Universe,
    /// Neither `Send` nor `Sync`, whatever `Universe` is: [`Mpi::world`]
    /// makes communicators, which must stay on one thread.
    _one_thread: PhantomData<*const ()>,
}

impl Mpi {
    /// Initialises MPI at the `Serialized` thread level (or better), and
    /// makes a panic anywhere in this process end every rank of the job
    /// (`MPI_Abort`) after the panic's message is printed: a rank that
    /// panics cannot take part in the collective steps the others wait in,
    /// and unwinding into `MPI_Finalize` would wait for them forever.
    ///
    /// # Errors
    ///
    /// [`Error::Mpi`] when MPI was initialised already or its library
    /// provides a lower thread level.
    pub fn init() -> Result<Mpi> {
        let (universe, provided) = mpi::initialize_with_threading(Threading::Serialized)
            .ok_or_else(|| Error::Mpi("MPI is initialised already (call Mpi::init once per process)".into()))?;
        if provided < Threading::Serialized {
            return Err(Error::Mpi(format!(
                "the MPI library provides the thread level {provided:?}, but a rank's team needs Serialized or Multiple"
            )));
        }
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            previous(info);
            if mpi::environment::is_initialized() && !mpi::environment::is_finalized() {
                eprintln!("a rank panicked: ending every rank of the MPI job");
                SimpleCommunicator::world().abort(PANIC_EXIT_CODE);
            }
        }));
        Ok(Mpi { universe, _one_thread: PhantomData })
    }

    /// `MPI_COMM_WORLD`.
    pub fn world(&self) -> RankComm {
        RankComm::new(self.universe.world())
    }
}

impl fmt::Debug for Mpi {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Mpi").finish_non_exhaustive()
    }
}

/// A communicator whose ranks each run a team.
///
/// # Type invariant: one thread calls MPI at a time
///
/// MPI runs at the `Serialized` thread level ([`Mpi::init`] checks), so no
/// two threads may call it at once; every public method here but
/// [`rank`](RankComm::rank) and [`size`](RankComm::size) calls it.
/// `RankComm` is therefore neither `Send` nor `Sync`, and neither is
/// [`Mpi`], the only maker of one ([`Mpi::world`]): MPI can be initialised
/// once per process, so every `RankComm`, and every reference to one,
/// lives on the thread that initialised MPI. Safe code on that thread calls
/// MPI one call after another. The one way MPI is reached from another
/// thread is inside this crate (its `Lent` communicator): thread 0 of a
/// team job that this thread started, and waits for, uses the
/// communicator (see the `Sync` impl of `Lent` for the argument).
///
/// Sharing a `RankComm` with another thread does not compile:
///
/// ```compile_fail
/// use skelaff_spmv::dist::Mpi;
///
/// let mpi = Mpi::init()?;
/// let comm = mpi.world();
/// std::thread::scope(|s| {
///     s.spawn(|| comm.barrier());
///     comm.barrier();
/// });
/// # Ok::<(), skelaff_spmv::Error>(())
/// ```
///
/// nor does moving it to one:
///
/// ```compile_fail
/// use skelaff_spmv::dist::Mpi;
///
/// let mpi = Mpi::init()?;
/// let comm = mpi.world();
/// std::thread::spawn(move || comm.barrier()).join().unwrap();
/// # Ok::<(), skelaff_spmv::Error>(())
/// ```
pub struct RankComm {
    comm: SimpleCommunicator,
    rank: usize,
    size: usize,
    /// Neither `Send` nor `Sync` (the type invariant), whatever the `mpi`
    /// crate's communicator is.
    _one_thread: PhantomData<*const ()>,
}

/// A [`RankComm`] lent to team jobs that the thread holding it starts: it
/// hands the communicator to thread 0 of the job only.
#[derive(Clone, Copy)]
pub(crate) struct Lent<'a> {
    comm: &'a RankComm,
}

// SAFETY: `Lent` lets threads other than the communicator's own reach MPI,
// so the `Serialized` level's rule (one thread in MPI at a time) is what
// must be argued, for every use that the types and `Lent::new`'s contract
// allow. Let T be the thread that made the `Lent` (it held the `&RankComm`,
// so by `RankComm`'s type invariant it is the thread that initialised MPI).
// - A `Lent` is used only through `Lent::on`, which needs a `&TeamMember`:
//   one exists only inside a team job, on a thread of that team (a
//   `TeamMember` is made only by the team's own threads and is neither
//   `Send` nor `Sync`). By `Lent::new`'s contract, the only jobs a `Lent`
//   reaches are those T starts with `Team::run`; T blocks there until the
//   job is over, and runs one job at a time, so while a `Lent` is in use T
//   makes no MPI call and no two of its jobs overlap.
// - Inside such a job, `on` gives the communicator to the member with
//   index 0 alone: one thread. The `&RankComm` it gets cannot leave that
//   thread (`RankComm` is not `Sync`), nor outlive the job: `on` borrows
//   it for no longer than the `&TeamMember`, which a job gets for one call.
// - No third thread holds a `RankComm` or a reference to one (`RankComm`'s
//   type invariant).
// So thread 0 of the running job, or else T, is the only thread that calls
// MPI. (`Lent` is not `Send`: team jobs only share it.)
unsafe impl Sync for Lent<'_> {}

impl<'a> Lent<'a> {
    /// `comm`, for the team jobs that the calling thread runs.
    ///
    /// # Safety
    ///
    /// The result and its copies must reach no team job but those that
    /// the calling thread starts with [`Team::run`](crate::Team::run)
    /// (directly, or through a function that runs them from this thread,
    /// such as `cg::solve_on`). Outside a job it cannot be used at all
    /// ([`on`](Lent::on) needs a `TeamMember`).
    pub(crate) unsafe fn new(comm: &'a RankComm) -> Lent<'a> {
        Lent { comm }
    }

    /// The communicator, on thread 0 of the team job only (`None` on the
    /// others): the one team thread that calls MPI. Borrowed no longer
    /// than `member`, i.e. than this thread's call of the job.
    pub(crate) fn on<'m>(self, member: &'m TeamMember<'_>) -> Option<&'m RankComm>
    where
        'a: 'm,
    {
        (member.index() == 0).then_some(self.comm)
    }
}

impl fmt::Debug for Lent<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Lent").field(self.comm).finish()
    }
}

impl RankComm {
    fn new(comm: SimpleCommunicator) -> RankComm {
        let (rank, size) = (comm.rank() as usize, comm.size() as usize);
        RankComm { comm, rank, size, _one_thread: PhantomData }
    }

    /// This rank, `0..size()`.
    pub fn rank(&self) -> usize {
        self.rank
    }

    /// How many ranks.
    pub fn size(&self) -> usize {
        self.size
    }

    /// The `mpi` crate's communicator, for point-to-point messages.
    pub(crate) fn raw(&self) -> &SimpleCommunicator {
        &self.comm
    }

    /// Every rank's `result`, agreed: `Ok` on every rank when every rank
    /// has `Ok`; otherwise each rank returns its own error, or
    /// [`Error::RankFailed`] naming the lowest failing rank and its reason.
    /// Collective: every rank must call it at the same point.
    ///
    /// # Errors
    ///
    /// As described.
    pub fn agree<T>(&self, result: Result<T>) -> Result<T> {
        let reason = match &result {
            Ok(_) => Vec::new(),
            Err(e) => {
                // The error and its causes, as one line: the other ranks
                // get text, not the error.
                let mut text = e.to_string();
                let mut cause = std::error::Error::source(e);
                while let Some(c) = cause {
                    text.push_str(": ");
                    text.push_str(&c.to_string());
                    cause = c.source();
                }
                let mut s = text.into_bytes();
                s.truncate(4096);
                if s.is_empty() {
                    s.push(b'?');
                }
                s
            }
        };
        let (all, counts) = self.all_gather_var(&reason);
        let Some(first) = counts.iter().position(|&l| l > 0) else { return result };
        match result {
            Err(own) => Err(own),
            Ok(_) => {
                let start: usize = counts[..first].iter().sum();
                let text = String::from_utf8_lossy(&all[start..start + counts[first]]).into_owned();
                Err(Error::RankFailed { rank: first, ranks: self.size, reason: text })
            }
        }
    }

    /// Every rank's `mine`, concatenated in rank order, and each rank's length.
    pub(crate) fn all_gather_var<T: Equivalence + Copy + Default>(&self, mine: &[T]) -> (Vec<T>, Vec<usize>) {
        let mut lens = vec![0u64; self.size];
        self.comm.all_gather_into(&(mine.len() as u64), &mut lens[..]);
        let counts: Vec<usize> = lens.iter().map(|&l| l as usize).collect();
        let total = counts.iter().sum();
        // One spare element: an empty receive buffer must not share the
        // dangling address of an empty send slice (MPI takes equal send and
        // receive addresses for an aliasing error).
        let mut all = vec![T::default(); total + 1];
        let (c, d) = counts_displs(&counts);
        {
            let mut part = PartitionMut::new(&mut all[..total], &c[..], &d[..]);
            self.comm.all_gather_varcount_into(mine, &mut part);
        }
        all.truncate(total);
        (all, counts)
    }

    /// `send[r]` goes to rank `r`; returns what each rank sent this one.
    ///
    /// # Panics
    ///
    /// If `send` does not hold one list per rank.
    pub(crate) fn all_to_all_var<T: Equivalence + Copy + Default>(&self, send: &[Vec<T>]) -> Vec<Vec<T>> {
        assert_eq!(send.len(), self.size, "one list per rank");
        let send_counts: Vec<u64> = send.iter().map(|v| v.len() as u64).collect();
        let mut recv_counts = vec![0u64; self.size];
        self.comm.all_to_all_into(&send_counts[..], &mut recv_counts[..]);
        let sc: Vec<usize> = send_counts.iter().map(|&c| c as usize).collect();
        let rc: Vec<usize> = recv_counts.iter().map(|&c| c as usize).collect();
        let (stotal, rtotal) = (sc.iter().sum::<usize>(), rc.iter().sum::<usize>());
        // Spare elements keep empty buffers at distinct addresses (see `all_gather_var`).
        let mut flat: Vec<T> = Vec::with_capacity(stotal + 1);
        flat.extend(send.iter().flatten().copied());
        flat.push(T::default());
        let mut recv = vec![T::default(); rtotal + 1];
        let (scount, sdispl) = counts_displs(&sc);
        let (rcount, rdispl) = counts_displs(&rc);
        {
            let spart = Partition::new(&flat[..stotal], &scount[..], &sdispl[..]);
            let mut rpart = PartitionMut::new(&mut recv[..rtotal], &rcount[..], &rdispl[..]);
            self.comm.all_to_all_varcount_into(&spart, &mut rpart);
        }
        let mut out = Vec::with_capacity(self.size);
        let mut at = 0;
        for n in rc {
            out.push(recv[at..at + n].to_vec());
            at += n;
        }
        out
    }

    /// The sums over every rank of `v`, added in rank order from every
    /// rank's values, so every rank gets the same bits (which a stopping
    /// test that all ranks must pass together needs) and the result depends
    /// only on the rank count.
    pub fn sums<const N: usize>(&self, v: [f64; N]) -> [f64; N] {
        if self.size == 1 {
            return v;
        }
        let mut all = vec![0.0f64; N * self.size];
        self.comm.all_gather_into(&v[..], &mut all[..]);
        let mut out = [0.0; N];
        for chunk in all.chunks_exact(N) {
            for (o, x) in out.iter_mut().zip(chunk) {
                *o += x;
            }
        }
        out
    }

    /// The largest of every rank's `v`.
    pub fn max(&self, v: f64) -> f64 {
        self.all_gather_var(&[v]).0.into_iter().fold(f64::NEG_INFINITY, f64::max)
    }

    /// Every rank's `mine`, concatenated in rank order, on every rank.
    pub fn all_gather_vec(&self, mine: &[f64]) -> Vec<f64> {
        self.all_gather_var(mine).0
    }

    /// Waits until every rank gets here.
    pub fn barrier(&self) {
        self.comm.barrier();
    }

    /// Ends every rank of the job with `code` (`MPI_Abort`): for failures
    /// the ranks cannot agree on (a panic in the middle of a collective step).
    pub fn abort(&self, code: i32) -> ! {
        self.comm.abort(code)
    }
}

/// MPI's `i32` counts and displacements of consecutive blocks of `counts`.
///
/// # Panics
///
/// If a block or the total exceeds `i32::MAX` elements (MPI's count type).
fn counts_displs(counts: &[usize]) -> (Vec<i32>, Vec<i32>) {
    let to_i32 = |n: usize| i32::try_from(n).expect("an MPI message of more than i32::MAX elements");
    let mut at = 0usize;
    let mut displs = Vec::with_capacity(counts.len());
    for &c in counts {
        displs.push(to_i32(at));
        at += c;
    }
    to_i32(at);
    (counts.iter().map(|&c| to_i32(c)).collect(), displs)
}

impl fmt::Debug for RankComm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RankComm").field("rank", &self.rank).field("size", &self.size).finish()
    }
}
