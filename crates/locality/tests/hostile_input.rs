//! Profiles and placement plans from damaged or hostile files: an error
//! naming the file, and no allocation of what a header promises.

use skelaff_locality::{PlacementPlan, Profile};

use skelaff_testkit::peak;

#[global_allocator]
static PEAK: peak::Peak = peak::Peak;

/// The most a reader may allocate at once for a file of a few hundred bytes.
const SMALL: usize = 4 << 20;

const MACHINE: &str = r#"{"name":"2x1","cpus_per_node":[1,1],"distances":[[10,20],[20,10]]}"#;

/// A profile header that promises 10^12 records before one record: the
/// reader reserves at most 2^16 (it reserved 2^20, 32 MiB, before).
#[test]
fn a_profile_promising_10_to_the_12_records_allocates_little() {
    let header = format!(
        r#"{{"machine":{MACHINE},"page_size":4096,"app":"a","placement":"bind","threads":1,"sampling":{{"period":64,"capacity":65536}},"seen":0,"discarded":0,"attribution":"none","records":1000000000000}}"#
    );
    let mut file = format!("SKELAFF-PROFILE 1\n{header}\n").into_bytes();
    file.extend([0u8; 24]);
    let (r, bytes) = peak::largest(|| Profile::read_from(&file[..], "p.prof"));
    assert!(bytes <= SMALL, "one allocation of {bytes} bytes");
    let e = r.unwrap_err().to_string();
    assert!(e.starts_with("p.prof is truncated: its header promises 1000000000000 records"), "{e}");
}

/// The same for a placement plan (2^20 pages, 16 MiB, before); its errors
/// name the line.
#[test]
fn a_plan_promising_10_to_the_12_pages_allocates_little() {
    let header =
        format!(r#"{{"machine":{MACHINE},"app":"a","scheme":"oracle-cog","page_size":4096,"pages":1000000000000}}"#);
    let text = format!("SKELAFF-PLAN 1\n{header}\n0x10 1\n");
    let (r, bytes) = peak::largest(|| PlacementPlan::from_text(&text, "p.plan"));
    assert!(bytes <= SMALL, "one allocation of {bytes} bytes");
    let e = r.unwrap_err().to_string();
    assert!(e.starts_with("p.plan is truncated: its header promises 1000000000000 records, the file holds 1"), "{e}");
    let e = PlacementPlan::from_text(&text.replace("0x10 1", "0x10 2"), "p.plan").unwrap_err().to_string();
    assert_eq!(e, "p.plan, line 3: record 0: node 2 but 2x1 has nodes 0-1");
}
