//! What the STAMP integration tests share.

use serde_json::{Map, Value};
use skelaff_stamp::Figures;

/// The figures of an application's outcome that describe its results (not
/// its timings): what two runs that must compute the same thing compare.
pub(crate) fn results(figures: &Figures) -> Map<String, Value> {
    figures.to_map().into_iter().filter(|(k, _)| !k.contains("second") && !k.contains("time")).collect()
}
