//! What each application reports besides the skeleton's report: one
//! struct per application, whose serde form is the `figures` object of the
//! `--json` line and whose fields the outcome prints as `key: value` lines.
//!
//! A field that only some runs have (a parallel run's `runs`, the figures
//! of a final state that failed its check) is an `Option` left out of the
//! JSON when `None`.

use std::fmt;

use serde::Serialize;
use serde_json::{Map, Value};

/// An application's figures ([`Outcome::figures`](crate::Outcome::figures)).
///
/// Serialises as the application's own struct (no tag: the outcome's `app`
/// names it).
///
/// # Examples
///
/// ```
/// use skelaff_stamp_core::figures::{Figures, LabyrinthFigures};
///
/// let f = Figures::from(LabyrinthFigures {
///     maze: "random-x8-y8-z1-n2".into(),
///     dimensions: "8x8x1".into(),
///     pairs: 2,
///     walls: 0,
///     routed: 2,
///     path_cells: 9,
///     threads: 1,
///     sequential: true,
/// });
/// assert_eq!(f.to_map()["pairs"], 2);
/// assert!(serde_json::to_string(&f)?.starts_with(r#"{"maze":"random-x8-y8-z1-n2","dimensions":"8x8x1","#));
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
#[non_exhaustive]
pub enum Figures {
    /// vacation's.
    Vacation(VacationFigures),
    /// kmeans's.
    Kmeans(KmeansFigures),
    /// intruder's.
    Intruder(IntruderFigures),
    /// genome's.
    Genome(GenomeFigures),
    /// labyrinth's.
    Labyrinth(LabyrinthFigures),
    /// yada's.
    Yada(YadaFigures),
}

impl Figures {
    /// The figures as a JSON object, keyed by name: what `--json` prints
    /// under `figures`, for callers that look figures up by name (runs of
    /// different applications compared alike).
    pub fn to_map(&self) -> Map<String, Value> {
        // Every figures struct serialises to an object with string keys.
        match serde_json::to_value(self) {
            Ok(Value::Object(m)) => m,
            other => unreachable!("figures serialise to a JSON object, not {other:?}"),
        }
    }
}

/// One `  key: value` line per figure, keys in alphabetical order (values
/// as JSON: strings quoted).
impl fmt::Display for Figures {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (k, v) in &self.to_map() {
            writeln!(f, "  {k}: {v}")?;
        }
        Ok(())
    }
}

macro_rules! figures_from {
    ($($variant:ident($ty:ident)),* $(,)?) => {$(
        impl From<$ty> for Figures {
            fn from(f: $ty) -> Figures {
                Figures::$variant(f)
            }
        }
    )*};
}

figures_from!(
    Vacation(VacationFigures),
    Kmeans(KmeansFigures),
    Intruder(IntruderFigures),
    Genome(GenomeFigures),
    Labyrinth(LabyrinthFigures),
    Yada(YadaFigures),
);

/// vacation's figures.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct VacationFigures {
    /// `-c`: client threads.
    pub clients: usize,
    /// The sequential version's tables (`std` or `stamp`).
    pub sequential_tables: &'static str,
    /// `-t`: client transactions.
    pub transactions: u32,
    /// `-r`: rows per table.
    pub relations: u32,
    /// Ids drawn from `1..=query_range`.
    pub query_range: u32,
    /// Transactions over the timed phase's time.
    pub transactions_per_second: f64,
    /// Transactions that met a reservation missing or not in use while cancelling.
    pub anomalies: u64,
    /// How many transactions of each kind the workload drew.
    pub actions: VacationActions,
    /// Customers in the final tables (`None`: they could not be read).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub customers: Option<usize>,
    /// Reservations the customers hold at the end.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reservations_held: Option<usize>,
    /// Digest of the final tables (16 hex digits).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tables_digest: Option<String>,
}

/// vacation's transactions by kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct VacationActions {
    /// Reservations made.
    pub make_reservation: u64,
    /// Customers deleted.
    pub delete_customer: u64,
    /// Table updates (items added or removed).
    pub update_tables: u64,
}

