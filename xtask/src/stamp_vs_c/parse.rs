//! Reading both sides' output: the time a STAMP C program prints and the
//! line that shows its check passed; the JSON line skelaff's examples end
//! with.

use anyhow::{Result, anyhow, bail};

use super::workloads::{c_check_line, result_keys};

/// What one run reported.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Reported {
    /// The program's time of its timed phase.
    pub(crate) seconds: f64,
    /// Whether its self-check passed.
    pub(crate) check_passed: bool,
    /// The result both sides must agree on ([`result_keys`]), if the
    /// application has one.
    pub(crate) result: Option<u64>,
}

/// The time a STAMP program prints: the number after `=` or `:` on its
/// first line starting with `Time` or `Elapsed time` (vacation and genome
/// print `Time = 1.2`, kmeans `Time: 1.2 seconds`, intruder, labyrinth and
/// yada `Elapsed time = 1.2 [seconds]`). Its check passed when it exited
/// with 0 and printed its check line ([`c_check_line`]).
pub(crate) fn c_output(app: &str, stdout: &str, exited_ok: bool) -> Result<Reported> {
    let line = stdout
        .lines()
        .map(str::trim_start)
        .find(|l| l.starts_with("Time") || l.starts_with("Elapsed time"))
        .ok_or_else(|| anyhow!("{app}: no `Time` or `Elapsed time` line in its output"))?;
    let value = line
        .split_once(['=', ':'])
        .and_then(|(_, v)| v.split_whitespace().next())
        .ok_or_else(|| anyhow!("{app}: no value on the line `{line}`"))?;
    let seconds: f64 = value.parse().map_err(|_| anyhow!("{app}: `{value}` on the line `{line}` is not a number"))?;
    if !(seconds.is_finite() && seconds >= 0.0) {
        bail!("{app}: time `{value}` is not a duration");
    }
    let check_line = c_check_line(app).is_none_or(|want| stdout.lines().any(|l| l.trim_start().starts_with(want)));
    let result = match result_keys(app) {
        None => None,
        Some((prefix, _)) => {
            let line = stdout
                .lines()
                .map(str::trim_start)
                .find(|l| l.starts_with(prefix))
                .ok_or_else(|| anyhow!("{app}: no `{prefix}` line in its output"))?;
            let value = line.split_once('=').map_or("", |(_, v)| v.trim());
            Some(value.parse().map_err(|_| anyhow!("{app}: `{value}` on the line `{line}` is not a count"))?)
        }
    };
    Ok(Reported { seconds, check_passed: exited_ok && check_line, result })
}

/// The last line of a skelaff example's output with `--json`: its
/// `time_seconds` and `check_passed`.
pub(crate) fn skelaff_output(app: &str, stdout: &str, exited_ok: bool) -> Result<Reported> {
    let last = stdout.lines().rev().find(|l| !l.trim().is_empty()).ok_or_else(|| anyhow!("{app}: no output"))?;
    let v: serde_json::Value =
        serde_json::from_str(last).map_err(|e| anyhow!("{app}: the last line is not JSON ({e}): `{last}`"))?;
    let seconds = v["time_seconds"].as_f64().ok_or_else(|| anyhow!("{app}: no `time_seconds` number in `{last}`"))?;
    let passed = v["check_passed"].as_bool().ok_or_else(|| anyhow!("{app}: no `check_passed` flag in `{last}`"))?;
    let result = match result_keys(app) {
        None => None,
        Some((_, key)) => {
            let value = v.pointer(key).and_then(serde_json::Value::as_u64);
            Some(value.ok_or_else(|| anyhow!("{app}: no `{key}` count in `{last}`"))?)
        }
    };
    Ok(Reported { seconds, check_passed: exited_ok && passed, result })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_each_stamp_programs_time_and_check() {
        let vacation =
            "Initializing manager... done.\nRunning clients... done.\nTime = 0.123456\nChecking tables... done.\n";
        assert_eq!(
            c_output("vacation", vacation, true).unwrap(),
            Reported { seconds: 0.123456, check_passed: true, result: None }
        );
        let kmeans = "Reading input... \nTime: 2.5 seconds\n";
        assert_eq!(c_output("kmeans", kmeans, true).unwrap().seconds, 2.5);
        let yada = "Starting triangulation... done.\nElapsed time                    = 0.032\nFinal mesh size = 2678\n\
                    Final mesh is valid.\n";
        assert_eq!(
            c_output("yada", yada, true).unwrap(),
            Reported { seconds: 0.032, check_passed: true, result: None }
        );
        let intruder = "Elapsed time    = 1.500000 seconds\nNum found       = 123\n";
        assert_eq!(
            c_output("intruder", intruder, true).unwrap(),
            Reported { seconds: 1.5, check_passed: true, result: Some(123) }
        );
        assert!(c_output("intruder", "Elapsed time = 1.5\n", true).unwrap_err().to_string().contains("no `Num found`"));
        assert!(
            c_output("intruder", "Elapsed time = 1.5\nNum found = x\n", true)
                .unwrap_err()
                .to_string()
                .contains("not a count")
        );
        // A failed assert: the process did not exit with 0.
        assert!(!c_output("intruder", intruder, false).unwrap().check_passed);
        // The check line is missing: genome printed `no`.
        let genome = "Time = 3.0\nSequence matches gene: no\n";
        assert!(!c_output("genome", genome, true).unwrap().check_passed);
        assert!(c_output("labyrinth", "Paths routed = 3\n", true).unwrap_err().to_string().contains("no `Time`"));
        assert!(c_output("genome", "Time = fast\n", true).unwrap_err().to_string().contains("not a number"));
    }

    #[test]
    fn reads_skelaffs_json_line() {
        let out = "yada: time 0.3 s\n{\"app\":\"yada\",\"time_seconds\":0.25,\"check_passed\":true}\n\n";
        assert_eq!(
            skelaff_output("yada", out, true).unwrap(),
            Reported { seconds: 0.25, check_passed: true, result: None }
        );
        let intruder = "{\"time_seconds\":0.5,\"check_passed\":true,\"figures\":{\"flagged\":123}}";
        assert_eq!(skelaff_output("intruder", intruder, true).unwrap().result, Some(123));
        assert!(
            skelaff_output("intruder", "{\"time_seconds\":0.5,\"check_passed\":true}", true)
                .unwrap_err()
                .to_string()
                .contains("no `/figures/flagged` count")
        );
        let failed = "{\"time_seconds\":0.25,\"check_passed\":false}";
        assert!(!skelaff_output("yada", failed, false).unwrap().check_passed);
        assert!(skelaff_output("yada", "yada: time 0.3 s\n", true).unwrap_err().to_string().contains("not JSON"));
        assert!(
            skelaff_output("yada", "{\"check_passed\":true}", true).unwrap_err().to_string().contains("time_seconds")
        );
    }
}
