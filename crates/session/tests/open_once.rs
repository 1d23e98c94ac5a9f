//! A session reads each input once: the second engine pass (a what-if, as
//! the verdict of `analyze` runs) replays the records of the first, so it
//! works on a named FIFO, which can be read only once, and gives what a
//! fresh reading of the same bytes gives.

use critpath_engine::{Analysis, Options, Speedup};
use critpath_session::{Session, Settings};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

/// A trace with a string link id, a reader error in the middle (a bad
/// line, skipped) and a what-if worth making.
fn trace() -> String {
    let mut t = String::from(include_str!("../../readers/tests/fixtures/small.jsonl"));
    t = t.replace(
        "{\"t\":480,",
        "{\"t\":470,\"sm\":\"client\",\"ev\":\"bogus\"}\n{\"t\":480,",
    );
    for i in 0..300u64 {
        let t0 = 1000 + i * 10;
        t.push_str(&format!(
            "{{\"t\":{t0},\"sm\":\"w{}\",\"ev\":\"send\",\"id\":\"m-{i}\"}}\n{{\"t\":{},\"sm\":\"w{}\",\"ev\":\"recv\",\"id\":\"m-{i}\",\"state\":\"s{}\"}}\n",
            i % 3,
            t0 + 5,
            (i + 1) % 3,
            i % 7
        ));
    }
    t
}

fn whatif() -> Options {
    Options {
        speedups: vec![Speedup {
            target: "server:serve".into(),
            factor: 2.0,
            exact: false,
        }],
        ..Default::default()
    }
}

/// The analysis and the what-if, from one session (that reads regular
/// files again, when `again`).
fn both(path: &Path, again: bool) -> (Analysis, Analysis, usize) {
    let mut s = Session::open(&[path.to_path_buf()], &Settings::default()).expect("opens");
    if again {
        s.read_files_again();
    }
    let (a, err) = s
        .analyze(Options::default(), &mut |_, _| {})
        .expect("analyzes");
    assert!(err.is_some(), "the bad line is reported");
    let (w, _) = s.analyze(whatif(), &mut |_, _| {}).expect("replays");
    (a, w, s.opens())
}

/// One fresh reading of `path` with `opts`.
fn fresh(path: &Path, opts: Options) -> Analysis {
    let mut s = Session::open(&[path.to_path_buf()], &Settings::default()).expect("opens");
    s.analyze(opts, &mut |_, _| {}).expect("analyzes").0
}

/// A named FIFO in `dir`, and the thread that writes the trace into it.
fn fifo(dir: &Path) -> (PathBuf, std::thread::JoinHandle<()>) {
    let fifo: PathBuf = dir.join("f");
    let made = Command::new("mkfifo").arg(&fifo).status().expect("mkfifo");
    assert!(made.success());
    let writer = std::thread::spawn({
        let fifo = fifo.clone();
        move || {
            let mut f = std::fs::OpenOptions::new()
                .write(true)
                .open(&fifo)
                .expect("opens the FIFO");
            f.write_all(trace().as_bytes()).expect("writes the FIFO");
        }
    });
    (fifo, writer)
}

#[test]
fn a_fifo_is_read_once_and_the_replay_is_a_fresh_reading() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("t.jsonl");
    std::fs::write(&file, trace()).expect("writes");
    let (fifo, writer) = fifo(dir.path());
    let (a, w, opens) = both(&fifo, false);
    writer.join().expect("writer");
    assert_eq!(opens, 1, "the FIFO was opened once");
    let (fa, fw) = (fresh(&file, Options::default()), fresh(&file, whatif()));
    assert!(fw.stats.scaled_edges > 0, "the what-if changed something");
    assert_eq!(a.states, fa.states);
    // The same findings, each naming its input.
    let said = |a: &Analysis, name: &str| format!("{:?}", a.diagnostics).replace(name, "INPUT");
    assert_eq!(said(&a, "/f:"), said(&fa, "/t.jsonl:"));
    assert_eq!(said(&w, "/f:"), said(&fw, "/t.jsonl:"));
    assert_eq!(w.states, fw.states);
    assert_eq!(w.critical_path, fw.critical_path);
    assert_eq!(w.stats.scaled_edges, fw.stats.scaled_edges);
    // A regular file too is opened once.
    assert_eq!(both(&file, false).2, 1);
}

