//! The pointer-chase workload of the helper-thread figures, shared by
//! `examples/helpers.rs` and `benches/helpers.rs`: units that follow
//! `hops` links through a large random cycle of cache-line-sized nodes
//! (cold in cache when the structure is much larger than the last-level
//! cache), so that a helper that walks the next unit first must pay.

use std::hint::black_box;
use std::time::{Duration, Instant};

use skelaff_helper_threads::{HelperConfig, HelperThreads};
use skelaff_stm::{TVar, TxError, TxOps};
use skelaff_worklist::{Builder, Helpers, ProcessCtx, RunReport, Skeleton, WorkerInfo};

/// One node per cache line: the link to follow and a value to add.
#[derive(Debug)]
#[repr(align(64))]
struct Node {
    next: TVar<u32>,
    value: TVar<u64>,
}

/// A random cycle through `nodes` nodes (Sattolo's algorithm), and the
/// units that walk it.
#[derive(Debug)]
pub struct Chase {
    nodes: Vec<Node>,
    hops: u32,
    /// Plain computation per hop (in the worker and in the shadow alike).
    work: u32,
}

impl Chase {
    /// A random cycle of `nodes` nodes (at least 2) from `seed`; each unit
    /// follows `hops` links and does `work` multiply-adds per hop.
    pub fn new(nodes: usize, hops: u32, work: u32, seed: u64) -> Chase {
        let n = nodes.max(2);
        let mut order: Vec<u32> = (0..n as u32).collect();
        let mut rng = fastrand::Rng::with_seed(seed);
        // Sattolo: a uniformly random single cycle.
        for i in (1..n).rev() {
            let j = rng.usize(..i);
            order.swap(i, j);
        }
        let mut next = vec![0u32; n];
        for i in 0..n {
            next[order[i] as usize] = order[(i + 1) % n];
        }
        let nodes = next
            .into_iter()
            .enumerate()
            .map(|(i, nx)| Node { next: TVar::new(nx), value: TVar::new(i as u64) })
            .collect();
        Chase { nodes, hops, work }
    }

    /// How many nodes the cycle has (at least 2).
    pub fn node_count(&self) -> usize {
        self.nodes.len()
    }

    /// The node unit `u` starts at.
    fn start(&self, u: u64) -> u32 {
        (u.wrapping_mul(0x9E37_79B9_7F4A_7C15) % self.nodes.len() as u64) as u32
    }

    /// Plain loads, no STM: nanoseconds per hop over `units` units.
    pub fn plain_ns_per_hop(&self, units: std::ops::Range<u64>) -> f64 {
        let t = Instant::now();
        let mut s = 0u64;
        let n = units.end - units.start;
        for u in units {
            let mut at = self.start(u);
            for _ in 0..self.hops {
                let node = &self.nodes[at as usize];
                s = s.wrapping_add(node.value.load());
                at = node.next.load();
            }
        }
        black_box(s);
        t.elapsed().as_secs_f64() * 1e9 / (n as f64 * f64::from(self.hops))
    }
}

impl Skeleton for Chase {
    type Unit = u64;
    type Shared = TVar<u64>;
    type PerWorker = ();
    fn init_worker(&self, _: &TVar<u64>, _: &WorkerInfo) {}
    fn process<'t, X: TxOps<'t>>(
        &'t self,
        tx: &mut X,
        &u: &u64,
        _: &mut (),
        total: &'t TVar<u64>,
        _: &mut ProcessCtx<u64>,
    ) -> Result<(), TxError> {
        let mut at = self.start(u);
        let mut s = 0u64;
        for _ in 0..self.hops {
            // In a shadow `at` may be stale; `get` keeps a bad index from panicking.
            let Some(node) = self.nodes.get(at as usize) else { return Ok(()) };
            s = s.wrapping_add(tx.read(&node.value)?);
            at = tx.read(&node.next)?;
            let mut w = s;
            for _ in 0..self.work {
                w = black_box(w.wrapping_mul(6364136223846793005).wrapping_add(1));
            }
            s ^= w & 1;
        }
        tx.update(total, |t| t.wrapping_add(s))?;
        Ok(())
    }
}

/// One timed run over `units` (seeded in order), with helpers as given;
/// `None` runs the plain `run()`.
pub fn run(
    chase: &Chase,
    units: std::ops::Range<u64>,
    helpers: Option<(Helpers, &HelperConfig)>,
) -> (Duration, u64, RunReport) {
    let total = TVar::new(0u64);
    let mut wl = Builder::new()
        .threads(1)
        .helpers(helpers.map_or(Helpers::Off, |h| h.0))
        .shuffle(None)
        .build(chase, &total)
        .expect("one thread");
    wl.add_work_units(units);
    let t = Instant::now();
    let report = match helpers {
        Some((_, cfg)) => wl.run_with(&HelperThreads::new(*cfg).expect("valid helper configuration")),
        None => wl.run(),
    }
    .expect("the chase cannot fail");
    (t.elapsed(), total.load(), report)
}
