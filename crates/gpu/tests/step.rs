//! One instance of an annotation read from a file that can be read again:
//! a search of the bytes guesses the window, the read passes over the CPU
//! ops outside it unparsed (and reads once more when the guess was wrong). The analysis must be the one of reading every
//! event, for every instance, on real traces: a CPU-only DDP rank with
//! gloo collectives (one rank and two), an NCCL rank with GPU kernels, a
//! GPU trace with event synchronization.

mod common;

use common::{run, shared};
use critpath_gpu::{kineto, open_inputs, GpuOptions, KinetoInput};
use std::path::{Path, PathBuf};

fn example(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples/ddp")
        .join(name)
}

/// A trace file as an input that can be read again (`twice`) or not.
fn input(p: &Path, twice: bool) -> KinetoInput {
    let mut input = KinetoInput::of_file(p).unwrap();
    if !twice {
        input.again = None;
    }
    input
}

/// The analysis (as JSON) and breakdown of `paths` read with or without a
/// second read.
fn analysed(paths: &[PathBuf], opts: &GpuOptions, twice: bool) -> String {
    let inputs = paths.iter().map(|p| input(p, twice)).collect();
    let (a, b) = run(open_inputs(inputs, opts).unwrap());
    assert!(a.stats.records > 0);
    format!("{}\n{b:?}", serde_json::to_string(&a).unwrap())
}

/// Every instance of `prefix` (and one past the last: the same error).
fn every_instance_alike(paths: &[PathBuf], prefix: &str, instances: usize) {
    for instance in 0..instances {
        let opts = GpuOptions {
            annotation: Some(prefix.to_string()),
            instance,
        };
        let whole = analysed(paths, &opts, false);
        let twice = analysed(paths, &opts, true);
        assert!(whole == twice, "{paths:?} {prefix} #{instance} differs");
    }
    let opts = GpuOptions {
        annotation: Some(prefix.to_string()),
        instance: instances,
    };
    let err = |twice: bool| {
        open_inputs(vec![input(&paths[0], twice)], &opts)
            .err()
            .expect("no such instance")
            .message
    };
    assert_eq!(err(false), err(true));
}

#[test]
fn one_step_read_past_the_rest_is_the_step_of_the_whole_read() {
    let ddp = [
        example("rank0.pt.trace.json.gz"),
        example("rank1.pt.trace.json.gz"),
    ];
    every_instance_alike(&ddp[..1], "ProfilerStep", 4);
    every_instance_alike(&ddp, "ProfilerStep", 4);
    // A file read as it is: its window is searched for in place (mapped).
    let dir = tempfile::tempdir().unwrap();
    let plain = dir.path().join("rank0.json");
    let mut json = kineto::json_of_file(&ddp[0]).unwrap();
    std::io::copy(&mut json, &mut std::fs::File::create(&plain).unwrap()).unwrap();
    assert!(input(&plain, true).again.is_some_and(|a| a.plain.is_some()));
    every_instance_alike(&[plain], "ProfilerStep", 4);
    // gloo collectives are annotations: windows of their own.
    every_instance_alike(&ddp[..1], "gloo:all_reduce", 8);
    if let Some(p) = shared("nccl_rank0.json.gz") {
        every_instance_alike(&[p], "ProfilerStep", 3);
    }
    if let Some(p) = shared("cuda_event_sync.pt.trace.json.gz") {
        every_instance_alike(&[p], "ProfilerStep", 1);
    }
    if let Some(p) = shared("alexnet.pt.trace.json.gz") {
        every_instance_alike(&[p], "[param|pytorch.model.alex_net|0|0|0|", 4);
    }
}

/// The window is guessed from a search of the bytes for
/// `"user_annotation"`; an annotation written with an escaped category is
/// missed by the search, so the guess is the next step, and the read that
/// follows, parsing every annotation, finds it wrong and reads again.
#[test]
fn a_wrong_guess_of_the_window_is_read_again() {
    let src = example("rank0.pt.trace.json.gz");
    let mut doc: serde_json::Value = {
        let json = kineto::json_of_file(&src).unwrap();
        serde_json::from_reader(json).unwrap()
    };
    let events = doc["traceEvents"].as_array_mut().unwrap();
    let first = events
        .iter_mut()
        .filter(|e| {
            e["name"]
                .as_str()
                .is_some_and(|n| n.starts_with("ProfilerStep"))
        })
        .min_by(|a, b| a["ts"].as_f64().partial_cmp(&b["ts"].as_f64()).unwrap())
        .unwrap();
    first["cat"] = "ESCAPED".into();
    let text = serde_json::to_string(&doc)
        .unwrap()
        .replace("\"ESCAPED\"", "\"user\\u005fannotation\"");
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("escaped.json");
    std::fs::write(&path, text).unwrap();
    assert_eq!(
        critpath_gpu::steps::windows(kineto::json_of_file(&path).unwrap(), "ProfilerStep").len(),
        3,
        "the search misses the escaped one"
    );
    every_instance_alike(&[path], "ProfilerStep", 4);
}
