//! `critpath analyze` on real PyTorch profiler (Kineto) traces, compared
//! with Meta's Holistic Trace Analysis on the same traces (the shared data
//! beside the repository: its traces and HTA 0.5.0's results).

mod common;
use common::{crit, json_of, run, state_row, write};
use serde_json::Value;
use std::path::PathBuf;

/// The shared traces: `shared/data/kineto` beside the repository (or
/// beside any folder above it).
fn kineto(name: &str) -> Option<String> {
    let here = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let found = here
        .ancestors()
        .map(|a| a.join("shared/data/kineto").join(name))
        .find(|f| f.exists());
    if found.is_none() {
        eprintln!("skipped: shared/data/kineto/{name} is not beside the repository");
    }
    found.map(|f| f.display().to_string())
}

fn hta(trace: &str) -> Value {
    let p = kineto("hta-results.json").expect("results beside the traces");
    let v: Value = serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap();
    v["traces"][trace].clone()
}

#[test]
fn one_step_matches_hta_within_3_percent() {
    let Some(t) = kineto("cuda_event_sync.pt.trace.json.gz") else {
        return;
    };
    let d = json_of(&["analyze", &t, "--annotation", "ProfilerStep", "--json"]);
    let want = hta("cuda_event_sync.pt.trace.json.gz");
    let gpu = &d["gpu"];
    let hta_len = want["length_us"].as_f64().unwrap() * 1000.0;
    let comparable = [
        "cpu_bound_ns",
        "gpu_compute_bound_ns",
        "gpu_kernel_launch_overhead_ns",
        "gpu_kernel_kernel_overhead_ns",
        "communication_bound_ns",
    ]
    .iter()
    .map(|k| gpu[k].as_u64().unwrap() as f64)
    .sum::<f64>();
    assert!(
        (comparable - hta_len).abs() / hta_len < 0.03,
        "{comparable} vs HTA {hta_len}"
    );
    assert_eq!(d["states"][0]["state"], "aten::empty");
    assert_eq!(gpu["bound"], "cpu_bound");
    let cpu_share = gpu["cpu_bound_ns"].as_f64().unwrap() / comparable;
    let hta_cpu = want["bound_by_us"]["cpu_bound"].as_f64().unwrap() * 1000.0 / hta_len;
    assert!(
        (cpu_share - hta_cpu).abs() < 0.05,
        "{cpu_share} vs {hta_cpu}"
    );
}

