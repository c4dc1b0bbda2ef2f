//! The workloads of the comparison: STAMP's standard command lines (from
//! its READMEs and the SkelAff paper's setup) and its simulator ones, for
//! the C programs and skelaff's ports alike.

/// An input file a workload reads: `file` in STAMP's `<app>/inputs/`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Input {
    /// None: the program generates its data from its flags.
    Generated,
    /// One file, passed with `-i`.
    File(&'static str),
    /// A Triangle mesh: `PREFIX.node`, `.ele` and `.poly`, passed as `-i PREFIX`.
    Mesh(&'static str),
}

/// One workload: an application with its flags and input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Workload {
    /// Its name in the table.
    pub(crate) name: &'static str,
    /// The STAMP directory and the skelaff example (they have the same names).
    pub(crate) app: &'static str,
    /// Flags both programs take, before the input and the thread count.
    pub(crate) flags: &'static [&'static str],
    pub(crate) input: Input,
    /// The flag that sets the number of threads.
    pub(crate) thread_flag: &'static str,
}

const fn w(
    name: &'static str,
    app: &'static str,
    flags: &'static [&'static str],
    input: Input,
    thread_flag: &'static str,
) -> Workload {
    Workload { name, app, flags, input, thread_flag }
}

/// STAMP's inputs for runs without a simulator (yada's standard mesh is
/// `ttimeu100000.2`: the `ttimeu1000000.2` its README names is missing
/// from the public copy).
pub(crate) const STANDARD: [Workload; 8] = [
    w("vacation-low", "vacation", &["-n2", "-q90", "-u98", "-r1048576", "-t4194304"], Input::Generated, "-c"),
    w("vacation-high", "vacation", &["-n4", "-q60", "-u90", "-r1048576", "-t4194304"], Input::Generated, "-c"),
    w("kmeans-low", "kmeans", &["-m40", "-n40", "-t0.00001"], Input::File("random-n65536-d32-c16.txt"), "-p"),
    w("kmeans-high", "kmeans", &["-m15", "-n15", "-t0.00001"], Input::File("random-n65536-d32-c16.txt"), "-p"),
    w("intruder", "intruder", &["-a10", "-l128", "-n262144", "-s1"], Input::Generated, "-t"),
    w("genome", "genome", &["-g16384", "-s64", "-n16777216"], Input::Generated, "-t"),
    w("labyrinth", "labyrinth", &[], Input::File("random-x512-y512-z7-n512.txt"), "-t"),
    w("yada", "yada", &["-a15"], Input::Mesh("ttimeu100000.2"), "-t"),
];

/// STAMP's simulator inputs (`--small`).
pub(crate) const SIMULATOR: [Workload; 8] = [
    w("vacation-low", "vacation", &["-n2", "-q90", "-u98", "-r16384", "-t4096"], Input::Generated, "-c"),
    w("vacation-high", "vacation", &["-n4", "-q60", "-u90", "-r16384", "-t4096"], Input::Generated, "-c"),
    w("kmeans-low", "kmeans", &["-m40", "-n40", "-t0.05"], Input::File("random-n2048-d16-c16.txt"), "-p"),
    w("kmeans-high", "kmeans", &["-m15", "-n15", "-t0.05"], Input::File("random-n2048-d16-c16.txt"), "-p"),
    w("intruder", "intruder", &["-a10", "-l4", "-n2038", "-s1"], Input::Generated, "-t"),
    w("genome", "genome", &["-g256", "-s16", "-n16384"], Input::Generated, "-t"),
    w("labyrinth", "labyrinth", &[], Input::File("random-x32-y32-z3-n96.txt"), "-t"),
    w("yada", "yada", &["-a20"], Input::Mesh("633.2"), "-t"),
];

/// The STAMP applications the comparison builds.
pub(crate) const APPS: [&str; 6] = ["vacation", "kmeans", "intruder", "genome", "labyrinth", "yada"];

/// The result both sides must agree on, where their data are the same:
/// the C program's line that prints it and where skelaff's JSON holds
/// it. intruder's stream is STAMP's, so both find the same attack
/// flows; the other applications differ in their data (vacation, genome),
/// their order of work (labyrinth, yada) or print no result (kmeans). The key
/// is a JSON pointer.
pub(crate) fn result_keys(app: &str) -> Option<(&'static str, &'static str)> {
    match app {
        "intruder" => Some(("Num found", "/figures/flagged")),
        _ => None,
    }
}

/// The line by which a C program shows that its self-check ran and passed
/// (besides exiting with 0: STAMP checks with `assert`). kmeans has no
/// self-check; yada's `mesh_check` is compiled out in STAMP 0.9.10 and
/// prints "valid" unconditionally.
pub(crate) fn c_check_line(app: &str) -> Option<&'static str> {
    match app {
        "vacation" => Some("Checking tables... done."),
        "genome" => Some("Sequence matches gene: yes"),
        "intruder" => Some("Num found"),
        "labyrinth" => Some("Verification passed."),
        "yada" => Some("Final mesh is valid."),
        _ => None,
    }
}
