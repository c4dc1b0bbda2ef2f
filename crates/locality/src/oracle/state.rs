//! The applied oracle's life in one word.
//!
//! An [`OracleStretch`](super::OracleStretch)'s state is one `u64`:
//!
//! | bits   | `Idle` | `Waiting`                                   | `Claimed` | `Acted` |
//! |--------|--------|---------------------------------------------|-----------|---------|
//! | 0..=1  | `0`    | `1`                                         | `2`       | `3`     |
//! | 2..=63 | `0`    | due: nanoseconds on the run's clock (a stretch of time) or the stretch's unit count (a stretch of units), at most [`MAX_DUE`] | `0` | `0` |
//!
//! What each state means:
//!
//! - `Idle`: no run has the oracle (before the first run, and between runs).
//! - `Waiting { due }`: a run has it and its stretch ends at `due`. A
//!   waiting oracle whose `due` has passed is *due*: that is a reading of
//!   the clock (or of the unit count), not a state.
//! - `Claimed`: one party (a worker between two units, or the oracle's
//!   thread) found it due and is acting on it; nobody else may.
//! - `Acted`: it moved pages (or tried to, and met an error): it never
//!   acts again, in this run or a later one.
//!
//! Transitions, each one compare-and-swap from the exact word seen:
//!
//! | from             | to                | by                                                           |
//! |------------------|-------------------|--------------------------------------------------------------|
//! | `Idle`           | `Waiting { due }` | a run beginning with the oracle (arm)                        |
//! | `Waiting { due }`| `Claimed`         | the first to find it due (claim)                             |
//! | `Claimed`        | `Waiting { due }` | the claimer, when the board had no sample or the run's workers had all finished (re-arm: a whole stretch more) |
//! | `Claimed`        | `Acted`           | the claimer, once its log is sent                            |
//! | `Waiting { due }`| `Idle`            | the run stopping before its stretch ended (withdraw)         |
//!
//! Every other pair is refused ([`Refused::Illegal`]): nothing leaves
//! `Acted`, nobody acts without claiming, a claim is not dropped without
//! re-arming or acting, and a waiting oracle's due is not moved but by
//! claiming it first.

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};

/// Bits 0..=1: the state's tag.
const TAG_MASK: u64 = 0b11;
/// Position of the due field.
const DUE_SHIFT: u32 = 2;
/// The largest due a waiting oracle's word holds (larger ones are clamped:
/// 146 years of nanoseconds, or as many units).
pub(crate) const MAX_DUE: u64 = u64::MAX >> DUE_SHIFT;

const IDLE: u64 = 0;
const WAITING: u64 = 1;
const CLAIMED: u64 = 2;
const ACTED: u64 = 3;

/// Where an applied oracle is in its life (see the [module](self) docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum OracleState {
    /// No run has it.
    Idle,
    /// A run has it; its stretch ends at `due` (nanoseconds on the run's
    /// clock, or the unit count, by the stretch's kind).
    Waiting {
        /// When its stretch ends.
        due: u64,
    },
    /// Someone is acting on it.
    Claimed,
    /// It has acted, for good.
    Acted,
}

impl OracleState {
    /// The word of this state (a due above [`MAX_DUE`] is clamped).
    #[inline]
    pub(crate) const fn pack(self) -> u64 {
        match self {
            OracleState::Idle => IDLE,
            OracleState::Waiting { due } => {
                let due = if due > MAX_DUE { MAX_DUE } else { due };
                (due << DUE_SHIFT) | WAITING
            }
            OracleState::Claimed => CLAIMED,
            OracleState::Acted => ACTED,
        }
    }

    /// The state a word holds.
    #[inline]
    pub(crate) const fn unpack(word: u64) -> OracleState {
        match word & TAG_MASK {
            IDLE => OracleState::Idle,
            WAITING => OracleState::Waiting { due: word >> DUE_SHIFT },
            CLAIMED => OracleState::Claimed,
            _ => OracleState::Acted,
        }
    }

    /// Whether the life allows going from `self` to `to` (the transitions
    /// table of the [module](self) docs).
    pub(crate) const fn may_become(self, to: OracleState) -> bool {
        matches!(
            (self, to),
            (OracleState::Idle, OracleState::Waiting { .. })
                | (OracleState::Waiting { .. }, OracleState::Claimed)
                | (OracleState::Claimed, OracleState::Waiting { .. })
                | (OracleState::Claimed, OracleState::Acted)
                | (OracleState::Waiting { .. }, OracleState::Idle)
        )
    }
}

/// Why a transition did not happen.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Refused {
    /// The life has no such transition (the word is left alone).
    Illegal {
        /// The state asked to leave.
        from: OracleState,
        /// The state asked for.
        to: OracleState,
    },
    /// The word was no longer `from`: someone else moved it first.
    Lost {
        /// What the word held.
        found: OracleState,
    },
}

impl fmt::Display for Refused {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Refused::Illegal { from, to } => write!(f, "the oracle cannot go from {from:?} to {to:?}"),
            Refused::Lost { found } => write!(f, "the oracle was already {found:?}"),
        }
    }
}

