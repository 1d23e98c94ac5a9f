//! Hostile and careless input, end to end through the binary: outputs that
//! alias an input (by any name or descriptor) or a read-only file, a set of
//! outputs that must appear together, a cgraph with nothing to lay out,
//! time windows past their cap, lines and names past their limits, control
//! characters on the way to a terminal, time arithmetic past i64::MAX, a
//! deeply nested one-line document. Each gives a clear error (exit 2 and
//! the message checked) or a bounded result; memory is stated as the peak
//! RSS of the child process (`wait4`), never as a time.
//!
//! `structural_classes` draws cases of each class from a fixed seed (the
//! count is printed with `--nocapture`; `CRITPATH_FUZZ_SCALE=K` runs K
//! times as many).

mod common;

use common::{run, write};
use std::fs::File;
use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Output, Stdio};

const BIN: &str = env!("CARGO_BIN_EXE_critpath");

const TRACE: &str = r#"{"t":0,"sm":"app","ev":"state","state":"main"}
{"t":10,"sm":"app","ev":"state","state":"io"}
{"t":100,"sm":"app","ev":"end"}
"#;

/// Holds the tests of this file to one at a time: they write large inputs
/// and measure memory, and the machine has two cores.
fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    static ONE: std::sync::Mutex<()> = std::sync::Mutex::new(());
    ONE.lock().unwrap_or_else(|p| p.into_inner())
}

/// GNU time: it forks the measured program from its own small process and
/// writes that child's peak RSS (`%M`, from `wait4`) to a file.
const TIME: &str = "/usr/bin/time";

/// Runs `args` with standard input from `stdin` (else nothing); returns
/// the output and the child's peak RSS in KiB.
///
/// A process's peak RSS starts from that of the memory it replaced at
/// `exec`: a child spawned from this test process would count what the
/// test holds (its inputs, a parsed document, its allocator's leftovers).
/// So the child is forked by `/usr/bin/time`, whose own memory is a few
/// hundred KiB, and its peak is what `time` reports.
fn peak(args: &[&str], stdin: Option<&Path>) -> (Output, u64) {
    assert!(
        Path::new(TIME).exists(),
        "{TIME} (GNU time, the Debian package `time`) measures peak RSS"
    );
    let dir = tempfile::tempdir().unwrap();
    let rss = dir.path().join("rss");
    let input = match stdin {
        Some(p) => Stdio::from(File::open(p).unwrap()),
        None => Stdio::null(),
    };
    let o = Command::new(TIME)
        .arg("-f")
        .arg("%M")
        .arg("-o")
        .arg(&rss)
        .arg(BIN)
        .args(args)
        .stdin(input)
        .output()
        .unwrap();
    // time writes "Command exited with non-zero status N" (or "terminated
    // by signal") before the figure; the figure is the last line.
    let text = std::fs::read_to_string(&rss).unwrap();
    let kib = text.lines().last().and_then(|l| l.trim().parse().ok());
    (o, kib.unwrap_or_else(|| panic!("{TIME} wrote {text:?}")))
}

/// Asserts exit 2 with a message holding each of `says`; returns stderr.
fn refused(o: &Output, says: &[&str]) -> String {
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert_eq!(o.status.code(), Some(2), "stderr: {err}");
    assert!(err.starts_with("critpath: error: "), "{err}");
    for s in says {
        assert!(err.contains(s), "expected {s:?} in: {err}");
    }
    err
}

#[test]
fn an_output_onto_standard_input_is_refused() {
    let _one = one_at_a_time();
    let dir = tempfile::tempdir().unwrap();
    let t = write(dir.path(), "in.jsonl", TRACE);
    for args in [
        &["analyze", "-", "-o", "/dev/stdin"][..],
        &["convert", "-", "/dev/stdin", "--format", "jsonl"],
        &["analyze", "-", "-o", "/proc/self/fd/0"],
        &["analyze", "-", "-o", "/dev/fd/0"],
        &["report", "-", "-o", "/dev/stdin"],
    ] {
        let (o, _) = peak(args, Some(&t));
        refused(&o, &["is the input"]);
        assert_eq!(std::fs::read_to_string(&t).unwrap(), TRACE, "{args:?}");
    }
    // A named input read through a descriptor another name gives.
    let p = t.to_str().unwrap();
    let (o, _) = peak(&["analyze", p, "-o", "/dev/stdin"], Some(&t));
    refused(&o, &["is the input"]);
    assert_eq!(std::fs::read_to_string(&t).unwrap(), TRACE);
}

