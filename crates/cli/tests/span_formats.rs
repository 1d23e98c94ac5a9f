//! The same spans in every form OpenTelemetry users have on disk, written
//! by the OpenTelemetry Python SDK's encoders (examples/spans/otel): each
//! gives the same per-request analysis, compressed or not, by name or on
//! standard input; `--trace` takes the id in any spelling.

mod common;

use common::*;
use serde_json::Value;
use std::io::Write;
use std::process::{Command, Stdio};

const FORMS: [&str; 6] = [
    "otlp.json",
    "base64.json",
    "export.jsonl",
    "otlp.pb",
    "delimited.pb",
    "zipkin.json",
];

/// Each request's id, length and bounding service and state.
fn per_trace(v: &Value) -> Vec<(String, u64, String, String)> {
    let rows = v["per_trace"].as_array().expect("per_trace");
    rows.iter()
        .map(|r| {
            (
                r["trace_id"].as_str().unwrap().to_string(),
                r["length_ns"].as_u64().unwrap(),
                r["top"]["sm"].as_str().unwrap().to_string(),
                r["top"]["state"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

#[test]
fn every_form_gives_the_same_requests() {
    let want = per_trace(&json_of(&[
        "analyze",
        &example("spans/otel/otlp.json"),
        "--json",
    ]));
    let id = |n: u8| format!("5b8efff798038103d269b633813f000{n}");
    let row = |n, ms: u64, sm: &str, st: &str| (id(n), ms * 1_000_000, sm.into(), st.into());
    assert_eq!(
        want,
        [
            row(1, 57, "cart", "load cart"),
            row(2, 132, "db", "SELECT orders"),
            row(3, 128, "payment", "charge"),
        ]
    );
    let dir = tempfile::tempdir().unwrap();
    for form in FORMS {
        let path = example(&format!("spans/otel/{form}"));
        let v = json_of(&["analyze", &path, "--json"]);
        assert_eq!(per_trace(&v), want, "{form}");
        // zstd-compressed, under a name that says nothing.
        let body = std::fs::read(&path).unwrap();
        let packed = zstd::encode_all(&body[..], 3).unwrap();
        let p = write(dir.path(), "spans.bin", packed);
        let v = json_of(&["analyze", p.to_str().unwrap(), "--json"]);
        assert_eq!(per_trace(&v), want, "{form} compressed");
    }
}

#[test]
fn protobuf_on_standard_input_is_told_from_its_content() {
    let body = std::fs::read(example("spans/otel/delimited.pb")).unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_critpath"))
        .args([
            "analyze",
            "-",
            "--trace",
            "W47/95gDgQPSabYzgT8AAg==",
            "--json",
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(&body).unwrap();
    let o = child.wait_with_output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["critical_path"]["length_ns"], 132_000_000);
}

#[test]
fn a_damaged_line_of_json_lines_is_named_and_the_rest_analyzed() {
    let body = std::fs::read_to_string(example("spans/otel/export.jsonl")).unwrap();
    let mut lines: Vec<String> = body.lines().map(String::from).collect();
    // Line 3 corrupt (a value that is not JSON) in the middle.
    lines[2].truncate(100);
    lines[2] += " x }";
    let dir = tempfile::tempdir().unwrap();
    let p = write(dir.path(), "d.jsonl", lines.join("\n") + "\n");
    let o = run(&["analyze", p.to_str().unwrap(), "--json"]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("d.jsonl:") && err.contains("corrupt"), "{err}");
    assert!(err.contains("reading goes on at line 4"), "{err}");
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    // Three requests still, without the db spans of line 3.
    let rows = per_trace(&v);
    assert_eq!(rows.len(), 3);
    assert_eq!(rows[1].2, "frontend", "{rows:?}");
    // Line 3 cut inside a string: the newline ending it is where the
    // parser stops, counted on line 4 before.
    let mut lines: Vec<String> = body.lines().map(String::from).collect();
    let cut = lines[2].find("\"name\":\"").unwrap() + 9;
    lines[2].truncate(cut);
    let p = write(dir.path(), "e.jsonl", lines.join("\n") + "\n");
    let o = run(&["analyze", p.to_str().unwrap(), "--json"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("e.jsonl:3: corrupt"), "{err}");
}

#[test]
fn spans_of_one_trace_id_in_several_files_are_one_request() {
    let want = per_trace(&json_of(&[
        "analyze",
        &example("spans/otel/otlp.json"),
        "--json",
    ]));
    // The collector's lines split in two files: each request's spans are
    // in both (frontend and cart in one, db and payment in the other).
    let dir = tempfile::tempdir().unwrap();
    let lines = std::fs::read_to_string(example("spans/otel/export.jsonl")).unwrap();
    let (head, tail): (Vec<&str>, Vec<&str>) = {
        let all: Vec<&str> = lines.lines().collect();
        (all[..2].to_vec(), all[2..].to_vec())
    };
    let a = write(dir.path(), "a.jsonl", head.join("\n") + "\n");
    let b = write(dir.path(), "b.jsonl", tail.join("\n") + "\n");
    let (a, b) = (a.to_str().unwrap(), b.to_str().unwrap());
    let alone = per_trace(&json_of(&["analyze", a, "--json"]));
    assert_ne!(alone, want, "one file holds parts of the requests only");
    assert_eq!(per_trace(&json_of(&["analyze", a, b, "--json"])), want);
    // One of them, by its id, is the same request as in the whole file.
    let id = &want[1].0;
    let one = json_of(&["analyze", a, b, "--trace", id, "--json"]);
    assert_eq!(one["critical_path"]["length_ns"], want[1].1);
    let w = json_of(&["whatif", a, b, "--trace", id, "--speedup", "db=2", "--json"]);
    let whole = example("spans/otel/otlp.json");
    let w1 = json_of(&[
        "whatif",
        &whole,
        "--trace",
        id,
        "--speedup",
        "db=2",
        "--json",
    ]);
    assert!(w["predicted_length_ns"].as_u64().is_some(), "{w}");
    assert_eq!(w["predicted_length_ns"], w1["predicted_length_ns"]);
    assert_eq!(w["baseline_length_ns"], want[1].1);
    // The text names both files.
    let o = run(&["analyze", a, b]);
    assert!(String::from_utf8_lossy(&o.stdout).contains("a.jsonl + "));
}

#[test]
fn commands_of_one_trace_refuse_several_requests_without_trace() {
    let file = example("spans/otel/otlp.json");
    let want = per_trace(&json_of(&["analyze", &file, "--json"]));
    assert_eq!(want.len(), 3);
    for args in [
        vec!["whatif", &file, "--speedup", "db=2"],
        vec!["slack", &file],
        vec!["cgraph", &file],
        vec!["diff", &file, &file],
    ] {
        let o = run(&args);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.contains("otlp.json holds 3 requests") && err.contains("--trace"),
            "{args:?}: {err}"
        );
        assert!(o.stdout.is_empty(), "{args:?}: no merged result printed");
    }
    // With one picked, each is that request's analysis.
    let (id, length) = (&want[1].0, want[1].1);
    let w = json_of(&[
        "whatif",
        &file,
        "--trace",
        id,
        "--speedup",
        "db=2",
        "--json",
    ]);
    assert_eq!(w["baseline_length_ns"], length);
    let o = run(&["cgraph", &file, "--trace", id]);
    assert!(o.status.success());
    assert!(String::from_utf8_lossy(&o.stdout).starts_with("digraph"));
    // A file of one request needs no --trace.
    let one = example("spans/checkout-otlp.json");
    assert!(run(&["slack", &one]).status.success());
}

/// `(sm, state)`'s critical time in an `analyze --json` document.
fn critical(v: &Value, sm: &str, state: &str) -> u64 {
    let rows = v["states"].as_array().expect("states");
    let row = rows.iter().find(|s| s["sm"] == sm && s["state"] == state);
    row.map_or(0, |s| s["critical_ns"].as_u64().unwrap())
}

#[test]
fn a_message_handled_after_the_response_is_off_the_requests_path() {
    // examples/spans/gen_messaging.py's ground truth: POST /order 0-50 ms
    // publishes a message (22-24) that the mailer handles 60-140, its
    // consumer span a child of the producer span.
    let file = example("spans/otel/messaging.json");
    let v = json_of(&["analyze", &file, "--json"]);
    assert_eq!(v["critical_path"]["length_ns"], 50_000_000, "{v}");
    assert_eq!(v["critical_path"]["end"]["sm"], "frontend");
    assert_eq!(critical(&v, "mailer", "render"), 0);
    let d = &v["diagnostics"][0];
    assert_eq!(d["kind"], "after-root", "{v}");
    assert_eq!(
        (d["count"].as_u64(), d["ns"].as_u64()),
        (Some(2), Some(90_000_000))
    );
    // On to the mailer: the 36 ms in the queue are the mailer's wait for
    // the message, not the producer's lane idling.
    let v = json_of(&["analyze", &file, "--json", "--to", "mailer"]);
    assert_eq!(v["critical_path"]["length_ns"], 140_000_000, "{v}");
    assert_eq!(critical(&v, "mailer", "idle"), 36_000_000, "{v}");
    assert_eq!(critical(&v, "orders", "idle"), 0, "{v}");
    assert_eq!(critical(&v, "mailer", "render"), 50_000_000);
}

#[test]
fn ids_neither_hex_nor_base64_are_kept_as_written() {
    let dir = tempfile::tempdir().unwrap();
    let span = |trace: &str, id: &str, name: &str, parent: Option<&str>, p: &str| {
        let refs = parent.map_or(String::new(), |s| {
            format!(r#"{{"refType":"CHILD_OF","traceID":"{trace}","spanID":"{s}"}}"#)
        });
        format!(
            r#"{{"traceID":"{trace}","spanID":"{id}","operationName":"{name}","references":[{refs}],"startTime":1000,"duration":{},"processID":"{p}"}}"#,
            if parent.is_some() { 50 } else { 100 }
        )
    };
    let spans = [
        span("Trace-One", "a1", "root", None, "p1"),
        span("Trace-One", "a2", "child", Some("a1"), "p2"),
        span("trace-one", "b1", "root2", None, "p1"),
    ];
    let doc = format!(
        r#"{{"data":[{{"traceID":"x","spans":[{}],"processes":{{"p1":{{"serviceName":"front"}},"p2":{{"serviceName":"back"}}}}}}]}}"#,
        spans.join(",")
    );
    let f = write(dir.path(), "jaeger.json", doc);
    let f = f.to_str().unwrap();
    let v = json_of(&["analyze", "--json", f]);
    let ids: Vec<String> = per_trace(&v).into_iter().map(|r| r.0).collect();
    assert_eq!(ids, ["Trace-One", "trace-one"]);
    let one = json_of(&["analyze", "--json", "--trace", "trace-one", f]);
    assert_eq!(one["states"][0]["state"], "root2", "{one}");
    let o = run(&["analyze", "--trace", "TRACE-ONE", f]);
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn the_many_request_table_counts_a_lanes_states_as_its_services() {
    // Two requests, each with two concurrent `db: q` calls: the long one
    // starts second in request 1 (lane db#2) and first in request 2 (db).
    let dir = tempfile::tempdir().unwrap();
    let span = |trace: u8, id: u8, svc: &str, name: &str, (start, end): (u64, u64)| {
        let parent = if id == 1 {
            String::new()
        } else {
            r#","parentSpanId":"0000000000000001""#.to_string()
        };
        format!(
            r#"{{"resource":{{"attributes":[{{"key":"service.name","value":{{"stringValue":"{svc}"}}}}]}},"scopeSpans":[{{"spans":[{{"traceId":"{trace:032x}","spanId":"{id:016x}"{parent},"name":"{name}","kind":1,"startTimeUnixNano":"{}","endTimeUnixNano":"{}"}}]}}]}}"#,
            start * 1_000_000,
            end * 1_000_000
        )
    };
    let spans = [
        span(1, 1, "fe", "R", (0, 100)),
        span(1, 2, "db", "q", (10, 30)),
        span(1, 3, "db", "q", (11, 90)),
        span(2, 1, "fe", "R", (0, 100)),
        span(2, 2, "db", "q", (10, 90)),
        span(2, 3, "db", "q", (11, 30)),
    ];
    let doc = format!(r#"{{"resourceSpans":[{}]}}"#, spans.join(","));
    let f = write(dir.path(), "lanes.json", doc);
    let v = json_of(&["analyze", "--json", f.to_str().unwrap()]);
    let tops: Vec<(String, u64, String, String)> = per_trace(&v);
    assert!(
        tops.iter()
            .all(|t| (t.2.as_str(), t.3.as_str()) == ("db", "q")),
        "{tops:?}"
    );
    let rows = v["states"].as_array().unwrap();
    assert!(rows.iter().all(|r| r["sm"] != "db#2"), "{v}");
    let q = rows.iter().find(|r| r["sm"] == "db").expect("db: q");
    assert_eq!(q["traces"], 2, "{q}");
    // 11-90 ms in request 1, 10-90 ms in request 2.
    assert_eq!(q["critical_ns_sum"], 79_000_000 + 80_000_000, "{q}");
}

/// An OTLP JSON request of `spans`: (service, id, parent, name, start and
/// end in ms).
fn otlp_request(spans: &[(&str, &str, &str, &str, u64, u64)]) -> String {
    let one = |&(svc, id, parent, name, start, end): &(&str, &str, &str, &str, u64, u64)| {
        format!(
            r#"{{"resource":{{"attributes":[{{"key":"service.name","value":{{"stringValue":"{svc}"}}}}]}},"scopeSpans":[{{"spans":[{{"traceId":"00000000000000000000000000000008","spanId":"{id}","parentSpanId":"{parent}","name":"{name}","startTimeUnixNano":"{}","endTimeUnixNano":"{}"}}]}}]}}"#,
            1_000_000_000_000 + start * 1_000_000,
            1_000_000_000_000 + end * 1_000_000
        )
    };
    let all: Vec<String> = spans.iter().map(one).collect();
    format!(r#"{{"resourceSpans":[{}]}}"#, all.join(","))
}

#[test]
fn what_a_span_cut_at_the_roots_end_called_after_it_is_cut_away_whole() {
    // fe root 0-100 ms calls db q 10-150, cut at 100; q calls cache g
    // 120-140 after the root's end (cut away whole) and cache s 90-140
    // before it (cut at 100, as q is).
    let dir = tempfile::tempdir().unwrap();
    let doc = otlp_request(&[
        ("fe", "0000000000000001", "", "root", 0, 100),
        ("db", "0000000000000002", "0000000000000001", "q", 10, 150),
        (
            "cache",
            "0000000000000003",
            "0000000000000002",
            "g",
            120,
            140,
        ),
        (
            "cache",
            "0000000000000004",
            "0000000000000002",
            "s",
            90,
            140,
        ),
    ]);
    let f = write(dir.path(), "spans.json", doc);
    let f = f.to_str().unwrap();
    let v = json_of(&["analyze", "--json", f]);
    assert_eq!(v["critical_path"]["length_ns"], 100_000_000, "{v}");
    let kinds = diagnostic_kinds(&v);
    assert_eq!(kinds, ["child-outlives-parent"], "{v}");
    let msg = v["diagnostics"][0]["message"].as_str().unwrap();
    assert!(
        msg.contains("1 spans called after that end (e.g. cache: g) were cut away whole"),
        "{msg}"
    );
    // g has no time in the request; s is cut at 100 ms.
    assert_eq!(state_row(&v, "cache", "g")["total_ns"], 0, "{v}");
    assert_eq!(state_row(&v, "cache", "s")["total_ns"], 10_000_000, "{v}");
    let o = run(&["check", f]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stdout));
}

#[test]
fn children_of_a_shared_zipkin_id_are_the_server_spans() {
    // gw root 0-200 µs; fe's client span b 10-190 and be's server span
    // 20-180 share id b; be called db q 30-130 (parentId b), so be waits
    // for it: be 60 µs of its own, db 100.
    let dir = tempfile::tempdir().unwrap();
    let span = |id: &str, parent: &str, svc: &str, name: &str, more: &str, (t, d): (u64, u64)| {
        format!(
            r#"{{"traceId":"0000000000000abc","id":"{id}","parentId":"{parent}","name":"{name}","timestamp":{},"duration":{d},"localEndpoint":{{"serviceName":"{svc}"}}{more}}}"#,
            1000 + t
        )
    };
    let spans = [
        span("000000000000000a", "", "gw", "root", "", (0, 200)),
        span(
            "000000000000000b",
            "000000000000000a",
            "fe",
            "call",
            r#","kind":"CLIENT""#,
            (10, 180),
        ),
        span(
            "000000000000000b",
            "000000000000000a",
            "be",
            "serve",
            r#","kind":"SERVER","shared":true"#,
            (20, 160),
        ),
        span(
            "000000000000000c",
            "000000000000000b",
            "db",
            "q",
            r#","kind":"SERVER""#,
            (30, 100),
        ),
    ];
    let f = write(dir.path(), "zipkin.json", format!("[{}]", spans.join(",")));
    let v = json_of(&["analyze", "--json", f.to_str().unwrap()]);
    assert_eq!(v["critical_path"]["length_ns"], 200_000, "{v}");
    assert_eq!(crit(&v, "be", "serve"), 60_000, "{v}");
    assert_eq!(crit(&v, "db", "q"), 100_000, "{v}");
    assert_eq!(v["diagnostics"], serde_json::json!([]), "{v}");
}
