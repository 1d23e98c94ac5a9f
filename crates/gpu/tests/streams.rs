//! Small hand-made Kineto traces whose critical path is known exactly:
//! launches, kernel-kernel gaps, stream synchronization, events between
//! streams, event synchronization.

mod common;

use common::{links, run};
use critpath_gpu::{open, GpuBreakdown};
use serde_json::{json, Value};
use std::io::Write;

/// A CPU-side event on thread 1 (times in microseconds, as Kineto writes).
fn cpu(cat: &str, name: &str, ts: f64, dur: f64, corr: i64) -> Value {
    json!({"ph": "X", "cat": cat, "name": name, "pid": 1, "tid": 1, "ts": ts, "dur": dur,
           "args": {"correlation": corr}})
}

/// A kernel on a stream of device 0.
fn kernel(name: &str, stream: i64, ts: f64, dur: f64, corr: i64) -> Value {
    json!({"ph": "X", "cat": "kernel", "name": name, "pid": 0, "tid": stream, "ts": ts, "dur": dur,
           "args": {"device": 0, "stream": stream, "correlation": corr}})
}

/// A cuda_sync event with its arguments.
fn sync(name: &str, ts: f64, corr: i64, args: Value) -> Value {
    let mut a = args;
    a["correlation"] = json!(corr);
    a["device"] = json!(0);
    json!({"ph": "X", "cat": "cuda_sync", "name": name, "pid": 0, "tid": 0, "ts": ts, "dur": 1, "args": a})
}

/// Analyses a trace made of these events (gzip-compressed when asked).
fn analyse(events: Vec<Value>, gz: bool) -> (critpath_engine::Analysis, GpuBreakdown) {
    let doc = json!({"schemaVersion": 1, "deviceProperties": [], "traceEvents": events});
    let mut f = tempfile::NamedTempFile::new().unwrap();
    let text = serde_json::to_vec(&doc).unwrap();
    if gz {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        e.write_all(&text).unwrap();
        f.write_all(&e.finish().unwrap()).unwrap();
    } else {
        f.write_all(&text).unwrap();
    }
    assert!(critpath_gpu::is_kineto_file(f.path()));
    run(open(f.path()).unwrap())
}

fn one_stream() -> Vec<Value> {
    vec![
        cpu("cpu_op", "aten::mm", 0.0, 100.0, -1),
        cpu("cuda_runtime", "cudaLaunchKernel", 10.0, 10.0, 1),
        kernel("gemm", 7, 30.0, 200.0, 1),
        // Launched while gemm runs: it waits for the stream.
        cpu("cuda_runtime", "cudaLaunchKernel", 40.0, 10.0, 3),
        kernel("relu", 7, 235.0, 25.0, 3),
        cpu("cuda_runtime", "cudaStreamSynchronize", 120.0, 150.0, 2),
        sync("Stream Sync", 259.0, 2, json!({"stream": 7})),
    ]
}

#[test]
fn one_stream_launch_kernels_and_stream_sync() {
    for gz in [false, true] {
        let (a, b) = analyse(one_stream(), gz);
        // aten::mm 0-10, launch delay 10-30, gemm 30-230, gap 230-235,
        // relu 235-260, the synchronization returns 260-270.
        assert_eq!(a.critical_path.length_ns, 270_000);
        let want = GpuBreakdown {
            cpu_bound_ns: 10_000,
            gpu_compute_bound_ns: 225_000,
            gpu_kernel_launch_overhead_ns: 20_000,
            gpu_kernel_kernel_overhead_ns: 5_000,
            communication_bound_ns: 0,
            cpu_between_ops_ns: 0,
            sync_return_ns: 10_000,
            bound: "gpu_compute_bound".into(),
        };
        assert_eq!(b, want);
        assert_eq!(a.states[0].sm, "gpu0:stream7");
        assert_eq!(a.states[0].state, "gemm");
        assert!(
            a.diagnostics
                .iter()
                .all(|d| d.kind.as_str() == "long-state"),
            "{:?}",
            a.diagnostics
        );
    }
}

