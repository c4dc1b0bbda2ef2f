//! Bulk operations on every implementation, and replicas handled as such
//! with several replicas on this machine's one node.

use std::sync::Arc;

use super::*;
use crate::hints::{Choice, Implementation};
use crate::select::{PageChoice, PageReason, Reason, Selection};
use crate::storage::{self, LIVE};
use crate::{AccessHints, Partition};
use skelaff_numa_alloc::Topology;

/// A replicated array of `len` u64s with three replicas on this thread's
/// node; the calling thread reads replica 2, the master is replica 0.
fn three_replicas(len: usize) -> Array<u64> {
    let topo = Topology::get().unwrap();
    let node = crate::home::home_node();
    let storage = storage::replicated_for_test(topo, len * 8, node, 3);
    let selection = Selection {
        implementation: Implementation::Replicated,
        reason: Reason::Requested,
        pages: PageChoice::Base { size: topo.page_size() },
        page_reason: PageReason::Off,
        hints: AccessHints::new().read_only(),
    };
    Array { storage, len, selection, master_ahead: false, _elem: core::marker::PhantomData }
}

fn all_choices() -> [Choice; 4] {
    [Choice::Single, Choice::Distributed, Choice::Replicated, Choice::Partitioned]
}

/// Large enough to run on the team (several chunks), not just the caller.
const BIG: usize = 3 << 20;

#[test]
fn fill_init_and_copy_write_every_element_of_every_implementation() {
    let data: Vec<u64> = (0..BIG as u64).map(|i| i.wrapping_mul(0x9E37_79B9_7F4A_7C15)).collect();
    for choice in all_choices() {
        let mut a = Array::<u64>::builder(BIG).choice(choice).build().unwrap();
        a.fill(42);
        assert!(a.as_slice().iter().all(|&x| x == 42), "{choice}");
        a.init_from(&data).unwrap();
        assert_eq!(a.as_slice(), &data[..], "{choice}");
        let mut b = Array::<u64>::builder(BIG).choice(choice).build().unwrap();
        b.copy_from(&a).unwrap();
        assert_eq!(b.as_slice(), &data[..], "{choice}");
        // Small arrays run on the caller alone.
        let mut s = Array::<u16>::builder(100).choice(choice).build().unwrap();
        s.fill(7);
        assert_eq!(s.as_slice(), &[7u16; 100][..]);
    }
}

#[test]
fn lengths_must_match() {
    let mut a = Array::<u32>::builder(10).build().unwrap();
    let e = a.init_from(&[1, 2, 3]).unwrap_err();
    assert_eq!(e.to_string(), "init_from: the source has 3 elements but the array has 10; lengths must be equal");
    let b = Array::<u32>::builder(11).build().unwrap();
    assert!(matches!(a.copy_from(&b), Err(Error::LengthMismatch { source_len: 11, array_len: 10, .. })));
    let r = a.init_from_async(vec![0u32; 3]).unwrap_err();
    assert!(r.to_string().contains("the source has 3 elements"));
    let a = *r.array;
    let r = a.copy_from_async(Arc::new(b)).unwrap_err();
    assert_eq!(r.array.len(), 10);
}

#[test]
fn replicas_get_every_set_and_repl_sync_propagates_the_master() {
    let n = BIG;
    let mut a = three_replicas(n);
    assert_eq!(a.copies(), 3);
    a.set(5, 99).unwrap();
    for r in 0..3 {
        // SAFETY: replica `r` holds `n` elements; nothing writes meanwhile.
        let rep = unsafe { core::slice::from_raw_parts(a.copy_ptr(r), n) };
        assert_eq!(rep[5], 99, "set reaches replica {r}");
    }
    // Writes to the master reach replica 2 (which this thread reads) at
    // repl_sync; until then reads come from the master.
    a.as_mut_slice().iter_mut().enumerate().for_each(|(i, x)| *x = i as u64 * 3);
    // SAFETY: replica 2 holds `n` elements; nothing writes meanwhile.
    let replica2 = unsafe { core::slice::from_raw_parts(a.copy_ptr(2), n) };
    assert_eq!(replica2[7], 0);
    assert_eq!(a.as_slice().as_ptr(), a.copy_ptr(0).cast_const(), "reads go to the master while it is ahead");
    assert_eq!(a.get(7), Some(21));
    // A copy from it reads the master too.
    let mut c = Array::<u64>::builder(n).choice(Choice::Single).build().unwrap();
    c.copy_from(&a).unwrap();
    assert_eq!(c.get(7), Some(21));
    a.repl_sync();
    assert_eq!(a.as_slice().as_ptr(), a.copy_ptr(2).cast_const(), "after repl_sync this thread reads its replica");
    assert_eq!(a.get(7), Some(21));
    for r in 0..3 {
        // SAFETY: as above.
        let rep = unsafe { core::slice::from_raw_parts(a.copy_ptr(r), n) };
        assert!(rep.iter().enumerate().all(|(i, &x)| x == i as u64 * 3), "replica {r} equals the master");
    }
    // Async: the same, through a handle.
    a.as_mut_slice().fill(1);
    let a = a.repl_sync_async().wait();
    assert!(a.as_slice().iter().all(|&x| x == 1));
    // A replicated source: each destination reads the replica of its node.
    let mut b = Array::<u64>::builder(n).choice(Choice::Distributed).build().unwrap();
    b.copy_from(&a).unwrap();
    assert!(b.as_slice().iter().all(|&x| x == 1));
}

