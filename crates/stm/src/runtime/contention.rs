//! What a transaction does after a conflict before it runs again: the
//! contention managers of [`ContentionManager`].
//!
//! This is not a wait for a condition (for that the crate uses
//! `crossbeam_utils::Backoff`, e.g. in `TVar::store`'s wait for a locked word):
//! nothing becomes true that a spin could watch for. Its job is to make two
//! transactions that just conflicted stop meeting, and that needs a
//! *random* delay: with a deterministic one (`Backoff::spin` doubles the
//! same spin count on every thread) the pair that collided restarts in
//! lockstep and collides again. Its windows (16 to 16384 spins) are also
//! longer than `Backoff`'s 64-spin ceiling, sized for a commit's write-back
//! rather than a lock hand-off.

use crate::config::ContentionManager;
use crate::primitive::{spin_loop, yield_now};

/// Under suicide, every this many consecutive aborts of one transaction
/// yield the CPU once.
const SUICIDE_YIELD_EVERY: u32 = 8;

/// Under backoff, past this many consecutive aborts every wait also yields.
const BACKOFF_YIELD_AFTER: u32 = 16;

/// One thread's contention state: the random stream of its backoff draws.
#[derive(Debug)]
pub(crate) struct Contention {
    rng: u64,
}

impl Contention {
    /// The state of the thread with owner id `owner` (seeds differ per thread).
    pub(crate) fn new(owner: u64) -> Self {
        Contention { rng: 0x9E37_79B9_7F4A_7C15 ^ (owner << 32) }
    }

    /// xorshift64: a fresh draw.
    #[inline]
    fn next(&mut self) -> u64 {
        self.rng ^= self.rng << 13;
        self.rng ^= self.rng >> 7;
        self.rng ^= self.rng << 17;
        self.rng
    }

    /// Waits as `cm` says after the `attempt`-th consecutive abort (1-based).
    #[cold]
    pub(crate) fn after_abort(&mut self, cm: ContentionManager, attempt: u32) {
        match cm {
            ContentionManager::Suicide => {
                // Restart at once; but a run of aborts usually means the
                // thread we conflict with is descheduled (more runnable
                // threads than cores), and only yielding lets it finish.
                if attempt % SUICIDE_YIELD_EVERY == 0 {
                    yield_now();
                }
            }
            ContentionManager::Backoff { min_spins, max_spins } => {
                let window = (u64::from(min_spins.max(1)) << attempt.min(24)).min(u64::from(max_spins.max(1)));
                for _ in 0..self.next() % window {
                    spin_loop();
                }
                if attempt > BACKOFF_YIELD_AFTER {
                    yield_now();
                }
            }
        }
    }
}
