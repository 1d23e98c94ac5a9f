//! Several generated ranks (tests/gen/gen_kineto.py): one rank's GEMMs are
//! slower; its clock and the others' differ by known offsets.

mod common;

use common::{links, run};
use critpath_engine::{analyze, Options, Speedup};
use critpath_gpu::open_ranks;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::Command;

/// Runs the generator into `dir`; false (with a note) without python3.
fn generate(dir: &Path, args: &[&str]) -> bool {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/gen/gen_kineto.py");
    match Command::new("python3")
        .arg(script)
        .arg(dir)
        .args(args)
        .status()
    {
        Ok(s) if s.success() => true,
        _ => {
            eprintln!("note: python3 could not run the generator; test skipped");
            false
        }
    }
}

fn rank_files(dir: &Path, n: usize) -> Vec<PathBuf> {
    (0..n)
        .map(|r| dir.join(format!("rank{r}.pt.trace.json")))
        .collect()
}

#[test]
fn straggler_gemm_leads_and_clocks_are_aligned() {
    let dir = tempfile::tempdir().unwrap();
    // 4 ranks, 3 steps of 8 GEMMs of 100 us; rank 2's take 150 us; rank r's
    // clock is r * 1234.5 us ahead.
    if !generate(
        dir.path(),
        &["--ranks", "4", "--steps", "3", "--slow-rank", "2"],
    ) {
        return;
    }
    let src = open_ranks(&rank_files(dir.path(), 4)).unwrap();
    let report = src.report().clone();
    let offsets: Vec<i64> = report.offsets.iter().map(|o| o.offset_ns).collect();
    assert_eq!(offsets, [0, 1_234_500, 2_469_000, 3_703_500]);
    assert_eq!((report.matched, report.unmatched), (3, 0));
    assert_eq!(report.steps.len(), 3);
    for s in &report.steps {
        assert_eq!(s.straggler_rank, Some(2), "{s:?}");
        // Three ranks waited 8 * 50 us each.
        assert_eq!(s.others_waited_ns, 1_200_000, "{s:?}");
    }
    let (a, b) = run(src);
    let lead = &a.states[0];
    assert_eq!(lead.sm, "rank2/gpu0:stream7");
    assert!(lead.state.starts_with("sm80_xmma_gemm"), "{lead:?}");
    // Every step's path runs through the straggler's 8 GEMMs of 150 us.
    assert_eq!(lead.critical_ns, 3 * 8 * 150_000);
    assert_eq!(b.gpu_compute_bound_ns, 3 * 8 * 150_000);
    assert_eq!(b.communication_bound_ns, 3 * 300_000);
    assert_eq!(b.bound, "gpu_compute_bound");
    assert!(
        a.diagnostics
            .iter()
            .all(|d| d.kind.as_str() != "recv-without-send"),
        "{:?}",
        a.diagnostics
    );
    assert!(a.diagnostics.iter().any(|d| d.kind.as_str() == "straggler"));
}

#[test]
fn gzip_ranks_read_the_same() {
    let dir = tempfile::tempdir().unwrap();
    if !generate(
        dir.path(),
        &["--ranks", "2", "--steps", "2", "--slow-rank", "0", "--gz"],
    ) {
        return;
    }
    let files: Vec<PathBuf> = (0..2)
        .map(|r| dir.path().join(format!("rank{r}.pt.trace.json.gz")))
        .collect();
    assert!(critpath_gpu::is_kineto_file(&files[0]));
    let src = open_ranks(&files).unwrap();
    assert!(src
        .report()
        .steps
        .iter()
        .all(|s| s.straggler_rank == Some(0)));
    let (a, _) = run(src);
    assert_eq!(a.states[0].sm, "rank0/gpu0:stream7");
}

