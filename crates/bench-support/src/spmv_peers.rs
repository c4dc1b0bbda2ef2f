//! The peer crates a user would pick instead of skelaff for a CSR SpMV:
//! `sprs` (serial: its rayon feature does not parallelise SpMV) and
//! `nalgebra-sparse` (serial). Shared by `examples/spmv.rs` and
//! `benches/spmv.rs` so both time exactly the same calls.

use nalgebra_sparse::CsrMatrix;
use nalgebra_sparse::ops::Op;
use nalgebra_sparse::ops::serial::spmm_csr_dense;
use skelaff_spmv::Csr;

/// `sprs` with 32-bit indices and pointers (the same bytes as skelaff's CSR).
#[derive(Debug)]
pub struct Sprs {
    a: sprs::CsMatI<f64, u32, u32>,
}

impl Sprs {
    /// Copies `a`.
    pub fn new(a: &Csr) -> Sprs {
        let m =
            sprs::CsMatI::new((a.nrows(), a.ncols()), a.row_ptr().to_vec(), a.col_idx().to_vec(), a.values().to_vec());
        Sprs { a: m }
    }

    /// `y = A x` with sprs's CSR kernel (`mul_acc_mat_vec_csr` accumulates,
    /// so `y` is cleared first).
    pub fn mul(&self, x: &[f64], y: &mut [f64]) {
        y.fill(0.0);
        sprs::prod::mul_acc_mat_vec_csr(self.a.view(), x, &mut *y);
    }
}

/// `nalgebra-sparse` (its CSR stores `usize` offsets and indices, 8 bytes each).
#[derive(Debug)]
pub struct Nalgebra {
    a: CsrMatrix<f64>,
    x: nalgebra_sparse::na::DMatrix<f64>,
    y: nalgebra_sparse::na::DMatrix<f64>,
}

impl Nalgebra {
    /// Copies `a` and the input `x`.
    ///
    /// # Panics
    ///
    /// If `a` is not a valid CSR matrix for nalgebra (it always is when it
    /// came from skelaff's validated CSR).
    pub fn new(a: &Csr, x: &[f64]) -> Nalgebra {
        let m = CsrMatrix::try_from_csr_data(
            a.nrows(),
            a.ncols(),
            a.row_ptr().iter().map(|&p| p as usize).collect(),
            a.col_idx().iter().map(|&j| j as usize).collect(),
            a.values().to_vec(),
        )
        .expect("a validated CSR matrix is valid for nalgebra-sparse");
        Nalgebra {
            a: m,
            x: nalgebra_sparse::na::DMatrix::from_column_slice(x.len(), 1, x),
            y: nalgebra_sparse::na::DMatrix::zeros(a.nrows(), 1),
        }
    }

    /// `y = A x` (for the `x` given at construction) with nalgebra-sparse's
    /// serial CSR × dense product.
    pub fn mul(&mut self) {
        spmm_csr_dense(0.0, &mut self.y, 1.0, Op::NoOp(&self.a), Op::NoOp(&self.x));
    }

    /// The last result.
    pub fn y(&self) -> &[f64] {
        self.y.as_slice()
    }
}