#[test]
fn whole_trace_has_hta_top_state_and_length() {
    let Some(t) = kineto("alexnet.pt.trace.json.gz") else {
        return;
    };
    let d = json_of(&["analyze", &t, "--json", "--top", "3"]);
    let want = hta("alexnet.pt.trace.json.gz");
    let top = want["top_states_us"].as_object().unwrap();
    let (hta_top, _) = top
        .iter()
        .max_by(|a, b| a.1.as_f64().partial_cmp(&b.1.as_f64()).unwrap())
        .unwrap();
    assert_eq!(d["states"][0]["state"].as_str().unwrap(), hta_top);
    let len = d["critical_path"]["length_ns"].as_f64().unwrap();
    let hta_len = want["length_us"].as_f64().unwrap() * 1000.0;
    assert!((len - hta_len).abs() / hta_len < 0.03, "{len} vs {hta_len}");
    // The table says what bounds the path.
    let out = run(&["analyze", &t, "--top", "3"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("the path is cpu bound"), "{text}");
}

#[test]
fn an_annotation_that_does_not_occur_is_a_clear_error() {
    let Some(t) = kineto("cuda_event_sync.pt.trace.json.gz") else {
        return;
    };
    let out = run(&["analyze", &t, "--annotation", "NoSuchStep"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.starts_with("critpath: error: "), "{err}");
}

#[test]
fn an_annotation_of_a_trace_that_is_not_a_pytorch_profiler_one_is_refused() {
    // The option picks a window of a Kineto trace; any other trace was
    // analyzed whole, as if it were not given.
    let jsonl = common::example("calls.jsonl");
    let chrome = common::example("chrome/pipeline.json");
    for (cmd, trace, format) in [
        ("analyze", &jsonl, "a JSONL trace"),
        ("analyze", &chrome, "a Chrome / Perfetto trace JSON"),
        ("batch", &jsonl, "a JSONL trace"),
    ] {
        let out = run(&[
            cmd,
            trace,
            "--annotation",
            "ProfilerStep",
            "--instance",
            "1",
        ]);
        assert_eq!(out.status.code(), Some(2), "{cmd} {trace}");
        let err = String::from_utf8_lossy(&out.stderr);
        let want = format!("critpath: error: {trace}: --annotation ProfilerStep applies only to PyTorch profiler (Kineto) GPU traces, and this is {format}\n");
        assert!(err.starts_with(&want), "{cmd}: {err}");
        assert!(out.stdout.is_empty() || cmd == "batch", "{cmd}");
    }
    // Read from standard input, the input is named as its read errors name it.
    let out = run_stdin(
        &["analyze", "-", "--annotation", "ProfilerStep"],
        &std::fs::read(&chrome).unwrap(),
    );
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.starts_with("critpath: error: <stdin>: --annotation ProfilerStep applies only to PyTorch profiler (Kineto) GPU traces, and this is a Chrome / Perfetto trace JSON"), "{err}");
}

/// `critpath ARGS` with `input` on its standard input.
fn run_stdin(args: &[&str], input: &[u8]) -> std::process::Output {
    use std::io::Write;
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_critpath"))
        .args(args)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let input = input.to_vec();
    let feeder = std::thread::spawn(move || {
        let _ = stdin.write_all(&input);
    });
    let out = child.wait_with_output().unwrap();
    feeder.join().unwrap();
    out
}

#[test]
fn a_trace_on_standard_input_is_analyzed_as_the_file_is() {
    let Some(t) = kineto("cuda_event_sync.pt.trace.json.gz") else {
        return;
    };
    let args = ["--annotation", "ProfilerStep", "--json"];
    let from_file = json_of(&[&["analyze", &t][..], &args].concat());
    // Piped, compressed as it was saved, then decompressed: the same
    // analysis, with the GPU breakdown (not read as a plain Chrome trace).
    let gz = std::fs::read(&t).unwrap();
    let mut plain = Vec::new();
    std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(&gz[..]), &mut plain).unwrap();
    for bytes in [&gz, &plain] {
        let o = run_stdin(&[&["analyze", "-"][..], &args].concat(), bytes);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let piped: Value = serde_json::from_slice(&o.stdout).unwrap();
        assert_eq!(piped["gpu"], from_file["gpu"]);
        assert_eq!(piped["states"], from_file["states"]);
        assert_eq!(piped["critical_path"], from_file["critical_path"]);
    }
}

#[test]
fn next_paths_and_windows_work_on_gpu_traces() {
    let Some(t) = kineto("cuda_event_sync.pt.trace.json.gz") else {
        return;
    };
    let d = json_of(&["analyze", &t, "--next", "2", "--json"]);
    let len = d["critical_path"]["length_ns"].as_u64().unwrap();
    let next = d["next_critical_paths"].as_array().unwrap();
    assert_eq!(next.len(), 2, "{}", d["next_critical_paths"]);
    let first = next[0]["length_ns"].as_u64().unwrap();
    let second = next[1]["length_ns"].as_u64().unwrap();
    assert!(first < len && second <= first, "{len} {first} {second}");
    assert!(d["gpu"].is_object());
    // The text says it too, with the path by time window and the verdict's
    // what-if.
    let o = run(&["analyze", &t, "--next", "--window", "1ms"]);
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.contains("next most critical path"), "{text}");
    assert!(text.contains("critical path by time window"), "{text}");
    assert!(text.lines().next().unwrap().contains("2× faster"), "{text}");
    // Removing what is not there names the flag.
    let o = run(&["analyze", &t, "--remove", "no-such:state"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--remove"));
}

/// The generator of several ranks' traces (crates/gpu/tests/gen).
fn generate_ranks(dir: &std::path::Path, args: &[&str]) -> Option<Vec<String>> {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../gpu/tests/gen/gen_kineto.py");
    let ok = std::process::Command::new("python3")
        .arg(script)
        .arg(dir)
        .args(args)
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        eprintln!("skipped: python3 could not run the generator");
        return None;
    }
    let n: usize = args[1].parse().unwrap();
    Some(
        (0..n)
            .map(|r| {
                dir.join(format!("rank{r}.pt.trace.json"))
                    .display()
                    .to_string()
            })
            .collect(),
    )
}

