//! Every STAMP application gives the same results with helper threads on
//! and off (a shadow never changes program state), and passes its
//! self-check with helpers at one and two threads.
//!
//! With one worker the skeleton takes the units in the same order with
//! and without a helper (the worker takes its next unit before running
//! the current one, from the same FIFO: both runs are given
//! `--local-order fifo`, since newest first, yada's default, would run a
//! unit's new units before the one a helper was handed), so everything the application
//! reports — digests of its final tables, sequences, centres, routes,
//! yada's refined mesh — must be equal. With two workers the interleaving differs from run to
//! run, so only the self-check is compared.

use crate::common;

use common::results;
use skelaff_stamp::{CommonArgs, registry};
use skelaff_worklist::{Helpers, LocalOrder};

#[test]
fn every_application_gives_identical_results_with_helpers_on_and_off() {
    let apps = registry();
    assert!(!apps.is_empty());
    for app in apps {
        let fifo = Some(LocalOrder::Fifo);
        let off = (app.run_small)(1, &CommonArgs { helpers: Helpers::Off, local_order: fifo, ..CommonArgs::default() })
            .unwrap();
        assert!(off.passed(), "{}: {:?}", app.name, off.check);
        assert!(!results(&off.figures).is_empty(), "{}: no result figures to compare", app.name);
        if app.name == "yada" {
            // The comparison covers the mesh itself, not only its size.
            for key in ["mesh_digest", "final_elements", "processed"] {
                assert!(off.figures.to_map().contains_key(key), "yada reports no `{key}`: {:?}", off.figures);
            }
        }
        for helpers in [Helpers::On, Helpers::Auto] {
            let on = (app.run_small)(1, &CommonArgs { helpers, local_order: fifo, ..CommonArgs::default() }).unwrap();
            assert!(on.passed(), "{} with helpers {helpers}: {:?}", app.name, on.check);
            assert_eq!(on.check.as_ref().ok(), off.check.as_ref().ok(), "{} with helpers {helpers}", app.name);
            assert_eq!(results(&on.figures), results(&off.figures), "{} with helpers {helpers}", app.name);
            let report = on.report.as_ref().expect("a parallel run has a report");
            if helpers == Helpers::On {
                // One worker, one helper, and it was handed units.
                assert_eq!(report.helpers.per_helper.len(), 1, "{}", app.name);
                let handed = report.helpers.per_helper[0].units_handed;
                assert!(handed > 0, "{}: no unit handed to the helper: {:?}", app.name, report.helpers);
            }
        }
        // Two workers (with helpers placed as well as they can be).
        let two = (app.run_small)(2, &CommonArgs { helpers: Helpers::On, ..CommonArgs::default() }).unwrap();
        assert!(two.passed(), "{} with 2 threads and helpers: {:?}", app.name, two.check);
        let report = two.report.as_ref().expect("a parallel run has a report");
        assert_eq!(report.helpers.per_helper.len(), 2, "{}", app.name);
    }
}
