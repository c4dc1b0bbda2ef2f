//! [`Mpi`] and [`RankComm`]: MPI set up for a team per rank, and the few
//! collective steps the distributed operators take — agreeing on failure,
//! sums that come out the same on every rank, gathering vectors.
//!
//! MPI is initialised at the `Serialized` thread level: the calling thread
//! talks to MPI outside team jobs, and thread 0 of the rank's team talks to
//! it inside a job (halo exchanges, reductions) while the calling thread
//! waits in [`Team::run`](crate::Team::run), so two threads never call MPI
//! at once.

use core::fmt;

use mpi::Threading;
use mpi::datatype::{Equivalence, Partition, PartitionMut};
use mpi::environment::Universe;
use mpi::topology::{Communicator, SimpleCommunicator};
use mpi::traits::CommunicatorCollectives;

use crate::error::{Error, Result};

/// The exit code of a job that a panicking rank ended.
pub const PANIC_EXIT_CODE: i32 = 70;

/// MPI, initialised for this crate; dropping it finalises MPI.
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
pub struct Mpi {
    universe: Universe,
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
        Ok(Mpi { universe })
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
/// The `mpi` crate's communicator is neither `Send` nor `Sync` (it holds a
/// raw handle); this wrapper is both, because of how it is used (see the
/// `Sync` impl below).
pub struct RankComm {
    comm: SimpleCommunicator,
    rank: usize,
    size: usize,
}

// SAFETY: MPI was initialised at the `Serialized` level or better
// (`Mpi::init` checks), which allows calls from any thread as long as no
// two are concurrent. The operators call MPI either from the thread that
// owns them, outside team jobs, or from thread 0 of a team job while that
// thread blocks in `Team::run`; their mutating entry points take `&mut
// self`, so two jobs never overlap. The handle itself is an immutable
// pointer-sized value.
unsafe impl Send for RankComm {}
// SAFETY: as above.
unsafe impl Sync for RankComm {}

impl RankComm {
    fn new(comm: SimpleCommunicator) -> RankComm {
        let (rank, size) = (comm.rank() as usize, comm.size() as usize);
        RankComm { comm, rank, size }
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
                let mut s = e.to_string().into_bytes();
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