#[test]
fn several_ranks_summarize_their_stragglers_and_take_what_ifs() {
    let dir = tempfile::tempdir().unwrap();
    let Some(files) = generate_ranks(
        dir.path(),
        &["--ranks", "4", "--steps", "12", "--slow-rank", "2"],
    ) else {
        return;
    };
    let mut args: Vec<&str> = vec!["analyze"];
    args.extend(files.iter().map(String::as_str));
    let o = run(&args);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = String::from_utf8_lossy(&o.stdout);
    // One summary per straggler, not one line per step.
    assert!(
        text.contains("rank 2 arrived last in 12 of 12 step(s)"),
        "{text}"
    );
    assert!(text.contains("and 9 more step(s)"), "{text}");
    let waits = text.lines().find(|l| l.contains("longest waits:")).unwrap();
    assert_eq!(waits.matches("ProfilerStep#").count(), 3, "{text}");
    // No line per step elsewhere (the table may show a few step states).
    assert!(text.matches("ProfilerStep#").count() <= 3 + 3, "{text}");
    // The JSON keeps every step, in time order.
    args.push("--json");
    let v = json_of(&args);
    let steps: Vec<&str> = v["ranks"]["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["step"].as_str().unwrap())
        .collect();
    let want: Vec<String> = (0..12).map(|i| format!("ProfilerStep#{i}")).collect();
    assert_eq!(steps, want);
    // A what-if on several ranks: the straggler's GEMMs 2x faster hand the
    // path to the others' (100 us against 150 us: 8 x 50 us a step).
    let gemm = format!(
        "{}:{}=2",
        v["states"][0]["sm"].as_str().unwrap(),
        v["states"][0]["state"].as_str().unwrap()
    );
    let mut w: Vec<&str> = vec!["whatif"];
    w.extend(files.iter().map(String::as_str));
    w.extend(["--speedup", &gemm, "--json"]);
    let p = json_of(&w);
    let (b, pred) = (
        p["baseline_length_ns"].as_u64().unwrap(),
        p["predicted_length_ns"].as_u64().unwrap(),
    );
    assert_eq!(b - pred, 12 * 8 * 50_000, "{p}");
}

#[test]
fn a_report_of_ranks_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let Some(files) = generate_ranks(dir.path(), &["--ranks", "2", "--steps", "2"]) else {
        return;
    };
    for traces in [&files[..1], &files[..]] {
        let html = dir.path().join("r.html");
        let mut args: Vec<&str> = vec!["report", "-o", html.to_str().unwrap()];
        args.extend(traces.iter().map(String::as_str));
        let o = run(&args);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let page = std::fs::read_to_string(&html).unwrap();
        assert!(page.contains("bound by "), "the verdict is in the report");
    }
}

/// A gloo rank's trace: its `(cat, name, tid, ts, dur)` events (µs) on
/// process 100, of a job of 2 ranks.
fn gloo_rank(rank: u32, events: &[(&str, &str, u32, u64, u64)]) -> String {
    gloo_rank_of(rank, 2, events)
}

/// [`gloo_rank`] of a job of `world` ranks.
fn gloo_rank_of(rank: u32, world: u32, events: &[(&str, &str, u32, u64, u64)]) -> String {
    let evs: Vec<Value> = events
        .iter()
        .map(|&(cat, name, tid, ts, dur)| {
            serde_json::json!({"ph": "X", "cat": cat, "name": name, "pid": 100,
                "tid": tid, "ts": ts, "dur": dur, "args": {}})
        })
        .collect();
    let info = serde_json::json!({"backend": "gloo", "rank": rank, "world_size": world});
    serde_json::json!({"schemaVersion": 1, "distributedInfo": info, "traceEvents": evs}).to_string()
}