/// The state word: an [`OracleState`] packed in one atomic.
#[derive(Debug)]
pub(crate) struct StateWord(AtomicU64);

impl StateWord {
    /// A word in `state`.
    pub(crate) fn new(state: OracleState) -> Self {
        StateWord(AtomicU64::new(state.pack()))
    }

    /// The state now (`order`: relaxed for a worker's look between two
    /// units; acquire where what the last transition published is read).
    #[inline]
    pub(crate) fn load(&self, order: Ordering) -> OracleState {
        OracleState::unpack(self.0.load(order))
    }

    /// Whether the oracle waits (one load).
    #[inline]
    pub(crate) fn waiting(&self) -> bool {
        self.0.load(Ordering::Relaxed) & TAG_MASK == WAITING
    }

    /// Moves the word from `from` (exactly: a waiting oracle's due
    /// included) to `to`, if the life allows it. Acquire-release: the
    /// party that wins a transition sees everything published by the one
    /// before it.
    pub(crate) fn transition(&self, from: OracleState, to: OracleState) -> Result<(), Refused> {
        if !from.may_become(to) {
            return Err(Refused::Illegal { from, to });
        }
        self.0
            .compare_exchange(from.pack(), to.pack(), Ordering::AcqRel, Ordering::Acquire)
            .map(|_| ())
            .map_err(|w| Refused::Lost { found: OracleState::unpack(w) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ALL: [OracleState; 5] = [
        OracleState::Idle,
        OracleState::Waiting { due: 0 },
        OracleState::Waiting { due: 12_345 },
        OracleState::Claimed,
        OracleState::Acted,
    ];

    #[test]
    fn states_pack_and_unpack() {
        for s in ALL {
            assert_eq!(OracleState::unpack(s.pack()), s);
        }
        assert_eq!(
            OracleState::unpack(OracleState::Waiting { due: MAX_DUE }.pack()),
            OracleState::Waiting { due: MAX_DUE }
        );
        // Too far is clamped, never wrapped into another state.
        assert_eq!(
            OracleState::unpack(OracleState::Waiting { due: u64::MAX }.pack()),
            OracleState::Waiting { due: MAX_DUE }
        );
    }

    #[test]
    fn the_life_s_transitions_happen() {
        let w = StateWord::new(OracleState::Idle);
        let armed = OracleState::Waiting { due: 10 };
        w.transition(OracleState::Idle, armed).unwrap();
        assert!(w.waiting());
        w.transition(armed, OracleState::Claimed).unwrap();
        assert!(!w.waiting());
        let rearmed = OracleState::Waiting { due: 20 };
        w.transition(OracleState::Claimed, rearmed).unwrap();
        assert_eq!(w.load(Ordering::Relaxed), rearmed);
        w.transition(rearmed, OracleState::Idle).unwrap();
        w.transition(OracleState::Idle, armed).unwrap();
        w.transition(armed, OracleState::Claimed).unwrap();
        w.transition(OracleState::Claimed, OracleState::Acted).unwrap();
        assert_eq!(w.load(Ordering::Relaxed), OracleState::Acted);
    }

    #[test]
    fn every_illegal_transition_is_refused_and_leaves_the_word() {
        let legal = [
            (OracleState::Idle, OracleState::Waiting { due: 0 }),
            (OracleState::Waiting { due: 0 }, OracleState::Claimed),
            (OracleState::Claimed, OracleState::Waiting { due: 0 }),
            (OracleState::Claimed, OracleState::Acted),
            (OracleState::Waiting { due: 0 }, OracleState::Idle),
        ];
        let kind = |s: OracleState| std::mem::discriminant(&s);
        let mut refused = 0;
        for from in ALL {
            for to in ALL {
                if legal.iter().any(|&(f, t)| kind(f) == kind(from) && kind(t) == kind(to)) {
                    assert!(from.may_become(to), "{from:?} -> {to:?}");
                    continue;
                }
                let w = StateWord::new(from);
                assert_eq!(w.transition(from, to), Err(Refused::Illegal { from, to }));
                assert_eq!(w.load(Ordering::Relaxed), from, "{from:?} -> {to:?} moved the word");
                refused += 1;
            }
        }
        // Of the 25 pairs (the waiting state twice among the five), 9 are
        // legal: counted, so that a table that grows a pair is seen.
        assert_eq!(refused, 25 - 9);
    }

    #[test]
    fn a_transition_from_a_stale_state_is_lost() {
        let w = StateWord::new(OracleState::Waiting { due: 5 });
        // Two claimers saw the same word: one wins.
        w.transition(OracleState::Waiting { due: 5 }, OracleState::Claimed).unwrap();
        assert_eq!(
            w.transition(OracleState::Waiting { due: 5 }, OracleState::Claimed),
            Err(Refused::Lost { found: OracleState::Claimed })
        );
        // A due that moved meanwhile makes the old word stale too.
        w.transition(OracleState::Claimed, OracleState::Waiting { due: 9 }).unwrap();
        assert_eq!(
            w.transition(OracleState::Waiting { due: 5 }, OracleState::Idle),
            Err(Refused::Lost { found: OracleState::Waiting { due: 9 } })
        );
    }
}
