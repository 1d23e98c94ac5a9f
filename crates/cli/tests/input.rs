//! Real-world input end to end: a trace on standard input (`-`), a pipe,
//! gzip / zstd / xz compression, perf.data where it cannot be read, the
//! Chrome array without its closing bracket, and each importer's report of
//! the events it cannot use (exit 2, the rest analyzed).

mod common;

use common::*;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../readers/tests/fixtures")
        .join(name)
}

/// Runs critpath with `input` on its standard input.
fn run_stdin(args: &[&str], input: &[u8]) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_critpath"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("runs");
    let mut stdin = child.stdin.take().unwrap();
    let input = input.to_vec();
    // Written from a thread: the reader may stop early (perf.data).
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(&input);
    });
    let out = child.wait_with_output().expect("waits");
    let _ = writer.join();
    out
}

/// Runs a shell command line with `$CRITPATH` set to the binary.
fn sh(line: &str) -> Output {
    Command::new("sh")
        .arg("-c")
        .arg(line)
        .env("CRITPATH", env!("CARGO_BIN_EXE_critpath"))
        .output()
        .expect("runs")
}

fn json(o: &Output) -> serde_json::Value {
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    serde_json::from_slice(&o.stdout).expect("JSON")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn compress(tool: &[&str], body: &[u8]) -> Vec<u8> {
    let mut child = Command::new(tool[0])
        .args(&tool[1..])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("compressor");
    let mut stdin = child.stdin.take().unwrap();
    let body = body.to_vec();
    let w = std::thread::spawn(move || stdin.write_all(&body).unwrap());
    let out = child.wait_with_output().unwrap();
    w.join().unwrap();
    out.stdout
}

/// A compressor.
type Pack = fn(&[u8]) -> Vec<u8>;

fn gz(b: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(b).unwrap();
    e.finish().unwrap()
}

fn zst(b: &[u8]) -> Vec<u8> {
    zstd::encode_all(b, 3).unwrap()
}

fn xz(b: &[u8]) -> Vec<u8> {
    let mut e = liblzma::write::XzEncoder::new(Vec::new(), 6);
    e.write_all(b).unwrap();
    e.finish().unwrap()
}

fn bz2(b: &[u8]) -> Vec<u8> {
    let mut e = bzip2::write::BzEncoder::new(Vec::new(), bzip2::Compression::best());
    e.write_all(b).unwrap();
    e.finish().unwrap()
}

/// Every compression critpath reads, by a name for messages.
const PACKS: [(&str, Pack); 4] = [("gz", gz), ("zst", zst), ("xz", xz), ("bz2", bz2)];

#[test]
fn standard_input_is_named_stdin_in_every_commands_messages() {
    // A bad second line: its error and diagnostic, and the summary that
    // names the trace, all call standard input `<stdin>` (never `-`).
    let body = b"{\"t\":5,\"sm\":\"a\",\"ev\":\"state\",\"state\":\"x\"}\n{\"t\":6,\"sm\":\"a\",\"ev\":\"state\"}\n{\"t\":9,\"sm\":\"a\",\"ev\":\"end\"}\n";
    let dir = tempfile::tempdir().unwrap();
    let (html, cpt) = (dir.path().join("r.html"), dir.path().join("o.cpt"));
    let (html, cpt) = (html.to_str().unwrap(), cpt.to_str().unwrap());
    let error = "critpath: error: <stdin>:2: `state` record is missing field `state`";
    for (args, summary) in [
        (&["analyze", "-"][..], "<stdin>: 2 records, 2 nodes"),
        (&["check", "-"][..], "<stdin>: 2 records, 2 nodes"),
        (&["report", "-", "-o", html][..], ""),
        (&["convert", "-", cpt][..], ""),
    ] {
        let o = run_stdin(args, body);
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        let (out, err) = (String::from_utf8_lossy(&o.stdout), stderr(&o));
        assert!(err.contains(error), "{args:?}: {err}");
        assert!(out.contains(summary), "{args:?}: {out}");
        let all = format!("{out}{err}");
        assert!(
            !all.contains("-:") && !all.contains(" - "),
            "{args:?}: {all}"
        );
    }
    let page = std::fs::read_to_string(html).unwrap();
    assert!(page.contains("<title>critpath: &lt;stdin&gt;</title>"));
    // Merged with a file: the diagnostic that they share no link too.
    let other = dir.path().join("b.jsonl");
    std::fs::write(&other, "{\"t\":1,\"sm\":\"b\",\"ev\":\"state\",\"state\":\"y\"}\n{\"t\":4,\"sm\":\"b\",\"ev\":\"end\"}\n").unwrap();
    let o = run_stdin(&["analyze", "-", other.to_str().unwrap()], body);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains(" to <stdin>: their clocks cannot be aligned"),
        "{out}"
    );
    assert!(out.contains("\n<stdin>: 2 records"), "{out}");
}