#[test]
fn speeding_up_the_straggler_hands_the_path_to_the_next_slowest_rank() {
    let dir = tempfile::tempdir().unwrap();
    // 4 ranks, 3 steps of 8 GEMMs: rank 2's take 150 us, the others' 100 us.
    if !generate(
        dir.path(),
        &["--ranks", "4", "--steps", "3", "--slow-rank", "2"],
    ) {
        return;
    }
    let files = rank_files(dir.path(), 4);
    let (base, _) = run(open_ranks(&files).unwrap());
    let gemm = base.states[0].clone();
    assert_eq!(gemm.sm, "rank2/gpu0:stream7");
    // Rank 2's GEMMs 2x faster (75 us): the others' (100 us) now bound
    // every step, so each step is 8 x (150 - 100) us shorter, not 8 x 75.
    let mut src = open_ranks(&files).unwrap();
    let opts = Options {
        speedups: vec![Speedup::parse(&format!("{}:{}=2", gemm.sm, gemm.state)).unwrap()],
        ..Options::default()
    };
    let (pred, err) = analyze(&mut src, opts, |_, _| {}).unwrap();
    assert!(err.is_none(), "{err:?}");
    let (b, p) = (base.critical_path.length_ns, pred.critical_path.length_ns);
    assert_eq!(b - p, 3 * 8 * 50_000, "baseline {b} ns, predicted {p} ns");
    // The path now runs through another rank's GEMMs.
    let lead = &pred.states[0];
    assert!(lead.state.starts_with("sm80_xmma_gemm"), "{lead:?}");
    assert_ne!(lead.sm, "rank2/gpu0:stream7", "{lead:?}");
}

#[test]
fn every_send_of_several_ranks_is_received() {
    let dir = tempfile::tempdir().unwrap();
    if !generate(
        dir.path(),
        &["--ranks", "3", "--steps", "4", "--slow-rank", "1"],
    ) {
        return;
    }
    let (sent, received) = links(open_ranks(&rank_files(dir.path(), 3)).unwrap());
    // Launches, waits on GPU ops and collectives alike: nothing is left
    // pending in the engine (a collective's kernel that waits for the last
    // rank receives that rank's start, not its launch).
    assert_eq!(sent, received);
    // At least the last rank's start to each of the two others, per step.
    assert!(sent.len() >= 2 * 4, "{}", sent.len());
}

#[test]
fn a_rank_without_the_group_leaves_its_collectives_unmatched() {
    let dir = tempfile::tempdir().unwrap();
    if !generate(dir.path(), &["--ranks", "2", "--steps", "3"]) {
        return;
    }
    let files = rank_files(dir.path(), 2);
    // Rank 1's NCCL kernels lose their collective fields.
    let text = std::fs::read_to_string(&files[1]).unwrap();
    std::fs::write(&files[1], text.replace("Process Group Name", "group")).unwrap();
    let src = open_ranks(&files).unwrap();
    let report = src.report().clone();
    assert_eq!((report.matched, report.unmatched), (0, 3));
    let (a, _) = run(src);
    assert!(a.critical_path.found);
}

/// A one-kernel trace of `rank` (none: no `distributedInfo`), in memory.
fn tiny_rank(name: &str, rank: Option<i64>) -> critpath_gpu::KinetoInput {
    tiny_rank_of(name, rank.map(Value::from))
}

/// A one-kernel trace whose `distributedInfo.rank` is `rank` as given.
fn tiny_rank_of(name: &str, rank: Option<Value>) -> critpath_gpu::KinetoInput {
    let mut doc = serde_json::json!({"schemaVersion": 1, "deviceProperties": [], "traceEvents": [
        {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 0.0, "dur": 50.0,
         "args": {}},
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1,
         "ts": 10.0, "dur": 5.0, "args": {"correlation": 1}},
        {"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": 20.0, "dur": 40.0,
         "args": {"device": 0, "stream": 7, "correlation": 1}}]});
    if let Some(r) = rank {
        doc["distributedInfo"] = json!({"backend": "nccl", "rank": r, "world_size": 2});
    }
    critpath_gpu::KinetoInput {
        name: name.into(),
        json: Box::new(std::io::Cursor::new(serde_json::to_vec(&doc).unwrap())),
        again: None,
    }
}