#[test]
fn a_read_only_output_is_refused_not_replaced() {
    let _one = one_at_a_time();
    let dir = tempfile::tempdir().unwrap();
    let t = write(dir.path(), "t.jsonl", TRACE);
    let ro = write(dir.path(), "ro.txt", "keep");
    std::fs::set_permissions(&ro, std::fs::Permissions::from_mode(0o444)).unwrap();
    let o = run(&["analyze", t.to_str().unwrap(), "-o", ro.to_str().unwrap()]);
    refused(&o, &["ro.txt", "read-only (mode 444)"]);
    assert_eq!(std::fs::read_to_string(&ro).unwrap(), "keep");
    let mode = std::fs::metadata(&ro).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o444);
}

#[test]
fn export_tables_appear_together_or_not_at_all() {
    let _one = one_at_a_time();
    let dir = tempfile::tempdir().unwrap();
    let t = write(dir.path(), "t.jsonl", TRACE);
    // The second table cannot be written (a directory has its name).
    std::fs::create_dir(dir.path().join("e-path.csv")).unwrap();
    let e = dir.path().join("e.csv");
    let o = run(&[
        "export",
        t.to_str().unwrap(),
        "--format",
        "csv",
        "-o",
        e.to_str().unwrap(),
    ]);
    refused(&o, &["e-path.csv"]);
    assert!(!e.exists(), "the first table appeared alone");
    let left: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|d| d.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.contains("partial"))
        .collect();
    assert!(left.is_empty(), "{left:?}");
}

#[test]
fn the_svg_of_a_one_record_cgraph_says_it_is_empty() {
    let _one = one_at_a_time();
    let dir = tempfile::tempdir().unwrap();
    let t = write(
        dir.path(),
        "one.jsonl",
        "{\"t\":0,\"sm\":\"a\",\"ev\":\"state\",\"state\":\"x\"}\n",
    );
    let svg = dir.path().join("x.svg");
    let o = run(&["cgraph", t.to_str().unwrap(), "-o", svg.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{err}");
    let text = std::fs::read_to_string(&svg).unwrap();
    assert!(text.starts_with("<svg") && text.contains("No transitions"));
}

/// A two-record trace whose one state lasts `span_ns`.
fn long_state(dir: &Path, span_ns: u64) -> String {
    let body = format!(
        "{{\"t\":0,\"sm\":\"a\",\"ev\":\"state\",\"state\":\"x\"}}\n{{\"t\":{span_ns},\"sm\":\"a\",\"ev\":\"end\"}}\n"
    );
    let p = write(dir, &format!("long-{span_ns}.jsonl"), body);
    p.to_str().unwrap().to_string()
}

#[test]
fn too_many_windows_are_refused_in_bounded_memory() {
    let _one = one_at_a_time();
    let dir = tempfile::tempdir().unwrap();
    let t = long_state(dir.path(), 10_000_000_000);
    // 10 s in windows of 1 us: 10 million windows.
    let (o, kib) = peak(&["analyze", &t, "--window", "1us"], None);
    refused(
        &o,
        &["10000000 windows", "limit of 10000", "at least 1000000 ns"],
    );
    assert!(kib < 200 << 10, "peak RSS {kib} KiB");
    // Under the cap they are all there, in bounded memory.
    let (o, kib) = peak(&["analyze", &t, "--window", "1ms", "--json"], None);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["windows"].as_array().unwrap().len(), 10_000);
    assert!(kib < 200 << 10, "peak RSS {kib} KiB");
}

#[test]
fn a_line_past_the_limit_is_skipped_in_bounded_memory() {
    let _one = one_at_a_time();
    let dir = tempfile::tempdir().unwrap();
    // A 64 MiB name: the line is longer than the 16 MiB limit.
    let mut body = Vec::from(&b"{\"t\":0,\"sm\":\"a\",\"ev\":\"state\",\"state\":\"x\"}\n"[..]);
    body.extend_from_slice(b"{\"t\":5,\"sm\":\"a\",\"ev\":\"state\",\"state\":\"");
    body.resize(body.len() + (64 << 20), b'n');
    body.extend_from_slice(b"\"}\n{\"t\":9,\"sm\":\"a\",\"ev\":\"end\"}\n");
    let t = write(dir.path(), "long-line.jsonl", &body);
    let (o, kib) = peak(&["analyze", t.to_str().unwrap()], None);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("long-line.jsonl:2: the line at byte 42 ")
            && err.contains("limit of 16777216 bytes"),
        "{err}"
    );
    assert_ne!(o.status.code(), Some(101), "{err}");
    assert!(kib < 100 << 10, "peak RSS {kib} KiB");
    // A blank line of 256 MiB, gzip'd (a few hundred KB).
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(b"{\"t\":0,\"sm\":\"a\",\"ev\":\"state\",\"state\":\"x\"}\n")
        .unwrap();
    let spaces = vec![b' '; 1 << 20];
    for _ in 0..256 {
        gz.write_all(&spaces).unwrap();
    }
    gz.write_all(b"\n{\"t\":9,\"sm\":\"a\",\"ev\":\"end\"}\n")
        .unwrap();
    let t = write(dir.path(), "blank.jsonl.gz", gz.finish().unwrap());
    let (o, kib) = peak(&["analyze", t.to_str().unwrap()], None);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("blank.jsonl.gz:2: the line at byte 42"),
        "{err}"
    );
    assert!(kib < 100 << 10, "peak RSS {kib} KiB");
}