#[test]
fn a_trace_on_standard_input_reads_as_the_file() {
    for name in [
        "small.jsonl",
        "small.cpt",
        "chrome.json",
        "otlp.json",
        "jaeger.json",
    ] {
        let path = fixture(name);
        let want = json_of(&["analyze", path.to_str().unwrap(), "--json"]);
        let body = std::fs::read(&path).unwrap();
        let got = json(&run_stdin(&["analyze", "-", "--json"], &body));
        assert_eq!(got["critical_path"], want["critical_path"], "{name}");
        assert_eq!(got["states"], want["states"], "{name}");
        let o = run_stdin(&["check", "-"], &body);
        assert!(o.status.success(), "{name}: {}", stderr(&o));
    }
}

#[test]
fn commands_that_read_the_trace_twice_work_on_stdin() {
    let path = fixture("chrome.json");
    let body = std::fs::read(&path).unwrap();
    let args = ["whatif", "--speedup", "decoder:decode=2", "--json"];
    let mut file_args = args.to_vec();
    file_args.insert(1, path.to_str().unwrap());
    let want = json_of(&file_args);
    let mut stdin_args = args.to_vec();
    stdin_args.insert(1, "-");
    let got = json(&run_stdin(&stdin_args, &xz(&body)));
    assert_eq!(got, want);
}

/// Standard input can be given once: `-` again would read its records a
/// second time, as another host's.
#[test]
fn standard_input_given_twice_is_refused() {
    let body = std::fs::read(fixture("small.jsonl")).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let out = out.to_str().unwrap();
    for cmd in [
        &["analyze"][..],
        &["report", "-o", out],
        &["export", "--format", "csv", "-o", out],
    ] {
        let o = run_stdin(&[cmd, &["-", "-"]].concat(), &body);
        assert_eq!(o.status.code(), Some(2), "{cmd:?}");
        let want = "<stdin>: the same file as <stdin>, given before it; give each input once";
        assert!(stderr(&o).contains(want), "{cmd:?}: {}", stderr(&o));
    }
    // Standard input redirected from a file given by name too is that file.
    let f = fixture("small.jsonl");
    let f = f.to_str().unwrap();
    for line in [
        format!("\"$CRITPATH\" analyze {f} - < {f}"),
        format!("\"$CRITPATH\" analyze - {f} < {f}"),
    ] {
        let o = sh(&line);
        assert_eq!(o.status.code(), Some(2), "{line}");
        assert!(
            stderr(&o).contains("given before it; give each input once"),
            "{line}: {}",
            stderr(&o)
        );
    }
}

/// A named FIFO can be opened and read only once (a second open would wait
/// for a writer that never comes): `analyze` (its verdict's what-if and
/// `--next` included) and `report` read it once and say what they say of
/// the file.
#[test]
fn a_named_fifo_is_read_once_by_analyze_and_report() {
    let f = fixture("small.jsonl");
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("fifo");
    let made = Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(made.success());
    let (f, fifo) = (f.to_str().unwrap(), fifo.to_str().unwrap());
    for args in [vec!["analyze"], vec!["analyze", "--next", "2"]] {
        let want = run(&[args.as_slice(), &[f]].concat());
        let line = format!("cat {f} > {fifo} & \"$CRITPATH\" {} {fifo}", args.join(" "));
        let got = sh(&line);
        assert!(got.status.success(), "{}", stderr(&got));
        let text = |o: &Output, name: &str| String::from_utf8_lossy(&o.stdout).replace(name, "T");
        assert_eq!(text(&got, fifo), text(&want, f), "{line}");
        assert!(
            text(&got, fifo).contains("2× faster"),
            "the verdict's what-if ran"
        );
    }
    let html = dir.path().join("r.html");
    let line = format!(
        "cat {f} > {fifo} & \"$CRITPATH\" report {fifo} -o {}",
        html.display()
    );
    let got = sh(&line);
    assert!(got.status.success(), "{}", stderr(&got));
    assert!(std::fs::read_to_string(&html).unwrap().contains("serve"));
}

#[test]
fn pipes_dev_stdin_and_process_substitution() {
    let f = fixture("small.jsonl");
    let want = json_of(&["analyze", f.to_str().unwrap(), "--json"]);
    let f = f.display();
    for line in [
        format!("cat {f} | \"$CRITPATH\" analyze /dev/stdin --json"),
        format!("cat {f} | \"$CRITPATH\" analyze - --json"),
        format!("\"$CRITPATH\" analyze - --json < {f}"),
    ] {
        let got = json(&sh(&line));
        assert_eq!(got["critical_path"], want["critical_path"], "{line}");
    }
    if Path::new("/bin/bash").exists() {
        let o = Command::new("bash")
            .arg("-c")
            .arg(format!("\"$CRITPATH\" analyze <(cat {f}) --json"))
            .env("CRITPATH", env!("CARGO_BIN_EXE_critpath"))
            .output()
            .unwrap();
        assert_eq!(json(&o)["critical_path"], want["critical_path"]);
    }
}

