//! Many requests end to end: checkout requests written by
//! examples/spans/gen_checkout.py with their ground truth, analyzed per
//! request by `analyze` and by `batch` (serial and on two threads), one
//! request picked with `--trace`, files that fail among files that do not,
//! and Jaeger files of several traces.

mod common;
use common::*;
use serde_json::Value;
use std::path::Path;
use std::process::Command;

/// Generates `files` × `requests` checkout requests into `dir`; returns
/// the ground truth.
fn generate(dir: &Path, files: usize, requests: usize) -> Value {
    let o = Command::new("python3")
        .arg(example("spans/gen_checkout.py"))
        .args(["-o", dir.to_str().unwrap()])
        .args([
            "--files",
            &files.to_string(),
            "--requests",
            &requests.to_string(),
        ])
        .output()
        .expect("python3 runs");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    serde_json::from_slice(&std::fs::read(dir.join("truth.json")).unwrap()).unwrap()
}

fn traces_in(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.file_name()
                .unwrap()
                .to_str()
                .unwrap()
                .starts_with("checkout-")
        })
        .map(|p| p.to_str().unwrap().to_string())
        .collect();
    v.sort();
    v
}

/// `batch` with `extra` arguments; its standard output.
fn batch(files: &[String], extra: &[&str]) -> String {
    let mut args = vec!["batch"];
    args.extend(files.iter().map(String::as_str));
    args.extend(extra);
    let o = run(&args);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8(o.stdout).unwrap()
}

fn csv_rows(path: &Path) -> Vec<Vec<String>> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| l.split(',').map(str::to_string).collect())
        .collect()
}

#[test]
fn batch_finds_the_bound_of_most_requests_and_of_the_slowest() {
    let dir = tempfile::tempdir().unwrap();
    let truth = generate(dir.path(), 50, 40);
    let files = traces_in(dir.path());
    assert_eq!(files.len(), 50);
    let (serial, both) = (dir.path().join("serial"), dir.path().join("both"));
    let out = batch(
        &files,
        &[
            "--threads",
            "1",
            "--format",
            "csv",
            "-o",
            serial.to_str().unwrap(),
        ],
    );
    let out2 = batch(
        &files,
        &[
            "--threads",
            "2",
            "--format",
            "csv",
            "-o",
            both.to_str().unwrap(),
        ],
    );
    assert_eq!(out, out2, "two threads print what one prints");
    for t in ["per_trace.csv", "states.csv"] {
        assert_eq!(
            std::fs::read(serial.join(t)).unwrap(),
            std::fs::read(both.join(t)).unwrap(),
            "{t}: two threads write what one writes"
        );
    }
    assert!(
        out.contains("in the slowest 10% (200 requests, ")
            && out.contains("), db: SELECT orders holds"),
        "{out}"
    );
    assert!(
        out.contains("; in the rest, cart: load cart holds"),
        "{out}"
    );
    assert!(
        out.starts_with("bound by cart: load cart over 2000 requests"),
        "{out}"
    );

    let states = csv_rows(&serial.join("states.csv"));
    assert_eq!(
        states[0][..5],
        ["sys", "sm", "state", "traces", "critical_ns_sum"]
    );
    assert_eq!(states[1][1..4], ["cart", "load cart", "1800"]);
    let db = states.iter().find(|r| r[1] == "db").unwrap();
    assert_eq!(db[3..5], ["200", "24000000000"]);

    // Every request's length and bound as the generator made it.
    let per = csv_rows(&serial.join("per_trace.csv"));
    assert_eq!(per.len(), 2001);
    let reqs = truth["requests"].as_array().unwrap();
    assert_eq!(reqs.len(), 2000);
    for t in reqs {
        let row = per
            .iter()
            .find(|r| r[1] == t["trace_id"].as_str().unwrap())
            .unwrap();
        assert!(row[0].ends_with(t["file"].as_str().unwrap()));
        assert_eq!(row[2], t["length_ns"].to_string());
        assert_eq!(
            format!("{}: {}", row[3], row[4]),
            t["bound_by"].as_str().unwrap()
        );
    }

    // Parquet by default, the same rows.
    let pq = dir.path().join("pq");
    batch(&files[..2], &["-o", pq.to_str().unwrap()]);
    use parquet::file::reader::{FileReader, SerializedFileReader};
    let r = SerializedFileReader::new(std::fs::File::open(pq.join("per_trace.parquet")).unwrap())
        .unwrap();
    assert_eq!(r.metadata().file_metadata().num_rows(), 80);
    let r =
        SerializedFileReader::new(std::fs::File::open(pq.join("states.parquet")).unwrap()).unwrap();
    assert_eq!(r.metadata().file_metadata().num_rows(), 4);
}