/// `n` lines of a gzip'd trace, each made by `line` from its number,
/// between `head` and `tail`.
fn gz_lines(
    dir: &Path,
    name: &str,
    n: u64,
    parts: [&str; 2],
    line: impl Fn(u64) -> String,
) -> String {
    let file = File::create(dir.join(name)).unwrap();
    let mut gz =
        flate2::write::GzEncoder::new(std::io::BufWriter::new(file), flate2::Compression::fast());
    gz.write_all(parts[0].as_bytes()).unwrap();
    for i in 0..n {
        gz.write_all(line(i).as_bytes()).unwrap();
    }
    gz.write_all(parts[1].as_bytes()).unwrap();
    gz.finish().unwrap().flush().unwrap();
    dir.join(name).to_str().unwrap().to_string()
}

#[test]
fn many_distinct_names_are_refused_in_bounded_memory() {
    let _one = one_at_a_time();
    let dir = tempfile::tempdir().unwrap();
    let state = |i: u64| {
        format!(
            "{{\"t\":{},\"sm\":\"a\",\"ev\":\"state\",\"state\":\"s{i}\"}}\n",
            i * 10
        )
    };
    // Ten million distinct state names (557 MB of JSONL): refused at the
    // limit of 250,000 states, naming the line.
    let t = gz_lines(dir.path(), "names.jsonl.gz", 10_000_000, ["", ""], state);
    let (o, kib) = peak(&["analyze", &t], None);
    let err = refused(
        &o,
        &["more than 250000 distinct states and state machines, the limit"],
    );
    assert!(
        err.contains("names.jsonl.gz: analysis failed: by line "),
        "{err}"
    );
    assert!(kib < 1 << 20, "10M names: peak RSS {kib} KiB");
    // Just under the limit: analyzed, every state in the table.
    let t = gz_lines(dir.path(), "under.jsonl.gz", 249_999, ["", ""], state);
    let (o, kib) = peak(&["analyze", &t, "--json"], None);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["states"].as_array().unwrap().len(), 249_999);
    assert!(kib < 1 << 20, "249,999 names: peak RSS {kib} KiB");
    // Two million distinct slice names of a Chrome trace: read up to the
    // limit, the rest refused with the line.
    let slice = |i: u64| {
        format!(
            "{{\"ph\":\"X\",\"name\":\"op{i}\",\"pid\":1,\"tid\":1,\"ts\":{},\"dur\":5}},\n",
            i * 10
        )
    };
    let parts = [
        "{\"traceEvents\":[\n",
        "{\"ph\":\"X\",\"name\":\"last\",\"pid\":1,\"tid\":1,\"ts\":0,\"dur\":1}]}\n",
    ];
    let t = gz_lines(dir.path(), "slices.json.gz", 2_000_000, parts, slice);
    let (o, kib) = peak(&["analyze", &t], None);
    let err = refused(
        &o,
        &["more than 250000 distinct names (of slices and tracks)"],
    );
    assert!(err.contains("slices.json.gz:"), "{err}");
    assert!(kib < 1 << 20, "2M slice names: peak RSS {kib} KiB");
}

