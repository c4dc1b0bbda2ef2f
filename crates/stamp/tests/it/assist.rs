//! Every STAMP application passes its self-check with assisted transactions
//! (STM²: an auxiliary thread validates each worker's reads) at one and two
//! workers, throttled or not.
//!
//! With one worker the skeleton takes the units in the same order whether
//! or not the transactions are assisted, and assistance never changes what
//! a transaction computes (it only moves validation), so everything the
//! application reports must equal the plain run's. With two workers the
//! interleaving differs from run to run, so only the self-check is compared.
//! On a machine with no free CPU for an auxiliary the STM runs the worker
//! plain; the results must be the same either way.

use crate::common;

use common::results;
use skelaff_stamp::{CommonArgs, registry};
use skelaff_worklist::TxAssist;

#[test]
fn every_application_passes_its_self_check_with_assisted_transactions() {
    let apps = registry();
    assert!(!apps.is_empty());
    for app in apps {
        let plain = (app.run_small)(1, &CommonArgs::default()).unwrap();
        assert!(plain.passed(), "{}: {:?}", app.name, plain.check);
        assert!(!results(&plain.figures).is_empty(), "{}: no result figures to compare", app.name);
        for assist in [TxAssist::On, TxAssist::OnThrottle] {
            let one = (app.run_small)(1, &CommonArgs { assist, ..CommonArgs::default() }).unwrap();
            assert!(one.passed(), "{} with --assist {assist}: {:?}", app.name, one.check);
            assert_eq!(results(&one.figures), results(&plain.figures), "{} with --assist {assist}", app.name);
            let two = (app.run_small)(2, &CommonArgs { assist, ..CommonArgs::default() }).unwrap();
            assert!(two.passed(), "{} with 2 threads and --assist {assist}: {:?}", app.name, two.check);
        }
    }
}
