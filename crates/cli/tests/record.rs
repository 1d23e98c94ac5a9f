//! `critpath record` and `analyze perf.data` on real programs recorded with
//! the real kernel tracer. Each test skips, saying why, only where perf or
//! tracefs cannot work (not root, no perf, no C compiler); as root on a
//! machine with perf they run.

mod common;
use common::{cc, example, json_of, recording_slot, run, stdout_of, thread_states};
use serde_json::Value;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

fn compile(dir: &Path, name: &str) -> PathBuf {
    cc(dir, &example(&format!("os/{name}.c")), name, &[])
}

fn record(dir: &Path, name: &str, cmd: &[&str]) -> (PathBuf, std::process::Output) {
    common::record(dir, name, &[], cmd)
}

/// A thread's `key` (`critical_ns`, `total_ns`) summed over its rows of
/// `state`.
fn ns_of(v: &Value, comm: &str, state: &str, key: &str) -> u64 {
    thread_states(v, comm)
        .iter()
        .filter(|s| s["state"] == state)
        .map(|s| s[key].as_u64().unwrap())
        .sum()
}

/// The running time at stake in the lost switch-ins critpath reports for
/// the thread named `comm` (0 when none were lost).
fn lost_switch_in_ns(v: &Value, comm: &str) -> u64 {
    let prefix = format!("{comm}:");
    let diags = v["diagnostics"].as_array().unwrap();
    diags
        .iter()
        .filter(|d| d["sm"].as_str().is_some_and(|s| s.starts_with(&prefix)))
        .filter_map(|d| {
            let m = d["message"].as_str()?;
            let rest = &m[m.find("up to ")? + 6..];
            rest.split(' ').next()?.parse::<u64>().ok()
        })
        .sum()
}

fn criticality(v: &Value, comm: &str, state: &str) -> f64 {
    thread_states(v, comm)
        .iter()
        .filter(|s| s["state"] == state)
        .map(|s| s["criticality"].as_f64().unwrap())
        .sum()
}

