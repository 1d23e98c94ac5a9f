//! Damaged Kineto traces: what can be read is analyzed, and what could not
//! is said (a generated trace, cut or with a bad event put in).

mod common;

use common::run_damaged;
use critpath_gpu::open;
use std::path::Path;
use std::process::Command;

/// One rank, three steps (tests/gen/gen_kineto.py); `None` without python3.
fn generated(dir: &Path) -> Option<String> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/gen/gen_kineto.py");
    let ok = Command::new("python3")
        .arg(script)
        .arg(dir)
        .args(["--ranks", "1", "--steps", "3"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        eprintln!("note: python3 could not run the generator; test skipped");
        return None;
    }
    Some(std::fs::read_to_string(dir.join("rank0.pt.trace.json")).unwrap())
}

fn diagnostics(text: &str, dir: &Path) -> (u64, Vec<(String, String)>) {
    let f = dir.join("damaged.pt.trace.json");
    std::fs::write(&f, text).unwrap();
    let (a, _, _) = run_damaged(open(&f).unwrap());
    let d = a
        .diagnostics
        .iter()
        .map(|d| (d.kind.as_str().to_string(), d.message.clone()))
        .collect();
    (a.stats.records, d)
}

#[test]
fn a_cut_trace_is_read_to_its_last_whole_event_and_says_where() {
    let dir = tempfile::tempdir().unwrap();
    let Some(whole) = generated(dir.path()) else {
        return;
    };
    let (all, d) = diagnostics(&whole, dir.path());
    assert!(d.iter().all(|(k, _)| k != "input-cut"), "{d:?}");
    // Cut in the middle of an event two thirds of the way in.
    let cut = &whole[..whole.len() * 2 / 3];
    let last_whole = cut.rfind("},\n").unwrap() + 1;
    let (some, d) = diagnostics(cut, dir.path());
    assert!(some > 0 && some < all, "{some} of {all} records");
    let (_, msg) = d.iter().find(|(k, _)| k == "input-cut").expect("input-cut");
    assert!(msg.contains(&format!("ends at byte {last_whole}")), "{msg}");
}

#[test]
fn an_unreadable_event_is_skipped_and_named_by_its_offset() {
    let dir = tempfile::tempdir().unwrap();
    let Some(whole) = generated(dir.path()) else {
        return;
    };
    let at = whole.find("\n{").unwrap() + 1;
    let bad = r#"{"ph":"X","cat":"cpu_op","name":"x","ts":"soon","dur":[1]},"#;
    let text = format!("{}{bad}\n{}", &whole[..at], &whole[at..]);
    let (records, d) = diagnostics(&text, dir.path());
    assert!(records > 0);
    let (_, msg) = d
        .iter()
        .find(|(k, _)| k == "input-skipped")
        .expect("input-skipped");
    assert!(msg.contains("1 event(s)"), "{msg}");
    assert!(msg.contains(&format!("byte {at}:")), "{msg}");
}

