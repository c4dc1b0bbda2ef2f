//! Bad input gets a clear error, never a panic.

use skelaff_arrays::{AccessHints, Array, Choice, Error, Partition};
use skelaff_numa_alloc::{MAX_NODES, Topology};

#[test]
fn a_replica_that_cannot_fit_is_refused_before_anything_is_mapped() {
    let e = Array::<u8>::builder(1 << 46).choice(Choice::Replicated).build().unwrap_err();
    assert!(matches!(e, Error::ReplicaDoesNotFit { copy_bytes, .. } if copy_bytes == 1 << 46), "{e}");
    let msg = e.to_string();
    assert!(msg.starts_with("a replica of 64 TiB does not fit on node "), "{msg}");
    assert!(msg.contains("use a distributed or partitioned array"), "{msg}");
    // Chosen automatically, the same array is distributed instead, and says why.
    let sel = skelaff_arrays::select::select(
        &skelaff_arrays::select::Request {
            hints: AccessHints::new().read_only(),
            choice: Choice::Auto,
            large_pages: skelaff_arrays::LargePages::Off,
            bytes: 1 << 46,
            limits: Default::default(),
            largest_partition: None,
            single_node: None,
        },
        &skelaff_arrays::select::MachineMemory::read(Topology::get().unwrap()).unwrap(),
    )
    .unwrap();
    assert!(sel.to_string().starts_with("distributed: read-only, but a copy (64 TiB) does not fit on node"), "{sel}");
}

#[test]
fn a_budget_refuses_requested_replication() {
    let e = Array::<u64>::builder(1 << 20).choice(Choice::Replicated).memory_budget(1 << 20).build().unwrap_err();
    assert!(e.to_string().contains("exceed the memory budget of 1 MiB"), "{e}");
}

#[test]
fn a_node_that_does_not_exist_is_named() {
    let e = Array::<u32>::builder(10).choice(Choice::Single).node(MAX_NODES + 3).build().unwrap_err();
    let msg = e.to_string();
    assert!(msg.contains(&format!("NUMA node {} does not exist", MAX_NODES + 3)), "{msg}");
    let p = Partition::new(10, &[0, 999]).unwrap();
    let e = Array::<u32>::builder(10).choice(Choice::Partitioned).partition(&p).build().unwrap_err();
    assert!(e.to_string().contains("NUMA node 999 does not exist"), "{e}");
}

#[test]
fn zero_length_overflowing_and_zero_sized_arrays_are_refused() {
    assert_eq!(Array::<u32>::builder(0).build().unwrap_err().to_string(), Error::ZeroLength.to_string());
    let e = Array::<u64>::builder(usize::MAX / 4).build().unwrap_err();
    assert!(matches!(e, Error::SizeOverflow { elem_size: 8, .. }), "{e}");
    assert!(e.to_string().contains("overflow the address space"));
    let e = Array::<[u8; 0]>::builder(10).build().unwrap_err();
    assert!(e.to_string().contains("has size zero"), "{e}");
}

#[test]
fn a_partition_of_another_length_is_refused() {
    let p = Partition::new(99, &[0]).unwrap();
    let e = Array::<u32>::builder(100).choice(Choice::Partitioned).partition(&p).build().unwrap_err();
    assert_eq!(e.to_string(), "the partition covers 99 elements but the array has 100");
    assert!(Partition::new(10, &[]).unwrap_err().to_string().contains("at least one thread"));
}

#[test]
fn out_of_bounds_access_is_an_error_or_none() {
    let mut a = Array::<u16>::builder(5).build().unwrap();
    assert_eq!(a.get(5), None);
    assert_eq!(a.set(5, 1).unwrap_err().to_string(), "index 5 is outside an array of 5 elements");
}

#[test]
fn unknown_names_list_the_allowed_ones() {
    let e = "vec".parse::<Choice>().unwrap_err().to_string();
    assert_eq!(
        e,
        "unknown array implementation `vec`; expected one of: auto, single, distributed, replicated, partitioned"
    );
}
