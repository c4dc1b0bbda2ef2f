//! Why a shadow stopped early: the helper threads' own reasons, carried
//! through the STM's opaque [`TxError::Stop`] so that user code unwinds
//! with `?` (the STM knows nothing of shadows).

use skelaff_stm::{Stop, TxError};

/// Why a shadow ([`ShadowTx`](crate::ShadowTx)) stopped before the user
/// code returned.
///
/// # Examples
///
/// ```
/// use skelaff_helper_threads::StopReason;
/// use skelaff_stm::TxError;
///
/// let e: TxError = StopReason::WriteLogFull.into();
/// assert_eq!(StopReason::of(&e), Some(StopReason::WriteLogFull));
/// assert_eq!(e.to_string(), "stopped by its TxOps implementation: write log full");
/// // A conflict of the real STM is not a shadow's stop.
/// assert_eq!(StopReason::of(&TxError::Retry), None);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum StopReason {
    /// The shadow used up the operations it was allowed (its lifespan).
    LifespanExhausted,
    /// The shadow's private write log is full.
    WriteLogFull,
    /// The shadow was told to stop (its worker reached the same unit, or re-ran its transaction).
    Cancelled,
    /// The shadow met something it cannot run speculatively (`retry`).
    Unsupported,
}

skelaff_numa_alloc::enum_names! {
    StopReason {
        LifespanExhausted => "lifespan exhausted",
        WriteLogFull => "write log full",
        Cancelled => "cancelled",
        Unsupported => "operation not supported in a shadow",
    }
}

impl StopReason {
    /// Every reason, in declaration order.
    const ALL: [StopReason; 4] =
        [StopReason::LifespanExhausted, StopReason::WriteLogFull, StopReason::Cancelled, StopReason::Unsupported];

    /// The STM's opaque form of this reason.
    pub fn stop(self) -> Stop {
        Stop::new(self as u32 + 1, self.into())
    }

    /// The reason behind a [`Stop`] this crate made (`None` for any other).
    pub fn from_stop(stop: Stop) -> Option<StopReason> {
        StopReason::ALL.into_iter().find(|r| r.stop() == stop)
    }

    /// The shadow's reason in `e`, if `e` is a shadow's stop.
    pub fn of(e: &TxError) -> Option<StopReason> {
        match e {
            TxError::Stop(s) => StopReason::from_stop(*s),
            _ => None,
        }
    }
}

impl From<StopReason> for TxError {
    fn from(r: StopReason) -> TxError {
        TxError::Stop(r.stop())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_reason_goes_through_the_stm_and_back() {
        for r in StopReason::ALL {
            assert_eq!(StopReason::of(&r.into()), Some(r));
        }
        // Another implementation's stop with a code of ours is not ours.
        assert_eq!(StopReason::from_stop(Stop::new(1, "something else")), None);
    }
}