#[test]
fn gzip_zstd_xz_and_bzip2_by_content_on_files_and_stdin() {
    let dir = tempfile::tempdir().unwrap();
    for name in ["small.jsonl", "chrome.json"] {
        let path = fixture(name);
        let want = json_of(&["analyze", path.to_str().unwrap(), "--json"]);
        let body = std::fs::read(&path).unwrap();
        for (ext, pack) in PACKS {
            let bytes = pack(&body);
            // The name says nothing: the content does.
            let p = write(dir.path(), &format!("{name}.{ext}.bin"), &bytes);
            let got = json_of(&["analyze", p.to_str().unwrap(), "--json"]);
            assert_eq!(got["critical_path"], want["critical_path"], "{name}.{ext}");
            let got = json(&run_stdin(&["analyze", "-", "--json"], &bytes));
            assert_eq!(got["states"], want["states"], "{name}.{ext} on stdin");
        }
    }
    // The system's own compressors agree.
    let body = std::fs::read(fixture("small.jsonl")).unwrap();
    for tool in ["gzip", "bzip2"] {
        if Command::new(tool).arg("--help").output().is_ok() {
            let o = run_stdin(&["check", "-"], &compress(&[tool, "-c"], &body));
            assert!(o.status.success(), "{tool}: {}", stderr(&o));
        }
    }
}

#[test]
fn compressed_pieces_end_to_end_read_as_one_trace() {
    // `cat a.gz b.gz`, or what parallel compressors write: several streams.
    let path = fixture("small.jsonl");
    let want = json_of(&["analyze", path.to_str().unwrap(), "--json"]);
    let body = std::fs::read(&path).unwrap();
    let half = body.len() / 2
        + body[body.len() / 2..]
            .iter()
            .position(|&b| b == b'\n')
            .unwrap()
        + 1;
    for (ext, pack) in PACKS {
        let mut bytes = pack(&body[..half]);
        bytes.extend(pack(&body[half..]));
        let got = json(&run_stdin(&["analyze", "-", "--json"], &bytes));
        assert_eq!(got["states"], want["states"], "{ext}");
        assert_eq!(got["stats"], want["stats"], "{ext}");
    }
}