/// kmeans's figures.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct KmeansFigures {
    /// `-i`: the input.
    pub input: String,
    /// Points read or generated.
    pub points: usize,
    /// Their dimensions.
    pub dims: usize,
    /// `-n`: the fewest clusters tried.
    pub min_clusters: usize,
    /// `-m`: the most clusters tried.
    pub max_clusters: usize,
    /// `-p`: worker threads.
    pub threads: usize,
    /// Points per unit (parallel runs).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub chunk: Option<usize>,
    /// Skeleton runs (parallel runs: one per iteration).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub runs: Option<usize>,
    /// Time of the sequential run the parallel one is checked against.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sequential_check_seconds: Option<f64>,
    /// Iterations for each cluster count tried.
    pub iterations: Vec<u32>,
    /// Digest of the final memberships (16 hex digits).
    pub membership_digest: String,
}

/// intruder's figures.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct IntruderFigures {
    /// Flows in the stream.
    pub flows: usize,
    /// Packets in the stream.
    pub packets: usize,
    /// Attacks the generator placed.
    pub attacks_generated: usize,
    /// Attacks injected (STAMP's count).
    pub attacks_injected: u32,
    /// Flows the detector flagged.
    pub flagged: usize,
    /// Worker threads (1 for a sequential run).
    pub threads: u32,
    /// Whether the run was the sequential version.
    pub sequential: bool,
    /// `--detect-in`: where detection runs.
    pub detect_in: Option<String>,
    /// `--map`: the reassembly map.
    pub map: Option<String>,
}

/// genome's figures.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GenomeFigures {
    /// Skeleton runs (parallel runs).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub runs: Option<usize>,
    /// `-g`: gene length.
    pub gene_length: usize,
    /// `-s`: segment length.
    pub segment_length: usize,
    /// Segments sampled.
    pub segments: usize,
    /// Distinct segments.
    pub unique_segments: usize,
    /// Matching passes (overlap lengths tried).
    pub passes: usize,
    /// Chains left to concatenate.
    pub chains: usize,
    /// Length of the rebuilt sequence.
    pub sequence_length: usize,
    /// Digest of the rebuilt sequence (16 hex digits).
    pub sequence_digest: String,
    /// `-t`: worker threads.
    pub threads: usize,
    /// `--dedup` (parallel runs).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dedup: Option<String>,
}

/// labyrinth's figures.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LabyrinthFigures {
    /// Where the maze came from (a file or a generator's name).
    pub maze: String,
    /// Its sides, `XxYxZ`.
    pub dimensions: String,
    /// Source-destination pairs.
    pub pairs: usize,
    /// Wall cells.
    pub walls: usize,
    /// Pairs routed.
    pub routed: usize,
    /// Cells the routes use.
    pub path_cells: usize,
    /// Worker threads (1 for a sequential run).
    pub threads: u32,
    /// Whether the run was the sequential version.
    pub sequential: bool,
}