#[test]
fn a_thread_computing_while_its_gloo_collective_runs_keeps_its_time() {
    let dir = tempfile::tempdir().unwrap();
    let run_ranks = |after: (&str, u64, u64)| {
        let r0 = gloo_rank(
            0,
            &[
                ("cpu_op", "fwd", 100, 0, 200),
                ("cpu_op", "c10d::allreduce_", 100, 200, 10),
                ("user_annotation", "gloo:all_reduce", 101, 215, 485),
                ("cpu_op", after.0, 100, after.1, after.2),
            ],
        );
        let r1 = gloo_rank(
            1,
            &[
                ("cpu_op", "fwd", 100, 300, 300),
                ("cpu_op", "c10d::allreduce_", 100, 600, 10),
                ("user_annotation", "gloo:all_reduce", 101, 615, 85),
                ("cpu_op", "opt", 100, 710, 10),
            ],
        );
        let (p0, p1) = (
            write(dir.path(), "r0.json", r0),
            write(dir.path(), "r1.json", r1),
        );
        json_of(&[
            "analyze",
            p0.to_str().unwrap(),
            p1.to_str().unwrap(),
            "--json",
        ])
    };
    // Rank 0 computes in `aten::mm` from 220 to 900 µs while its all-reduce
    // runs (to 700): the op is work, not a wait for the collective, and the
    // path is rank 0's own 900 µs.
    let d = run_ranks(("aten::mm", 220, 680));
    assert_eq!(d["critical_path"]["length_ns"], 900_000, "{}", d["states"]);
    assert_eq!(crit(&d, "rank0/thread:100", "aten::mm"), 680_000);
    assert_eq!(crit(&d, "rank0/thread:100", "fwd"), 200_000);
    // Idle after the issue, rank 0 waits for the all-reduce, which waits for
    // rank 1's arrival: the path runs through rank 1's `fwd`.
    let d = run_ranks(("opt", 710, 10));
    assert_eq!(
        crit(&d, "rank1/thread:100", "fwd"),
        300_000,
        "{}",
        d["states"]
    );
    assert_eq!(
        state_row(&d, "rank0/thread:100", "allreduce wait")["critical_ns"],
        0
    );
}

#[test]
fn a_cpu_collective_without_gloo_executions_is_communication() {
    // Ranks whose only collective ops are `c10d::barrier` (no `gloo:*`
    // annotations): rank 1 arrives last at 300 µs, and the barrier runs to
    // 400 on both; its run after the last arrival is communication.
    let dir = tempfile::tempdir().unwrap();
    let rank = |r: u32, fwd: u64| {
        let body = gloo_rank(
            r,
            &[
                ("cpu_op", "fwd", 100, 0, fwd),
                ("cpu_op", "c10d::barrier", 100, fwd, 400 - fwd),
            ],
        );
        let p = write(dir.path(), &format!("r{r}.json"), body);
        p.to_str().unwrap().to_string()
    };
    let (r0, r1) = (rank(0, 100), rank(1, 300));
    let d = json_of(&["analyze", &r0, &r1, "--json"]);
    assert_eq!(d["critical_path"]["length_ns"], 400_000, "{}", d["states"]);
    assert_eq!(d["gpu"]["communication_bound_ns"], 100_000, "{}", d["gpu"]);
    assert_eq!(d["gpu"]["cpu_bound_ns"], 300_000, "{}", d["gpu"]);
    // Both clocks aligned (rank 1's offset measured from the barrier's end).
    let offsets = d["ranks"]["offsets"].as_array().unwrap();
    assert!(offsets.iter().all(|o| o["aligned"] == true), "{offsets:?}");
    assert_eq!(offsets[1]["collectives"], 1);
    // Ranks that share no collective: neither clock is aligned.
    let plain = |r: u32| {
        let body = gloo_rank(r, &[("cpu_op", "fwd", 100, 0, 100)]);
        let p = write(dir.path(), &format!("p{r}.json"), body);
        p.to_str().unwrap().to_string()
    };
    let d = json_of(&["analyze", &plain(0), &plain(1), "--json"]);
    let offsets = d["ranks"]["offsets"].as_array().unwrap();
    assert!(offsets.iter().all(|o| o["aligned"] == false), "{offsets:?}");
}