#[test]
fn compressed_data_cut_within_the_first_kilobytes_keeps_what_came_before() {
    let dir = tempfile::tempdir().unwrap();
    let mut body = String::new();
    for i in 0..150u64 {
        body.push_str(&format!(
            "{{\"t\":{},\"sm\":\"a\",\"ev\":\"state\",\"state\":\"s{}\"}}\n",
            i * 10,
            i % 3
        ));
    }
    let whole = gz(body.as_bytes());
    // The trailer and part of the deflate stream cut: fewer than the 8 KiB
    // read first to tell the format decompress.
    let p = write(dir.path(), "cut.jsonl.gz", &whole[..whole.len() - 30]);
    let o = run(&["analyze", p.to_str().unwrap(), "--json"]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("cut.jsonl.gz:") && err.contains("decompress"),
        "{err}"
    );
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("JSON");
    let records = v["stats"]["records"].as_u64().unwrap();
    assert!(
        records > 100 && records < 150,
        "{records} of 150 records read"
    );
    // A span file of JSON lines (the collector's file exporter) cut so: its
    // whole requests before the damage are analyzed (the span reader read
    // its own first kilobytes to the end or failed with nothing).
    let lines: String = (0..12)
        .map(|i| {
            let span = |id: &str, parent: &str, name: &str, a: u64, b: u64| {
                format!(r#"{{"traceId":"{i:032x}","spanId":"{id}","parentSpanId":"{parent}","name":"{name}","startTimeUnixNano":"{a}","endTimeUnixNano":"{b}"}}"#)
            };
            let spans = [span("00000000000000a1", "", "root", 0, 100), span("00000000000000a2", "00000000000000a1", "child", 10, 60)];
            format!(r#"{{"resourceSpans":[{{"resource":{{"attributes":[{{"key":"service.name","value":{{"stringValue":"svc"}}}}]}},"scopeSpans":[{{"spans":[{}]}}]}}]}}"#, spans.join(","))
                + "\n"
        })
        .collect();
    let whole = gz(lines.as_bytes());
    let p = write(dir.path(), "cut.otlp.jsonl.gz", &whole[..whole.len() - 30]);
    let o = run(&["analyze", p.to_str().unwrap(), "--json"]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("cut.otlp.jsonl.gz:") && err.contains("decompress"),
        "{err}"
    );
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("JSON");
    let traces = v["traces"].as_u64().unwrap();
    assert!((8..12).contains(&traces), "{traces} of 12 requests read");
    // A Chrome document whose compressed data is cut after its end: every
    // event is read, and the damage said.
    let whole = gz(&std::fs::read(example("chrome/pipeline.json")).unwrap());
    let cut = &whole[..whole.len() - 4];
    chrome_read_whole_and_damage_said(dir.path(), "cut.json.gz", cut, "");
}

#[test]
fn compressed_data_cut_before_a_whole_record_says_it_does_not_decompress() {
    let dir = tempfile::tempdir().unwrap();
    // Comments, then records: cut in the first record, the bytes before
    // the damage are no trace yet; the damage is what is reported.
    let mut body = String::from("# a comment long enough to decompress before the cut\n");
    for i in 0..40u64 {
        body.push_str(&format!(
            "{{\"t\":{},\"sm\":\"a\",\"ev\":\"state\",\"state\":\"s{}\"}}\n",
            i * 10,
            i % 3
        ));
    }
    for (ext, pack) in PACKS {
        let whole = pack(body.as_bytes());
        let mut seen = 0;
        for at in 10..whole.len() - 1 {
            let name = format!("cut.jsonl.{ext}");
            let p = write(dir.path(), &name, &whole[..at]);
            let o = run(&["analyze", p.to_str().unwrap()]);
            let err = stderr(&o);
            assert_eq!(o.status.code(), Some(2), "{ext} cut at {at}: {err}");
            let what = format!("{} data that does not decompress", ext_name(ext));
            assert!(err.contains(&what), "{ext} cut at {at}: {err}");
            seen += usize::from(o.stdout.is_empty() && err.contains(&format!("{name}:2: ")));
        }
        // (zstd and bzip2 give nothing before a whole block.)
        assert!(
            seen > 0 || ["zst", "bz2"].contains(&ext),
            "{ext}: no cut in the first record"
        );
    }
}

#[test]
fn comments_then_a_cut_record_are_jsonl_cut_at_that_line() {
    let dir = tempfile::tempdir().unwrap();
    for (body, line) in [("# c\n{\n", 2), ("# a\n\n# b\n[\n", 4)] {
        let p = write(dir.path(), "cut.jsonl", body);
        let o = run(&["analyze", p.to_str().unwrap()]);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{err}");
        let want = format!("cut.jsonl:{line}: expected a JSON object with the fields of a record");
        assert!(err.contains(&want), "{body:?}: {err}");
    }
}

/// The name critpath gives a compression of extension `ext`.
fn ext_name(ext: &str) -> &str {
    match ext {
        "gz" => "gzip",
        "zst" => "zstd",
        "bz2" => "bzip2",
        _ => ext,
    }
}

/// `body`, the example Chrome document damaged after its end, written as
/// `name`: the analysis is the intact document's, exit 2, and the error
/// names the file and says `says`.
fn chrome_read_whole_and_damage_said(dir: &Path, name: &str, body: &[u8], says: &str) {
    let p = write(dir, name, body);
    let o = run(&["analyze", p.to_str().unwrap(), "--json"]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains(&format!("{name}:")) && err.contains(says),
        "{err}"
    );
    let plain = json(&run(&[
        "analyze",
        &example("chrome/pipeline.json"),
        "--json",
    ]));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("JSON");
    assert_eq!(v["critical_path"], plain["critical_path"]);
}

#[test]
fn more_after_a_chrome_document_is_reported_after_its_events() {
    let dir = tempfile::tempdir().unwrap();
    let mut body = std::fs::read(example("chrome/pipeline.json")).unwrap();
    body.extend_from_slice(b"\ngarbage\n");
    let says = "more after the end of the document";
    chrome_read_whole_and_damage_said(dir.path(), "tail.json", &body, says);
}

#[test]
fn an_empty_compressed_trace_is_called_empty() {
    for (ext, pack) in PACKS {
        let o = run_stdin(&["analyze", "-"], &pack(b""));
        assert_eq!(o.status.code(), Some(2), "{ext}");
        assert!(
            stderr(&o).contains("the file is empty"),
            "{ext}: {}",
            stderr(&o)
        );
        // Every format it may have been, not two of them.
        assert!(
            stderr(&o).contains("perf.data (PERFILE2)"),
            "{ext}: {}",
            stderr(&o)
        );
    }
}

#[test]
fn perf_data_on_a_pipe_or_compressed_is_refused_plainly() {
    let body = std::fs::read(fixture("perf.data")).unwrap();
    let o = run_stdin(&["analyze", "-"], &body);
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert!(
        err.starts_with("critpath: error: <stdin>: this is perf.data on a pipe"),
        "{err}"
    );
    assert!(err.contains("regular, uncompressed file"), "{err}");
    let dir = tempfile::tempdir().unwrap();
    let p = write(dir.path(), "perf.data.gz", gz(&body));
    let o = run(&["analyze", p.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("perf.data compressed with gzip"),
        "{}",
        stderr(&o)
    );
}

/// A perf.data whose `perf record` was killed: perf writes the header
/// first, with the data size 0 and the feature bits it means to write at
/// the end, which never comes. The records are all there: the analysis is
/// the complete file's (its command's thread inferred from the recorder's
/// child), exit 2 and an error that says the file was never finished.
#[test]
fn a_perf_data_whose_recorder_was_killed_is_read_to_its_last_record() {
    let os = Path::new(env!("CARGO_MANIFEST_DIR")).join("../os/tests/fixtures");
    let whole = os.join("rename.data");
    let b = std::fs::read(&whole).unwrap();
    let word = |at: usize| u64::from_le_bytes(b[at..at + 8].try_into().unwrap()) as usize;
    assert_ne!(b[72..104], [0u8; 32], "the fixture has feature sections");
    let dir = tempfile::tempdir().unwrap();
    let mut killed = b[..word(40) + word(48)].to_vec();
    killed[48..56].fill(0);
    let p = write(dir.path(), "killed.data", killed);
    for ext in ["recorder", "syms"] {
        let from = os.join(format!("rename.data.{ext}"));
        std::fs::copy(from, dir.path().join(format!("killed.data.{ext}"))).unwrap();
    }
    let o = run(&["analyze", p.to_str().unwrap(), "--json"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("never finished"), "{}", stderr(&o));
    let got: serde_json::Value = serde_json::from_slice(&o.stdout).expect("JSON");
    let want = json(&run(&["analyze", whole.to_str().unwrap(), "--json"]));
    assert_eq!(got["stats"]["records"], want["stats"]["records"]);
    let length = |v: &serde_json::Value| v["critical_path"]["length_ns"].as_u64();
    assert!(length(&want).is_some_and(|l| l > 0));
    assert_eq!(length(&got), length(&want));
}

/// A perf.data whose records are whole but whose feature sections after
/// them are cut (or whose table points past the end): every record is
/// read, as those of a file cut after them, exit 2 and an error that says
/// what was lost; never a refusal of the whole file.
#[test]
fn a_perf_data_with_its_feature_sections_cut_is_read_to_its_last_record() {
    let os = Path::new(env!("CARGO_MANIFEST_DIR")).join("../os/tests/fixtures");
    let whole = os.join("rename.data");
    let b = std::fs::read(&whole).unwrap();
    let word = |at: usize| u64::from_le_bytes(b[at..at + 8].try_into().unwrap()) as usize;
    let data_end = word(40) + word(48);
    let dir = tempfile::tempdir().unwrap();
    let mut far = b.clone();
    far[data_end..data_end + 8].copy_from_slice(&(1u64 << 40).to_le_bytes());
    for (name, body) in [("cut.data", b[..data_end + 40].to_vec()), ("far.data", far)] {
        let p = write(dir.path(), name, body);
        for ext in ["recorder", "syms"] {
            let from = os.join(format!("rename.data.{ext}"));
            std::fs::copy(from, dir.path().join(format!("{name}.{ext}"))).unwrap();
        }
        let o = run(&["analyze", p.to_str().unwrap(), "--json"]);
        assert_eq!(o.status.code(), Some(2), "{name}: {}", stderr(&o));
        assert!(
            stderr(&o).contains("feature sections after its records are cut short or damaged"),
            "{name}: {}",
            stderr(&o)
        );
        let got: serde_json::Value = serde_json::from_slice(&o.stdout).expect("JSON");
        let want = json(&run(&["analyze", whole.to_str().unwrap(), "--json"]));
        assert_eq!(got["stats"]["records"], want["stats"]["records"], "{name}");
    }
}

/// A recording in perf's pipe format (`perf record -o -` saved) whose
/// last record is cut off: the format has no sizes, so only that record
/// says so. Analyzed up to the record before it, exit 2, an error that
/// says where; cut among its header's records (in the tracepoint layouts),
/// nothing to analyze but the same error, and never a panic.
#[test]
fn a_pipe_format_perf_data_cut_short_says_so() {
    let os = Path::new(env!("CARGO_MANIFEST_DIR")).join("../os/tests/fixtures");
    let b = std::fs::read(os.join("rename_pipe.data")).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let whole = json(&run(&[
        "analyze",
        os.join("rename_pipe.data").to_str().unwrap(),
        "--json",
    ]));
    let records = |v: &serde_json::Value| v["stats"]["records"].as_u64().unwrap_or(0);
    // Into its last event; into its tracepoint layouts (bytes 12 460 to
    // 34 164, after their record at 12 444).
    for (len, some) in [(b.len() - 3, true), (20_000, false)] {
        let p = write(dir.path(), &format!("cut{len}.data"), &b[..len]);
        let o = run(&["analyze", p.to_str().unwrap(), "--json"]);
        assert_eq!(o.status.code(), Some(2), "{len}: {}", stderr(&o));
        let err = stderr(&o);
        assert!(err.contains("cut short (perf's pipe format"), "{err}");
        assert!(!err.contains("panicked"), "{err}");
        if some {
            let got: serde_json::Value = serde_json::from_slice(&o.stdout).expect("JSON");
            assert!(
                records(&got) > 0 && records(&got) <= records(&whole),
                "{got}"
            );
        }
    }
}

#[test]
fn chrome_array_without_its_closing_bracket() {
    let p = fixture("chrome-array.json");
    let o = run(&["analyze", p.to_str().unwrap(), "--json"]);
    let v = json(&o);
    assert!(stderr(&o).is_empty(), "{}", stderr(&o));
    // work 0-10 (parse 2-6 nested), the flow at 10, handle 10-25.
    assert_eq!(v["critical_path"]["length_ns"], 25_000);
    assert_eq!(crit(&v, "1:2", "handle"), 15_000);
}

/// The importer's report: exit 2, a message naming the file, the place and
/// the field, and the rest analyzed.
fn assert_reported(name: &str, body: &str, want: &[&str], sm: &str) {
    let dir = tempfile::tempdir().unwrap();
    let p = write(dir.path(), name, body);
    let o = run(&["analyze", p.to_str().unwrap(), "--json"]);
    assert_eq!(o.status.code(), Some(2), "{name}: {}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains("critpath: error: ") && err.contains(name),
        "{err}"
    );
    for w in want {
        assert!(err.contains(w), "{name}: want {w:?} in {err}");
    }
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("the analysis is printed");
    assert!(
        v["states"]
            .as_array()
            .unwrap()
            .iter()
            .any(|s| s["sm"] == sm),
        "{name}: {sm} analyzed"
    );
    // `check` says the same.
    let o = run(&["check", p.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{name}: check: {}", stderr(&o));
}

#[test]
fn each_importer_reports_what_it_cannot_use() {
    assert_reported(
        "nodur.json",
        "{\"traceEvents\": [\n{\"ph\":\"X\",\"name\":\"a\",\"pid\":1,\"tid\":1,\"ts\":0,\"dur\":5},\n{\"ph\":\"X\",\"name\":\"b\",\"pid\":1,\"tid\":2,\"ts\":1}\n]}",
        &[":3:", "traceEvents[1]", "`dur`"],
        "1:1",
    );
    assert_reported(
        "strts.json",
        "[{\"ph\":\"X\",\"name\":\"a\",\"pid\":1,\"tid\":1,\"ts\":0,\"dur\":5},\n{\"ph\":\"B\",\"name\":\"b\",\"pid\":1,\"tid\":2,\"ts\":\"7\"}]",
        &[":2:", "event [1]", "`ts` = \"7\""],
        "1:1",
    );
    let otlp = |bad: &str| {
        format!("{{\"resourceSpans\": [{{\"resource\": {{\"attributes\": [{{\"key\": \"service.name\", \"value\": {{\"stringValue\": \"api\"}}}}]}},\n\"scopeSpans\": [{{\"spans\": [\n{{\"spanId\": \"a\", \"name\": \"root\", \"startTimeUnixNano\": \"1000\", \"endTimeUnixNano\": \"9000\"}},\n{bad}]}}]}}]}}")
    };
    assert_reported(
        "noend.json",
        &otlp("{\"spanId\": \"b\", \"name\": \"x\", \"startTimeUnixNano\": \"2000\"}"),
        &[":4:", "spans[1]", "`endTimeUnixNano`"],
        "api",
    );
    assert_reported(
        "parent.json",
        &otlp("{\"spanId\": \"b\", \"parentSpanId\": [1], \"name\": \"x\", \"startTimeUnixNano\": \"2000\", \"endTimeUnixNano\": \"3000\"}"),
        &[":4:", "spans[1]", "`parentSpanId`"],
        "api",
    );
    assert_reported(
        "bad.jsonl",
        "{\"t\":0,\"sm\":\"a\",\"ev\":\"state\",\"state\":\"x\"}\n{\"t\":5,\"sm\":\"a\",\"ev\":\"state\"}\n{\"t\":9,\"sm\":\"a\",\"ev\":\"end\"}\n",
        &[":2:", "`state`"],
        "a",
    );
}

/// The `input-skipped` diagnostics of `body`'s analysis.
fn skipped_messages(name: &str, body: &str) -> Vec<String> {
    let dir = tempfile::tempdir().unwrap();
    let p = write(dir.path(), name, body);
    let o = run(&["analyze", p.to_str().unwrap(), "--json"]);
    assert_eq!(o.status.code(), Some(2), "{name}: {}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("JSON");
    let all = v["diagnostics"].as_array().unwrap().iter();
    all.filter(|d| d["kind"] == "input-skipped")
        .map(|d| d["message"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn a_diagnostic_says_once_what_became_of_the_bad_part() {
    let good = "{\"t\":0,\"sm\":\"a\",\"ev\":\"state\",\"state\":\"x\"}\n";
    let end = "{\"t\":9,\"sm\":\"a\",\"ev\":\"end\"}\n";
    // A record the reader could not use: the analysis says it was skipped.
    let got = skipped_messages(
        "r.jsonl",
        &format!("{good}{{\"t\":5,\"sm\":\"a\",\"ev\":\"state\"}}\n{end}"),
    );
    assert!(
        got.len() == 1 && got[0].ends_with("; record skipped"),
        "{got:?}"
    );
    // A scope line after the records is ignored, and said so once.
    let scope = "{\"ev\":\"scope\",\"from\":\"a\"}\n";
    let got = skipped_messages("s.jsonl", &format!("{good}{scope}{end}"));
    assert!(
        got.len() == 1 && got[0].ends_with("records); ignored"),
        "{got:?}"
    );
    // A span the reader skipped says so itself.
    let otlp = "{\"resourceSpans\": [{\"scopeSpans\": [{\"spans\": [\n{\"spanId\": \"a\", \"name\": \"root\", \"startTimeUnixNano\": \"1000\", \"endTimeUnixNano\": \"9000\"},\n{\"spanId\": \"b\", \"name\": \"x\", \"startTimeUnixNano\": \"2000\"}]}]}]}";
    let got = skipped_messages("o.json", otlp);
    let once = |m: &String| m.ends_with("; skipped") && !m.contains("record skipped");
    assert!(
        got.len() == 1 && once(&got[0]) && got[0].contains("`endTimeUnixNano`"),
        "{got:?}"
    );
}

#[test]
fn a_jsonl_field_of_the_wrong_type_is_named() {
    let good = "{\"t\":0,\"sm\":\"a\",\"ev\":\"state\",\"state\":\"x\"}\n";
    let end = "{\"t\":9,\"sm\":\"a\",\"ev\":\"end\"}\n";
    assert_reported(
        "t.jsonl",
        &format!("{good}{{\"t\":\"5\",\"sm\":\"a\",\"ev\":\"state\",\"state\":\"x\"}}\n{end}"),
        &[
            "t.jsonl:2: field \"t\": expected a non-negative integer (nanoseconds), found the string \"5\"",
        ],
        "a",
    );
    assert_reported(
        "null.jsonl",
        &format!("{good}null\n{end}"),
        &["null.jsonl:2: expected a JSON object (a record, docs/formats.md), found null"],
        "a",
    );
    // A field the kind does not use is ignored, whatever it holds.
    let dir = tempfile::tempdir().unwrap();
    let p = write(
        dir.path(),
        "ok.jsonl",
        format!("{good}{{\"t\":1,\"sm\":\"a\",\"ev\":\"end\",\"id\":{{}}}}\n"),
    );
    let o = run(&["analyze", p.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
}

#[test]
fn a_cpt_end_marker_is_checked_and_what_follows_it_read_or_reported() {
    let dir = tempfile::tempdir().unwrap();
    let one = std::fs::read(fixture("small.cpt")).unwrap();
    let end = one.len() - 16;
    // A count that is not the records': reported at the marker, records
    // analyzed, exit 2.
    let mut miscount = one.clone();
    miscount[end + 4..end + 12].copy_from_slice(&999u64.to_le_bytes());
    let p = write(dir.path(), "c.cpt", &miscount);
    let o = run(&["analyze", p.to_str().unwrap(), "--json"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains(&format!("c.cpt: at byte offset {end}: the end marker says the file holds 999 records, but 13 were read")),
        "{err}"
    );
    serde_json::from_slice::<serde_json::Value>(&o.stdout).expect("the analysis is printed");
    // Junk after the end marker.
    let mut junk = one.clone();
    junk.extend_from_slice(b"junkjunk");
    let p = write(dir.path(), "j.cpt", &junk);
    let o = run(&["analyze", p.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains(&format!(
            "8 bytes after the end marker at byte offset {end} not read"
        )),
        "{}",
        stderr(&o)
    );
    // Two files end to end: both read, the second's records before the
    // first's end reported.
    let mut two = one.clone();
    two.extend_from_slice(&one);
    let p = write(dir.path(), "b.cpt", &two);
    let o = run(&["analyze", p.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains(&format!(
            "of the .cpt file concatenated at byte offset {} is before",
            one.len()
        )),
        "{}",
        stderr(&o)
    );
}

#[test]
fn undecodable_bytes_never_reach_the_terminal_raw() {
    let dir = tempfile::tempdir().unwrap();
    let p = write(
        dir.path(),
        "bin.jsonl",
        b"{\"t\":0,\"sm\":\"a\",\"ev\":\"\xff\x1b[31m\"}\n\x00\x01\x02\xfe\n",
    );
    let o = run(&["analyze", p.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert!(!err.contains('\u{1b}') && !err.contains('\0'), "{err:?}");
    assert!(err.lines().all(|l| l.starts_with("critpath: ")), "{err}");
}

#[test]
fn span_files_cut_early_are_called_span_files() {
    let dir = tempfile::tempdir().unwrap();
    for (file, keep) in [("otel/zipkin.json", 100), ("checkout-jaeger.json", 30)] {
        let body = std::fs::read(example(&format!("spans/{file}"))).unwrap();
        let p = write(dir.path(), "cut.json", &body[..keep]);
        let o = run(&["analyze", p.to_str().unwrap()]);
        assert_eq!(o.status.code(), Some(2), "{file}");
        assert!(
            stderr(&o).contains("OpenTelemetry, Jaeger or Zipkin JSON spans"),
            "{file}: {}",
            stderr(&o)
        );
    }
}

#[test]
fn a_byte_order_mark_before_a_json_document_is_skipped() {
    // Chrome JSON and span files began with it refused ("found 'ï'").
    let dir = tempfile::tempdir().unwrap();
    for ex in [
        "chrome/pipeline.json",
        "spans/checkout-otlp.json",
        "nic-fig3.jsonl",
    ] {
        let plain = json(&run(&["analyze", &example(ex), "--json"]));
        let mut body = b"\xef\xbb\xbf".to_vec();
        body.extend(std::fs::read(example(ex)).unwrap());
        let name = ex.replace('/', "-");
        for (file, bytes) in [(name.clone(), body.clone()), (name + ".gz", gz(&body))] {
            let p = write(dir.path(), &file, &bytes);
            let got = json(&run(&["analyze", p.to_str().unwrap(), "--json"]));
            assert_eq!(got["critical_path"], plain["critical_path"], "{file}");
            assert_eq!(got["states"], plain["states"], "{file}");
            let piped = json(&run_stdin(&["analyze", "-", "--json"], &bytes));
            assert_eq!(piped["states"], plain["states"], "{file} on stdin");
        }
    }
}

/// Standard input, a pipe or a FIFO among several inputs, longer than the
/// first bytes read to tell its format: it is read more than once (to
/// align the clocks, then to merge), from the copy its first reading made;
/// the results are the file's.
#[test]
fn a_pipe_among_several_inputs_reads_as_the_file() {
    let ex = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/rpc");
    let (client, server) = (ex.join("client.jsonl"), ex.join("server.jsonl"));
    let dir = tempfile::tempdir().unwrap();
    // Far past the 8192 bytes read first: a second trace of its own.
    let long = dir.path().join("long.jsonl");
    let mut body = String::new();
    for i in 0..2000u64 {
        let sm = format!("s{}", i % 8);
        body.push_str(&format!(
            "{{\"t\":{},\"sm\":\"{sm}\",\"ev\":\"state\",\"state\":\"work{}\"}}\n",
            10 + i * 5,
            i % 3
        ));
    }
    std::fs::write(&long, &body).unwrap();
    let (c, s, l) = (
        client.to_str().unwrap(),
        server.to_str().unwrap(),
        long.to_str().unwrap(),
    );
    let html = dir.path().join("r.html");
    let html = html.to_str().unwrap();
    for (file_args, piped, name) in [
        (vec!["analyze", c, s], vec!["analyze", c, "-"], s),
        (vec!["analyze", c, l], vec!["analyze", c, "-"], l),
        (vec!["analyze", l, c], vec!["analyze", "-", c], l),
        (
            vec!["report", c, l, "-o", html],
            vec!["report", c, "-", "-o", html],
            l,
        ),
    ] {
        let want = run(&file_args);
        let got = run_stdin(&piped, &std::fs::read(name).unwrap());
        assert!(got.status.success(), "{piped:?}: {}", stderr(&got));
        let text = |o: &Output, n: &str| String::from_utf8_lossy(&o.stdout).replace(n, "T");
        // Merged, its records are system `stdin` where the file's are the
        // file's name's.
        let stem = Path::new(name).file_stem().unwrap().to_str().unwrap();
        let got = text(&got, "<stdin>").replace("stdin", stem);
        let words = |t: String| {
            t.split(' ')
                .filter(|w| !w.is_empty())
                .collect::<Vec<_>>()
                .join(" ")
        };
        assert_eq!(words(got), words(text(&want, name)), "{piped:?}");
    }
    let fifo = dir.path().join("fifo");
    assert!(Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    let fifo = fifo.to_str().unwrap();
    let got = sh(&format!(
        "cat {l} > {fifo} & \"$CRITPATH\" analyze {c} {fifo}"
    ));
    assert!(got.status.success(), "{}", stderr(&got));
    let want = run(&["analyze", c, l]);
    let text = |o: &Output, n: &str| String::from_utf8_lossy(&o.stdout).replace(n, "T");
    assert_eq!(text(&got, fifo), text(&want, l));
}