#[test]
fn async_operations_are_complete_when_waited_on() {
    for choice in all_choices() {
        let data: Arc<[u64]> = (0..BIG as u64).collect::<Vec<_>>().into();
        let a = Array::<u64>::builder(BIG).choice(choice).build().unwrap();
        let a = a.init_from_async(data.clone()).unwrap().wait();
        assert_eq!(a.as_slice(), &data[..], "{choice}");
        let src = Arc::new(a);
        let pending = Array::<u64>::builder(BIG).choice(choice).build().unwrap().copy_from_async(src.clone()).unwrap();
        assert!(Arc::get_mut(&mut src.clone()).is_none(), "the source is shared while the copy runs");
        let b = pending.wait();
        assert_eq!(b.as_slice(), &data[..], "{choice}");
        assert_eq!(Arc::strong_count(&src), 1);
        let c = b.fill_async(3).wait();
        assert!(c.as_slice().iter().all(|&x| x == 3));
    }
}

#[test]
fn dropping_an_unwaited_handle_waits_then_frees_without_leaking() {
    let before = LIVE.with(|c| c.get());
    let src = Arc::new(Array::<u64>::builder(8 * BIG).build_from(&vec![5; 8 * BIG]).unwrap());
    assert_eq!(LIVE.with(|c| c.get()), before + 1);
    for _ in 0..4 {
        let dst = Array::<u64>::builder(8 * BIG).build().unwrap();
        assert_eq!(LIVE.with(|c| c.get()), before + 2);
        let pending = dst.copy_from_async(src.clone()).unwrap();
        assert_eq!(Arc::strong_count(&src), 2);
        drop(pending);
        // The drop waited for the copy, freed the destination and released the source.
        assert_eq!(LIVE.with(|c| c.get()), before + 1, "the destination was freed");
        assert_eq!(Arc::strong_count(&src), 1, "the source was released");
    }
    let pending = Array::<u64>::builder(8 * BIG).build().unwrap().init_from_async(vec![1u64; 8 * BIG]).unwrap();
    let dbg = format!("{pending:?}");
    assert!(dbg.starts_with("Pending"), "{dbg}");
    drop(pending);
    drop(src);
    assert_eq!(LIVE.with(|c| c.get()), before);
}

#[test]
fn parts_mut_writes_land_in_the_master() {
    let mut a = three_replicas(1000);
    let p = Partition::new(1000, &[0, 0, 0, 0]).unwrap();
    {
        let parts = a.parts_mut(&p).unwrap();
        for t in 0..4 {
            parts.take(t).unwrap().fill(t as u64 + 1);
        }
    }
    a.repl_sync();
    assert_eq!(a.get(0), Some(1));
    assert_eq!(a.get(999), Some(4));
    assert!(matches!(a.parts_mut(&Partition::new(10, &[0]).unwrap()), Err(Error::PartitionLength { .. })));
}

mod model {
    use super::*;
    use proptest::prelude::*;

    #[derive(Clone, Debug)]
    enum Op {
        Set(usize, u64),
        MasterWrite(usize, u64),
        Sync,
        Fill(u64),
        CopyOut,
        CopyIn(u64),
    }

    fn op(len: usize) -> impl Strategy<Value = Op> {
        prop_oneof![
            (0..len, any::<u64>()).prop_map(|(i, v)| Op::Set(i, v)),
            (0..len, any::<u64>()).prop_map(|(i, v)| Op::MasterWrite(i, v)),
            Just(Op::Sync),
            any::<u64>().prop_map(Op::Fill),
            Just(Op::CopyOut),
            any::<u64>().prop_map(Op::CopyIn),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

        /// Three replicas (the reader's is not the master): whatever mix of
        /// element writes, master writes, syncs and copies, reads and copies
        /// out see the model, and after a sync every replica equals it.
        #[test]
        fn replicated_arrays_never_read_stale_values(
            (len, ops) in (1usize..3000).prop_flat_map(|len| (Just(len), proptest::collection::vec(op(len), 1..30))),
        ) {
            let mut a = three_replicas(len);
            let mut model = vec![0u64; len];
            for op in ops {
                match op {
                    Op::Set(i, v) => {
                        a.set(i, v).unwrap();
                        model[i] = v;
                    }
                    Op::MasterWrite(i, v) => {
                        a.as_mut_slice()[i] = v;
                        model[i] = v;
                    }
                    Op::Sync => a.repl_sync(),
                    Op::Fill(v) => {
                        a.fill(v);
                        model.fill(v);
                    }
                    Op::CopyOut => {
                        let mut out = Array::<u64>::builder(len).choice(Choice::Single).build().unwrap();
                        out.copy_from(&a).unwrap();
                        prop_assert_eq!(out.as_slice(), &model[..]);
                    }
                    Op::CopyIn(seed) => {
                        model = (0..len as u64).map(|i| i ^ seed).collect();
                        let src = Array::<u64>::builder(len).choice(Choice::Single).build_from(&model).unwrap();
                        a.copy_from(&src).unwrap();
                    }
                }
                prop_assert_eq!(a.as_slice(), &model[..]);
                prop_assert_eq!(a.get(len - 1), Some(model[len - 1]));
            }
            a.repl_sync();
            for r in 0..3 {
                // SAFETY: replica `r` holds `len` elements; nothing writes meanwhile.
                let rep = unsafe { core::slice::from_raw_parts(a.copy_ptr(r), len) };
                prop_assert_eq!(rep, &model[..]);
            }
        }
    }
}
