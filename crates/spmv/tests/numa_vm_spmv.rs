//! MASA's distribute step checked in the emulated NUMA machine
//! (`cargo xtask numa-vm`): after an operator is built, every page of each
//! thread's chunk of `A`, `jA`, `ptrA` and `y` (CSR, Table 1) or of `A`,
//! `jA`, `ptrA` and `x` (CSC, Table 2) sits on that thread's node, up to the
//! paper's page rounding (a page belongs to the thread owning the element at
//! its middle), and the other vector's pages are interleaved. The kernel is
//! asked where each page is (`move_pages`).

use std::process::ExitCode;

use skelaff_numa_alloc::{NodeSet, Topology, pin, policy::interleave_node};
use skelaff_spmv::nas::{self, Class};
use skelaff_spmv::{
    ArrayPlacement, CscSpmv, Csr, CsrSpmv, Masa, Schedule, SharedArray, SplitKind, SpmvOptions, SymSpmv, SymVariant,
    TeamSpmv, Triplets,
};
use skelaff_testkit::{GuestSpec, Suite, expect_no_mismatches};

type Check = Result<(), String>;

fn main() -> ExitCode {
    let Some(spec) = GuestSpec::from_cmdline() else {
        eprintln!(
            "numa_vm_spmv: not inside the emulated machine (no skelaff.topology= on the kernel command line); run `cargo xtask numa-vm`"
        );
        return ExitCode::FAILURE;
    };
    let topo = match Topology::get() {
        Ok(t) => t,
        Err(e) => {
            eprintln!("numa_vm_spmv: {e}");
            return ExitCode::FAILURE;
        }
    };
    // The main thread writes the arrays: keep it on one CPU so first touch
    // has a well-defined node.
    if let Err(e) = pin::pin_to_cpu(0) {
        eprintln!("numa_vm_spmv: pinning the main thread: {e}");
        return ExitCode::FAILURE;
    }
    let threads = spec.total_cpus();
    let mut s = Suite::new(&format!("spmv MASA placement on {spec}, {threads} threads"));
    let masa = match Masa::preprocess_with(topo, threads, Schedule::Static) {
        Ok(m) => m.huge_pages(false),
        Err(e) => {
            eprintln!("numa_vm_spmv: {e}");
            return ExitCode::FAILURE;
        }
    };
    let a = irregular(6000);

    s.check("preprocess sees the machine and groups threads by node", || {
        let per_node = masa.layout().threads_per_node();
        let want: Vec<(usize, usize)> = (0..spec.nodes).map(|n| (n, spec.cpus_per_node)).collect();
        if per_node != want || masa.mnodes() != spec.nodes || masa.lcores() != spec.cpus_per_node {
            return Err(format!("threads per node {per_node:?}, want {want:?}"));
        }
        let team = masa.team().map_err(|e| e.to_string())?;
        for (t, (slot, node)) in team.run_collect(|c| (c.slot(), pin::current_node())).into_iter().enumerate() {
            let node = node.map_err(|e| e.to_string())?;
            if node != slot.node || slot.node != slot.cpu / spec.cpus_per_node {
                return Err(format!("thread {t} on CPU {} runs on node {node}, layout says {}", slot.cpu, slot.node));
            }
        }
        Ok(())
    });

    for split in [SplitKind::Rows, SplitKind::Nnz] {
        s.check(&format!("CSR ({split} split): A, jA, ptrA, y bound per chunk; x interleaved (Table 1)"), || {
            let op = CsrSpmv::new(&masa, &a, SpmvOptions::default().split(split)).map_err(|e| e.to_string())?;
            let rows = op.split().bounds().to_vec();
            let nnz = op.split().through(a.row_ptr());
            let (ptr, idx, val) = op.arrays();
            let mut ptr_b = rows.clone();
            *ptr_b.last_mut().unwrap_or(&mut 0) += 1;
            bound(&masa, "ptrA", ptr, &ptr_b)?;
            bound(&masa, "jA", idx, &nnz)?;
            bound(&masa, "A", val, &nnz)?;
            bound(&masa, "y", &op.output_vector().map_err(|e| e.to_string())?, &rows)?;
            interleaved(&masa, "x", &op.input_vector().map_err(|e| e.to_string())?)?;
            correct(&masa, op, &a)
        });
    }

    s.check("CSC (columns): A, jA, ptrA, x bound per chunk; y interleaved (Table 2)", || {
        let csc = a.to_csc();
        let op = CscSpmv::new(&masa, &csc, SpmvOptions::default()).map_err(|e| e.to_string())?;
        let cols = op.split().bounds().to_vec();
        let nnz = op.split().through(csc.col_ptr());
        let (ptr, idx, val) = op.arrays();
        let mut ptr_b = cols.clone();
        *ptr_b.last_mut().unwrap_or(&mut 0) += 1;
        bound(&masa, "ptrA", ptr, &ptr_b)?;
        bound(&masa, "jA", idx, &nnz)?;
        bound(&masa, "A", val, &nnz)?;
        bound(&masa, "x", &op.input_vector().map_err(|e| e.to_string())?, &cols)?;
        interleaved(&masa, "y", &op.output_vector().map_err(|e| e.to_string())?)?;
        correct(&masa, op, &a)
    });

    s.check("symmetric SpMV, both variants, computes the full product", || {
        let full = symmetric(&a);
        for v in [SymVariant::Duplicated, SymVariant::Single] {
            let op = SymSpmv::new(&masa, &full.lower_triangle(), v, SpmvOptions::default().split(SplitKind::Nnz))
                .map_err(|e| e.to_string())?;
            bound(&masa, "y", &op.output_vector().map_err(|e| e.to_string())?, op.split().bounds())?;
            correct(&masa, op, &full)?;
        }
        Ok(())
    });

    s.check("first touch puts every page on the writing thread's node", || {
        let node = pin::current_node().map_err(|e| e.to_string())?;
        let op = CsrSpmv::new(&masa, &a, SpmvOptions::default().placement(ArrayPlacement::FirstTouch))
            .map_err(|e| e.to_string())?;
        let (ptr, idx, val) = op.arrays();
        for (name, p) in [("ptrA", ptr.placement()), ("jA", idx.placement()), ("A", val.placement())] {
            let p = p.map_err(|e| e.to_string())?.ok_or(format!("{name} is not a NUMA array"))?;
            expect_no_mismatches(&format!("first-touch {name}"), p.pages().len(), &p.mismatches(|_| Some(node)))?;
        }
        Ok(())
    });

    s.check("with huge pages, chunk pages still land on their nodes", || {
        let masa = masa.clone().huge_pages(true);
        let op = CsrSpmv::new(&masa, &a, SpmvOptions::default()).map_err(|e| e.to_string())?;
        let nnz = op.split().through(a.row_ptr());
        bound(&masa, "A (huge pages)", op.arrays().2, &nnz)
    });

    // Where numa_vm_cg_locality runs (the guest whose locality it
    // measures: 4x1 in the default run), its MASA run is this same class S
    // run on every CPU, verified: not run twice in one guest (a run that
    // leaves numa_vm_cg_locality out with `--only` leaves this check out
    // on that guest too).
    let cmdline = std::fs::read_to_string("/proc/cmdline").unwrap_or_default();
    let cg_locality_here = !cmdline.split_whitespace().any(|w| w == "skelaff.locality_sweep=off");
    if cg_locality_here {
        println!("     NAS CG class S with MASA on every CPU: verified by numa_vm_cg_locality in this guest");
    } else {
        s.check("NAS CG class S verifies with MASA on every CPU", || {
            let team = masa.team().map_err(|e| e.to_string())?;
            let r = nas::run(&masa, &team, Class::S, SpmvOptions::default()).map_err(|e| e.to_string())?;
            if !r.verified {
                return Err(format!("zeta {} (error {:e})", r.zeta, r.error));
            }
            Ok(())
        });
    }

    s.finish()
}

