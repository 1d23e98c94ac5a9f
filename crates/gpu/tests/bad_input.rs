//! A PyTorch profiler trace that is damaged (cut short, a byte flipped, an
//! event of the wrong shape or time, a name past the limit) is read as far
//! as it can be, and its reading ends in an error that names the file, the
//! byte offset and what was expected, as every reader's does.

use critpath_gpu::open;

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