#[test]
fn pipeline_bottleneck_is_the_middle_stage() {
    let Some(_slot) = recording_slot() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let bin = compile(dir.path(), "pipeline");
    let (data, o) = record(dir.path(), "pipeline", &[bin.to_str().unwrap()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(String::from_utf8_lossy(&o.stdout).contains("pipeline: 200 items"));
    let v = json_of(&["analyze", data.to_str().unwrap(), "--json"]);
    // Each stage's work is measured in its own CPU time, so a loaded
    // machine (other tests, other programs) adds runnable time, and with
    // it other programs' running time, but never changes the work: what
    // must hold is about the stages' running time, not the path's shares.
    // The bottleneck's work is on the path, most of it (nearly all on an
    // idle machine; on a loaded one, the other stages' waits for a CPU
    // take turns with it) ...
    let (crit2, total2) = (
        ns_of(&v, "stage2", "running", "critical_ns"),
        ns_of(&v, "stage2", "running", "total_ns"),
    );
    assert!(total2 >= 60_000_000, "stage2 ran {total2} ns");
    assert!(crit2 as f64 > 0.5 * total2 as f64, "{}", v["states"]);
    // ... and it is the program's most critical running state.
    let program_top = v["states"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["sm"].as_str().unwrap().starts_with("stage") && s["state"] == "running")
        .unwrap();
    assert!(
        program_top["sm"].as_str().unwrap().starts_with("stage2:"),
        "{program_top}"
    );
    // 200 items x 300 us of stage2 work: the path is at least 60 ms.
    let len = v["critical_path"]["length_ns"].as_u64().unwrap();
    assert!(len >= 60_000_000, "path {len} ns");
    // The path runs from the command's start to its main thread's exit.
    let start = v["critical_path"]["start"]["sm"].as_str().unwrap();
    assert!(start.starts_with("pipeline:"), "{start}");
    assert_eq!(
        v["critical_path"]["end"]["sm"],
        v["critical_path"]["start"]["sm"]
    );
    // Stage threads carry the names they gave themselves (the last comm).
    for s in ["stage1", "stage3"] {
        assert!(!thread_states(&v, s).is_empty(), "no {s} thread");
        // 50 us of work per item against stage2's 300 us. On a loaded
        // machine a stage's running stretches (the hypervisor steals its
        // CPU) and, while stage2 waits for a CPU that stage1 or stage3
        // holds, their running is on the path: what must hold is that a
        // light stage never outweighs the bottleneck and is never more
        // critical than it ran.
        let crit = ns_of(&v, s, "running", "critical_ns");
        let total = ns_of(&v, s, "running", "total_ns");
        assert!(crit < crit2, "{s}: {crit} ns critical, stage2 {crit2}");
        assert!(crit <= total, "{s}: {crit} ns critical of {total}");
    }
}

/// The pid of the first `namesake` exec in time, in a recording.
fn first_namesake_exec(data: &Path) -> Option<u32> {
    let o = Command::new("perf")
        .args(["script", "--show-task-events", "-i"])
        .arg(data)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&o.stdout);
    let line = text
        .lines()
        .find(|l| l.contains("PERF_RECORD_COMM exec: namesake:"))?;
    let pid = line.rsplit(':').next()?.split('/').next()?;
    pid.parse().ok()
}

/// Recording is system-wide: a program of the same name that another
/// process runs meanwhile (two loops exec `namesake rival` without pause)
/// is not the recorded command, even when it exec'd first: the path starts
/// and ends on the process `critpath record` started (it prints its pid,
/// and renames itself `recorded`). Recorded again (at most 10 times) until
/// a namesake exec'd in the recording before the command did (perf takes
/// tens of milliseconds from enabling its events to letting the command
/// exec while the loops run; every try so far needed one recording).
#[test]
fn a_program_of_the_same_name_run_meanwhile_is_not_the_command() {
    let Some(_slot) = recording_slot() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../os/tests/fixtures/namesake.c");
    let bin = cc(dir.path(), src.to_str().unwrap(), "namesake", &[]);
    for _ in 0..10 {
        let stop = std::sync::atomic::AtomicBool::new(false);
        let (data, o) = std::thread::scope(|s| {
            for _ in 0..2 {
                s.spawn(|| {
                    while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                        let _ = Command::new(&bin).arg("rival").status();
                    }
                });
            }
            let done = record(dir.path(), "namesake", &[bin.to_str().unwrap()]);
            stop.store(true, std::sync::atomic::Ordering::Relaxed);
            done
        });
        let stdout = String::from_utf8_lossy(&o.stdout);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let pid: u32 = stdout.trim().rsplit(' ').next().unwrap().parse().unwrap();
        let v = json_of(&["analyze", data.to_str().unwrap(), "--json"]);
        let path = &v["critical_path"];
        let command = format!("recorded:{pid}");
        assert_eq!(path["start"]["sm"], command.as_str(), "{path}");
        assert_eq!(path["end"]["sm"], command.as_str(), "{path}");
        if first_namesake_exec(&data).is_some_and(|first| first != pid) {
            return;
        }
    }
    panic!("in 10 recordings, no namesake exec'd before the command");
}