#[test]
fn analyze_aggregates_the_requests_of_one_file() {
    let dir = tempfile::tempdir().unwrap();
    let truth = generate(dir.path(), 1, 40);
    let file = traces_in(dir.path()).remove(0);
    let v = json_of(&["analyze", &file, "--json"]);
    assert_eq!(v["traces"], 40);
    let per = v["per_trace"].as_array().unwrap();
    assert_eq!(per.len(), 40);
    for t in truth["requests"].as_array().unwrap() {
        let p = per.iter().find(|p| p["trace_id"] == t["trace_id"]).unwrap();
        assert_eq!(p["length_ns"], t["length_ns"]);
        let top = format!(
            "{}: {}",
            p["top"]["sm"].as_str().unwrap(),
            p["top"]["state"].as_str().unwrap()
        );
        assert_eq!(top, t["bound_by"].as_str().unwrap());
        // The flat columns say the same.
        assert_eq!(p["top_sm"], p["top"]["sm"]);
        assert_eq!(p["top_state"], p["top"]["state"]);
        assert_eq!(p["top_criticality"], p["top"]["criticality"]);
    }
    let states = v["states"].as_array().unwrap();
    assert_eq!(
        (states[0]["sm"].as_str(), states[0]["traces"].as_u64()),
        (Some("cart"), Some(36))
    );
    let db = states.iter().find(|s| s["sm"] == "db").unwrap();
    // Critical in 4 of 40: the median request does not have it on its path.
    assert_eq!(db["traces"], 4);
    assert_eq!(db["criticality_p50"], 0.0);
    assert!(db["criticality_p99"].as_f64().unwrap() > 0.85);
    let slow = &v["slowest"];
    assert_eq!(
        (slow["slow_traces"].as_u64(), slow["rest_traces"].as_u64()),
        (Some(4), Some(36))
    );
    assert_eq!(slow["slow_top"]["sm"], "db");
    assert_eq!(slow["rest_top"]["sm"], "cart");

    // Text: the verdict over the requests, the table, the comparison.
    let o = run(&["analyze", &file]);
    let text = String::from_utf8(o.stdout).unwrap();
    assert!(
        text.starts_with("bound by cart: load cart over 40 requests"),
        "{text}"
    );
    assert!(text.contains("traces  critical sum"), "{text}");
    assert!(text.contains("in the slowest 10% (4 requests"), "{text}");

    // Options that need one request say how to pick it.
    let o = run(&["analyze", &file, "--next"]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("--next") && err.contains("--trace "), "{err}");
}

#[test]
fn one_request_picked_is_the_file_of_that_request_alone() {
    let dir = tempfile::tempdir().unwrap();
    generate(dir.path(), 1, 20);
    let file = traces_in(dir.path()).remove(0);
    let doc: Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
    for id in [
        "0000000000000000000000000000000a",
        "00000000000000000000000000000003",
    ] {
        // The same document with only this request's spans.
        let mut only = doc.clone();
        for r in only["resourceSpans"].as_array_mut().unwrap() {
            for s in r["scopeSpans"].as_array_mut().unwrap() {
                s["spans"]
                    .as_array_mut()
                    .unwrap()
                    .retain(|sp| sp["traceId"] == id);
            }
        }
        let alone = write(dir.path(), "alone.json", only.to_string());
        let alone = alone.to_str().unwrap();
        for extra in [&["--json"][..], &["--json", "--path", "--next"][..]] {
            let mut a = vec!["analyze", &file, "--trace", id];
            a.extend(extra);
            let mut b = vec!["analyze", alone];
            b.extend(extra);
            assert_eq!(json_of(&a), json_of(&b), "{id} {extra:?}");
        }
        let a = json_of(&[
            "whatif",
            &file,
            "--trace",
            id,
            "--speedup",
            "cart:load cart=2",
            "--json",
        ]);
        let b = json_of(&["whatif", alone, "--speedup", "cart:load cart=2", "--json"]);
        assert_eq!(a, b);
        assert_eq!(
            json_of(&["slack", &file, "--trace", id, "--json"]),
            json_of(&["slack", alone, "--json"])
        );
    }
    let o = run(&["analyze", &file, "--trace", "nope"]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("--trace nope: no span of this trace id; the file holds 20 trace ids"),
        "{err}"
    );
    let o = run(&["analyze", &example("nic-fig3.jsonl"), "--trace", "t1"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("not a span file"));
}

#[test]
fn a_bad_file_is_named_and_the_others_analyzed() {
    let dir = tempfile::tempdir().unwrap();
    generate(dir.path(), 2, 5);
    let mut files = traces_in(dir.path());
    let bad = write(dir.path(), "bad.json", "{\"resourceSpans\": [}");
    files.insert(1, bad.to_str().unwrap().to_string());
    let mut args = vec!["batch"];
    args.extend(files.iter().map(String::as_str));
    let o = run(&args);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("bad.json"), "{err}");
    assert!(err.contains("1 of 3 files"), "{err}");
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("3 files: 10 requests"), "{out}");

    let o = Command::new(env!("CARGO_BIN_EXE_critpath"))
        .args(["batch", &files[0], "--scheduler", "tcp://127.0.0.1:8786"])
        .env("CRITPATH_PYTHON", dir.path().join("no-python"))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("--scheduler needs the Python package: pip install ./python"),
        "{err}"
    );
}