#[test]
fn a_what_if_that_changes_the_last_rank_holds_every_rank_for_the_new_one() {
    // Each rank computes `fwd`, meets the others in a barrier that runs
    // 100 µs after the last arrives, then computes `opt`; rank 1 arrives
    // last. With rank 1's `fwd` 100x faster another rank is the last, and
    // every rank, rank 1 too, waits for it.
    let dir = tempfile::tempdir().unwrap();
    // `child`: a 1 µs op inside rank `child.0`'s barrier from `child.1` µs
    // after it starts.
    let job = |work: &[(u64, u64)], child: Option<(usize, u64)>| {
        let end = work.iter().map(|w| w.0).max().unwrap() + 100;
        let files: Vec<String> = (0..work.len())
            .map(|r| {
                let (fwd, opt) = work[r];
                let mut events = vec![
                    ("cpu_op", "fwd", 100, 0, fwd),
                    ("cpu_op", "c10d::barrier", 100, fwd, end - fwd),
                    ("cpu_op", "opt", 100, end, opt),
                ];
                if let Some((_, after)) = child.filter(|c| c.0 == r) {
                    events.push(("cpu_op", "aten::empty", 100, fwd + after, 1));
                }
                let body = gloo_rank_of(r as u32, work.len() as u32, &events);
                let p = write(dir.path(), &format!("j{}r{r}.json", work.len()), body);
                p.to_str().unwrap().to_string()
            })
            .collect();
        let mut args = vec!["whatif".to_string()];
        args.extend(files.iter().cloned());
        args.extend(["--speedup", "rank1/thread:100:fwd=100", "--json"].map(String::from));
        let w = json_of(&args.iter().map(String::as_str).collect::<Vec<_>>());
        let mut args = vec!["analyze".to_string()];
        args.extend(files);
        args.push("--json".into());
        let a = json_of(&args.iter().map(String::as_str).collect::<Vec<_>>());
        let kinds = a["diagnostics"].as_array().unwrap().iter();
        let kinds: Vec<&str> = kinds.map(|d| d["kind"].as_str().unwrap()).collect();
        assert!(!kinds.contains(&"recv-without-send"), "{kinds:?}");
        w
    };
    let lengths = |d: &Value| {
        let l = |k: &str| d[k].as_u64().unwrap();
        (l("baseline_length_ns"), l("predicted_length_ns"))
    };
    // Two ranks: rank 0 arrives at 100 µs, the barrier ends at 200 and
    // rank 1's 300 µs `opt` follows: 500 (not 3 + 100 + 300, as if rank 1
    // did not wait).
    let d = job(&[(100, 10), (300, 300)], None);
    assert_eq!(lengths(&d), (700_000, 500_000), "{d}");
    // The same with a child op starting with rank 1's barrier (its record
    // replaces the barrier's first).
    let d = job(&[(100, 10), (300, 300)], Some((1, 0)));
    assert_eq!(lengths(&d), (700_000, 500_000), "{d}");
    // Three ranks: rank 2 becomes the last (at 200 µs), and rank 0, which
    // waited for rank 1 in the trace, now waits for rank 2 too: 200 + 100
    // + rank 0's 300 µs `opt`.
    let d = job(&[(100, 300), (300, 10), (200, 10)], None);
    assert_eq!(lengths(&d), (700_000, 600_000), "{d}");
}

