//! Traces without flow events: the waits of real viztracer traces
//! (examples/viztracer/queue_pipeline.py, recorded with the viztracer of
//! target/venv, which scripts/python-env.sh installs; the committed
//! examples/viztracer/spawn.json), and of small hand-written ones.

mod common;

use common::*;
use serde_json::Value;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Each SM's share of the critical path.
fn shares(v: &Value) -> HashMap<String, f64> {
    let len = v["critical_path"]["length_ns"].as_u64().unwrap() as f64;
    let mut by: HashMap<String, f64> = HashMap::new();
    for s in v["states"].as_array().unwrap() {
        let ns = s["critical_ns"].as_u64().unwrap() as f64;
        *by.entry(s["sm"].as_str().unwrap().to_string()).or_default() += ns / len;
    }
    by
}

fn diagnostic<'a>(v: &'a Value, kind: &str) -> Option<&'a Value> {
    v["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["kind"] == kind)
}

/// The example recorded by viztracer into `dir`, or `None` (with a note)
/// when target/venv has no viztracer.
fn record(dir: &Path, name: &str, args: &[&str]) -> Option<PathBuf> {
    let viz = repo().join("target/venv/bin/viztracer");
    if !viz.exists() {
        eprintln!("skipped: no target/venv/bin/viztracer (scripts/python-env.sh installs it)");
        return None;
    }
    let out = dir.join(name);
    let script = repo().join("examples/viztracer/queue_pipeline.py");
    let st = Command::new(&viz)
        .args(["--quiet", "-o"])
        .arg(&out)
        .arg(&script)
        .args(args)
        .status()
        .expect("viztracer runs");
    assert!(st.success(), "viztracer {args:?}");
    Some(out)
}

#[test]
fn viztracer_queue_pipeline_of_threads_is_bound_by_the_consumers_work() {
    let dir = tempfile::tempdir().unwrap();
    let Some(trace) = record(dir.path(), "threads.json", &[]) else {
        return;
    };
    let v = json_of(&["analyze", trace.to_str().unwrap(), "--json", "--path"]);
    let by = shares(&v);
    // Before: the main thread's join held 93-98% of the path, the
    // consumer's hashing 0%. (About 90% at rest; under load the main
    // thread's own start, before the threads, takes longer.)
    assert!(by["consumer"] >= 0.5, "{by:?}");
    assert!(by.values().all(|&s| s <= by["consumer"]), "{by:?}");
    for t in ["MainThread", "producer", "logger"] {
        assert!(by.contains_key(t), "{t} in {by:?}");
    }
    let links = diagnostic(&v, "inferred-link").expect("inferred links counted");
    assert!(links["count"].as_u64().unwrap() >= 3, "{links}");
    // The path leaves the main thread for the consumer over an inferred
    // link: the join of the consumer.
    let path = v["path"].as_array().unwrap();
    assert!(path
        .iter()
        .any(|s| s["inferred"] == true && s["from_sm"] == "consumer" && s["sm"] == "MainThread"));
    assert!(path
        .iter()
        .all(|s| s["inferred"] != true || s["inter"] == true));
    assert!(diagnostic(&v, "unlinked-threads").is_none());
}

#[test]
fn viztracer_processes_sharing_a_tid_appear_under_their_names() {
    let dir = tempfile::tempdir().unwrap();
    let Some(trace) = record(dir.path(), "processes.json", &["--processes"]) else {
        return;
    };
    let v = json_of(&["analyze", trace.to_str().unwrap(), "--json"]);
    let by = shares(&v);
    let named = |p: &str| {
        by.keys()
            .find(|k| k.starts_with(&format!("{p} [pid ")) && k.ends_with(']'))
            .cloned()
            .unwrap_or_else(|| panic!("no SM for process {p} in {by:?}"))
    };
    let consumer = named("consumer");
    named("producer");
    named("logger");
    named("MainProcess");
    assert!(by[&consumer] >= 0.8, "{by:?}");
    assert!(by.keys().all(|k| !k.contains('#')), "{by:?}");
}

