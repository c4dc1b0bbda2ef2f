//! What the STAMP integration tests share.

use serde_json::{Map, Value};

/// The figures of an application's outcome that describe its results (not
/// its timings): what two runs that must compute the same thing compare.
pub(crate) fn results(figures: &Map<String, Value>) -> Map<String, Value> {
    figures
        .iter()
        .filter(|(k, _)| !k.contains("second") && !k.contains("time"))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}