/// An NCCL rank's trace: on stream 7, a GEMM of `gemm` µs launched at 1,
/// an all-reduce launched at 2 (its kernel from the GEMM's end to `end`)
/// and an `opt` kernel of `opt` µs launched at 3, each starting when the
/// one before ends.
fn nccl_rank(rank: u32, (gemm, end, opt): (u64, u64, u64)) -> String {
    let coll = serde_json::json!({"Collective name": "allreduce", "Process Group Name": "0",
        "Process Group Ranks": "[0, 1]", "Group size": 2});
    let kernels = [
        ("gemm", 10, gemm),
        ("ncclKernel_AllReduce", 10 + gemm, end - 10 - gemm),
        ("opt", end, opt),
    ];
    let mut evs = Vec::new();
    for (k, &(name, ts, dur)) in kernels.iter().enumerate() {
        let corr = k + 1;
        evs.push(
            serde_json::json!({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel",
            "pid": 100, "tid": 100, "ts": corr, "dur": 1, "args": {"correlation": corr}}),
        );
        let mut args = serde_json::json!({"device": 0, "stream": 7, "correlation": corr});
        if name.starts_with("nccl") {
            args.as_object_mut()
                .unwrap()
                .extend(coll.as_object().unwrap().clone());
        }
        evs.push(
            serde_json::json!({"ph": "X", "cat": "kernel", "name": name, "pid": 0,
            "tid": 7, "ts": ts, "dur": dur, "args": args}),
        );
    }
    let info = serde_json::json!({"backend": "nccl", "rank": rank, "world_size": 2});
    serde_json::json!({"schemaVersion": 1, "distributedInfo": info, "traceEvents": evs}).to_string()
}

#[test]
fn a_what_if_that_changes_the_last_rank_holds_every_gpu_for_the_new_one() {
    // Rank 1's GEMM (500 µs) makes it the last at the all-reduce, which
    // ends at 560 on both; its `opt` kernel (300 µs) follows. With the GEMM
    // 100x faster rank 0 (its GEMM 200 µs) is the last: the all-reduce's
    // 50 µs run then starts at 210 on both, and rank 1's `opt` at 260 (the
    // path starts at the first launch, at 1 µs).
    let dir = tempfile::tempdir().unwrap();
    let r0 = write(dir.path(), "n0.json", nccl_rank(0, (200, 560, 20)));
    let r1 = write(dir.path(), "n1.json", nccl_rank(1, (500, 560, 300)));
    let (r0, r1) = (r0.to_str().unwrap(), r1.to_str().unwrap());
    let speedup = "rank1/gpu0:stream7:gemm=100";
    let d = json_of(&["whatif", r0, r1, "--speedup", speedup, "--json"]);
    assert_eq!(d["baseline_length_ns"], 859_000, "{d}");
    assert_eq!(d["predicted_length_ns"], 559_000, "{d}");
}

/// An NCCL rank's trace (its clock `offset` µs ahead) of one all-reduce
/// per step, each ending at the given time (µs): launched 60 µs before its
/// end, running the last 50 µs.
fn all_reduces(rank: u32, offset: u64, ends: &[u64]) -> String {
    let mut evs = Vec::new();
    for (k, &end) in ends.iter().enumerate() {
        let (ts, corr) = (offset + end, k + 1);
        evs.push(
            serde_json::json!({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel",
            "pid": 100, "tid": 100, "ts": ts - 60, "dur": 1, "args": {"correlation": corr}}),
        );
        let args = serde_json::json!({"device": 0, "stream": 7, "correlation": corr,
            "Collective name": "allreduce", "Process Group Name": "0",
            "Process Group Ranks": "[0, 1]"});
        evs.push(
            serde_json::json!({"ph": "X", "cat": "kernel", "name": "ncclKernel_AllReduce",
            "pid": 0, "tid": 7, "ts": ts - 50, "dur": 50, "args": args}),
        );
    }
    let info = serde_json::json!({"backend": "nccl", "rank": rank, "world_size": 2});
    serde_json::json!({"schemaVersion": 1, "distributedInfo": info, "traceEvents": evs}).to_string()
}

