//! [`NasCg::trace`]: one outer iteration of NAS CG's power method, traced
//! (see [`crate::trace`] for how and why a traced pass records the
//! kernel's own accesses).
//!
//! The walk below mirrors `power.rs` (`power_method`, one iteration of its
//! loop) and `cg.rs` (`cg_steps`) loop by loop, with a barrier wherever
//! they have a reduction or a barrier, so the threads' samples interleave
//! in time as the real iteration's do. Per thread, with `R` its rows and
//! `N` its stored entries, one iteration makes 26 SpMVs (25 in the CG
//! steps, `q = A p`; one for the residual, `r = A z`), so `A` and `jA` are
//! read `26 N` times and `ptrA` `52 R` times; the unit tests check these
//! counts for every array. The reset of `x` to ones, done once per run
//! before the first iteration, is not part of an iteration.

use crate::error::{Error, Result};
use crate::nas::CG_STEPS;
use crate::ops::TeamSpmv;
use crate::team::Team;
use crate::trace::replay::{Elements, run_traced};
use crate::trace::{AccessTrace, TraceOptions, TracedArray};

use super::NasCg;

impl NasCg {
    /// Records, sampled as `options` says, the accesses one outer iteration
    /// of the benchmark makes on `team` (every timed iteration makes the
    /// same ones): the matrix reads of its 26 SpMVs and the vector accesses
    /// of its CG steps and norms, each by the team thread that makes it, on
    /// the buffers [`NasCg::run`] uses. Nothing is computed; the vectors
    /// keep their values. The buffers stay mapped while `self` lives, so the
    /// kernel can be asked where the sampled pages are.
    ///
    /// # Errors
    ///
    /// [`Error::BadTraceOptions`]; [`Error::TeamMismatch`] if the team is
    /// not the one the matrix was split for.
    ///
    /// # Examples
    ///
    /// ```
    /// use skelaff_spmv::nas::{Class, NasCg};
    /// use skelaff_spmv::trace::{TraceOptions, TracedArray};
    /// use skelaff_spmv::{Masa, SpmvOptions};
    ///
    /// let masa = Masa::preprocess(2)?;
    /// let team = masa.team()?;
    /// let cg = NasCg::new(&masa, Class::S, SpmvOptions::default())?;
    /// let trace = cg.trace(&team, TraceOptions::new(64, 4096)?)?;
    /// // Every stored value is read once by each of the 26 SpMVs.
    /// let reads: u64 = trace.threads().iter().map(|t| t.seen_of(TracedArray::Values)).sum();
    /// assert_eq!(reads, 26 * cg.operator().nnz() as u64);
    /// assert!(trace.threads().iter().all(|t| t.samples().len() <= 4096));
    /// # Ok::<(), skelaff_spmv::Error>(())
    /// ```
    pub fn trace(&self, team: &Team, options: TraceOptions) -> Result<AccessTrace> {
        let options = options.checked()?;
        let op = &self.op;
        if team.threads() != op.threads() {
            return Err(Error::TeamMismatch { expected: op.threads(), got: team.threads() });
        }
        let v = &self.vecs;
        let [p, q, r, z, x] = [
            Elements::of(TracedArray::P, &v.p[..]),
            Elements::of(TracedArray::Q, &v.q[..]),
            Elements::of(TracedArray::R, &v.r[..]),
            Elements::of(TracedArray::Z, &v.z[..]),
            Elements::of(TracedArray::X, &v.x[..]),
        ];
        let threads = run_traced(team, options, |member, tr| {
            let rows = op.owned_rows(member.index());
            // conj_grad's start: q = z = 0; r = p = x; rho = r·r.
            for i in rows.clone() {
                q.write(tr, i);
            }
            for i in rows.clone() {
                z.write(tr, i);
            }
            for i in rows.clone() {
                x.read(tr, i);
                r.write(tr, i);
                p.write(tr, i);
            }
            member.barrier();
            for _ in 0..CG_STEPS {
                // q = A p, then p·q.
                op.trace_rows(tr, p, q, rows.clone());
                for i in rows.clone() {
                    p.read(tr, i);
                    q.read(tr, i);
                }
                member.barrier();
                // z += alpha p; r -= alpha q; r·r.
                for i in rows.clone() {
                    p.read(tr, i);
                    q.read(tr, i);
                    z.read(tr, i);
                    z.write(tr, i);
                    r.read(tr, i);
                    r.write(tr, i);
                }
                member.barrier();
                // p = r + beta p.
                for i in rows.clone() {
                    r.read(tr, i);
                    p.read(tr, i);
                    p.write(tr, i);
                }
                member.barrier();
            }
            // ‖x - A z‖, x·z, z·z, then x = z / ‖z‖.
            op.trace_rows(tr, z, r, rows.clone());
            for i in rows.clone() {
                x.read(tr, i);
                z.read(tr, i);
                r.read(tr, i);
            }
            member.barrier();
            for i in rows.clone() {
                z.read(tr, i);
                x.write(tr, i);
            }
        });
        let rows = Some(op.split().bounds().to_vec());
        let n = op.nrows();
        let mut buffers = op.traced_matrix().to_vec();
        buffers.push(p.buffer(n, None));
        buffers.extend([q, r, z, x].map(|e| e.buffer(n, rows.clone())));
        let shape = op.shape();
        Ok(AccessTrace::new(threads, buffers, shape.masa().page_size(), shape.options().placement, options))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::masa::Masa;
    use crate::nas::Class;
    use crate::ops::SpmvOptions;

    #[test]
    fn one_iteration_makes_the_counted_accesses_on_the_run_s_buffers() {
        let masa = Masa::preprocess(2).unwrap();
        let team = masa.team().unwrap();
        let mut cg = NasCg::new(&masa, Class::S, SpmvOptions::default()).unwrap();
        assert!(cg.run(&team).unwrap().verified);
        let trace = cg.trace(&team, TraceOptions::new(5, 1 << 12).unwrap()).unwrap().evened();
        let (ptr, ..) = cg.operator().arrays();
        let steps = CG_STEPS as u64;
        for th in trace.threads() {
            let rows = cg.operator().owned_rows(th.thread());
            let (rr, nn) = (rows.len() as u64, u64::from(ptr[rows.end] - ptr[rows.start]));
            let seen = |a| th.seen_of(a);
            assert_eq!(seen(TracedArray::Values), 26 * nn);
            assert_eq!(seen(TracedArray::ColIdx), 26 * nn);
            assert_eq!(seen(TracedArray::RowPtr), 52 * rr);
            // p: gathered by 25 SpMVs; written at the start; read twice and
            // read-written once per step.
            assert_eq!(seen(TracedArray::P), steps * nn + rr + steps * 4 * rr);
            // q: zeroed, written by 25 SpMVs, read twice per step.
            assert_eq!(seen(TracedArray::Q), rr + steps * 3 * rr);
            // r: written at the start, read-written and read per step, written by the last SpMV, read for the norm.
            assert_eq!(seen(TracedArray::R), rr + steps * 3 * rr + 2 * rr);
            // z: zeroed, read-written per step, gathered by the last SpMV, read twice.
            assert_eq!(seen(TracedArray::Z), rr + steps * 2 * rr + nn + 2 * rr);
            assert_eq!(seen(TracedArray::X), 3 * rr);
            assert_eq!(seen(TracedArray::Y), 0);
            assert_eq!(th.ran_on(), Some(th.slot().cpu));
            assert!(th.samples().len() <= 1 << 12);
            assert_eq!(th.period(), trace.period(), "evened");
        }
        // Every sample lies in a buffer of the run, named as it is.
        for (_, s) in trace.samples() {
            assert_eq!(trace.buffer_at(s.addr).map(|b| b.array), Some(s.array));
        }
        let p = trace.buffer(TracedArray::P).unwrap();
        assert!(p.split.is_none(), "any thread reads any element of p");
        assert_eq!(p.addr, cg.vecs.p.as_ptr() as usize);
        let one = crate::Team::with_threads(1).unwrap();
        assert!(matches!(cg.trace(&one, TraceOptions::DEFAULT), Err(Error::TeamMismatch { .. })));
    }
}
