//! Threads still recording when the process exits: the C header and the
//! Rust SDK write their whole events, and the file stays well formed.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

/// Analyzes `file`: the visits of each SM, after checking that it reads
/// without damage.
fn visits(file: &Path) -> Vec<(String, u64)> {
    let mut src = critpath_import::open(file).expect("opens");
    let (a, err) = critpath_engine::analyze(&mut src, Default::default(), |_, _| {}).unwrap();
    assert!(err.is_none(), "{err:?}");
    let bad: Vec<_> = a
        .diagnostics
        .iter()
        .filter(|d| {
            matches!(
                d.kind.as_str(),
                "damaged-input" | "cut-short" | "input-cut" | "lost-annotations"
            )
        })
        .collect();
    assert!(bad.is_empty(), "{bad:#?}");
    let mut v: Vec<(String, u64)> = Vec::new();
    for r in &a.states {
        match v.iter_mut().find(|(sm, _)| *sm == r.sm) {
            Some(e) => e.1 += r.visits,
            None => v.push((r.sm.clone(), r.visits)),
        }
    }
    v
}

fn of(v: &[(String, u64)], sm: &str) -> u64 {
    v.iter().find(|(s, _)| s == sm).map_or(0, |e| e.1)
}

#[test]
fn c_threads_recording_at_exit_leave_a_well_formed_file() {
    if Command::new("cc").arg("--version").output().is_err() {
        eprintln!("no C compiler: skipped");
        return;
    }
    let here = Path::new(env!("CARGO_MANIFEST_DIR"));
    let dir = tempfile::tempdir().unwrap();
    let bin = dir.path().join("busy");
    let st = Command::new("cc")
        .args([
            "-O2",
            "-pthread",
            "-Wall",
            "-Wextra",
            "-pedantic",
            "-Werror",
            "-I",
        ])
        .arg(here.join("../c"))
        .arg("-o")
        .arg(&bin)
        .arg(here.join("tests/c/busy_at_exit.c"))
        .status()
        .expect("cc runs");
    assert!(st.success());
    for run in 0..5 {
        let out = dir.path().join(format!("{run}.annot"));
        let o = Command::new(&bin)
            .env("CRITPATH_OUT", &out)
            .output()
            .unwrap();
        assert!(o.status.success());
        assert!(
            o.stderr.is_empty(),
            "{}",
            String::from_utf8_lossy(&o.stderr)
        );
        let v = visits(&out);
        assert_eq!(of(&v, "main"), 2, "run {run}: {v:?}"); // running, report
        assert!(
            of(&v, "busy") > 1000 && of(&v, "busy#2") > 1000,
            "run {run}: {v:?}"
        );
    }
}

/// Child mode of the test below (set by its environment): threads record
/// while the process exits.
#[test]
fn child_records_while_exiting() {
    if std::env::var_os("CRITPATH_EXIT_CHILD").is_none() {
        return;
    }
    for _ in 0..2 {
        std::thread::spawn(|| {
            critpath_sdk::begin_sm("busy");
            for i in 0u64.. {
                critpath_sdk::state(if i & 1 == 1 { "a" } else { "bb" });
            }
        });
    }
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        critpath_sdk::begin_sm("sleeper");
        critpath_sdk::state("before-exit");
        tx.send(()).unwrap();
        std::thread::sleep(Duration::from_secs(100));
    });
    rx.recv().unwrap();
    std::thread::sleep(Duration::from_millis(30));
    critpath_sdk::begin_sm("main");
    critpath_sdk::state("report");
    std::process::exit(0);
}

#[test]
fn rust_threads_recording_at_exit_have_their_events_written() {
    let dir = tempfile::tempdir().unwrap();
    for run in 0..5 {
        let out = dir.path().join(format!("{run}.annot"));
        let o = Command::new(std::env::current_exe().unwrap())
            .args(["--exact", "child_records_while_exiting", "--nocapture"])
            .env("CRITPATH_EXIT_CHILD", "1")
            .env("CRITPATH_OUT", &out)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let v = visits(&out);
        // The sleeping thread's events too, not only the exiting thread's.
        assert_eq!(of(&v, "sleeper"), 2, "run {run}: {v:?}"); // running, before-exit
        assert_eq!(of(&v, "main"), 2, "run {run}: {v:?}");
        assert!(
            of(&v, "busy") > 1000 && of(&v, "busy#2") > 1000,
            "run {run}: {v:?}"
        );
    }
}