fn duplicate_notes(src: &mut critpath_gpu::GpuSource) -> Vec<String> {
    let summary = critpath_trace::RecordSource::summary(src);
    summary
        .diagnostics
        .iter()
        .filter(|d| d.kind.as_str() == "duplicate-rank")
        .map(|d| d.message.clone())
        .collect()
}

#[test]
fn two_files_of_one_rank_are_renumbered_with_a_diagnostic() {
    let inputs = vec![
        tiny_rank("a.json", Some(1)),
        tiny_rank("b.json", Some(0)),
        tiny_rank("c.json", Some(1)),
    ];
    let mut src = critpath_gpu::open_inputs(inputs, &Default::default()).unwrap();
    let notes = duplicate_notes(&mut src);
    assert_eq!(notes.len(), 1, "{notes:?}");
    let n = &notes[0];
    assert!(n.contains("a.json") && n.contains("c.json"), "{n}");
    assert!(n.contains("both have rank 1"), "{n}");
    assert!(n.contains("place in the list"), "{n}");
    assert!(n.contains("rank0/ is a.json and rank2/ is c.json"), "{n}");
    // The SMs were renumbered by place: c.json is rank2/.
    let (a, _) = run(src);
    assert!(
        a.states.iter().any(|s| s.sm.starts_with("rank2/")),
        "{:?}",
        a.states
    );
}

#[test]
fn a_rank_that_is_no_non_negative_integer_is_refused_and_its_file_read() {
    let bad = [
        (json!(-3), "-3 is negative"),
        (json!("1"), "\"1\" is a string"),
        (json!(1.5), "1.5 is not written as an integer"),
        (json!(1e30), "1e+30 is not written as an integer"),
        (
            json!(4_294_967_296u64),
            "4294967296 is past the largest rank",
        ),
        (
            json!(u64::MAX),
            "18446744073709551615 is past the largest rank",
        ),
        (json!([1]), "[1] is an array"),
    ];
    for (rank, what) in bad {
        let inputs = vec![
            tiny_rank("a.json", Some(1)),
            tiny_rank_of("b.json", Some(rank)),
        ];
        let mut src = critpath_gpu::open_inputs(inputs, &Default::default()).unwrap();
        // b.json is read, as a file without a rank: rank 0.
        let ranks: Vec<i64> = src.report().offsets.iter().map(|o| o.rank).collect();
        assert_eq!(ranks, [1, 0], "{what}");
        let summary = critpath_trace::RecordSource::summary(&mut src);
        let notes: Vec<&str> = (summary.diagnostics.iter())
            .filter(|d| d.kind.as_str() == "input-skipped")
            .map(|d| d.message.as_str())
            .collect();
        let want = format!(
            "b.json: distributedInfo.rank {what}, where a rank is expected (an integer from 0 to 2147483647)"
        );
        assert!(
            notes.len() == 1 && notes[0].starts_with(&want),
            "{want} in {notes:?}"
        );
        let (a, _) = run(src);
        assert!(
            a.states.iter().any(|s| s.sm == "rank0/gpu0:stream7"),
            "{:?}",
            a.states
        );
    }
    // The largest rank, and a rank of null (none), are taken.
    let inputs = vec![
        tiny_rank("a.json", Some(2_147_483_647)),
        tiny_rank_of("b.json", Some(Value::Null)),
    ];
    let mut src = critpath_gpu::open_inputs(inputs, &Default::default()).unwrap();
    let ranks: Vec<i64> = src.report().offsets.iter().map(|o| o.rank).collect();
    assert_eq!(ranks, [2_147_483_647, 0]);
    let summary = critpath_trace::RecordSource::summary(&mut src);
    assert!(
        (summary.diagnostics.iter()).all(|d| d.kind.as_str() != "input-skipped"),
        "{:?}",
        summary.diagnostics
    );
}

