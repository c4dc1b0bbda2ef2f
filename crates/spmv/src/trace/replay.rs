//! The traced walk over a CSR operator's rows (what `kernel::csr_rows`
//! touches, in its order), the vectors' element addresses, and the traced
//! SpMV pass [`CsrSpmv::trace_apply`] built on them.

use core::ops::Range;
use std::time::Instant;

use skelaff_numa_alloc::pin;

use super::{AccessTrace, ThreadTrace, TraceOptions, TracedArray, TracedBuffer};
use crate::error::{Error, Result};
use crate::matrix::check_len;
use crate::ops::{CsrSpmv, TeamSpmv, ptr_bounds};
use crate::scalar::Scalar;
use crate::team::{Team, TeamMember};

/// A traced buffer's element addresses.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Elements {
    array: TracedArray,
    addr: usize,
    size: usize,
}

impl Elements {
    /// The elements of `s`, traced as `array`.
    pub(crate) fn of<T>(array: TracedArray, s: &[T]) -> Elements {
        Elements { array, addr: s.as_ptr() as usize, size: size_of::<T>() }
    }

    /// Counts a read of element `i`.
    #[inline]
    pub(crate) fn read(&self, tr: &mut ThreadTrace, i: usize) {
        tr.read(self.array, self.addr + i * self.size);
    }

    /// Counts a write of element `i`.
    #[inline]
    pub(crate) fn write(&self, tr: &mut ThreadTrace, i: usize) {
        tr.write(self.array, self.addr + i * self.size);
    }

    /// Its description, with the split of a deterministic access.
    pub(crate) fn buffer(&self, len: usize, split: Option<Vec<usize>>) -> TracedBuffer {
        TracedBuffer { array: self.array, addr: self.addr, len, elem_size: self.size, split }
    }
}

impl<T: Scalar> CsrSpmv<T> {
    /// Records what the kernel touches for `y[rows] = A x` (see the [module
    /// docs](super)): per row, `ptrA[r]` and `ptrA[r + 1]` read; per stored
    /// entry `A[k]`, `jA[k]` and `x[jA[k]]` read; then `y[r]` written.
    /// Reads `ptrA` and `jA` (the real arrays); loads nothing else.
    ///
    /// # Panics
    ///
    /// If `rows` is not inside the matrix (a bug of the caller: the traced
    /// passes walk only a split's rows).
    pub(crate) fn trace_rows(&self, tr: &mut ThreadTrace, x: Elements, y: Elements, rows: Range<usize>) {
        let (ptr, idx, val) = self.arrays();
        let (p, j, v) = (
            Elements::of(TracedArray::RowPtr, &ptr[..]),
            Elements::of(TracedArray::ColIdx, &idx[..]),
            Elements::of(TracedArray::Values, &val[..]),
        );
        for r in rows {
            p.read(tr, r);
            p.read(tr, r + 1);
            for k in ptr[r] as usize..ptr[r + 1] as usize {
                v.read(tr, k);
                j.read(tr, k);
                x.read(tr, idx[k] as usize);
            }
            y.write(tr, r);
        }
    }

    /// The operator's matrix arrays as traced buffers, each split as its
    /// rows are.
    pub(crate) fn traced_matrix(&self) -> [TracedBuffer; 3] {
        let (ptr, idx, val) = self.arrays();
        let split = self.split();
        let nnz = split.through(ptr);
        [
            Elements::of(TracedArray::RowPtr, &ptr[..]).buffer(ptr.len(), Some(ptr_bounds(split))),
            Elements::of(TracedArray::ColIdx, &idx[..]).buffer(idx.len(), Some(nnz.clone())),
            Elements::of(TracedArray::Values, &val[..]).buffer(val.len(), Some(nnz)),
        ]
    }

    /// A traced pass of `y = A x` on `team`: each team thread records the
    /// accesses [`apply`](TeamSpmv::apply) makes in its rows (see the
    /// [module docs](super) for why they are the same), sampled as
    /// `options` says. Nothing is computed and `y` is not written; `x` and
    /// `y` only give the addresses (pass the vectors the real multiply uses).
    ///
    /// # Errors
    ///
    /// [`Error::BadTraceOptions`]; [`Error::TeamMismatch`];
    /// [`Error::DimensionMismatch`] for vectors of the wrong length.
    ///
    /// # Examples
    ///
    /// ```
    /// use skelaff_spmv::trace::{TraceOptions, TracedArray};
    /// use skelaff_spmv::{CsrSpmv, Masa, SpmvOptions, TeamSpmv, Triplets};
    ///
    /// let mut t = Triplets::new(100, 100)?;
    /// for i in 0..100 {
    ///     t.push(i, i, 2.0)?;
    ///     t.push(i, (i * 7) % 100, 1.0)?;
    /// }
    /// let masa = Masa::preprocess(2)?;
    /// let team = masa.team()?;
    /// let op = CsrSpmv::new(&masa, &t.to_csr(), SpmvOptions::default())?;
    /// let (x, y) = (op.input_vector()?, op.output_vector()?);
    /// let trace = op.trace_apply(&team, &x, &y, TraceOptions::new(4, 1024)?)?;
    /// let values: u64 = trace.threads().iter().map(|t| t.seen_of(TracedArray::Values)).sum();
    /// assert_eq!(values, op.nnz() as u64);
    /// // Thread t writes only its own rows of y.
    /// for th in trace.threads() {
    ///     let rows = op.owned_rows(th.thread());
    ///     let y_buf = trace.buffer(TracedArray::Y).unwrap();
    ///     for s in th.samples().iter().filter(|s| s.array == TracedArray::Y) {
    ///         assert!(rows.contains(&y_buf.index_of(s.addr).unwrap()));
    ///     }
    /// }
    /// # Ok::<(), skelaff_spmv::Error>(())
    /// ```
    pub fn trace_apply(&self, team: &Team, x: &[T], y: &[T], options: TraceOptions) -> Result<AccessTrace> {
        let options = options.checked()?;
        if team.threads() != self.threads() {
            return Err(Error::TeamMismatch { expected: self.threads(), got: team.threads() });
        }
        check_len("x", x.len(), self.ncols())?;
        check_len("y", y.len(), self.nrows())?;
        let (xe, ye) = (Elements::of(TracedArray::X, x), Elements::of(TracedArray::Y, y));
        let threads = run_traced(team, options, |member, tr| {
            self.trace_rows(tr, xe, ye, self.owned_rows(member.index()));
        });
        let mut buffers = self.traced_matrix().to_vec();
        buffers.push(xe.buffer(x.len(), self.shape().input_split().map(|s| s.bounds().to_vec())));
        buffers.push(ye.buffer(y.len(), self.shape().output_split().map(|s| s.bounds().to_vec())));
        let shape = self.shape();
        Ok(AccessTrace::new(threads, buffers, shape.masa().page_size(), shape.options().placement, options))
    }
}

