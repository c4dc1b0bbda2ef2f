//! Arrays against a `Vec` model under random operations, for every
//! implementation (on this machine's nodes).

use proptest::prelude::*;
use skelaff_arrays::{Array, Choice, LargePages, Partition};

#[derive(Clone, Debug)]
enum Op {
    Set(usize, u32),
    Get(usize),
    Fill(u32),
    InitFrom(u32),
    CopyFrom(Choice, u32),
    MasterWrite(usize, u32),
    Parts(usize, u32),
}

fn choice() -> impl Strategy<Value = Choice> {
    prop_oneof![Just(Choice::Single), Just(Choice::Distributed), Just(Choice::Replicated), Just(Choice::Partitioned)]
}

fn op(len: usize) -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (0..len, any::<u32>()).prop_map(|(i, v)| Op::Set(i, v)),
        4 => (0..len + 3).prop_map(Op::Get),
        1 => any::<u32>().prop_map(Op::Fill),
        1 => any::<u32>().prop_map(Op::InitFrom),
        1 => (choice(), any::<u32>()).prop_map(|(c, s)| Op::CopyFrom(c, s)),
        2 => (0..len, any::<u32>()).prop_map(|(i, v)| Op::MasterWrite(i, v)),
        1 => (1usize..5, any::<u32>()).prop_map(|(t, s)| Op::Parts(t, s)),
    ]
}

fn pattern(len: usize, seed: u32) -> Vec<u32> {
    (0..len as u32).map(|i| i.wrapping_mul(2_654_435_761).wrapping_add(seed)).collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn arrays_behave_like_vecs(
        choice in choice(),
        (len, ops) in (1usize..20_000).prop_flat_map(|len| (Just(len), proptest::collection::vec(op(len), 1..40))),
    ) {
        let mut a = Array::<u32>::builder(len).choice(choice).large_pages(LargePages::Off).build().unwrap();
        let mut model = vec![0u32; len];
        for op in ops {
            match op {
                Op::Set(i, v) => {
                    a.set(i, v).unwrap();
                    model[i] = v;
                }
                Op::Get(i) => prop_assert_eq!(a.get(i), model.get(i).copied()),
                Op::Fill(v) => {
                    a.fill(v);
                    model.fill(v);
                }
                Op::InitFrom(seed) => {
                    model = pattern(len, seed);
                    a.init_from(&model).unwrap();
                }
                Op::CopyFrom(c, seed) => {
                    model = pattern(len, seed);
                    let src = Array::<u32>::builder(len).choice(c).build_from(&model).unwrap();
                    a.copy_from(&src).unwrap();
                }
                Op::MasterWrite(i, v) => {
                    a.as_mut_slice()[i] = v;
                    a.repl_sync();
                    model[i] = v;
                }
                Op::Parts(threads, seed) => {
                    let p = Partition::new(len, &vec![0; threads]).unwrap();
                    let parts = a.parts_mut(&p).unwrap();
                    for t in (0..threads).rev() {
                        for (x, i) in parts.take(t).unwrap().iter_mut().zip(p.thread_range(t)) {
                            *x = seed ^ i as u32;
                        }
                    }
                    drop(parts);
                    a.repl_sync();
                    model.iter_mut().enumerate().for_each(|(i, x)| *x = seed ^ i as u32);
                }
            }
            prop_assert_eq!(a.as_slice(), &model[..]);
        }
        for node in a.replica_nodes().to_vec() {
            prop_assert_eq!(a.replica(node).unwrap(), &model[..], "replica on node {} equals the master", node);
        }
    }
}