/// yada's figures.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct YadaFigures {
    /// `-i`: the input prefix.
    pub input: String,
    /// `-a`: the angle constraint, in degrees.
    pub angle: f64,
    /// Elements of the input mesh.
    pub initial_elements: usize,
    /// Of those, elements the constraint called bad.
    pub initial_bad: usize,
    /// Elements at the end (initial plus added minus removed).
    pub final_elements: i64,
    /// Units whose element was still in the mesh when they came up.
    pub processed: u64,
    /// Elements left unrefined because their point could not be inserted.
    pub gave_up: u64,
    /// Worker threads (1 for a sequential run).
    pub threads: usize,
    /// The smallest angle of the final mesh (`None`: it failed its check).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub min_angle: Option<f64>,
    /// Digest of the final mesh (16 hex digits).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mesh_digest: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(f: impl Into<Figures>) -> Vec<String> {
        let text = serde_json::to_string(&f.into()).unwrap();
        let map: serde_json::Map<String, Value> = serde_json::from_str(&text).unwrap();
        let mut keys: Vec<String> = map.keys().cloned().collect();
        keys.sort();
        keys
    }

    /// The keys each application's figures had when they were written into
    /// a `Map` by hand (commit 543fb3a), parallel runs with a passing check.
    #[test]
    fn every_application_keeps_the_keys_of_its_hand_written_figures() {
        let s = |v: &str| v.to_owned();
        let vacation = VacationFigures {
            clients: 2,
            sequential_tables: "std",
            transactions: 10,
            relations: 8,
            query_range: 4,
            transactions_per_second: 1.0,
            anomalies: 0,
            actions: VacationActions { make_reservation: 8, delete_customer: 1, update_tables: 1 },
            customers: Some(3),
            reservations_held: Some(4),
            tables_digest: Some(s("00")),
        };
        let kmeans = KmeansFigures {
            input: s("random"),
            points: 16,
            dims: 2,
            min_clusters: 2,
            max_clusters: 3,
            threads: 2,
            chunk: Some(4),
            runs: Some(5),
            sequential_check_seconds: Some(0.5),
            iterations: vec![2, 3],
            membership_digest: s("00"),
        };
        let intruder = IntruderFigures {
            flows: 4,
            packets: 8,
            attacks_generated: 1,
            attacks_injected: 1,
            flagged: 1,
            threads: 2,
            sequential: false,
            detect_in: Some(s("worker")),
            map: Some(s("hash")),
        };
        let genome = GenomeFigures {
            runs: Some(3),
            gene_length: 64,
            segment_length: 8,
            segments: 100,
            unique_segments: 50,
            passes: 7,
            chains: 1,
            sequence_length: 64,
            sequence_digest: s("00"),
            threads: 2,
            dedup: Some(s("remembered")),
        };
        let labyrinth = LabyrinthFigures {
            maze: s("m"),
            dimensions: s("2x2x1"),
            pairs: 1,
            walls: 0,
            routed: 1,
            path_cells: 2,
            threads: 2,
            sequential: false,
        };
        let yada = YadaFigures {
            input: s("633.2"),
            angle: 20.0,
            initial_elements: 10,
            initial_bad: 2,
            final_elements: 12,
            processed: 3,
            gave_up: 0,
            threads: 2,
            min_angle: Some(20.5),
            mesh_digest: Some(s("00")),
        };
        let list = |l: &str| l.split_whitespace().map(str::to_owned).collect::<Vec<_>>();
        assert_eq!(
            keys(vacation),
            list(
                "actions anomalies clients customers query_range relations reservations_held sequential_tables \
                 tables_digest transactions transactions_per_second"
            )
        );
        assert_eq!(
            keys(kmeans.clone()),
            list(
                "chunk dims input iterations max_clusters membership_digest min_clusters points runs \
                 sequential_check_seconds threads"
            )
        );
        assert_eq!(
            keys(intruder),
            list("attacks_generated attacks_injected detect_in flagged flows map packets sequential threads")
        );
        assert_eq!(
            keys(genome.clone()),
            list(
                "chains dedup gene_length passes runs segment_length segments sequence_digest sequence_length \
                 threads unique_segments"
            )
        );
        assert_eq!(keys(labyrinth), list("dimensions maze pairs path_cells routed sequential threads walls"));
        assert_eq!(
            keys(yada.clone()),
            list(
                "angle final_elements gave_up initial_bad initial_elements input mesh_digest min_angle processed \
                 threads"
            )
        );
        // A sequential run has no parallel-only figures; a failed check no final state's.
        let seq = KmeansFigures { chunk: None, runs: None, sequential_check_seconds: None, ..kmeans };
        assert_eq!(keys(seq), list("dims input iterations max_clusters membership_digest min_clusters points threads"));
        let seq = GenomeFigures { runs: None, dedup: None, ..genome };
        assert!(!keys(seq).iter().any(|k| k == "runs" || k == "dedup"));
        let failed = YadaFigures { min_angle: None, mesh_digest: None, ..yada };
        assert!(!keys(failed).iter().any(|k| k == "min_angle" || k == "mesh_digest"));
    }
}