fn streams_with_events() -> Vec<Value> {
    vec![
        cpu("cuda_runtime", "cudaLaunchKernel", 0.0, 5.0, 1),
        kernel("A", 7, 10.0, 100.0, 1),
        cpu("cuda_runtime", "cudaEventRecord", 6.0, 2.0, 2),
        cpu("cuda_runtime", "cudaStreamWaitEvent", 9.0, 2.0, 3),
        sync(
            "Stream Wait Event",
            9.0,
            3,
            json!({"stream": 8, "wait_on_stream": 7, "wait_on_cuda_event_record_corr_id": 2}),
        ),
        // B on stream 8 waits for A through the event.
        cpu("cuda_runtime", "cudaLaunchKernel", 12.0, 5.0, 4),
        kernel("B", 8, 115.0, 50.0, 4),
        // C on stream 9 is independent and short.
        cpu("cuda_runtime", "cudaLaunchKernel", 18.0, 5.0, 5),
        kernel("C", 9, 30.0, 30.0, 5),
        cpu("cuda_runtime", "cudaEventRecord", 24.0, 2.0, 6),
        cpu("cuda_runtime", "cudaEventSynchronize", 27.0, 143.0, 7),
        sync(
            "Event Sync",
            27.0,
            7,
            json!({"stream": -1, "wait_on_stream": 8, "wait_on_cuda_event_record_corr_id": 6}),
        ),
        cpu("cuda_runtime", "cudaDeviceSynchronize", 175.0, 5.0, 8),
        sync("Context Sync", 175.0, 8, json!({"stream": -1})),
    ]
}

#[test]
fn streams_joined_by_events_and_an_event_sync() {
    let (a, b) = analyse(streams_with_events(), false);
    // Launch 0-10, A 10-110, B waits for A's event then its stream 110-115,
    // B 115-165, the event synchronization returns 165-170, the thread
    // runs Python 170-175 and cudaDeviceSynchronize 175-180 (nothing left
    // to wait for).
    assert_eq!(a.critical_path.length_ns, 180_000);
    assert_eq!(b.gpu_kernel_launch_overhead_ns, 10_000);
    assert_eq!(b.gpu_compute_bound_ns, 150_000);
    assert_eq!(b.gpu_kernel_kernel_overhead_ns, 5_000);
    assert_eq!(b.sync_return_ns, 5_000);
    assert_eq!(b.cpu_between_ops_ns, 5_000);
    assert_eq!(b.cpu_bound_ns, 5_000);
    let on_path: Vec<&str> = a
        .path
        .as_ref()
        .unwrap()
        .iter()
        .map(|s| s.state.as_str())
        .collect();
    assert!(
        on_path.contains(&"A") && on_path.contains(&"B") && !on_path.contains(&"C"),
        "{on_path:?}"
    );
    assert!(
        a.diagnostics
            .iter()
            .all(|d| d.kind.as_str() == "long-state"),
        "{:?}",
        a.diagnostics
    );
}

#[test]
fn an_annotation_window_keeps_what_was_launched_in_it() {
    let mut ev = one_stream();
    ev.push(json!({"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#7", "pid": 1, "tid": 1, "ts": 0.0, "dur": 35.0}));
    let doc = json!({"schemaVersion": 1, "traceEvents": ev});
    let f = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(f.path(), serde_json::to_vec(&doc).unwrap()).unwrap();
    let opts = critpath_gpu::GpuOptions {
        annotation: Some("ProfilerStep".into()),
        instance: 0,
    };
    let (a, _) = run(critpath_gpu::open_with(f.path(), &opts).unwrap());
    // Only aten::mm and the first launch start in the window; gemm is kept
    // (launched in it), relu and the synchronization are not.
    let states: Vec<&str> = a.states.iter().map(|s| s.state.as_str()).collect();
    assert!(
        states.contains(&"gemm") && !states.contains(&"relu"),
        "{states:?}"
    );
    assert!(!states.contains(&"cudaStreamSynchronize"));
}

/// Writes a trace of these events to a temporary file.
fn trace_file(events: Vec<Value>) -> tempfile::NamedTempFile {
    let doc = json!({"schemaVersion": 1, "deviceProperties": [], "traceEvents": events});
    let mut f = tempfile::NamedTempFile::new().unwrap();
    f.write_all(&serde_json::to_vec(&doc).unwrap()).unwrap();
    f
}