#[test]
fn a_file_without_a_rank_clashes_with_rank_0() {
    let inputs = vec![tiny_rank("a.json", Some(0)), tiny_rank("b.json", None)];
    let mut src = critpath_gpu::open_inputs(inputs, &Default::default()).unwrap();
    let notes = duplicate_notes(&mut src);
    assert_eq!(notes.len(), 1, "{notes:?}");
    assert!(notes[0].contains("no distributedInfo.rank"), "{}", notes[0]);
    let inputs = vec![tiny_rank("a.json", Some(0)), tiny_rank("b.json", Some(1))];
    let mut src = critpath_gpu::open_inputs(inputs, &Default::default()).unwrap();
    assert!(duplicate_notes(&mut src).is_empty());
}

#[test]
fn more_ranks_than_a_link_id_holds_are_refused_before_any_is_read() {
    // A link's id holds a rank's place in the list in 16 bits: rank 65,536
    // would have shared its links with rank 0's. The inputs are never read
    // (empty readers): the count is checked first.
    let empty = |i: usize| critpath_gpu::KinetoInput {
        name: format!("r{i}.json"),
        json: Box::new(std::io::empty()),
        again: None,
    };
    let inputs: Vec<_> = (0..critpath_gpu::source::MAX_RANKS + 1)
        .map(empty)
        .collect();
    let err = match critpath_gpu::open_inputs(inputs, &Default::default()) {
        Err(e) => e,
        Ok(_) => panic!("65,537 ranks were taken"),
    };
    assert!(err.fatal && err.file == "r0.json", "{err:?}");
    assert!(
        err.message.contains("at most 65536 ranks"),
        "{}",
        err.message
    );
    // As many as it holds are read (here: each empty input is an error of its own).
    let inputs: Vec<_> = (0..2).map(empty).collect();
    let err = critpath_gpu::open_inputs(inputs, &Default::default())
        .err()
        .unwrap();
    assert!(!err.message.contains("ranks together"), "{}", err.message);
}

/// Rank `rank` of two (its clock `offset_us` ahead): 4 steps of 1 ms, each
/// a GEMM (rank 0's 105, 105, 100, 105 µs, rank 1's 100, 100, 300, 100 µs)
/// and an all-reduce that ends 50 µs after the later GEMM, then a stream
/// synchronization; the steps in `lost` have no all-reduce.
fn two_rank_trace(rank: i64, offset_us: f64, lost: &[usize]) -> Vec<u8> {
    let gemm: [[f64; 4]; 2] = [[105.0, 105.0, 100.0, 105.0], [100.0, 100.0, 300.0, 100.0]];
    let mut ev = Vec::new();
    let x = |cat: &str, name: &str, ts: f64, dur: f64, pid: i64, tid: i64, args: Value| {
        json!({"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid,
               "ts": ts + offset_us, "dur": dur, "args": args})
    };
    let coll = json!({"Collective name": "allreduce", "Process Group Name": "0",
                      "Process Group Ranks": "[0, 1]"});
    for (step, (&g0, &g1)) in gemm[0].iter().zip(&gemm[1]).enumerate() {
        let s = step as f64 * 1000.0;
        let g = if rank == 0 { g0 } else { g1 };
        let end = s + 20.0 + g0.max(g1) + 50.0;
        let corr = 10 * step as i64;
        let launch = |ts: f64, c: i64| {
            x(
                "cuda_runtime",
                "cudaLaunchKernel",
                ts,
                1.0,
                1,
                1,
                json!({"correlation": c}),
            )
        };
        let on_stream = |c: i64| {
            let mut a = coll.clone();
            a["device"] = json!(0);
            a["stream"] = json!(7);
            a["correlation"] = json!(c);
            a
        };
        ev.push(x(
            "user_annotation",
            &format!("ProfilerStep#{step}"),
            s,
            1000.0,
            1,
            1,
            json!({}),
        ));
        ev.push(launch(s + 11.0, corr + 1));
        ev.push(x(
            "kernel",
            "gemm",
            s + 20.0,
            g,
            0,
            7,
            json!({"device": 0, "stream": 7, "correlation": corr + 1}),
        ));
        let mut done = s + 20.0 + g;
        if !lost.contains(&step) {
            ev.push(launch(s + 14.0, corr + 2));
            ev.push(x(
                "kernel",
                "ncclKernel_AllReduce",
                done,
                end - done,
                0,
                7,
                on_stream(corr + 2),
            ));
            done = end;
        }
        let sync = x(
            "cuda_runtime",
            "cudaStreamSynchronize",
            s + 17.0,
            done + 2.0 - s - 17.0,
            1,
            1,
            json!({"correlation": corr + 3}),
        );
        ev.push(sync);
    }
    let doc = json!({"schemaVersion": 1, "distributedInfo": {"rank": rank, "world_size": 2, "backend": "nccl"},
                     "traceEvents": ev});
    serde_json::to_vec(&doc).unwrap()
}