#[test]
fn asked_to_a_file_and_a_fifo_are_read_again_their_records_not_kept() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("t.jsonl");
    std::fs::write(&file, trace()).expect("writes");
    let (a, w, opens) = both(&file, true);
    assert_eq!(opens, 2, "the file was read again, its records not kept");
    assert_eq!(a.states, fresh(&file, Options::default()).states);
    let fw = fresh(&file, whatif());
    assert_eq!((w.states, w.critical_path), (fw.states, fw.critical_path));
    // The FIFO is read again from the copy its first reading made (its
    // writer writes once: opened again, the FIFO would wait for another).
    let (fifo, writer) = fifo(dir.path());
    let (fifo_a, fifo_w, opens) = both(&fifo, true);
    writer.join().expect("writer");
    assert_eq!(opens, 2, "the FIFO was read again, its records not kept");
    assert_eq!(fifo_a.states, a.states);
    assert_eq!(fifo_w.critical_path, fresh(&file, whatif()).critical_path);
}

#[test]
fn past_the_records_kept_a_file_is_read_again_and_a_fifo_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("t.jsonl");
    std::fs::write(&file, trace()).expect("writes");
    let mut s = Session::open(std::slice::from_ref(&file), &Settings::default()).expect("opens");
    s.keep_records(10);
    s.analyze(Options::default(), &mut |_, _| {})
        .expect("analyzes");
    let (w, _) = s.analyze(whatif(), &mut |_, _| {}).expect("reads again");
    assert_eq!(s.opens(), 2);
    assert_eq!(w.critical_path, fresh(&file, whatif()).critical_path);
}

/// A recording is analyzed under its own scope (its command's main thread
/// as the start): the verdict's what-if is answered from the graph that
/// pass kept, with no second pass, and predicts what a pass of its own finds.
#[test]
fn a_recordings_verdict_takes_no_second_pass() {
    let rec = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../os/tests/fixtures/pingpong_syscalls.data");
    let mut s = Session::open(std::slice::from_ref(&rec), &Settings::default()).expect("opens");
    s.keep_records(0);
    let kept = Options {
        rewalk: true,
        ..Options::default()
    };
    let (a, _) = s.analyze(kept, &mut |_, _| {}).expect("analyzes");
    let verdict = critpath_engine::analyses::top_twice(&a, Options::default(), |_| {
        Err::<Analysis, _>("a second pass")
    });
    let p = verdict.expect("no second pass").expect("a what-if");
    let top = &a.states[0];
    let twice = Options {
        speedups: vec![Speedup::of_state(&top.sys, &top.sm, &top.state, 2.0)],
        ..Options::default()
    };
    let w = fresh(&rec, twice);
    assert_eq!(p.length_ns, w.critical_path.length_ns);
    assert_eq!(p.scaled_edges, w.stats.scaled_edges);
    assert!(p.length_ns < a.critical_path.length_ns);
    assert_eq!(s.opens(), 1);
}

/// Every state visit and dependence an observed pass hands over, names
/// resolved, in order.
fn observed(path: &Path, threads: bool) -> (Vec<String>, Analysis) {
    let settings = Settings {
        threads,
        ..Settings::default()
    };
    let mut s = Session::open(&[path.to_path_buf()], &settings).expect("opens");
    let mut seen = Vec::new();
    let mut obs = |v: &critpath_engine::Visit, strings: &critpath_trace::Interner| {
        let r = |s| strings.resolve(s).to_string();
        seen.push(match *v {
            critpath_engine::Visit::State {
                sm,
                state,
                start,
                end,
                ..
            } => {
                format!("{} {} {start} {end}", r(sm), r(state))
            }
            critpath_engine::Visit::Link {
                from_sm,
                to_sm,
                sent,
                received,
                wait,
                ..
            } => {
                format!("{}->{} {sent} {received} {wait}", r(from_sm), r(to_sm))
            }
        });
    };
    let (a, _) = s
        .analyze_observed(Options::default(), &mut obs, &mut |_, _| {})
        .expect("analyzes");
    (seen, a)
}

/// An observed pass (the report's) reads on a thread of its own when
/// threads are allowed, and its observer hears what a pass on one thread
/// tells it: the same visits in the same order, the same analysis.
#[test]
fn an_observed_pass_hears_the_same_from_either_pump() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("t.jsonl");
    std::fs::write(&file, trace()).expect("writes");
    let rec = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../os/tests/fixtures/pingpong_syscalls.data");
    for path in [file, rec] {
        let (one, a) = observed(&path, false);
        let (two, b) = observed(&path, true);
        assert!(one.len() > 100, "{}: {} visits", path.display(), one.len());
        assert_eq!(one, two, "{}", path.display());
        assert_eq!(a.states, b.states);
        assert_eq!(a.critical_path, b.critical_path);
    }
}