#[test]
fn launches_queued_behind_a_busy_stream_leave_no_send_unreceived() {
    // One long kernel, then 200 short ones launched while it runs: each
    // waits for the stream, not for its launch.
    let mut events = vec![
        cpu("cuda_runtime", "cudaLaunchKernel", 0.0, 5.0, 1),
        kernel("long", 7, 10.0, 10_000.0, 1),
    ];
    for k in 0..200 {
        let corr = 2 + k;
        let t = 20.0 + 10.0 * k as f64;
        events.push(cpu("cuda_runtime", "cudaLaunchKernel", t, 5.0, corr));
        events.push(kernel("short", 7, 10_010.0 + 3.0 * k as f64, 3.0, corr));
    }
    let f = trace_file(events);
    let (sent, received) = links(open(f.path()).unwrap());
    // Only the first kernel's launch binds; the others' make no send that
    // would wait, unreceived, in the engine.
    assert_eq!(sent.len(), 1, "{sent:?}");
    assert_eq!(sent, received);
    let (a, b) = run(open(f.path()).unwrap());
    assert_eq!(a.critical_path.length_ns, 10_610_000);
    assert_eq!(b.gpu_kernel_launch_overhead_ns, 10_000);
    assert_eq!(b.gpu_compute_bound_ns, 10_600_000);
}

/// Kernel A on stream 7 (20 µs + `a`), kernel B on stream 8 (25 µs + `b`),
/// then a device synchronization from 30 µs (its `Context Sync` event
/// when asked) that returns 2 µs after the later one ends, and an op 3 µs
/// after that.
fn device_sync_over_two_streams(a: f64, b: f64, sync_event: bool) -> Vec<Value> {
    let ret = 20.0_f64.max(25.0 + b - a) + a + 2.0;
    let mut ev = vec![
        cpu("cuda_runtime", "cudaLaunchKernel", 12.0, 3.0, 1),
        kernel("A", 7, 20.0, a, 1),
        cpu("cuda_runtime", "cudaLaunchKernel", 18.0, 3.0, 2),
        kernel("B", 8, 25.0, b, 2),
        cpu("cuda_runtime", "cudaDeviceSynchronize", 30.0, ret - 30.0, 3),
        cpu("cpu_op", "aten::add", ret + 3.0, 15.0, -1),
    ];
    if sync_event {
        ev.push(sync("Context Sync", 30.0, 3, json!({"stream": -1})));
    }
    ev
}

/// The sum of the breakdown's fields.
fn adds_up(b: &GpuBreakdown) -> u64 {
    b.hta_comparable_ns() + b.cpu_between_ops_ns + b.sync_return_ns
}

/// The predicted path length (ns) with `speedup` (`SM:STATE=F`).
fn predicted(events: Vec<Value>, speedup: &str) -> u64 {
    let f = trace_file(events);
    let opts = critpath_engine::Options {
        speedups: vec![critpath_engine::Speedup::parse(speedup).unwrap()],
        ..critpath_engine::Options::default()
    };
    let mut src = open(f.path()).unwrap();
    let (a, err) = critpath_engine::analyze(&mut src, opts, |_, _| {}).unwrap();
    assert!(err.is_none(), "{err:?}");
    a.critical_path.length_ns
}

#[test]
fn a_device_sync_waits_for_every_stream_it_waits_for() {
    for sync_event in [true, false] {
        // A 20-70 µs, B 25-60 µs: the sync returns at 72 µs.
        let ev = device_sync_over_two_streams(50.0, 35.0, sync_event);
        let (a, b) = run(open(trace_file(ev.clone()).path()).unwrap());
        // From the first launch (12 µs) to aten::add's end (90 µs): A's
        // launch delay, A, the return, Python, aten::add.
        assert_eq!(a.critical_path.length_ns, 78_000);
        assert_eq!(b.gpu_kernel_launch_overhead_ns, 8_000);
        assert_eq!(b.gpu_compute_bound_ns, 50_000);
        assert_eq!(b.sync_return_ns, 2_000);
        assert_eq!(b.cpu_between_ops_ns, 3_000);
        assert_eq!(b.cpu_bound_ns, 15_000);
        assert_eq!(adds_up(&b), 78_000);
        // A twice as fast ends at 45 µs, before B: the sync now returns
        // 2 µs after B's end (60 µs), the path runs 12-80 µs. The 10 µs
        // between B's end and A's were the sync waiting for A, not its
        // own time.
        assert_eq!(predicted(ev, "gpu0:stream7:A=2"), 68_000, "{sync_event}");
        // A ends first (20-55 µs), B 25-70 µs: B twice as fast ends at
        // 47.5 µs, the sync returns at 57 µs, aten::add ends at 75 µs.
        let ev = device_sync_over_two_streams(35.0, 45.0, sync_event);
        let (a, b) = run(open(trace_file(ev.clone()).path()).unwrap());
        assert_eq!(a.critical_path.length_ns, 78_000);
        assert_eq!(b.sync_return_ns, 2_000);
        assert_eq!(adds_up(&b), 78_000);
        assert_eq!(predicted(ev, "gpu0:stream8:B=2"), 63_000, "{sync_event}");
    }
}