#[test]
fn the_text_says_a_rank_not_claimed_aligned_is_not_aligned() {
    // Rank 1 (5 s ahead) lost its first all-reduce: matched by order, its
    // ends (1100, 2300) pair with rank 0's (100, 1100), 1000 and 1200 µs
    // apart, a spread of 200 µs with counts that differ.
    let dir = tempfile::tempdir().unwrap();
    let r0 = write(dir.path(), "a0.json", all_reduces(0, 0, &[100, 1100, 2300]));
    let r1 = write(
        dir.path(),
        "a1.json",
        all_reduces(1, 5_000_000, &[1100, 2300]),
    );
    let (r0, r1) = (r0.to_str().unwrap(), r1.to_str().unwrap());
    let d = json_of(&["analyze", r0, r1, "--json"]);
    let off = &d["ranks"]["offsets"][1];
    assert_eq!(
        (&off["aligned"], &off["end_spread_ns"]),
        (&Value::Bool(false), &Value::from(200_000)),
        "{off}"
    );
    let text = String::from_utf8_lossy(&run(&["analyze", r0, r1]).stdout).to_string();
    let line = text
        .lines()
        .find(|l| l.starts_with("rank 1 ("))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(
        line.contains("clock offset 5001200000 ns, not aligned: the ends of its 2 collectives matched with rank 0 spread over 200000 ns"),
        "{line}"
    );
    assert!(!line.contains("aligned on"), "{line}");
    // Every all-reduce on both ranks: aligned, as before.
    let r1 = write(
        dir.path(),
        "b1.json",
        all_reduces(1, 5_000_000, &[100, 1100, 2300]),
    );
    let text =
        String::from_utf8_lossy(&run(&["analyze", r0, r1.to_str().unwrap()]).stdout).to_string();
    assert!(
        text.contains("clock offset 5000000000 ns, aligned on 3 collectives"),
        "{text}"
    );
}

#[test]
fn a_device_sync_waiting_for_a_second_kernel_is_not_cpu_time() {
    // Thread 200's cudaDeviceSynchronize (110-310 µs) waits for K2 on
    // stream 20 (2-290) and K1 on stream 7 (102-300), then `after` runs
    // (320-1000). The path runs K2 (launched at 0 µs, the heavier chain:
    // K1's thread starts at 100 µs), the sync and `after`: the sync's 10
    // µs waiting for K1 after K2 ended are a wait, weighing nothing (a
    // what-if on K1 or K2 moves them), and its 10 µs returning are the
    // GPU's, not CPU time: a 990 µs path over 1000 µs.
    let ev = |cat: &str, name: &str, tid: i64, ts: u64, dur: u64, args: Value| {
        serde_json::json!({"ph": "X", "cat": cat, "name": name, "pid": 100, "tid": tid,
            "ts": ts, "dur": dur, "args": args})
    };
    let kernel = |name: &str, stream: i64, ts: u64, dur: u64, corr: u64| {
        let args = serde_json::json!({"device": 0, "stream": stream, "correlation": corr});
        let mut k = ev("kernel", name, stream, ts, dur, args);
        k["pid"] = 0.into();
        k
    };
    let corr = |c: u64| serde_json::json!({ "correlation": c });
    let sync_args = serde_json::json!({"correlation": 3, "device": 0, "stream": -1,
        "cuda_sync_kind": "Context Sync"});
    let mut sync = ev("cuda_sync", "Context Sync", -1, 110, 200, sync_args);
    sync["pid"] = 0.into();
    let events = vec![
        ev("cuda_runtime", "cudaLaunchKernel", 100, 0, 1, corr(1)),
        kernel("K2", 20, 2, 288, 1),
        ev("cuda_runtime", "cudaLaunchKernel", 300, 100, 1, corr(2)),
        kernel("K1", 7, 102, 198, 2),
        ev(
            "cuda_runtime",
            "cudaDeviceSynchronize",
            200,
            110,
            200,
            corr(3),
        ),
        sync,
        ev("cpu_op", "after", 200, 320, 680, serde_json::json!({})),
    ];
    let doc = serde_json::json!({"schemaVersion": 1, "traceEvents": events});
    let dir = tempfile::tempdir().unwrap();
    let f = write(dir.path(), "sync.json", doc.to_string());
    let d = json_of(&["analyze", f.to_str().unwrap(), "--json"]);
    assert_eq!(d["critical_path"]["length_ns"], 990_000, "{d}");
    let g = &d["gpu"];
    assert_eq!(g["cpu_bound_ns"], 680_000, "{g}");
    assert_eq!(g["sync_return_ns"], 10_000, "{g}");
}