#[test]
fn jaeger_traces_are_requests_too() {
    let dir = tempfile::tempdir().unwrap();
    // Two traces; the second names its trace id only on its data[] entry.
    let doc = r#"{"data": [
      {"traceID": "r1", "processes": {"p1": {"serviceName": "web"}, "p2": {"serviceName": "db"}},
       "spans": [
        {"traceID": "r1", "spanID": "a", "operationName": "GET", "processID": "p1", "startTime": 1000, "duration": 100},
        {"traceID": "r1", "spanID": "b", "operationName": "query", "processID": "p2", "startTime": 1010, "duration": 80,
         "references": [{"refType": "CHILD_OF", "spanID": "a"}]}]},
      {"traceID": "r2", "processes": {"p1": {"serviceName": "web"}, "p2": {"serviceName": "db"}},
       "spans": [
        {"spanID": "c", "operationName": "GET", "processID": "p1", "startTime": 5000, "duration": 30},
        {"spanID": "d", "operationName": "query", "processID": "p2", "startTime": 5005, "duration": 10,
         "references": [{"refType": "CHILD_OF", "spanID": "c"}]}]}]}"#;
    let f = write(dir.path(), "two.json", doc);
    let v = json_of(&["analyze", f.to_str().unwrap(), "--json"]);
    assert_eq!(v["traces"], 2);
    let per = v["per_trace"].as_array().unwrap();
    let lengths: Vec<(&str, u64)> = per
        .iter()
        .map(|p| {
            (
                p["trace_id"].as_str().unwrap(),
                p["length_ns"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(lengths, [("r1", 100_000), ("r2", 30_000)]);
    let db = v["states"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["sm"] == "db")
        .unwrap();
    assert_eq!(db["critical_ns_sum"], 90_000);
}

#[test]
fn a_file_given_twice_is_analyzed_once_and_named() {
    // `batch a.json ./a.json` (or a hard link to it) counted a.json's
    // requests twice: 10 requests of 5, each row listed twice.
    let dir = tempfile::tempdir().unwrap();
    generate(dir.path(), 1, 5);
    let a = traces_in(dir.path()).remove(0);
    let dotted = dir
        .path()
        .join(".")
        .join(Path::new(&a).file_name().unwrap());
    let hard = dir.path().join("hard.json");
    std::fs::hard_link(&a, &hard).unwrap();
    for again in [dotted.to_str().unwrap(), hard.to_str().unwrap()] {
        let out = dir.path().join("tables");
        let o = run(&[
            "batch",
            &a,
            again,
            "-o",
            out.to_str().unwrap(),
            "--format",
            "csv",
        ]);
        assert_eq!(o.status.code(), Some(2));
        let err = String::from_utf8_lossy(&o.stderr);
        let want = format!("{again}: the same file as {a}, given before it");
        assert!(
            err.contains(&want) && err.contains("analyzed once"),
            "{err}"
        );
        let stdout = String::from_utf8_lossy(&o.stdout);
        assert!(stdout.contains(": 5 requests"), "{stdout}");
        assert_eq!(csv_rows(&out.join("per_trace.csv")).len(), 1 + 5);
    }
}