/// The report and diagnostics of the two ranks, rank 1 5 s ahead and
/// without the all-reduces of `lost`.
fn two_ranks(lost: &[usize]) -> (critpath_gpu::RanksReport, Vec<(String, String)>) {
    let dir = tempfile::tempdir().unwrap();
    let files: Vec<PathBuf> = (0..2)
        .map(|r| dir.path().join(format!("r{r}.json")))
        .collect();
    std::fs::write(&files[0], two_rank_trace(0, 0.0, &[])).unwrap();
    std::fs::write(&files[1], two_rank_trace(1, 5e6, lost)).unwrap();
    let src = open_ranks(&files).unwrap();
    let report = src.report().clone();
    let (a, _) = run(src);
    let d = a
        .diagnostics
        .iter()
        .map(|d| (d.kind.as_str().to_string(), d.message.clone()));
    (report, d.collect())
}

#[test]
fn a_rank_that_lost_a_collective_is_not_claimed_aligned() {
    // Every all-reduce on both ranks: the ends agree exactly.
    let (report, d) = two_ranks(&[]);
    let o = &report.offsets[1];
    assert_eq!(
        (o.offset_ns, o.collectives, o.end_spread_ns),
        (5_000_000_000, 4, 0)
    );
    assert!(o.aligned && report.offsets[0].aligned);
    assert!(d.iter().all(|(k, _)| k != "collective-unmatched"), "{d:?}");
    // Rank 1 lost its all-reduce of step 1: matched by order, its steps 2
    // and 3 pair with rank 0's steps 1 and 2, whose ends are 1195 and 805
    // µs apart; the median offset is 805 µs off.
    let (report, d) = two_ranks(&[1]);
    let o = &report.offsets[1];
    assert_eq!((o.offset_ns, o.collectives), (5_000_805_000, 3));
    assert_eq!(o.end_spread_ns, 1_195_000);
    assert_eq!(
        (o.against, o.unmatched, report.offsets[0].unmatched),
        (Some(0), 0, 1)
    );
    assert!(!o.aligned && !report.offsets[0].aligned, "{report:?}");
    let msg = d
        .iter()
        .find(|(k, m)| k == "collective-unmatched" && m.contains("spread"))
        .map(|(_, m)| m.as_str())
        .unwrap_or_else(|| panic!("{d:?}"));
    for part in [
        "rank 1 (",
        "its 3 collectives matched with rank 0 spread over 1195000 ns once aligned (more than 100000 ns)",
        "and their collective counts differ (rank 1: 0, rank 0: 1 without a counterpart)",
        "(5000805000 ns, their median) is not claimed aligned",
    ] {
        assert!(msg.contains(part), "{part} in {msg}");
    }
    assert!(d.iter().all(|(k, _)| k != "clock-offset"), "{d:?}");
}
