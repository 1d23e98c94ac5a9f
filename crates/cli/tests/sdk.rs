//! The C annotation SDK (`sdk/c/critpath.h`) end to end: real programs
//! compiled with the system's C compiler write CRITPATH_OUT, and `critpath
//! analyze` reads it alone. (The Rust SDK has its own tests in
//! `sdk/rust/tests`, the Python SDK in `python/tests`; the merge with a
//! perf recording is in `record.rs`.)

mod common;
use common::{cc, diagnostic_kinds, example, json_of, run, state_row};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

fn have_cc() -> bool {
    Command::new("cc")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

macro_rules! need_cc {
    () => {
        if !have_cc() {
            eprintln!("skipped: no C compiler (scripts/setup.sh installs one)");
            return;
        }
    };
}

fn compile(dir: &Path, src: &str, name: &str) -> PathBuf {
    cc(dir, src, name, &["-Wall", "-Wextra", "-Werror"])
}

fn test_c(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/c")
        .join(name)
        .to_str()
        .unwrap()
        .to_string()
}

/// Runs `bin ARGS` with the environment given.
fn exec(bin: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut c = Command::new(bin);
    c.args(args)
        .env_remove("CRITPATH_OUT")
        .env_remove("CRITPATH_CALIBRATE");
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().unwrap()
}

fn row(v: &Value, sm: &str, state: &str) -> (u64, u64, u64, f64) {
    let r = state_row(v, sm, state);
    (
        r["visits"].as_u64().unwrap(),
        r["total_ns"].as_u64().unwrap(),
        r["critical_ns"].as_u64().unwrap(),
        r["criticality"].as_f64().unwrap(),
    )
}

#[test]
fn annotated_c_pipeline_shows_its_bottleneck_stage() {
    need_cc!();
    let dir = tempfile::tempdir().unwrap();
    let bin = compile(dir.path(), &example("annotated/pipeline.c"), "pipeline");
    let out = dir.path().join("p.annot");
    let o = exec(&bin, &["60"], &[("CRITPATH_OUT", out.to_str().unwrap())]);
    assert!(o.status.success());
    assert!(String::from_utf8_lossy(&o.stdout).contains("60 items"));
    let v = json_of(&["analyze", out.to_str().unwrap(), "--json"]);
    let (visits, total, _, crit) = row(&v, "stage2", "work");
    assert_eq!(visits, 60);
    assert!(total >= 60_000_000, "stage2 worked 60 x 1 ms: {total}");
    // Other programs share the CPUs: a stage preempted by them works
    // longer (the trace has no CPU waits: they are its `work`). Stages 1
    // and 3 do 60 x 0.2 ms of CPU work; where preemption made that more
    // than half as long again, any stage may have bound the run.
    let other: u64 = ["stage1", "stage3"]
        .map(|s| row(&v, s, "work").1)
        .iter()
        .sum();
    if other > 36_000_000 {
        eprintln!("loaded machine: stages 1 and 3 worked {other} ns for 24 ms of CPU time; stage2's criticality {crit}");
        assert!(crit > 0.0, "stage2 work criticality {crit}");
    } else {
        assert!(crit > 0.7, "stage2 work criticality {crit}");
        assert_eq!(v["states"][0]["sm"], "stage2", "{}", v["states"][0]);
        for s in ["stage1", "stage3"] {
            let (_, _, _, c) = row(&v, s, "work");
            assert!(c < 0.15, "{s} work criticality {c}");
        }
    }
    // Each stage sits on its thread: the thread's SM waits in sm:stageN.
    let threads: Vec<&str> = v["states"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["state"] == "sm:stage2")
        .map(|s| s["sm"].as_str().unwrap())
        .collect();
    assert_eq!(threads.len(), 1, "{threads:?}");
    assert!(threads[0].starts_with("pipeline:"), "{threads:?}");
}

#[test]
fn without_critpath_out_nothing_is_written_and_the_program_is_unchanged() {
    need_cc!();
    let dir = tempfile::tempdir().unwrap();
    let bin = compile(dir.path(), &example("annotated/pipeline.c"), "pipeline");
    let o = Command::new(&bin)
        .args(["5", "10"])
        .current_dir(dir.path())
        .env_remove("CRITPATH_OUT")
        .output()
        .unwrap();
    assert!(o.status.success());
    assert_eq!(
        String::from_utf8_lossy(&o.stdout),
        "pipeline: 5 items through 3 stages (stage 2: 10 us per item)\n"
    );
    assert!(o.stderr.is_empty());
    let files: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
    assert_eq!(files.len(), 1, "only the binary: {files:?}");
}

#[test]
fn calibrated_overhead_is_subtracted_from_states_of_known_length() {
    need_cc!();
    let dir = tempfile::tempdir().unwrap();
    let bin = compile(dir.path(), &test_c("known.c"), "known");
    let out = dir.path().join("k.annot");
    let o = exec(
        &bin,
        &["50000"],
        &[
            ("CRITPATH_OUT", out.to_str().unwrap()),
            ("CRITPATH_CALIBRATE", "1"),
        ],
    );
    assert!(o.status.success());
    let p = out.to_str().unwrap();
    let raw = json_of(&["analyze", p, "--json"]);
    let fixed = json_of(&["analyze", p, "--json", "--correct-overhead"]);
    let c = &fixed["overhead_correction"];
    let per_event = c["ns_per_event"].as_f64().unwrap();
    assert!(per_event > 1.0 && per_event < 1000.0, "{c}");
    // 50,000 visits of each state, and the SM's and thread's first ones.
    let events = c["events"].as_u64().unwrap();
    assert!((100_000..100_010).contains(&events), "{c}");
    // "gap" has no work: its time is the annotations' own cost (plus, on a
    // loaded machine, whatever preemption lands in it), and the correction
    // takes the calibrated cost off every visit.
    let (gaps, gap_raw, _, _) = row(&raw, "known", "gap");
    let (_, gap_fixed, gap_crit, _) = row(&fixed, "known", "gap");
    assert!(
        (gap_raw - gap_fixed) as f64 >= 0.5 * per_event * gaps as f64,
        "gap {gap_raw} -> {gap_fixed} ns for {gaps} visits at {per_event} ns per event"
    );
    assert!(gap_crit <= gap_fixed);
    // "spin" is never shorter than 1000 ns of work: the correction brings
    // it toward that, never below it.
    let (n, spin_raw, _, _) = row(&raw, "known", "spin");
    let (_, spin_fixed, _, _) = row(&fixed, "known", "spin");
    assert!(spin_fixed < spin_raw);
    assert!(
        spin_fixed >= 1000 * n,
        "spin {spin_fixed} ns for {n} visits"
    );
    let before = raw["critical_path"]["length_ns"].as_u64().unwrap();
    let after = fixed["critical_path"]["length_ns"].as_u64().unwrap();
    assert_eq!(c["length_before_ns"].as_u64().unwrap(), before);
    assert_eq!(before - after, c["removed_path_ns"].as_u64().unwrap());
    let sum: f64 = fixed["states"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["criticality"].as_f64().unwrap())
        .sum();
    assert!((sum - 1.0).abs() < 1e-6, "criticalities sum to {sum}");
    // The table says what was removed.
    let t = run(&["analyze", p, "--correct-overhead"]);
    assert!(String::from_utf8_lossy(&t.stdout).contains("overhead correction:"));
    // So does the HTML report.
    let html = dir.path().join("k.html");
    let r = run(&[
        "report",
        p,
        "--correct-overhead",
        "-o",
        html.to_str().unwrap(),
    ]);
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    let html = std::fs::read_to_string(&html).unwrap();
    assert!(
        html.contains("overhead correction: "),
        "report says what was removed"
    );
}

#[test]
fn correcting_without_calibration_says_how_to_calibrate() {
    need_cc!();
    let dir = tempfile::tempdir().unwrap();
    let bin = compile(dir.path(), &test_c("known.c"), "known");
    let out = dir.path().join("k.annot");
    exec(&bin, &["100"], &[("CRITPATH_OUT", out.to_str().unwrap())]);
    let o = run(&["analyze", out.to_str().unwrap(), "--correct-overhead"]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("--calibrate"), "{err}");
}

#[test]
fn unbalanced_annotations_and_unknown_ids_are_diagnosed() {
    need_cc!();
    let dir = tempfile::tempdir().unwrap();
    let bin = compile(dir.path(), &test_c("misuse.c"), "misuse");
    let out = dir.path().join("m.annot");
    let o = exec(
        &bin,
        &["unbalanced"],
        &[("CRITPATH_OUT", out.to_str().unwrap())],
    );
    assert!(o.status.success());
    assert_eq!(String::from_utf8_lossy(&o.stdout), "still running\n");
    let v = json_of(&["analyze", out.to_str().unwrap(), "--json"]);
    let kinds = diagnostic_kinds(&v);
    assert_eq!(
        kinds.iter().filter(|k| **k == "stack-mismatch").count(),
        2,
        "{kinds:?}"
    );
    assert!(kinds.contains(&"recv-without-send"), "{kinds:?}");
    let msgs = v["diagnostics"].to_string();
    assert!(msgs.contains("never-begun"), "{msgs}");
    assert!(msgs.contains("inner"), "{msgs}");
    // The states around the mistakes are all there.
    for (sm, st) in [("outer", "work"), ("outer", "got"), ("inner", "inner-work")] {
        assert!(row(&v, sm, st).0 >= 1, "{sm}:{st}");
    }
}

#[test]
fn a_long_name_is_cut_at_a_character_boundary() {
    need_cc!();
    let dir = tempfile::tempdir().unwrap();
    let bin = compile(dir.path(), &test_c("long_names.c"), "long_names");
    let out = dir.path().join("l.annot");
    let o = exec(&bin, &[], &[("CRITPATH_OUT", out.to_str().unwrap())]);
    assert!(o.status.success());
    let v = json_of(&["analyze", out.to_str().unwrap(), "--json"]);
    // Each keeps its first 1023 bytes, still UTF-8: two states, not "?".
    for name in [format!("x{}", "\u{e9}".repeat(511)), "\u{20ac}".repeat(341)] {
        assert_eq!(name.len(), 1023);
        assert_eq!(row(&v, "long", &name).0, 1);
    }
}

#[test]
fn a_killed_program_leaves_its_trace_up_to_the_last_flush() {
    need_cc!();
    let dir = tempfile::tempdir().unwrap();
    let bin = compile(dir.path(), &test_c("misuse.c"), "misuse");
    let out = dir.path().join("k.annot");
    let o = exec(
        &bin,
        &["killed"],
        &[("CRITPATH_OUT", out.to_str().unwrap())],
    );
    assert_eq!(
        std::os::unix::process::ExitStatusExt::signal(&o.status),
        Some(9)
    );
    let v = json_of(&["analyze", out.to_str().unwrap(), "--json"]);
    assert_eq!(row(&v, "doomed", "running").0, 1);
    let states = v["states"].to_string();
    assert!(!states.contains("after-flush"), "{states}");
}

#[test]
fn an_unwritable_or_full_critpath_out_never_stops_the_program() {
    need_cc!();
    let dir = tempfile::tempdir().unwrap();
    let bin = compile(dir.path(), &example("annotated/pipeline.c"), "pipeline");
    for (out, says) in [
        ("/nonexistent-dir/trace.annot", "annotations are off"),
        ("/dev/full", "cannot write annotations"),
    ] {
        let o = exec(&bin, &["20", "10"], &[("CRITPATH_OUT", out)]);
        assert!(o.status.success(), "{out}");
        assert_eq!(
            String::from_utf8_lossy(&o.stdout),
            "pipeline: 20 items through 3 stages (stage 2: 10 us per item)\n"
        );
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains(says), "{out}: {err}");
        assert_eq!(err.lines().count(), 1, "warned once: {err}");
    }
}