#[test]
fn events_that_cannot_be_placed_or_linked_are_said() {
    let dir = tempfile::tempdir().unwrap();
    let ev = |cat: &str, name: &str, ts: i64, dur: Option<i64>, args: &str| {
        let dur = dur.map_or(String::new(), |d| format!(r#","dur":{d}"#));
        format!(
            r#"{{"ph":"X","cat":"{cat}","name":"{name}","pid":100,"tid":100,"ts":{ts}{dur},"args":{{{args}}}}}"#
        )
    };
    let events = [
        // `b` starts in `a` and ends after it.
        ev("cpu_op", "a", 0, Some(100), ""),
        ev("cpu_op", "b", 50, Some(100), ""),
        ev("cpu_op", "neg", 200, Some(-5), ""),
        ev("cpu_op", "early", -50, Some(10), ""),
        ev("cpu_op", "nodur", 300, None, ""),
        ev(
            "kernel",
            "nostream",
            410,
            Some(10),
            r#""device":0,"correlation":5"#,
        ),
        // No name, a null name: neither is a state "".
        r#"{"ph":"X","cat":"cpu_op","pid":100,"tid":100,"ts":320,"dur":5}"#.to_string(),
        r#"{"ph":"X","cat":"cpu_op","name":null,"pid":100,"tid":100,"ts":330,"dur":5}"#.to_string(),
        // An event sync naming a record no event holds.
        ev(
            "cuda_runtime",
            "cudaEventSynchronize",
            500,
            Some(10),
            r#""correlation":6"#,
        ),
        ev(
            "cuda_sync",
            "Event Sync",
            500,
            Some(10),
            r#""correlation":6,"device":0,"wait_on_stream":7,"wait_on_cuda_event_record_corr_id":99999"#,
        ),
    ];
    let text = format!(
        r#"{{"schemaVersion":1,"traceEvents":[{}]}}"#,
        events.join(",\n")
    );
    let (_, d) = diagnostics(&text, dir.path());
    let msg = |kind: &str| {
        let found = d.iter().find(|(k, _)| k == kind);
        found.unwrap_or_else(|| panic!("{kind} in {d:?}")).1.clone()
    };
    let skipped = d.iter().filter(|(k, _)| k == "input-skipped");
    let text: Vec<&str> = skipped.map(|(_, m)| m.as_str()).collect();
    let text = text.join("\n");
    // The first five of six are named.
    assert!(text.contains("6 event(s)"), "{text}");
    for why in [
        "\"neg\": a negative dur",
        "\"early\": a negative ts",
        "\"nodur\": no dur",
        "\"nostream\": a GPU op without its stream",
        "\"\": no name (a string)",
        "1 synchronization(s)",
    ] {
        assert!(text.contains(why), "{why} in {text}");
    }
    assert!(msg("stack-mismatch").contains("1 CPU op(s) end after"));
}

#[test]
fn gpu_ops_that_match_no_launch_are_counted_and_the_first_named() {
    let dir = tempfile::tempdir().unwrap();
    let launch = |ts: u64, corr: u64| {
        format!(
            r#"{{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":{ts},"dur":2,"args":{{"correlation":{corr}}}}}"#
        )
    };
    let op = |cat: &str, name: &str, ts: f64, stream: u64, corr: Option<u64>| {
        let corr = corr.map_or(String::new(), |c| format!(r#","correlation":{c}"#));
        format!(
            r#"{{"ph":"X","cat":"{cat}","name":"{name}","pid":0,"tid":{stream},"ts":{ts},"dur":5,"args":{{"device":0,"stream":{stream}{corr}}}}}"#
        )
    };
    // Launched: k (correlation 1). Not: a copy whose correlation (7) no
    // call has, a kernel without one, a memset of correlation 9.
    let events = [
        launch(0, 1),
        op("kernel", "k", 10.0, 7, Some(1)),
        op("gpu_memset", "Memset (Device)", 40.0, 7, Some(9)),
        op("gpu_memcpy", "Memcpy HtoD", 20.5, 8, Some(7)),
        op("kernel", "nocorr", 30.0, 7, None),
    ];
    let text = format!(
        r#"{{"schemaVersion":1,"traceEvents":[{}]}}"#,
        events.join(",\n")
    );
    let (_, d) = diagnostics(&text, dir.path());
    let notes: Vec<&str> = (d.iter())
        .filter(|(k, _)| k == "launch-unmatched")
        .map(|(_, m)| m.as_str())
        .collect();
    assert_eq!(notes.len(), 1, "{d:?}");
    for part in [
        "damaged.pt.trace.json: 3 GPU op(s) match no CPU-side launch",
        "the first: \"Memcpy HtoD\" on gpu0:stream8 at ts 20.5 µs (correlation id 7)",
    ] {
        assert!(notes[0].contains(part), "{part} in {}", notes[0]);
    }
    // Every op launched: no such note.
    let text = format!(
        r#"{{"schemaVersion":1,"traceEvents":[{},{}]}}"#,
        launch(0, 1),
        op("kernel", "k", 10.0, 7, Some(1))
    );
    let (_, d) = diagnostics(&text, dir.path());
    assert!(d.iter().all(|(k, _)| k != "launch-unmatched"), "{d:?}");
}

#[test]
fn an_op_before_the_call_of_its_correlation_id_names_that_id() {
    let dir = tempfile::tempdir().unwrap();
    let launch = |ts: u64| {
        format!(
            r#"{{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":{ts},"dur":2,"args":{{"correlation":1}}}}"#
        )
    };
    let kernel = |name: &str, ts: u64| {
        format!(
            r#"{{"ph":"X","cat":"kernel","name":"{name}","pid":0,"tid":7,"ts":{ts},"dur":5,"args":{{"device":0,"stream":7,"correlation":1}}}}"#
        )
    };
    // Correlation id 1 given twice: the last call (at 20 µs) is taken as
    // the launch of both kernels, but k1 starts at 10 µs, before it.
    let events = [launch(0), kernel("k1", 10), launch(20), kernel("k2", 30)];
    let text = format!(
        r#"{{"schemaVersion":1,"traceEvents":[{}]}}"#,
        events.join(",\n")
    );
    let (_, d) = diagnostics(&text, dir.path());
    let notes: Vec<&str> = (d.iter())
        .filter(|(k, _)| k == "recv-without-send")
        .map(|(_, m)| m.as_str())
        .collect();
    assert_eq!(notes.len(), 1, "{d:?}");
    for part in [
        "damaged.pt.trace.json: 1 GPU op(s) start before the CUDA call their correlation id names",
        "the first: \"k1\" on gpu0:stream7 at ts 10 µs, correlation id 1, whose CUDA call starts at ts 20 µs",
    ] {
        assert!(notes[0].contains(part), "{part} in {}", notes[0]);
    }
    // No internal link id: (1 << 56) | the op's index.
    assert!(!notes[0].contains("recv of id"), "{}", notes[0]);
}

#[test]
fn times_past_the_latest_time_are_skipped_and_named() {
    let dir = tempfile::tempdir().unwrap();
    let ev = |cat: &str, name: &str, ts: &str, dur: &str, args: &str| {
        format!(
            r#"{{"ph":"X","cat":"{cat}","name":"{name}","pid":100,"tid":100,"ts":{ts},"dur":{dur},"args":{{{args}}}}}"#
        )
    };
    let k = r#""device":0,"stream":7,"correlation":1"#;
    let bad = [
        // 1.9e16 µs is 1.9e19 ns, past u64: it used to wrap to 5.5e17 ns.
        ev("cpu_op", "op_wraps", "1.9e16", "1", ""),
        // 1e16 µs is 1e19 ns: within u64, past i64::MAX.
        ev("kernel", "k_past", "10000000000000000", "5", k),
        ev("cpu_op", "op_1e19", "1e19", "1", ""),
        ev("cpu_op", "long_dur", "10", "9.3e15", ""),
        // Each time within it, the end past it.
        ev("cpu_op", "ends_past", "9.2e15", "1e14", ""),
        ev(
            "cuda_runtime",
            "ends_past_too",
            "9200000000000000",
            "100000000000000",
            "",
        ),
    ];
    let good = [
        ev("cpu_op", "aten::mm", "0", "100", ""),
        ev(
            "cuda_runtime",
            "cudaLaunchKernel",
            "10",
            "5",
            r#""correlation":1"#,
        ),
        ev("kernel", "gemm", "20", "50", k),
    ];
    let mut text = String::from(r#"{"schemaVersion":1,"traceEvents":["#);
    let mut at = Vec::new();
    for (i, e) in good.iter().chain(&bad).enumerate() {
        if i > 0 {
            text.push_str(",\n");
        }
        at.push(text.len());
        text.push_str(e);
    }
    text.push_str("]}");
    let f = dir.path().join("late.json");
    std::fs::write(&f, &text).unwrap();
    let (a, _, _) = run_damaged(open(&f).unwrap());
    // aten::mm, 0-100 µs (gemm ends at 70 µs): the skipped times are on
    // no path.
    assert_eq!(a.critical_path.length_ns, 100_000);
    let skipped: Vec<&str> = a
        .diagnostics
        .iter()
        .filter(|d| d.kind.as_str() == "input-skipped")
        .map(|d| d.message.as_str())
        .collect();
    let text = skipped.join("\n");
    assert!(text.contains("6 event(s)"), "{text}");
    let limit = "is past the latest time (9223372036854775807 ns";
    // The first five are named by their byte offsets.
    for (i, why) in [
        format!("\"op_wraps\": ts 19000000000000000 µs {limit}"),
        format!("\"k_past\": ts 10000000000000000 µs {limit}"),
        format!("\"op_1e19\": ts 1e19 µs {limit}"),
        format!("\"long_dur\": dur 9300000000000000 µs {limit}"),
        "\"ends_past\": it ends past the latest time (9223372036854775807 ns): ts 9200000000000000000 ns + dur 100000000000000000 ns".to_string(),
    ]
    .iter()
    .enumerate()
    {
        let offset = at[good.len() + i];
        assert!(text.contains(&format!("byte {offset}: {why}")), "{why} in {text}");
    }
}
