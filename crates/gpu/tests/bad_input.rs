//! A PyTorch profiler trace that is damaged (cut short, a byte flipped, an
//! event of the wrong shape or time, a name past the limit) is read as far
//! as it can be, and its reading ends in an error that names the file, the
//! byte offset and what was expected, as every reader's does.

mod common;

use common::run_damaged;
use critpath_gpu::open;
use critpath_trace::{Location, ReadError};

/// A trace of a CPU op and a kernel it launches, then `extra` events.
fn trace(extra: &[&str]) -> String {
    let mut events = vec![
        r#"{"ph":"X","cat":"cpu_op","name":"aten::mm","pid":1,"tid":1,"ts":0,"dur":100}"#,
        r#"{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":10,"dur":5,"args":{"correlation":1}}"#,
        r#"{"ph":"X","cat":"kernel","name":"gemm","pid":0,"tid":7,"ts":20,"dur":50,"args":{"device":0,"stream":7,"correlation":1}}"#,
    ];
    events.extend(extra);
    format!(
        "{{\"schemaVersion\":1,\"traceEvents\":[\n{}\n]}}",
        events.join(",\n")
    )
}

/// The analysis of `text`: its records, its error, and its diagnostics.
fn read(text: &str) -> (u64, Option<ReadError>, String) {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("t.json");
    std::fs::write(&f, text).unwrap();
    let (a, _, err) = run_damaged(open(&f).unwrap());
    let d: Vec<String> = a.diagnostics.iter().map(|d| d.message.clone()).collect();
    (a.stats.records, err, d.join("\n"))
}

/// The error of a damaged reading: not fatal (what could be read was),
/// at byte `at`, its message holding `says`.
fn assert_error_at(err: Option<ReadError>, at: usize, says: &str) {
    let e = err.expect("an error");
    assert!(!e.fatal, "{e}");
    assert_eq!(e.location, Location::Offset(at as u64), "{e}");
    assert!(e.message.contains(says), "{says:?} in {e}");
    assert!(e.to_string().contains("t.json: at byte offset"), "{e}");
}

#[test]
fn a_whole_trace_has_no_error() {
    let (records, err, _) = read(&trace(&[]));
    assert!(records > 0);
    assert!(err.is_none(), "{err:?}");
}

#[test]
fn a_cut_trace_is_an_error_where_its_last_whole_event_ends() {
    let whole = trace(&[]);
    let cut = &whole[..whole.len() - 10];
    let last_whole = cut.rfind("}}").unwrap() + 2;
    let (records, err, _) = read(cut);
    assert!(records > 0);
    assert_error_at(err, last_whole, "ends early");
}

#[test]
fn a_flipped_byte_is_an_error_at_that_byte() {
    let bad = r#"{"ph":"X","cat":"cpu_op","name"="x","pid":1,"tid":1,"ts":200,"dur":1}"#;
    let text = trace(&[bad]);
    let at = text.find("\"name\"=").unwrap() + "\"name\"".len();
    let (records, err, _) = read(&text);
    assert!(records > 0);
    assert_error_at(err, at, "not a JSON value (expected `:`); skipped");
}

#[test]
fn an_event_that_is_no_object_is_said_so_in_the_format_s_words() {
    for (bad, says) in [
        ("6", "expected an event object, found 6"),
        (
            r#"6"ph":"X""#,
            "expected an event object, found integer `6`",
        ),
        (
            r#"{"ph":"X","cat":"cpu_op","name":"d","pid":1,"tid":1,"ts":"NaN","dur":3}"#,
            "field `ts` = \"NaN\" is not a time",
        ),
        (
            r#"{"ph":"X","cat":"kernel","name":"k","ts":1,"dur":3,"args":{"stream":[7]}}"#,
            "field `args.stream` = [7] is not a number or a string",
        ),
    ] {
        let text = trace(&[bad]);
        let at = text.find(bad).unwrap();
        let (_, err, d) = read(&text);
        assert!(!d.contains("RawEvent") && !d.contains("column"), "{d}");
        assert_error_at(err, at, says);
    }
}

#[test]
fn times_out_of_range_are_errors_shown_readably() {
    let huge = r#"{"ph":"X","cat":"cpu_op","name":"a","pid":1,"tid":1,"ts":1e300,"dur":1}"#;
    let neg = r#"{"ph":"X","cat":"cpu_op","name":"c","pid":1,"tid":1,"ts":10,"dur":-3}"#;
    let text = trace(&[huge, neg]);
    let (records, err, d) = read(&text);
    assert!(records > 0);
    assert!(
        d.contains("\"a\": ts 1e300 µs is past the latest time"),
        "{d}"
    );
    let at = text.find(huge).unwrap();
    assert_error_at(err, at, "ts 1e300 µs is past the latest time");
}

#[test]
fn a_name_past_the_limit_is_cut_to_it_and_said() {
    let long = "A".repeat(100 << 10);
    let op =
        format!(r#"{{"ph":"X","cat":"cpu_op","name":"{long}","pid":1,"tid":1,"ts":200,"dur":1}}"#);
    // Twice: interned once, cut each time it is met.
    let (records, err, d) = read(&trace(&[&op, &op]));
    assert!(records > 0);
    let said =
        "2 names longer than the limit of 65536 bytes (the longest 102400 bytes) were cut to it";
    assert!(d.contains(said), "{d}");
    let e = err.expect("an error");
    assert_eq!(e.location, Location::File);
    assert!(e.message.contains(said), "{e}");
}

#[test]
fn a_cut_name_is_at_most_the_limit() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("t.json");
    let long = "é".repeat(40 << 10);
    let op =
        format!(r#"{{"ph":"X","cat":"cpu_op","name":"{long}","pid":1,"tid":1,"ts":200,"dur":1}}"#);
    std::fs::write(&f, trace(&[&op])).unwrap();
    let mut src = open(&f).unwrap();
    while critpath_trace::RecordSource::next_record(&mut src)
        .unwrap()
        .is_some()
    {}
    let strings = critpath_trace::RecordSource::strings(&src);
    let longest = strings.iter().map(|(_, s)| s.len()).max().unwrap_or(0);
    assert!(longest > 60 << 10 && longest <= 64 << 10, "{longest}");
}