#[test]
fn an_ac2g_flow_links_a_launch_to_its_kernel_without_correlation_args() {
    // `pre` 0-100 µs, the launch at 100, its kernel 500-600 on stream 7:
    // linked by the flow events Kineto writes after each (their id is the
    // correlation), the kernel waits for its launch and the path is 600 µs;
    // unlinked it would be the CPU's 101 µs.
    let x = |cat: &str, name: &str, pid: u32, tid: u32, ts: u64, dur: u64, args: Value| {
        serde_json::json!({"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid,
            "ts": ts, "dur": dur, "args": args})
    };
    let flow = |ph: &str, pid: u32, tid: u32, ts: u64| {
        serde_json::json!({"ph": ph, "id": 777, "pid": pid, "tid": tid, "ts": ts,
            "cat": "ac2g", "name": "ac2g", "bp": "e"})
    };
    let events = [
        x("cpu_op", "pre", 1, 1, 0, 100, serde_json::json!({})),
        x(
            "cuda_runtime",
            "cudaLaunchKernel",
            1,
            1,
            100,
            1,
            serde_json::json!({}),
        ),
        flow("s", 1, 1, 100),
        x(
            "kernel",
            "K",
            0,
            7,
            500,
            100,
            serde_json::json!({"stream": 7, "device": 0}),
        ),
        flow("f", 0, 7, 500),
    ];
    let doc = serde_json::json!({"schemaVersion": 1, "traceEvents": events});
    let dir = tempfile::tempdir().unwrap();
    let p = write(dir.path(), "flows.json", doc.to_string());
    let d = json_of(&["analyze", p.to_str().unwrap(), "--json"]);
    assert_eq!(d["critical_path"]["length_ns"], 600_000, "{}", d["states"]);
    assert_eq!(d["gpu"]["gpu_compute_bound_ns"], 100_000, "{}", d["gpu"]);
}

#[test]
fn a_kineto_header_without_events_is_called_so() {
    let dir = tempfile::tempdir().unwrap();
    let p = write(
        dir.path(),
        "header.json",
        r#"{"schemaVersion":1,"deviceProperties":[{"id":0}]}"#,
    );
    let o = run(&["analyze", p.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("header.json") && err.contains("without its `traceEvents` array"),
        "{err}"
    );
}

#[test]
fn a_rank_given_twice_names_no_straggler() {
    // The same rank's trace in two files: its copies arrive together at
    // every collective, so no one waits and no rank is a straggler.
    let dir = tempfile::tempdir().unwrap();
    let Some(files) = generate_ranks(dir.path(), &["--ranks", "2", "--steps", "3"]) else {
        return;
    };
    let copy = dir.path().join("copy.pt.trace.json");
    std::fs::copy(&files[0], &copy).unwrap();
    let copy = copy.to_str().unwrap();
    let o = run(&["analyze", &files[0], copy]);
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.contains("critical path"), "{text}");
    assert!(!text.contains("arrived last"), "{text}");
    // One file given twice, under two names, is refused: it would count
    // its events twice.
    let again = format!("{}/./{}", dir.path().display(), "rank0.pt.trace.json");
    let o = run(&["analyze", &files[0], &again]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains(&format!("{again}: the same file as {}", files[0])),
        "{err}"
    );
    let d = json_of(&["analyze", &files[0], copy, "--json"]);
    let kinds: Vec<&str> = (d["diagnostics"].as_array().unwrap().iter())
        .map(|x| x["kind"].as_str().unwrap())
        .collect();
    assert!(
        kinds.contains(&"duplicate-rank") && !kinds.contains(&"straggler"),
        "{kinds:?}"
    );
    // Nor does the JSON name one in any step.
    let steps = d["ranks"]["steps"].as_array().unwrap();
    assert!(!steps.is_empty());
    assert!(
        steps.iter().all(|s| s["straggler_rank"].is_null()),
        "{steps:?}"
    );
    assert!(steps.iter().all(|s| s["last_at"] == 0), "{steps:?}");
}
