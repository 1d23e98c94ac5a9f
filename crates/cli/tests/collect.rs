//! `critpath collect` on loopback: OTLP/HTTP exports in protobuf and JSON,
//! gzip or not, answered as the OTLP specification says; completed
//! requests in files that `analyze` reads with the results of the same
//! spans read from a file; nothing acknowledged lost when the receiver is
//! killed; SIGTERM writes everything and exits 0.

mod common;

use common::*;
use serde_json::Value;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};

/// A receiver on a free port writing to `dir`, killed if a test fails.
struct Receiver(Option<Child>);

impl Drop for Receiver {
    fn drop(&mut self) {
        if let Some(mut c) = self.0.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// A receiver with quiet period `quiet`; its address.
fn start(dir: &Path, quiet: &str, extra: &[&str]) -> (Receiver, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_critpath"))
        .args([
            "collect",
            "--listen",
            "127.0.0.1:0",
            "-o",
            dir.to_str().unwrap(),
        ])
        .args(["--quiet", quiet])
        .args(extra)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stderr.as_mut().unwrap())
        .read_line(&mut line)
        .unwrap();
    let at = line.find("http://").expect(&line) + 7;
    let addr = line[at..].split('/').next().unwrap().to_string();
    (Receiver(Some(child)), addr)
}

/// POSTs `body` to `path`; the status, the headers and the body.
fn post(addr: &str, path: &str, headers: &[(&str, &str)], body: &[u8]) -> (u16, String, Vec<u8>) {
    let mut s = TcpStream::connect(addr).unwrap();
    let mut req = format!(
        "POST {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str("\r\n");
    s.write_all(req.as_bytes()).unwrap();
    s.write_all(body).unwrap();
    let mut out = Vec::new();
    s.read_to_end(&mut out).unwrap();
    let split = out.windows(4).position(|w| w == b"\r\n\r\n").unwrap();
    let head = String::from_utf8_lossy(&out[..split]).into_owned();
    let status = head[9..12].parse().unwrap();
    (status, head, out[split + 4..].to_vec())
}

fn get(addr: &str) -> String {
    let mut s = TcpStream::connect(addr).unwrap();
    write!(
        s,
        "GET / HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    out
}

fn term(mut r: Receiver) -> (Option<i32>, String) {
    let mut child = r.0.take().unwrap();
    // SAFETY: kill only sends a signal to the child we started.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let status = child.wait().unwrap();
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    (status.code(), err)
}

fn per_trace(v: &Value) -> Vec<(String, u64, String)> {
    (v["per_trace"].as_array().expect("per_trace").iter())
        .map(|r| {
            let id = r["trace_id"].as_str().unwrap().to_string();
            (
                id,
                r["length_ns"].as_u64().unwrap(),
                r["top"]["sm"].to_string(),
            )
        })
        .collect()
}

/// The requests of the files written to `dir`.
fn written(dir: &Path) -> Value {
    let mut files: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| !p.file_name().unwrap().to_string_lossy().starts_with('.'))
        .map(|p| p.display().to_string())
        .filter(|p| p.ends_with(".pb"))
        .collect();
    files.sort();
    let mut args = vec!["analyze", "--json"];
    args.extend(files.iter().map(String::as_str));
    json_of(&args)
}

const PB: &[(&str, &str)] = &[("Content-Type", "application/x-protobuf")];

#[test]
fn exports_become_request_files_with_the_same_results() {
    let want = per_trace(&json_of(&[
        "analyze",
        &example("spans/otel/otlp.pb"),
        "--json",
    ]));
    let dir = tempfile::tempdir().unwrap();
    let (child, addr) = start(dir.path(), "100ms", &[]);
    // Protobuf, then the same spans as gzipped JSON (hex ids): each span
    // twice, which changes no request's path.
    let pb = std::fs::read(example("spans/otel/otlp.pb")).unwrap();
    let (status, head, body) = post(&addr, "/v1/traces", PB, &pb);
    assert_eq!(status, 200, "{head}");
    assert!(head.contains("application/x-protobuf"));
    assert!(
        body.is_empty(),
        "a full success is an empty response message"
    );
    let json = std::fs::read(example("spans/otel/otlp.json")).unwrap();
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(&json).unwrap();
    let json_gz = [
        ("Content-Type", "application/json"),
        ("Content-Encoding", "gzip"),
    ];
    let (status, _, _) = post(&addr, "/v1/traces", &json_gz, &gz.finish().unwrap());
    assert_eq!(status, 200);
    // Refused, with nothing else lost: junk, an unknown encoding.
    let (status, _, body) = post(
        &addr,
        "/v1/traces",
        &[("Content-Type", "application/json")],
        b"{",
    );
    assert_eq!(status, 400);
    assert!(String::from_utf8_lossy(&body).contains("\"code\":3"));
    let (status, _, _) = post(&addr, "/v1/traces", &[("Content-Type", "text/plain")], b"x");
    assert_eq!(status, 415);
    let br = [
        ("Content-Type", "application/json"),
        ("Content-Encoding", "br"),
    ];
    let (status, _, body) = post(&addr, "/v1/traces", &br, b"\x1b\x00");
    assert_eq!(status, 415);
    let body = String::from_utf8_lossy(&body);
    assert!(
        body.contains("Content-Encoding br is not supported"),
        "{body}"
    );
    // The requests complete after the quiet period; the report shows them.
    std::thread::sleep(std::time::Duration::from_millis(600));
    assert_eq!(per_trace(&written(dir.path())), want, "while it runs");
    let page = get(&addr);
    assert!(page.contains("3 requests (trace ids)"), "{page}");
    assert!(page.contains("3 export(s) refused"), "{page}");
    let (code, err) = term(child);
    assert_eq!(code, Some(0), "{err}");
    assert!(
        err.contains("24 spans received, 3 requests written"),
        "{err}"
    );
}

#[test]
fn limits_answer_413_and_503_with_retry_after() {
    let dir = tempfile::tempdir().unwrap();
    let (child, addr) = start(dir.path(), "100ms", &["--max-body", "100"]);
    let pb = std::fs::read(example("spans/otel/otlp.pb")).unwrap();
    // Past the limit as sent: the answer is an OTLP Status in the
    // request's encoding (it was axum's plain text), and it is counted.
    let (status, head, body) = post(&addr, "/v1/traces", PB, &pb);
    assert_eq!(status, 413);
    assert!(
        head.to_ascii_lowercase()
            .contains("content-type: application/x-protobuf"),
        "{head}"
    );
    let json = [("Content-Type", "application/json")];
    let (status, head, body_json) = post(&addr, "/v1/traces", &json, &[b' '; 200]);
    assert_eq!(status, 413);
    assert!(
        head.to_ascii_lowercase()
            .contains("content-type: application/json"),
        "{head}"
    );
    let said = String::from_utf8_lossy(&body_json);
    assert!(
        said.contains("\"code\":8") && said.contains("over 100 bytes"),
        "{said}"
    );
    assert!(String::from_utf8_lossy(&body).contains("over 100 bytes"));
    let (code, err) = term(child);
    assert_eq!(code, Some(0), "{err}");
    assert!(err.contains("2 export(s) refused"), "{err}");
    let (child, addr) = start(dir.path(), "60s", &["--max-open", "1"]);
    // Three requests in one export: more than one open at once.
    let (status, head, _) = post(&addr, "/v1/traces", PB, &pb);
    assert_eq!(status, 503, "{head}");
    assert!(
        head.to_ascii_lowercase().contains("retry-after: 1"),
        "{head}"
    );
    let (code, err) = term(child);
    assert_eq!(code, Some(0), "{err}");
    assert!(err.contains("1 answered busy"), "{err}");
    assert!(!dir.path().join(".open.pb").exists(), "no journal left");
}

#[test]
fn a_killed_receiver_loses_nothing_it_acknowledged() {
    let want = per_trace(&json_of(&[
        "analyze",
        &example("spans/otel/otlp.pb"),
        "--json",
    ]));
    let dir = tempfile::tempdir().unwrap();
    // A long quiet period: the requests are open when it is killed.
    let (mut r, addr) = start(dir.path(), "60s", &[]);
    let pb = std::fs::read(example("spans/otel/otlp.pb")).unwrap();
    assert_eq!(post(&addr, "/v1/traces", PB, &pb).0, 200);
    drop(r.0.take().map(|mut c| (c.kill(), c.wait())));
    // The next receiver on the directory takes them back and writes them.
    let (child, _) = start(dir.path(), "60s", &[]);
    let (code, err) = term(child);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(per_trace(&written(dir.path())), want);
    assert!(!dir.path().join(".open.pb").exists(), "nothing left open");
}

#[test]
fn an_output_that_is_a_file_is_refused_naming_o() {
    let dir = tempfile::tempdir().unwrap();
    let file = write(dir.path(), "nic.jsonl", "{}\n");
    let o = run(&[
        "collect",
        "--listen",
        "127.0.0.1:0",
        "-o",
        file.to_str().unwrap(),
    ]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains(&format!("-o {}: is not a directory", file.display())),
        "{err}"
    );
    assert!(!err.contains("--listen"), "{err}");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "{}\n");
}
