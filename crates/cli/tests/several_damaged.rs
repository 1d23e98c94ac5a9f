//! Several traces given together, one of them damaged: what can be read
//! of them all is analyzed (merged, or each on its own when they share no
//! link), the damage is a diagnostic, and the command exits 2 naming it,
//! as with the damaged file alone.

mod common;

use common::*;
use flate2::{write::GzEncoder, Compression};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Output;

/// The server of examples/rpc with `pad` more records after its own,
/// gzipped and cut in the middle of its stream.
fn cut_server(dir: &Path, pad: u64) -> PathBuf {
    let mut body = std::fs::read_to_string(example("rpc/server.jsonl")).unwrap();
    for i in 0..pad {
        let line = format!(
            "{{\"t\":{},\"sm\":\"pad{}\",\"ev\":\"state\",\"state\":\"p\"}}\n",
            20_000 + i,
            i % 7
        );
        body.push_str(&line);
    }
    let mut gz = GzEncoder::new(Vec::new(), Compression::default());
    gz.write_all(body.as_bytes()).unwrap();
    let gz = gz.finish().unwrap();
    write(dir, "server_cut.jsonl.gz", &gz[..gz.len() / 2])
}

fn text(o: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// `analyze --json` of the client of examples/rpc and `cut`: exit 2, the
/// JSON and the error output.
fn client_and(cut: &Path) -> (serde_json::Value, String) {
    let (c, s) = (example("rpc/client.jsonl"), cut.to_str().unwrap());
    let o = run(&["analyze", "--json", &c, s]);
    assert_eq!(o.status.code(), Some(2));
    let (out, err) = text(&o);
    (serde_json::from_str(&out).expect(&err), err)
}

#[test]
fn linked_traces_one_cut_are_merged_to_the_cut() {
    let dir = tempfile::tempdir().unwrap();
    let cut = cut_server(dir.path(), 20_000);
    let (v, err) = client_and(&cut);
    assert_eq!(v["clock_offsets"][1]["method"], "both-ways");
    assert_eq!(state_row(&v, "server", "handle")["total_ns"], 400);
    let cut_diag = (v["diagnostics"].as_array().unwrap().iter())
        .find(|d| d["kind"] == "input-cut")
        .expect("input-cut");
    assert!(cut_diag["message"]
        .as_str()
        .unwrap()
        .contains("server_cut.jsonl.gz:"));
    assert!(
        err.contains("server_cut.jsonl.gz:") && err.contains("read error: "),
        "{err}"
    );
}

#[test]
fn unlinked_traces_one_cut_are_each_analyzed() {
    let dir = tempfile::tempdir().unwrap();
    let cut = cut_server(dir.path(), 20_000);
    let (nic, s) = (example("nic-fig3.jsonl"), cut.to_str().unwrap().to_string());
    let o = run(&["analyze", &nic, &s]);
    assert_eq!(o.status.code(), Some(2));
    let (out, err) = text(&o);
    assert!(out.starts_with("disconnected: "), "{out}");
    assert!(out.contains("nic-fig3.jsonl: 16 records"), "{out}");
    assert!(
        out.contains("input-cut: ") && out.contains("server_cut.jsonl.gz:"),
        "{out}"
    );
    assert!(err.contains("server_cut.jsonl.gz:"), "{err}");
    // whatif, report and export write what they can, then exit 2.
    let html = dir.path().join("r.html");
    let trace = dir.path().join("t.json");
    for args in [
        vec!["whatif", "--speedup", "nic.tx=2", &nic, &s],
        vec!["report", &nic, &s, "-o", html.to_str().unwrap()],
        vec![
            "export",
            "--format",
            "chrome",
            &nic,
            &s,
            "-o",
            trace.to_str().unwrap(),
        ],
    ] {
        let o = run(&args);
        let (out, err) = text(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains("server_cut.jsonl.gz:"), "{args:?}: {err}");
        if args[0] == "whatif" {
            assert!(out.contains("predicted critical path"), "{out}");
        }
    }
    assert!(std::fs::metadata(&html).unwrap().len() > 0);
    assert!(std::fs::metadata(&trace).unwrap().len() > 0);
}

#[test]
fn a_trace_cut_before_its_first_record_is_merged_with_the_others() {
    let dir = tempfile::tempdir().unwrap();
    let cpt = dir.path().join("server.cpt");
    let server = example("rpc/server.jsonl");
    assert!(run(&["convert", &server, cpt.to_str().unwrap()])
        .status
        .success());
    let bytes = std::fs::read(&cpt).unwrap();
    // The header whole, its first chunk cut.
    let cut = write(
        dir.path(),
        "server_cut.cpt",
        &bytes[..60.min(bytes.len() - 1)],
    );
    let (v, err) = client_and(&cut);
    assert_eq!(v["clock_offsets"][1]["method"], "no-records");
    assert_eq!(v["stats"]["records"], 5, "{v}");
    assert!(err.contains("server_cut.cpt: at byte offset"), "{err}");
}

#[test]
fn unlinked_traces_with_a_skipped_line_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let bad = write(
        dir.path(),
        "neg.jsonl",
        "{\"t\":0,\"sm\":\"a\",\"ev\":\"state\",\"state\":\"s\"}\n{\"t\":-5,\"sm\":\"a\",\"ev\":\"state\",\"state\":\"s\"}\n{\"t\":10,\"sm\":\"a\",\"ev\":\"end\"}\n",
    );
    let (nic, bad) = (example("nic-fig3.jsonl"), bad.to_str().unwrap().to_string());
    for args in [
        vec!["analyze", &bad, &nic],
        vec!["analyze", "--json", &nic, &bad],
    ] {
        let o = run(&args);
        let (out, err) = text(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {out}");
        assert!(out.contains("disconnected"), "{out}");
        assert!(err.contains("neg.jsonl:2: field \"t\""), "{err}");
    }
}