#[test]
fn a_damaged_annotation_file_is_analyzed_up_to_the_damage_with_exit_2() {
    need_cc!();
    let dir = tempfile::tempdir().unwrap();
    let bin = compile(dir.path(), &example("annotated/pipeline.c"), "pipeline");
    let out = dir.path().join("p.annot");
    exec(
        &bin,
        &["30", "10"],
        &[("CRITPATH_OUT", out.to_str().unwrap())],
    );
    let mut bytes = std::fs::read(&out).unwrap();
    let n = bytes.len();
    bytes.truncate(n - 7);
    let cut = dir.path().join("cut.annot");
    std::fs::write(&cut, &bytes).unwrap();
    let o = run(&["analyze", cut.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("cut.annot") && err.contains("byte offset"),
        "{err}"
    );
    let table = String::from_utf8_lossy(&o.stdout);
    assert!(table.contains("stage2"), "{table}");
    // Garbage in the middle: skipped to the next block, said, exit 2.
    let mut bad = std::fs::read(&out).unwrap();
    bad.splice(0..0, b"garbage!".iter().copied());
    let badp = dir.path().join("bad.annot");
    std::fs::write(&badp, &bad).unwrap();
    let o = run(&["analyze", badp.to_str().unwrap()]);
    // A file starting with garbage is not recognized as annotations at all.
    assert_eq!(o.status.code(), Some(2));
    // A damaged block header in the middle.
    let mut mid = std::fs::read(&out).unwrap();
    let at = mid
        .windows(4)
        .enumerate()
        .skip(16)
        .find(|(_, w)| w == b"CPAB")
        .map(|(i, _)| i)
        .expect("a second block");
    mid[at..at + 4].copy_from_slice(b"\xff\xfe\xfd\xfc");
    let midp = dir.path().join("mid.annot");
    std::fs::write(&midp, &mid).unwrap();
    let o = run(&["analyze", midp.to_str().unwrap()]);
    assert_eq!(
        o.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(String::from_utf8_lossy(&o.stdout).contains("stage"));
}

#[test]
fn with_sys_sdt_h_the_calls_are_also_usdt_probes() {
    need_cc!();
    let sdt = [
        "/usr/include/sys/sdt.h",
        "/usr/include/x86_64-linux-gnu/sys/sdt.h",
    ];
    if !sdt.iter().any(|p| Path::new(p).exists()) {
        eprintln!("skipped: no <sys/sdt.h> (scripts/setup.sh installs systemtap-sdt-dev)");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let bin = compile(dir.path(), &example("annotated/pipeline.c"), "pipeline");
    let Ok(notes) = Command::new("readelf").arg("-n").arg(&bin).output() else {
        eprintln!("skipped: no readelf");
        return;
    };
    let notes = String::from_utf8_lossy(&notes.stdout);
    for probe in ["begin_sm", "end_sm", "state", "wait", "send", "recv"] {
        assert!(
            notes.contains("Provider: critpath") && notes.contains(&format!("Name: {probe}")),
            "no USDT probe critpath:{probe} in {notes}"
        );
    }
}

/// A thread that exits, and the process that exits, with SMs still begun
/// end them: read alone, the file says when, so the last states keep
/// their time and the name is free for the next `begin_sm`.
#[test]
fn sms_left_begun_end_with_their_thread_or_the_process() {
    need_cc!();
    let dir = tempfile::tempdir().unwrap();
    let bin = compile(dir.path(), &test_c("unended.c"), "unended");
    let out = dir.path().join("u.annot");
    let o = exec(&bin, &[], &[("CRITPATH_OUT", out.to_str().unwrap())]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v = json_of(&["analyze", out.to_str().unwrap(), "--json"]);
    let ms = 1_000_000;
    assert!(row(&v, "job", "b").1 >= 19 * ms, "{v:#}");
    assert!(row(&v, "main-job", "tail").1 >= 14 * ms, "{v:#}");
    assert!(row(&v, "job", "c").1 >= 4 * ms, "{v:#}");
    let sms: Vec<&str> = v["states"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|r| r["sm"].as_str())
        .collect();
    assert!(!sms.contains(&"job#2"), "{sms:?}");
}