#[test]
fn a_name_past_the_limit_is_refused() {
    let _one = one_at_a_time();
    let dir = tempfile::tempdir().unwrap();
    let name = "n".repeat(100_000);
    let body = format!(
        "{{\"t\":0,\"sm\":\"a\",\"ev\":\"state\",\"state\":\"x\"}}\n{{\"t\":5,\"sm\":\"{name}\",\"ev\":\"state\",\"state\":\"y\"}}\n"
    );
    let t = write(dir.path(), "long-name.jsonl", body);
    let o = run(&["analyze", t.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("long-name.jsonl:2: field `sm` is a name of 100000 bytes"),
        "{err}"
    );
    assert!(err.contains("limit of 65536 bytes"), "{err}");
}

/// Whether `b` holds a control character but newline and tab.
fn has_control(b: &[u8]) -> bool {
    b.iter()
        .zip(b.iter().skip(1).chain([&0u8]))
        .any(|(&c, &n)| {
            (c < 0x20 && c != b'\n' && c != b'\t')
                || c == 0x7f
                || (c == 0xc2 && (0x80..=0x9f).contains(&n))
        })
}

#[test]
fn control_characters_never_reach_the_terminal() {
    let _one = one_at_a_time();
    let dir = tempfile::tempdir().unwrap();
    let evil = "x\\u001b]0;owned\\u0007\\u001b[2J\\u0000\\u007f\\u009b";
    let body = format!(
        "{{\"t\":0,\"sm\":\"{evil}\",\"ev\":\"state\",\"state\":\"{evil}\"}}\n{{\"t\":4,\"sm\":\"{evil}\",\"ev\":\"state\",\"state\":\"b\"}}\n{{\"t\":9,\"sm\":\"{evil}\",\"ev\":\"end\"}}\n"
    );
    let t = write(dir.path(), "evil.jsonl", body);
    let t = t.to_str().unwrap();
    for args in [
        &["analyze", t][..],
        &["analyze", t, "--json"],
        &["cgraph", t],
        &["whatif", t, "--speedup", "b=2"],
        &["check", t],
    ] {
        let o = run(args);
        assert!(!has_control(&o.stdout), "{args:?}: stdout holds controls");
        assert!(!has_control(&o.stderr), "{args:?}: stderr holds controls");
    }
    // JSON stays JSON, with the names as they are.
    let o = run(&["analyze", t, "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(v.to_string().contains("\\u001b]0;owned"));
}

#[test]
fn a_speed_up_past_the_longest_time_is_an_error() {
    let _one = one_at_a_time();
    let dir = tempfile::tempdir().unwrap();
    let body = format!(
        "{{\"t\":0,\"sm\":\"a\",\"ev\":\"state\",\"state\":\"x\"}}\n{{\"t\":{},\"sm\":\"a\",\"ev\":\"end\"}}\n",
        i64::MAX
    );
    let t = write(dir.path(), "max.jsonl", body);
    let o = run(&["whatif", t.to_str().unwrap(), "--speedup", "a:x=0.5"]);
    refused(&o, &["longer than 9223372036854775807 ns"]);
}

#[test]
fn chrome_times_past_the_latest_are_refused() {
    let _one = one_at_a_time();
    let dir = tempfile::tempdir().unwrap();
    for (event, says) in [
        (
            r#"{"ph":"X","pid":1,"tid":1,"name":"b","ts":9223372036854775,"dur":9223372036854775}"#,
            "traceEvents[1]: `X` event ends past the latest time",
        ),
        (
            r#"{"ph":"X","pid":1,"tid":1,"name":"c","ts":18446744073709551615,"dur":1}"#,
            "traceEvents[1]: field `ts` = 18446744073709551615 is past the latest time (9223372036854775807 ns",
        ),
        (
            r#"{"ph":"X","pid":1,"tid":1,"name":"c","ts":9223372036854775.808,"dur":0}"#,
            "is past the latest time",
        ),
        (
            r#"{"ph":"X","pid":1,"tid":1,"name":"c","ts":-1,"dur":0}"#,
            "field `ts` = -1 is not a time (a non-negative number of microseconds)",
        ),
    ] {
        let doc = format!(
            "{{\"traceEvents\":[\n{{\"ph\":\"X\",\"pid\":1,\"tid\":1,\"name\":\"a\",\"ts\":1,\"dur\":2}},\n{event}]}}"
        );
        let t = write(dir.path(), "late.json", doc);
        let o = run(&["analyze", t.to_str().unwrap(), "--json"]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{err}");
        assert!(err.contains(says), "{err}");
    }
}

#[test]
fn a_deep_one_line_document_is_not_called_a_record() {
    let _one = one_at_a_time();
    let dir = tempfile::tempdir().unwrap();
    let doc = format!("{}1{}\n", "{\"a\":".repeat(5000), "}".repeat(5000));
    let t = write(dir.path(), "deep.json", doc);
    let o = run(&["analyze", t.to_str().unwrap()]);
    refused(&o, &["deep.json:1: values nested 5000 levels deep"]);
}

#[test]
fn a_fifo_is_read_once() {
    let _one = one_at_a_time();
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("f");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: mkfifo only reads the path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let html = dir.path().join("r.html");
    for args in [
        &["analyze", fifo.to_str().unwrap(), "--json"][..],
        &["analyze", fifo.to_str().unwrap()],
        &[
            "report",
            fifo.to_str().unwrap(),
            "-o",
            html.to_str().unwrap(),
        ],
    ] {
        let f = fifo.clone();
        let writer = std::thread::spawn(move || std::fs::write(f, TRACE));
        let o = run(args);
        writer.join().unwrap().unwrap();
        assert!(
            o.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
    }
}

/// A small deterministic generator (xorshift), so that CI sees the same
/// cases each run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

/// `cases` times `CRITPATH_FUZZ_SCALE` (1 when unset).
fn scaled(cases: u64) -> u64 {
    let k = std::env::var("CRITPATH_FUZZ_SCALE").map_or(1, |v| v.parse().unwrap_or(1));
    cases * k
}

/// An output that aliases the input by some name or descriptor.
fn aliasing_case(rng: &mut Rng, dir: &Path) {
    let t = write(dir, "in.jsonl", TRACE);
    let _ = std::fs::remove_file(dir.join("hard"));
    std::fs::hard_link(&t, dir.join("hard")).unwrap();
    let _ = std::fs::remove_file(dir.join("soft"));
    std::os::unix::fs::symlink(&t, dir.join("soft")).unwrap();
    let named = [
        "/dev/stdin".to_string(),
        "/dev/fd/0".into(),
        "/proc/self/fd/0".into(),
        dir.join("hard").display().to_string(),
        dir.join("soft").display().to_string(),
        format!(
            "{}/../{}/in.jsonl",
            dir.display(),
            dir.file_name().unwrap().to_str().unwrap()
        ),
    ];
    let out = &named[rng.below(named.len() as u64) as usize];
    let input = if rng.below(2) == 0 {
        "-".to_string()
    } else {
        t.display().to_string()
    };
    let args: Vec<&str> = match rng.below(4) {
        0 => vec!["analyze", &input, "-o", out],
        1 => vec!["report", &input, "-o", out],
        2 => vec!["convert", &input, out, "--format", "jsonl"],
        _ => vec!["export", &input, "--format", "chrome", "-o", out],
    };
    let (o, _) = peak(&args, Some(&t));
    refused(&o, &["is the input"]);
    assert_eq!(std::fs::read_to_string(&t).unwrap(), TRACE, "{args:?}");
}

/// A name of some length around the limit.
fn name_case(rng: &mut Rng, dir: &Path) {
    let len = [1usize, 65_536, 65_537, 200_000, 3 << 20][rng.below(5) as usize];
    let field = ["sm", "state", "sys"][rng.below(3) as usize];
    let mut rec = serde_json::json!({"t": 5, "sm": "a", "ev": "state", "state": "y"});
    rec[field] = serde_json::Value::String("q".repeat(len));
    let body = format!("{{\"t\":0,\"sm\":\"a\",\"ev\":\"state\",\"state\":\"x\"}}\n{rec}\n");
    let t = write(dir, "name.jsonl", body);
    let (o, kib) = peak(&["analyze", t.to_str().unwrap(), "--json"], None);
    let err = String::from_utf8_lossy(&o.stderr);
    if len > 65_536 {
        assert_eq!(o.status.code(), Some(2), "{err}");
        assert!(
            err.contains(&format!("`{field}` is a name of {len} bytes")),
            "{err}"
        );
    } else {
        assert!(o.status.success(), "{err}");
    }
    assert!(kib < 100 << 10, "peak RSS {kib} KiB");
}

/// Many distinct state names: analyzed, memory per name bounded; past the
/// limit of 250,000 states (one case in four), refused.
fn many_names_case(rng: &mut Rng, dir: &Path) {
    static CASE: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let past = CASE.fetch_add(1, std::sync::atomic::Ordering::Relaxed) % 4 == 3;
    let n = match past {
        true => 250_000 + rng.below(20_000),
        false => 1000 + rng.below(30_000),
    };
    let mut body = String::new();
    for i in 0..n {
        body.push_str(&format!(
            "{{\"t\":{},\"sm\":\"a\",\"ev\":\"state\",\"state\":\"s{i}\"}}\n",
            i * 10
        ));
    }
    let t = write(dir, "names.jsonl", body);
    let (o, kib) = peak(&["analyze", t.to_str().unwrap(), "--json"], None);
    // Today's cost is about 2 KB per distinct state (docs/formats.md).
    assert!(kib < (40 << 10) + n * 4, "{n} names: peak RSS {kib} KiB");
    if past {
        refused(&o, &["distinct states and state machines, the limit"]);
        return;
    }
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

/// A window and a span: refused past the cap, else all windows.
fn window_case(rng: &mut Rng, dir: &Path) {
    let span = 1 + rng.below(1 << 40);
    let bits = 1 + rng.below(30);
    let window = 1 + rng.below(1 << bits);
    let t = long_state(dir, span);
    let w = format!("{window}ns");
    let (o, kib) = peak(&["analyze", &t, "--window", &w, "--json"], None);
    let needed = (span - 1) / window + 1;
    if needed > 10_000 {
        refused(&o, &["limit of 10000"]);
    } else {
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        assert_eq!(v["windows"].as_array().unwrap().len() as u64, needed);
    }
    assert!(
        kib < 200 << 10,
        "span {span}, window {window}: peak RSS {kib} KiB"
    );
}

/// Times near and past i64::MAX, scaled by a speed-up below 1.
fn time_case(rng: &mut Rng, dir: &Path) {
    let end = u64::MAX - rng.below(u64::MAX / 2 + 1);
    let body = format!(
        "{{\"t\":0,\"sm\":\"a\",\"ev\":\"state\",\"state\":\"x\"}}\n{{\"t\":{end},\"sm\":\"a\",\"ev\":\"end\"}}\n"
    );
    let t = write(dir, "time.jsonl", body);
    let factor = format!("a:x=0.{}", 1 + rng.below(9));
    let o = run(&["whatif", t.to_str().unwrap(), "--speedup", &factor]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    if end > i64::MAX as u64 {
        assert!(err.contains("is out of range"), "{err}");
    } else {
        assert!(err.contains("longer than 9223372036854775807 ns"), "{err}");
    }
    assert!(!String::from_utf8_lossy(&o.stdout).contains("vanishes"));
}

#[test]
fn structural_classes() {
    let _one = one_at_a_time();
    type Class = fn(&mut Rng, &Path);
    let classes: [(&str, Class, u64); 5] = [
        ("aliasing outputs", aliasing_case, 12),
        ("huge names", name_case, 8),
        ("many names", many_names_case, 4),
        ("windows", window_case, 12),
        ("time overflow", time_case, 8),
    ];
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut total = 0;
    for (label, case, n) in classes {
        let n = scaled(n);
        for _ in 0..n {
            let dir = tempfile::tempdir().unwrap();
            case(&mut rng, dir.path());
        }
        eprintln!("hostile {label}: {n} cases");
        total += n;
    }
    eprintln!("hostile: {total} cases");
}

/// `rename_z.data` (compressed, `perf record -z`) with its first MMAP2
/// record damaged in two bytes: the build-id flag set in its header's
/// `misc`, and a build-id length of 200 (at most 20 fit).
fn damaged_build_id(dir: &Path) -> std::path::PathBuf {
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("../os/tests/fixtures");
    let mut b = std::fs::read(fixtures.join("rename_z.data")).unwrap();
    let word = |b: &[u8], at: usize| u64::from_le_bytes(b[at..at + 8].try_into().unwrap());
    let (mut at, end) = (
        word(&b, 40) as usize,
        (word(&b, 40) + word(&b, 48)) as usize,
    );
    while at < end {
        let ty = u32::from_le_bytes(b[at..at + 4].try_into().unwrap());
        let size = u16::from_le_bytes(b[at + 6..at + 8].try_into().unwrap()) as usize;
        if ty == 10 {
            b[at + 5] |= 0x40;
            b[at + 40] = 200;
            return write(dir, "buildid.data", b);
        }
        at += size.max(8);
    }
    panic!("no MMAP2 record in rename_z.data");
}

#[test]
fn a_panic_of_the_perf_parser_is_an_error_with_its_offset() {
    let _one = one_at_a_time();
    let dir = tempfile::tempdir().unwrap();
    let t = damaged_build_id(dir.path());
    let t = t.to_str().unwrap();
    for cmd in ["analyze", "report", "profile"] {
        let mut args = vec![cmd, t];
        let out = dir.path().join("r.html");
        if cmd == "report" {
            args.extend(["-o", out.to_str().unwrap()]);
        }
        let o = run(&args);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{cmd}: {err}");
        assert!(!err.contains("panicked"), "{cmd}: {err}");
        assert!(
            err.contains("buildid.data: at byte offset ") && err.contains("could not be read"),
            "{cmd}: {err}"
        );
    }
}

#[test]
fn a_span_number_out_of_range_skips_that_span_not_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let span = |i: u32, duration: &str| {
        format!(
            r#"{{"traceId":"5b8efff798038103d269b633813f0001","id":"abcdef000000000{i}","name":"s{i}","timestamp":{},"duration":{duration},"localEndpoint":{{"serviceName":"svc"}}}}"#,
            1000 + 10 * i
        )
    };
    // The span in the middle has a duration no number holds.
    let body = format!(
        "[{},\n{},\n{}]\n",
        span(1, "100"),
        span(2, "1e400"),
        span(3, "100")
    );
    let t = write(dir.path(), "zipkin.json", body);
    let o = run(&["analyze", t.to_str().unwrap(), "--json"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("zipkin.json:2:") && err.contains("number out of range"),
        "{err}"
    );
    assert!(!err.contains("changed"), "the file did not change: {err}");
    // What came before the damage is analyzed.
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("JSON");
    assert_eq!(v["critical_path"]["length_ns"], 100_000, "{v}");
}

#[test]
fn a_slice_or_span_name_past_the_limit_is_cut_and_said() {
    let _one = one_at_a_time();
    let dir = tempfile::tempdir().unwrap();
    let long = "€".repeat(40_000); // 120,000 bytes, three a character
    let chrome = format!(
        r#"{{"traceEvents":[{{"ph":"X","name":"{long}","pid":1,"tid":1,"ts":0,"dur":5}},{{"ph":"X","name":"b","pid":1,"tid":1,"ts":10,"dur":5}}]}}"#
    );
    let otlp = format!(
        r#"{{"resourceSpans":[{{"scopeSpans":[{{"spans":[{{"traceId":"5b8efff798038103d269b633813f0001","spanId":"abcdef0000000001","name":"{long}","startTimeUnixNano":"1","endTimeUnixNano":"100"}}]}}]}}]}}"#
    );
    for (name, body) in [("long.json", chrome), ("long-otlp.json", otlp)] {
        let t = write(dir.path(), name, body);
        let o = run(&["analyze", t.to_str().unwrap(), "--json"]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{name}: {err}");
        assert!(
            err.contains("1 name longer than the limit of 65536 bytes (the longest 120000 bytes) was cut to it"),
            "{name}: {err}"
        );
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("JSON");
        let longest = (v["states"].as_array().unwrap().iter())
            .map(|s| s["state"].as_str().unwrap().len())
            .max()
            .unwrap();
        assert_eq!(longest, 65_535, "{name}: cut at a character boundary");
    }
}

#[test]
fn a_damaged_tracing_data_section_is_said_and_exits_2() {
    let dir = tempfile::tempdir().unwrap();
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("../os/tests/fixtures");
    let mut body = std::fs::read(fixtures.join("sleep3.data")).unwrap();
    std::fs::copy(
        fixtures.join("sleep3.data.syms"),
        dir.path().join("s.data.syms"),
    )
    .unwrap();
    // The header's data section (offset and size at bytes 40 and 48); the
    // first feature section after it is the tracing data (bit 1).
    let u64_at = |b: &[u8], at: usize| u64::from_le_bytes(b[at..at + 8].try_into().unwrap());
    let table = (u64_at(&body, 40) + u64_at(&body, 48)) as usize;
    let tracing = u64_at(&body, table) as usize;
    body[tracing..tracing + 4].copy_from_slice(b"XXXX");
    let t = write(dir.path(), "s.data", body);
    let o = run(&["analyze", t.to_str().unwrap(), "--json"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("s.data: the tracing-data section (the tracepoint layouts) is damaged"),
        "{err}"
    );
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("JSON");
    assert!(
        (v["diagnostics"].as_array().unwrap().iter()).any(|d| d["kind"] == "tracepoint-formats"),
        "{v}"
    );
}

#[test]
fn default_ends_missing_from_the_trace_are_said_as_such() {
    let dir = tempfile::tempdir().unwrap();
    // A converted recording whose command thread never ran in what is left.
    let body = format!("{{\"ev\":\"scope\",\"from\":\"ghost:412\",\"to\":\"ghost:412\"}}\n{TRACE}");
    let t = write(dir.path(), "scoped.jsonl", body);
    let o = run(&["analyze", t.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("the recorded command's thread ghost:412, where the path starts and ends by default, has no records in the trace"),
        "{err}"
    );
    assert!(!err.contains("--to ghost"), "the user gave no --to: {err}");
    // Ends the user gives are the user's.
    let o = run(&["analyze", t.to_str().unwrap(), "--to", "app", "--json"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

#[test]
fn an_input_with_no_readable_record_says_nothing_came_before_its_damage() {
    let dir = tempfile::tempdir().unwrap();
    let t = write(
        dir.path(),
        "bad.jsonl",
        "{\"t\":\"soon\",\"sm\":\"a\",\"ev\":\"state\",\"state\":\"x\"}\n",
    );
    let o = run(&["analyze", t.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("bad.jsonl:1:") && err.contains("no record could be read before it"),
        "{err}"
    );
}