/// A join, a queue hand-off and a lock, written as viztracer writes them.
fn synthetic() -> String {
    let x = |tid: u32, ts: u32, dur: u32, name: &str| {
        format!(r#"{{"ph":"X","pid":1,"tid":{tid},"ts":{ts},"dur":{dur},"name":"{name}"}}"#)
    };
    let ev = [
        r#"{"ph":"M","pid":1,"tid":1,"name":"thread_name","args":{"name":"MainThread"}}"#.into(),
        r#"{"ph":"M","pid":1,"tid":2,"name":"thread_name","args":{"name":"producer"}}"#.into(),
        r#"{"ph":"M","pid":1,"tid":3,"name":"thread_name","args":{"name":"consumer"}}"#.into(),
        x(1, 0, 1000, "main"),
        x(1, 10, 985, "Thread.join (threading.py:1087)"),
        x(1, 11, 983, "_thread.lock.acquire"),
        // The producer makes an item 5-100 and puts it at 100-110.
        x(2, 5, 95, "make"),
        x(2, 100, 10, "Queue.put (queue.py:122)"),
        // The consumer waits in get 5-112, then hashes 112-990.
        x(3, 5, 107, "Queue.get (queue.py:154)"),
        x(3, 6, 105, "Condition.wait (threading.py:295)"),
        x(3, 7, 104, "_thread.lock.acquire"),
        x(3, 112, 878, "digest"),
    ];
    format!("[{}]", ev.join(",\n"))
}

#[test]
fn a_join_and_a_queue_get_are_waits_whose_wakers_are_inferred() {
    let dir = tempfile::tempdir().unwrap();
    let p = write(dir.path(), "q.json", synthetic());
    let v = json_of(&["analyze", p.to_str().unwrap(), "--json", "--path"]);
    // make 95 + put 10 → get wakes at 111 (waited) → digest 878 → the
    // join returns at 994 (waited) → main ends at 1000.
    assert_eq!(crit(&v, "producer", "make"), 95_000);
    assert_eq!(crit(&v, "consumer", "digest"), 878_000);
    assert_eq!(crit(&v, "MainThread", "_thread.lock.acquire"), 4_000);
    assert_eq!(crit(&v, "consumer", "_thread.lock.acquire"), 1_000);
    let inferred: Vec<(&str, &str)> = (v["path"].as_array().unwrap().iter())
        .filter(|s| s["inferred"] == true)
        .map(|s| (s["from_sm"].as_str().unwrap(), s["sm"].as_str().unwrap()))
        .collect();
    assert_eq!(
        inferred,
        [("producer", "consumer"), ("consumer", "MainThread")]
    );
    assert_eq!(diagnostic(&v, "inferred-link").unwrap()["count"], 2);
    // The waits are waits, not long states.
    let long = v["diagnostics"].as_array().unwrap().iter();
    assert!(!long
        .filter(|d| d["kind"] == "long-state")
        .any(|d| d["state"] == "_thread.lock.acquire"));
}

#[test]
fn threads_nothing_links_are_named_with_the_busiest_other() {
    let dir = tempfile::tempdir().unwrap();
    let body = r#"[
      {"ph":"M","pid":1,"tid":1,"name":"thread_name","args":{"name":"main"}},
      {"ph":"M","pid":1,"tid":2,"name":"thread_name","args":{"name":"worker"}},
      {"ph":"M","pid":1,"tid":3,"name":"thread_name","args":{"name":"helper"}},
      {"ph":"X","pid":1,"tid":1,"ts":0,"dur":100,"name":"spin"},
      {"ph":"X","pid":1,"tid":2,"ts":0,"dur":80,"name":"work"},
      {"ph":"X","pid":1,"tid":3,"ts":0,"dur":20,"name":"help"}
    ]"#;
    let p = write(dir.path(), "u.json", body);
    let v = json_of(&["analyze", p.to_str().unwrap(), "--json"]);
    let d = diagnostic(&v, "unlinked-threads").expect("a diagnostic");
    assert_eq!(d["sm"], "main");
    assert_eq!(d["ns"], 80_000);
    let msg = d["message"].as_str().unwrap();
    assert!(msg.contains("`worker`"), "{msg}");
}

/// The first start and the last end of the slices of a Chrome trace, in ns.
fn run_of(v: &Value) -> (u64, u64) {
    let ns = |us: &Value| (us.as_f64().unwrap() * 1000.0).round() as u64;
    let slices = v["traceEvents"].as_array().unwrap().iter();
    let slices = slices.filter(|e| e["ph"] == "X");
    let start = slices.clone().map(|e| ns(&e["ts"])).min().unwrap();
    let end = slices.map(|e| ns(&e["ts"]) + ns(&e["dur"])).max().unwrap();
    (start, end)
}

#[test]
fn viztracer_threads_and_processes_are_linked_from_the_calls_that_started_them() {
    // examples/viztracer/spawn.py, recorded: the main thread starts and
    // joins a thread, a forked process, then a Popen'd Python child.
    let trace = example("viztracer/spawn.json");
    let text = std::fs::read_to_string(&trace).unwrap();
    let (start, end) = run_of(&serde_json::from_str(&text).unwrap());
    let v = json_of(&["analyze", &trace, "--json", "--path"]);
    // Before: 84.5 ms of the 402.1 ms run, each child's chain beginning
    // at its own first slice, so the joins' own edges won.
    let len = v["critical_path"]["length_ns"].as_u64().unwrap();
    assert_eq!(len, end - start);
    assert_eq!(len, 402_103_225);
    let path = v["path"].as_array().unwrap();
    let main = "MainProcess [pid 15240]";
    let started: Vec<(&str, u64)> = (path.iter())
        .filter(|s| s["inferred"] == true && s["from_sm"] == main)
        .map(|s| (s["sm"].as_str().unwrap(), s["end_ns"].as_u64().unwrap()))
        .collect();
    // Each child's first slice: the thread's `Thread.run`, reached as
    // `_thread.start_new_thread` returned; the fork's child, from
    // `posix.fork`; the Popen'd child, from its `Popen.wait`.
    assert_eq!(
        started,
        [
            ("MainProcess [pid 15240]/worker", 16_623_652_506_967),
            ("forked [pid 15242]", 16_623_691_575_666),
            ("python -c [pid 15243]", 16_623_951_580_857),
        ]
    );
    assert!(path
        .iter()
        .all(|s| s["inferred"] != true || s["inter"] == true));
    let links = diagnostic(&v, "inferred-link").expect("inferred links counted");
    assert_eq!(links["count"], 6);
    let msg = links["message"].as_str().unwrap();
    assert!(msg.contains("3 thread and process starts"), "{msg}");
    assert!(diagnostic(&v, "path-gap").is_none());
    // Each child's 30 ms of work is on the path (as are the Python child's
    // start-up, 211 ms before its first slice, and its exit).
    let by = shares(&v);
    for (sm, _) in &started {
        assert!(by[*sm] * len as f64 >= 29e6, "{sm} in {by:?}");
    }
}