/// A matrix with rows of very different lengths (so the two splits differ)
/// and enough entries that every thread's chunk spans several pages.
fn irregular(n: usize) -> Csr {
    let mut t = Triplets::new(n, n).expect("small dimensions");
    for i in 0..n {
        let len = if i % 97 < 3 { 120 } else { 1 + i % 9 };
        for k in 0..len {
            let j = (i * 31 + k * 977) % n;
            t.push(i, j, 1.0 + (k % 5) as f64).expect("in range");
        }
    }
    t.to_csr()
}

fn symmetric(a: &Csr) -> Csr {
    let mut t = Triplets::new(a.nrows(), a.ncols()).expect("same dimensions");
    a.for_each(|i, j, v| {
        let _ = t.push(i, j, v);
        let _ = t.push(j, i, v);
    });
    t.to_csr()
}

/// Every page is on the node of the thread owning the element at its
/// middle (the last node for the mapped tail past the data).
fn bound<T>(masa: &Masa, name: &str, array: &SharedArray<T>, bounds: &[usize]) -> Check {
    let Some(region) = array.region() else { return Err(format!("{name} is not a NUMA array")) };
    let p = region.placement().map_err(|e| e.to_string())?;
    let (ps, es) = (region.page_size(), size_of::<T>());
    let last = masa.layout().node_of(masa.threads() - 1);
    let want = |page: usize| {
        let e = (page * ps + ps / 2) / es;
        Some(
            (0..masa.threads())
                .find(|&t| bounds[t] <= e && e < bounds[t + 1])
                .map_or(last, |t| masa.layout().node_of(t)),
        )
    };
    if p.not_resident() > 0 {
        return Err(format!("{name}: {} pages not resident: {p}", p.not_resident()));
    }
    expect_no_mismatches(name, p.pages().len(), &p.mismatches(want))
}

/// Pages follow the kernel's interleave over the team's nodes.
fn interleaved<T>(masa: &Masa, name: &str, array: &SharedArray<T>) -> Check {
    let Some(region) = array.region() else { return Err(format!("{name} is not a NUMA array")) };
    let p = region.placement().map_err(|e| e.to_string())?;
    let nodes: NodeSet = masa.layout().nodes();
    let (base, ps) = (region.as_ptr() as usize, region.page_size());
    expect_no_mismatches(
        &format!("{name} interleaved"),
        p.pages().len(),
        &p.mismatches(|i| Some(interleave_node(&nodes, base + i * ps, ps))),
    )
}

fn correct(masa: &Masa, mut op: impl TeamSpmv<f64>, a: &Csr) -> Check {
    let team = masa.team().map_err(|e| e.to_string())?;
    let mut x = op.input_vector().map_err(|e| e.to_string())?;
    for (i, xi) in x.iter_mut().enumerate() {
        *xi = (i % 13) as f64 - 6.0;
    }
    let mut y = op.output_vector().map_err(|e| e.to_string())?;
    op.apply(&team, &x, &mut y).map_err(|e| e.to_string())?;
    let mut want = vec![0.0; a.nrows()];
    a.mul_vec_seq(&x, &mut want).map_err(|e| e.to_string())?;
    match y.iter().zip(&want).position(|(g, w)| (g - w).abs() > 1e-9 * w.abs().max(1.0)) {
        Some(i) => Err(format!("y[{i}] = {} but the reference says {}", y[i], want[i])),
        None => Ok(()),
    }
}
