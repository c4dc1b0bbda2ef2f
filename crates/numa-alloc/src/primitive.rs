//! The loom shim of the parker ([`park`](crate::park)) and of the idle
//! wait around it ([`idle::wait_on`](crate::idle::wait_on)): atomics, the
//! fence, the yield and the thread parker come from loom under `cfg(loom)`,
//! so the model checker sees every access and may switch threads at each,
//! and from `std` and crossbeam-utils otherwise. Both import them only
//! from here (crossbeam-epoch's `mod primitive` is the model). A loom
//! build of this crate compiles nothing else (see `lib.rs`).

#[cfg(loom)]
mod imp {
    pub(crate) use loom::sync::atomic::{AtomicBool, Ordering, fence};
    pub(crate) use loom::thread::yield_now;

    use loom::sync::{Arc, Notify};
    use std::time::Duration;

    /// crossbeam-utils' `Parker` for a model, over loom's `Notify`: one
    /// token that an unpark makes available and a park consumes (loom also
    /// explores every park that returns spuriously, without the token).
    #[derive(Debug)]
    pub(crate) struct RawParker {
        notify: Arc<Notify>,
        unparker: RawUnparker,
    }

    impl Default for RawParker {
        fn default() -> Self {
            let notify = Arc::new(Notify::new());
            RawParker { unparker: RawUnparker(notify.clone()), notify }
        }
    }

    impl RawParker {
        pub(crate) fn park(&self) {
            self.notify.wait();
        }

        /// A model has no clock: a timed park is one whose time runs out
        /// at once (the model of a park that is woken in time is
        /// [`park`](Self::park), which may also return spuriously).
        pub(crate) fn park_timeout(&self, _timeout: Duration) {
            loom::thread::yield_now();
        }

        pub(crate) fn unparker(&self) -> &RawUnparker {
            &self.unparker
        }
    }

    /// crossbeam-utils' `Unparker` for a model.
    #[derive(Debug, Clone)]
    pub(crate) struct RawUnparker(Arc<Notify>);

    impl RawUnparker {
        pub(crate) fn unpark(&self) {
            self.0.notify();
        }
    }
}

#[cfg(not(loom))]
mod imp {
    pub(crate) use crossbeam_utils::sync::{Parker as RawParker, Unparker as RawUnparker};
    pub(crate) use std::sync::atomic::{AtomicBool, Ordering, fence};
    pub(crate) use std::thread::yield_now;
}

pub(crate) use imp::*;