/// Runs `walk` on every team thread with its own [`ThreadTrace`] (one time
/// origin for all); each thread then asks the kernel which CPU it is on.
/// Returns the traces, thread 0 first.
pub(crate) fn run_traced(
    team: &Team,
    options: TraceOptions,
    walk: impl Fn(&TeamMember<'_>, &mut ThreadTrace) + Sync,
) -> Vec<ThreadTrace> {
    let origin = Instant::now();
    team.run_collect(|member| {
        let mut tr = ThreadTrace::new(member.index(), member.slot(), options, origin);
        walk(member, &mut tr);
        tr.set_ran_on(pin::current_cpu().ok());
        tr
    })
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;
    use crate::masa::Masa;
    use crate::matrix::Triplets;
    use crate::ops::SpmvOptions;

    #[test]
    fn every_access_of_the_kernel_is_recorded_by_its_thread() {
        // An irregular matrix; period 1 keeps every access.
        let n = 300;
        let mut t = Triplets::new(n, n).unwrap();
        for i in 0..n {
            for k in 0..(1 + i % 7) {
                t.push(i, (i * 13 + k * 31) % n, 1.0).unwrap();
            }
        }
        let a = t.to_csr();
        let masa = Masa::preprocess(2).unwrap();
        let team = masa.team().unwrap();
        let op = CsrSpmv::new(&masa, &a, SpmvOptions::default()).unwrap();
        let (x, y) = (op.input_vector().unwrap(), op.output_vector().unwrap());
        let trace = op.trace_apply(&team, &x, &y, TraceOptions::new(1, 1 << 16).unwrap()).unwrap();
        assert_eq!(trace.period(), 1);
        assert_eq!(trace.discarded(), 0);
        let (ptr, idx, val) = op.arrays();
        for th in trace.threads() {
            let rows = op.owned_rows(th.thread());
            assert_eq!(th.slot(), team.layout().slots()[th.thread()]);
            assert_eq!(th.ran_on(), Some(th.slot().cpu), "thread {} runs on its CPU", th.thread());
            let (k0, k1) = (ptr[rows.start] as usize, ptr[rows.end] as usize);
            // The addresses the kernel's loops name, as sets per array.
            let want_x: BTreeSet<usize> = idx[k0..k1].iter().map(|&c| &x[c as usize] as *const f64 as usize).collect();
            let want_val: BTreeSet<usize> = (k0..k1).map(|k| &val[k] as *const f64 as usize).collect();
            let want_y: BTreeSet<usize> = rows.clone().map(|r| &y[r] as *const f64 as usize).collect();
            let got = |arr| th.samples().iter().filter(|s| s.array == arr).map(|s| s.addr).collect::<BTreeSet<_>>();
            assert_eq!(got(TracedArray::X), want_x);
            assert_eq!(got(TracedArray::Values), want_val);
            assert_eq!(got(TracedArray::Y), want_y);
            assert_eq!(th.seen_of(TracedArray::Values), (k1 - k0) as u64);
            assert_eq!(th.seen_of(TracedArray::ColIdx), (k1 - k0) as u64);
            assert_eq!(th.seen_of(TracedArray::X), (k1 - k0) as u64);
            assert_eq!(th.seen_of(TracedArray::RowPtr), 2 * rows.len() as u64);
            // Every sample lies in the buffer it names, in the thread's own
            // chunk where the buffer is split.
            for s in th.samples() {
                let b = trace.buffer_at(s.addr).unwrap();
                assert_eq!(b.array, s.array);
                if let (Some(i), Some(_)) = (b.index_of(s.addr), &b.split) {
                    let owner = b.owner(i);
                    // ptrA[r + 1] of a chunk's last row is the next chunk's first pointer.
                    let next = (s.array == TracedArray::RowPtr).then_some(th.thread() + 1);
                    assert!(owner == Some(th.thread()) || owner == next, "{} element {i}: {owner:?}", s.array);
                }
            }
        }
        assert!(matches!(
            op.trace_apply(&team, &x[1..], &y, TraceOptions::DEFAULT),
            Err(Error::DimensionMismatch { .. })
        ));
        assert!(matches!(
            op.trace_apply(&team, &x, &y, TraceOptions { period: 0, capacity: 100 }),
            Err(Error::BadTraceOptions { .. })
        ));
        let one = Team::with_threads(1).unwrap();
        assert!(matches!(op.trace_apply(&one, &x, &y, TraceOptions::DEFAULT), Err(Error::TeamMismatch { .. })));
    }
}