#[test]
fn a_busy_thread_off_the_path_gets_no_criticality() {
    let Some(_slot) = recording_slot() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let bin = compile(dir.path(), "busy");
    let (data, o) = record(dir.path(), "busy", &[bin.to_str().unwrap()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v = json_of(&["analyze", data.to_str().unwrap(), "--json"]);
    // The worker's 100 ms of CPU time are on the path, all of them, however
    // loaded the machine is (its runnable time goes to the path too, or to
    // whoever held its CPU).
    let (crit, ran) = (
        ns_of(&v, "worker", "running", "critical_ns"),
        ns_of(&v, "worker", "running", "total_ns"),
    );
    // Under load its switch-in can come from a task whose events the
    // recording lacks: critpath says so, with the running time at stake.
    let lost = lost_switch_in_ns(&v, "worker");
    assert!(
        ran + lost >= 95_000_000,
        "worker ran {ran} ns, {lost} ns at stake"
    );
    assert!(crit as f64 > 0.9 * ran as f64, "{}", v["states"]);
    // The burner ran beside it (as long on an idle machine; on a loaded
    // one, the scheduler shares the CPUs evenly between the two) ...
    let burned = ns_of(&v, "burner", "running", "total_ns");
    assert!(burned > ran / 5, "burner ran {burned} ns");
    // ... and bounds nothing: it can be on the path only while it held a
    // CPU that a thread on the path (the worker, or the main thread at its
    // start and after the join) waited for, never longer than they waited.
    let burner_crit: u64 = thread_states(&v, "burner")
        .iter()
        .map(|s| s["critical_ns"].as_u64().unwrap())
        .sum();
    let waited =
        ns_of(&v, "worker", "runnable", "total_ns") + ns_of(&v, "busy", "runnable", "total_ns");
    let len = v["critical_path"]["length_ns"].as_u64().unwrap();
    assert!(
        burner_crit <= waited + len / 50,
        "burner critical {burner_crit} ns, worker and main waited {waited} ns"
    );
}

#[test]
fn a_sleep_lies_on_the_path_through_its_timer() {
    let Some(_slot) = recording_slot() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let (data, o) = record(dir.path(), "sleep", &["sleep", "0.2"]);
    assert!(o.status.success());
    let v = json_of(&["analyze", data.to_str().unwrap(), "--json"]);
    let len = v["critical_path"]["length_ns"].as_u64().unwrap();
    assert!((200_000_000..400_000_000).contains(&len), "path {len} ns");
    let top = &v["states"][0];
    if top["sm"] != "timer:hrtimer_wakeup" || top["criticality"].as_f64().unwrap() <= 0.9 {
        // Seen once in about 50 runs, not reproduced since: keep the
        // recording where it can be read after the test.
        let kept = Path::new(env!("CARGO_TARGET_TMPDIR")).join("sleep-not-on-its-timer.data");
        let _ = std::fs::copy(&data, &kept);
        panic!(
            "the sleep is not charged to its timer ({}): top {top}, next {}; diagnostics {}",
            kept.display(),
            v["states"][1],
            v["diagnostics"]
        );
    }
    // The recording kept the timer callbacks' names next to it, and the
    // analysis takes them from there (not from this machine's kallsyms).
    let syms = std::fs::read_to_string(dir.path().join("sleep.data.syms")).unwrap();
    assert!(
        syms.lines().any(|l| l.ends_with(" hrtimer_wakeup")),
        "{syms}"
    );
    let renamed = syms.replace(" hrtimer_wakeup", " saved_name_of_hrtimer_wakeup");
    std::fs::write(dir.path().join("sleep.data.syms"), renamed).unwrap();
    let v = json_of(&["analyze", data.to_str().unwrap(), "--json"]);
    assert_eq!(v["states"][0]["sm"], "timer:saved_name_of_hrtimer_wakeup");
}

#[test]
fn the_command_keeps_its_input_output_and_exit_status() {
    let Some(_slot) = recording_slot() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("io.data");
    let mut child = Command::new(env!("CARGO_BIN_EXE_critpath"))
        .args(["record", "-o", out.to_str().unwrap(), "--"])
        .args(["sh", "-c", "read x; echo \"got $x\"; echo oops >&2; exit 7"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(b"hello\n").unwrap();
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(7));
    assert_eq!(String::from_utf8_lossy(&o.stdout), "got hello\n");
    assert!(String::from_utf8_lossy(&o.stderr).contains("oops"));
    assert!(out.metadata().unwrap().len() > 0);
    // A command that does not exist: a clear error, nothing run.
    let o = run(&[
        "record",
        "-o",
        out.to_str().unwrap(),
        "--",
        "no-such-command-xyz",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("command not found"));
}

/// A command that cannot be executed (a file without the execute bit, a
/// directory) is refused before anything runs, as a missing one is: a
/// clear error, exit 2, no recording. (Checked before perf is looked for,
/// so it needs no privilege.)
#[test]
fn a_command_that_cannot_be_executed_is_refused_before_recording() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("noexec.sh");
    std::fs::write(&script, "#!/bin/sh\necho ran\n").unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o644)).unwrap();
    let out = dir.path().join("x.data");
    for (cmd, why) in [
        (script.to_str().unwrap(), "permission denied"),
        (dir.path().to_str().unwrap(), "is a directory"),
    ] {
        let o = run(&["record", "-o", out.to_str().unwrap(), "--", cmd]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{cmd}: {err}");
        assert!(
            err.contains(why) && err.contains("nothing was recorded"),
            "{err}"
        );
        assert!(!out.exists(), "{cmd}: a recording was made");
    }
}

#[test]
fn damaged_and_incomplete_perf_data_are_analyzed_with_an_error() {
    let Some(_slot) = recording_slot() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let bin = compile(dir.path(), "pipeline");
    let (data, o) = record(dir.path(), "pipeline", &[bin.to_str().unwrap()]);
    assert!(o.status.success());
    // Cut the file in the middle of its records.
    let bytes = std::fs::read(&data).unwrap();
    let cut = dir.path().join("cut.data");
    std::fs::write(&cut, &bytes[..bytes.len() / 2]).unwrap();
    let o = run(&["analyze", cut.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("cut short") && err.contains("cut.data"),
        "{err}"
    );
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("critical path"),
        "what was readable is analyzed"
    );
    // Converted, the cut recording is an error too, once; what was read is
    // written, and says it was cut.
    let cpt = dir.path().join("cut.cpt");
    let o = run(&["convert", cut.to_str().unwrap(), cpt.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(err.matches("cut short").count(), 1, "{err}");
    assert!(err.contains("records that could be read"), "{err}");
    let v = json_of(&["analyze", "--json", cpt.to_str().unwrap()]);
    let kinds: Vec<&str> = (v["diagnostics"].as_array().unwrap().iter())
        .map(|d| d["kind"].as_str().unwrap())
        .collect();
    assert!(kinds.contains(&"input-cut"), "{kinds:?}");
    // A perf.data without the scheduler events: says what to record (and
    // that, not the command's missing thread, is the error, even when
    // the softirqs make records of their own).
    let plain = dir.path().join("nosched.data");
    let st = Command::new("perf")
        .args([
            "record",
            "-q",
            "-a",
            "-e",
            "irq:softirq_entry,irq:softirq_exit",
            "-o",
        ])
        .arg(&plain)
        .args(["--", "sleep", "0.05"])
        .status()
        .unwrap();
    assert!(st.success());
    let o = run(&["analyze", plain.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("no sched:sched_switch") && err.contains("critpath record"),
        "{err}"
    );
    // Garbage that claims to be perf.data.
    let junk = dir.path().join("junk.data");
    std::fs::write(&junk, b"PERFILE2 and then nothing useful").unwrap();
    let o = run(&["analyze", junk.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("junk.data"));
}

#[test]
fn nftables_rules_put_the_kernel_net_path_on_the_critical_path() {
    let Some(_slot) = recording_slot() else {
        return;
    };
    for tool in ["ip", "nft"] {
        if Command::new(tool).arg("-V").output().is_err() {
            eprintln!("skipped: {tool} is not installed (scripts/setup.sh installs it)");
            return;
        }
    }
    let dir = tempfile::tempdir().unwrap();
    let bindir = Path::new(env!("CARGO_BIN_EXE_critpath")).parent().unwrap();
    let path = format!("{}:{}", bindir.display(), std::env::var("PATH").unwrap());
    let o = Command::new(example("os/udp-veth.sh"))
        .arg(dir.path())
        .args(["1000", "3000"])
        .env("PATH", path)
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    let net_rx = |name: &str| -> u64 {
        let v = json_of(&["analyze", dir.path().join(name).to_str().unwrap(), "--json"]);
        v["states"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|s| {
                let st = s["state"].as_str().unwrap();
                let sm = s["sm"].as_str().unwrap();
                st.ends_with("softirq:NET_RX") || sm.starts_with("softirq:NET_RX")
            })
            .map(|s| s["critical_ns"].as_u64().unwrap())
            .sum()
    };
    // The rules' evaluation is CPU work in every packet's NET_RX, and each
    // packet's receipt is on the path of this ping-pong: it adds at least
    // 8 ms (about 16 on an idle machine), however loaded the machine is
    // (load only stretches both recordings' softirqs).
    let (plain, rules) = (net_rx("plain.data"), net_rx("rules.data"));
    assert!(
        rules > plain + 8_000_000,
        "NET_RX on the path: {plain} ns without rules, {rules} ns with 3000"
    );
}

#[test]
fn annotations_merge_with_the_kernel_recording_on_their_threads() {
    let Some(_slot) = recording_slot() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let bin = cc(
        dir.path(),
        &example("annotated/pipeline.c"),
        "annotated",
        &[],
    );
    let out = dir.path().join("a.data");
    let o = run(&[
        "record",
        "--calibrate",
        "-o",
        out.to_str().unwrap(),
        "--",
        bin.to_str().unwrap(),
        "60",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("a.data.annot"), "{err}");
    let v = json_of(&["analyze", out.to_str().unwrap(), "--json"]);
    // The annotated SMs carry the kernel's states of their threads while
    // they are begun: stage2's work (1 ms of CPU time per item against
    // 0.2 ms for the others) is on the path, most of it, and leads the
    // stages' work, however loaded the machine (which adds waits for a
    // CPU, `runnable`, but no work).
    let time_in = |sm: &str, key: &str, of: &dyn Fn(&str) -> bool| -> u64 {
        v["states"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|s| s["sm"] == sm && of(s["state"].as_str().unwrap()))
            .map(|s| s[key].as_u64().unwrap())
            .sum()
    };
    let work = |sm: &str, key: &str| time_in(sm, key, &|st| st == "work");
    let (crit2, total2) = (work("stage2", "critical_ns"), work("stage2", "total_ns"));
    // The thread's CPU clock, which measured the 60 ms, also runs while
    // interrupts take its CPU: that time is `interrupted:*` here. 5% is
    // left for where the annotations' and the kernel's clocks meet and
    // for transitions inferred on a loaded machine.
    let on_cpu = time_in("stage2", "total_ns", &|st| {
        st == "work" || st.starts_with("interrupted:")
    });
    assert!(
        on_cpu >= 57_000_000,
        "stage2 worked {total2} ns, {on_cpu} on a CPU"
    );
    assert!(crit2 as f64 > 0.5 * total2 as f64, "{}", v["states"]);
    for s in ["stage1", "stage3"] {
        assert!(work(s, "critical_ns") < crit2 / 2, "{s}: {}", v["states"]);
    }
    // Each stage sits on its kernel thread: `annotated:TID` waits in sm:stageN.
    for s in ["stage1", "stage2", "stage3"] {
        let on = v["states"].as_array().unwrap().iter().any(|r| {
            r["state"] == format!("sm:{s}") && r["sm"].as_str().unwrap().starts_with("annotated:")
        });
        assert!(on, "no thread holds {s}");
    }
    // The path still runs from the command's start to its exit.
    let start = v["critical_path"]["start"]["sm"].as_str().unwrap();
    assert!(start.starts_with("annotated:"), "{start}");
    // Calibrated while recording: the overhead correction applies.
    let fixed = json_of(&[
        "analyze",
        out.to_str().unwrap(),
        "--json",
        "--correct-overhead",
    ]);
    let c = &fixed["overhead_correction"];
    assert!(c["events"].as_u64().unwrap() >= 60, "{c}");
    assert!(c["ns_per_event"].as_f64().unwrap() > 0.0, "{c}");
    // Converted, the recording keeps its annotations' measured cost.
    let cpt = dir.path().join("a.cpt");
    assert!(
        run(&["convert", out.to_str().unwrap(), cpt.to_str().unwrap()])
            .status
            .success()
    );
    let converted = json_of(&[
        "analyze",
        cpt.to_str().unwrap(),
        "--json",
        "--correct-overhead",
    ]);
    assert_eq!(
        converted["overhead_correction"],
        fixed["overhead_correction"]
    );
    assert_eq!(converted["states"], fixed["states"]);
}

#[test]
fn function_probes_give_function_level_states() {
    let Some(_slot) = recording_slot() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let bin = compile(dir.path(), "functions");
    let out = dir.path().join("f.data");
    let spec = format!("{}:*", bin.display());
    let o = run(&[
        "record",
        "--functions",
        &spec,
        "-o",
        out.to_str().unwrap(),
        "--",
        bin.to_str().unwrap(),
        "10",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(
        String::from_utf8_lossy(&o.stdout),
        "functions: 10 requests\n"
    );
    let v = json_of(&["analyze", out.to_str().unwrap(), "--json"]);
    // 8 ms and 2 ms of CPU time per request, all on the path of a
    // one-thread program (a loaded machine adds runnable time between).
    let ns = |state, key| ns_of(&v, "functions", state, key);
    let (compute, parse) = (
        ns("running:compute", "critical_ns"),
        ns("running:parse", "critical_ns"),
    );
    for (state, crit) in [("running:compute", compute), ("running:parse", parse)] {
        let total = ns(state, "total_ns");
        assert!(
            crit as f64 >= 0.95 * total as f64,
            "{state}: {}",
            v["states"]
        );
    }
    // (Interrupts taken inside a function are its thread's CPU time but
    // not its running state.)
    assert!(
        compute >= 60_000_000 && parse >= 15_000_000,
        "{}",
        v["states"]
    );
    let share = compute as f64 / (compute + parse) as f64;
    assert!(
        share > 0.7 && share < 0.9,
        "compute {share}: {}",
        v["states"]
    );
    assert!(
        criticality(&v, "functions", "running:compute")
            > 3.0 * criticality(&v, "functions", "running:parse")
    );
    // The probes are gone after the recording.
    let l = Command::new("perf").args(["probe", "-l"]).output().unwrap();
    assert!(
        !String::from_utf8_lossy(&l.stdout).contains("critpath_fn"),
        "{}",
        String::from_utf8_lossy(&l.stdout)
    );
    // A pattern that matches nothing, or a missing binary: exit 2, nothing run.
    for spec in [
        format!("{}:no_such_*", bin.display()),
        "/no/such/bin:*".into(),
    ] {
        let o = run(&[
            "record",
            "--functions",
            &spec,
            "-o",
            out.to_str().unwrap(),
            "--",
            "true",
        ]);
        assert_eq!(o.status.code(), Some(2), "{spec}");
        assert!(String::from_utf8_lossy(&o.stderr).contains("--functions"));
    }
}

#[test]
fn kernel_functions_need_kprobes_and_say_so_when_missing() {
    let Some(_slot) = recording_slot() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("k.data");
    let o = run(&[
        "record",
        "--kernel-functions",
        "vfs_write",
        "-o",
        out.to_str().unwrap(),
        "--",
        "sh",
        "-c",
        "echo hi > /dev/null",
    ]);
    let kprobes = [
        "/sys/kernel/tracing/kprobe_events",
        "/sys/kernel/debug/tracing/kprobe_events",
    ]
    .iter()
    .any(|p| Path::new(p).exists());
    if kprobes {
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let v = json_of(&["analyze", out.to_str().unwrap(), "--json"]);
        assert!(v["states"].to_string().contains("running:vfs_write"));
    } else {
        assert_eq!(o.status.code(), Some(2));
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            err.contains("kprobe") && err.contains("--kernel-functions"),
            "{err}"
        );
    }
}

#[test]
fn the_in_place_perf_reader_agrees_with_the_general_one() {
    let Some(_slot) = recording_slot() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let bin = compile(dir.path(), "pingpong");
    let (data, o) = record(dir.path(), "pingpong", &[bin.to_str().unwrap(), "2000"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let analyze = |in_place: bool| {
        let mut src = critpath_os::PerfSource::open_with(&data, in_place).unwrap();
        let (a, err) = critpath_engine::analyze(&mut src, Default::default(), |_, _| {}).unwrap();
        assert!(err.is_none(), "{err:?}");
        serde_json::to_value(&a).unwrap()
    };
    let (fast, general) = (analyze(true), analyze(false));
    // 2,000 round trips: thousands of records, even with events lost.
    assert!(fast["stats"]["records"].as_u64().unwrap() > 2_000);
    assert_eq!(fast, general);
}

#[test]
fn a_syscall_recording_loses_nothing_and_names_the_recorder() {
    let Some(_slot) = recording_slot() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let bin = compile(dir.path(), "pingpong");
    let data = dir.path().join("pp.data");
    // 10,000 round trips with every system call traced: about 23 MB of
    // events in all, less than the default buffer of one CPU (32 MiB with
    // --syscalls), so nothing can be lost however long perf waits for a
    // CPU on a loaded machine.
    let o = run(&[
        "record",
        "--syscalls",
        "-o",
        data.to_str().unwrap(),
        "--",
        bin.to_str().unwrap(),
        "10000",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v = json_of(&["analyze", data.to_str().unwrap(), "--json"]);
    let diags = v["diagnostics"].as_array().unwrap();
    let kinds: Vec<&str> = diags.iter().map(|d| d["kind"].as_str().unwrap()).collect();
    assert!(!kinds.contains(&"lost-events"), "{kinds:?}");
    // perf's pid is saved beside the trace, and its CPU time reported.
    let pid = std::fs::read_to_string(dir.path().join("pp.data.recorder")).unwrap();
    let share = diags
        .iter()
        .find(|d| d["kind"] == "recorder-share")
        .expect("recorder-share");
    let msg = share["message"].as_str().unwrap();
    assert!(msg.contains(&format!("perf, pid {}", pid.trim())), "{msg}");
    let pct: f64 = msg
        .split("ms, ")
        .nth(1)
        .and_then(|r| r.split('%').next())
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("{msg}"));
    // perf may not run at all while a short command does (it sleeps until
    // its buffers fill: 0.00 ms was seen in a 132 ms recording).
    assert!((0.0..100.0).contains(&pct), "{msg}");
    // perf's own system calls (its writes of the recording) are not
    // recorded: only the program's are.
    let recorder = format!("perf:{}", pid.trim());
    let states = v["states"].as_array().unwrap();
    let perf_calls: Vec<&Value> = (states.iter())
        .filter(|s| s["sm"] == recorder.as_str())
        .filter(|s| s["state"].as_str().unwrap().starts_with("running:syscall:"))
        .collect();
    assert!(perf_calls.is_empty(), "{perf_calls:?}");
    assert!(states.iter().any(|s| s["state"] == "running:syscall:write"));
}

#[test]
fn a_converted_recording_analyzes_as_the_recording_does() {
    let Some(_slot) = recording_slot() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let bin = compile(dir.path(), "pingpong");
    let (data, o) = record(dir.path(), "pp", &[bin.to_str().unwrap(), "2000"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let (cpt, jsonl) = (dir.path().join("pp.cpt"), dir.path().join("pp.jsonl"));
    let (data, cpt, jsonl) = (
        data.to_str().unwrap(),
        cpt.to_str().unwrap(),
        jsonl.to_str().unwrap(),
    );
    for (from, to) in [(data, cpt), (cpt, jsonl)] {
        let o = run(&["convert", from, to]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    }
    let recorded = stdout_of(&["analyze", "--json", data]);
    // The recording's scope (from the command's start to its exit, not
    // through the recorder) and its reader's findings came along: the
    // same analysis, byte for byte.
    assert_eq!(stdout_of(&["analyze", "--json", cpt]), recorded);
    let v: Value = serde_json::from_str(&recorded).unwrap();
    let end = v["critical_path"]["end"]["sm"].as_str().unwrap();
    assert!(end.starts_with("pingpong:"), "{end}");
    assert!(
        v["diagnostics"]
            .as_array()
            .unwrap()
            .iter()
            .any(|d| d["kind"] == "recorder-share"),
        "{}",
        v["diagnostics"]
    );
    // A what-if spreads as on the recording (`runnable` with `running`),
    // and its band counts the program's own threads as the program's.
    let main = format!("{end}:running=2");
    let whatif = |t: &str| stdout_of(&["whatif", t, "--speedup", &main, "--json"]);
    assert_eq!(whatif(cpt), whatif(data));
    // JSONL names the lines of its own findings: all else is the same.
    let w: Value = serde_json::from_str(&stdout_of(&["analyze", "--json", jsonl])).unwrap();
    assert_eq!(w["critical_path"], v["critical_path"]);
    assert_eq!(w["states"], v["states"]);
    let kinds = |v: &Value| -> Vec<String> {
        let d = v["diagnostics"].as_array().unwrap();
        d.iter().map(|d| d["kind"].to_string()).collect()
    };
    assert_eq!(kinds(&w), kinds(&v));
    // And back to .cpt: the same file.
    let again = dir.path().join("again.cpt");
    assert!(run(&["convert", jsonl, again.to_str().unwrap()])
        .status
        .success());
    assert_eq!(std::fs::read(&again).unwrap(), std::fs::read(cpt).unwrap());
}
