//! Helpers shared by the integration tests.

/// Asserts that no stripe stays locked. Other tests of the same binary may
/// be committing right now (locks are held for a write-back only), so a
/// lock must be seen held for a whole second to count as leaked.
pub(crate) fn assert_no_lock_left() {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(1);
    loop {
        let n = skelaff_stm::locked_stripes();
        if n == 0 {
            return;
        }
        assert!(std::time::Instant::now() < deadline, "{n} stripe(s) stayed locked");
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
}
