//! A plain span file is read in place (mapped) when it is one whole
//! document; the stream reader reads anything else from the start. Either
//! way the result must be the stream reader's: the same requests with the
//! same records, the same problems with their lines, the same error. Here
//! every span file of the project and damaged copies of them (cut short,
//! a byte changed at many places, a document appended) are read both ways
//! and compared.

mod common;

use common::*;
use critpath_readers::spans::{self, Requests};
use critpath_trace::ReadError;
use std::path::{Path, PathBuf};

/// Everything a read gives, as text: the error; or each request's records
/// and errors, the file's problems and the merged timeline's size.
fn outcome(r: Result<Requests, ReadError>) -> Vec<String> {
    let r = match r {
        Err(e) => return vec![format!("error: {e}")],
        Ok(r) => r,
    };
    let mut out: Vec<String> = r
        .problems()
        .iter()
        .map(|p| format!("problem: {p}"))
        .collect();
    for (id, one) in r.each() {
        out.push(format!("request {id}"));
        match one {
            Err(e) => out.push(format!("request error: {e}")),
            Ok(mut one) => {
                let (recs, errs) = drain(&mut one);
                out.extend(text(&recs, &one));
                out.extend(errs.iter().map(|e| format!("record error: {e}")));
            }
        }
    }
    out
}

/// `body` read as a stream, and as the plain file it is written to.
fn both_ways(body: &[u8], dir: &Path) -> (Vec<String>, Vec<String>) {
    let path = dir.join("spans.json");
    std::fs::write(&path, body).unwrap();
    let name = "spans.json".to_string();
    let stream = spans::read_requests_of(vec![(body, name.clone())]);
    let file = std::fs::File::open(&path).unwrap();
    let in_place = spans::read_requests_in(vec![(file, name, Some(path))]);
    (outcome(stream), outcome(in_place))
}

fn files() -> Vec<(String, Vec<u8>)> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut out = vec![
        ("otlp.json".to_string(), bytes("otlp.json")),
        ("jaeger.json".to_string(), bytes("jaeger.json")),
    ];
    for dir in ["examples/spans", "examples/spans/otel"] {
        for e in std::fs::read_dir(root.join(dir)).unwrap() {
            let p = e.unwrap().path();
            let name = p.file_name().unwrap().to_string_lossy().to_string();
            if name.ends_with(".json") || name.ends_with(".jsonl") {
                out.push((format!("{dir}/{name}"), std::fs::read(&p).unwrap()));
            }
        }
    }
    out
}

fn check(label: &str, body: &[u8], dir: &Path) {
    let (stream, in_place) = both_ways(body, dir);
    assert_eq!(in_place, stream, "{label}");
}

#[test]
fn whole_files_read_in_place_are_the_stream_readers() {
    let dir = tempfile::tempdir().unwrap();
    for (name, body) in files() {
        let (stream, in_place) = both_ways(&body, dir.path());
        assert!(
            stream.iter().any(|l| l.starts_with("request")),
            "{name}: {stream:?}"
        );
        assert_eq!(in_place, stream, "{name}");
    }
}

#[test]
fn damaged_files_read_in_place_are_the_stream_readers() {
    let dir = tempfile::tempdir().unwrap();
    for (name, body) in files() {
        let n = body.len();
        // Cut short.
        for k in 1..=16 {
            check(
                &format!("{name} cut at {}", n * k / 17),
                &body[..n * k / 17],
                dir.path(),
            );
        }
        // A byte changed: structure, strings, numbers, whitespace.
        for k in 0..40 {
            let at = (n * k / 40 + k) % n;
            for b in [b'{', b']', b'"', b',', b'x', b'\n', b'7', 0xff] {
                let mut bad = body.clone();
                bad[at] = b;
                check(&format!("{name} with {b:#x} at {at}"), &bad, dir.path());
            }
        }
        // Another document after it (JSON lines), and trailing junk.
        let mut two = body.clone();
        two.push(b'\n');
        two.extend_from_slice(&body);
        check(&format!("{name} twice"), &two, dir.path());
        let mut junk = body.clone();
        junk.extend_from_slice(b"\n}x");
        check(&format!("{name} and junk"), &junk, dir.path());
    }
}

#[test]
fn a_list_of_the_wrong_kind_is_the_stream_readers_problem() {
    // Well-formed JSON whose structure the reader refuses part-way: the
    // first walk of the mapping finds it, and the stream reader reads it.
    let dir = tempfile::tempdir().unwrap();
    let good = r#"{"traceId":"01","spanId":"a1","name":"x","startTimeUnixNano":"1","endTimeUnixNano":"5"}"#;
    for body in [
        format!(
            r#"{{"resourceSpans":[{{"scopeSpans":[{{"spans":[{good}]}}]}},{{"scopeSpans":5}}]}}"#
        ),
        format!(r#"{{"resourceSpans":[{{"scopeSpans":[{{"spans":[{good}]}}]}},7]}}"#),
        format!(r#"{{"resourceSpans":[{{"scopeSpans":[{{"spans":[{good}, 3, "s"]}}]}}]}}"#),
        r#"{"resourceSpans":{}}"#.to_string(),
        r#"{"data":[{"traceID":"1","spans":{}}]}"#.to_string(),
    ] {
        let (stream, in_place) = both_ways(body.as_bytes(), dir.path());
        assert_eq!(in_place, stream, "{body}");
    }
}
