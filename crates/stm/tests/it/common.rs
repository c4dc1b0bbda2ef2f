//! Helpers shared by the integration tests.

use skelaff_stm::TVar;

/// Asserts that none of `vars` is locked. Call it once every thread that
/// writes them has stopped: each variable has its own lock, held only by a
/// commit that writes that variable.
pub(crate) fn assert_unlocked<'a, T: 'a>(vars: impl IntoIterator<Item = &'a TVar<T>>) {
    let locked = vars.into_iter().filter(|v| v.is_locked()).count();
    assert_eq!(locked, 0, "{locked} variable(s) stayed locked");
}
