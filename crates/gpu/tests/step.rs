//! One instance of an annotation read from a file that can be read again:
//! the read guesses the window as it goes and passes over the CPU ops
//! outside it unparsed; a wrong guess, or ops it let go of that the window
//! holds, cost one more read. The analysis must be the one of reading every
//! event, for every instance, on real traces: a CPU-only DDP rank with
//! gloo collectives (one rank and two), an NCCL rank with GPU kernels, a
//! GPU trace with event synchronization.

mod common;

use common::{run, shared};
use critpath_gpu::{kineto, open_inputs, GpuOptions, KinetoInput};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

fn example(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples/ddp")
        .join(name)
}

/// How a trace file is read: once (every event), or with the window
/// guessed holding at most `Some(hold)` bytes of ops (`None`: the default).
#[derive(Clone, Copy)]
enum How {
    Once,
    Guess(Option<usize>),
}

/// A trace file as an input; its second reads are counted in `again`.
fn input(p: &Path, how: How, again: &Arc<AtomicUsize>) -> KinetoInput {
    let mut input = KinetoInput::of_file(p).unwrap();
    match how {
        How::Once => input.again = None,
        How::Guess(hold) => {
            let a = input.again.as_mut().unwrap();
            if let Some(hold) = hold {
                a.hold = hold;
            }
            let (count, path) = (again.clone(), p.to_path_buf());
            a.reopen = Box::new(move || {
                count.fetch_add(1, Ordering::Relaxed);
                kineto::json_of_file(&path)
            });
        }
    }
    input
}

/// The analysis (as JSON) and breakdown of `paths` read `how`, and how
/// many times they were read again.
fn analysed(paths: &[PathBuf], opts: &GpuOptions, how: How) -> (String, usize) {
    let again = Arc::new(AtomicUsize::new(0));
    let inputs = paths.iter().map(|p| input(p, how, &again)).collect();
    let (a, b) = run(open_inputs(inputs, opts).unwrap());
    assert!(a.stats.records > 0);
    let text = format!("{}\n{b:?}", serde_json::to_string(&a).unwrap());
    (text, again.load(Ordering::Relaxed))
}

/// Every instance of `prefix` (and one past the last: the same error),
/// read whole, guessed, and guessed holding almost nothing; the number of
/// second reads of each way of guessing, summed over the instances.
fn every_instance_alike(paths: &[PathBuf], prefix: &str, instances: usize) -> (usize, usize) {
    let mut rereads = (0, 0);
    for instance in 0..instances {
        let opts = GpuOptions {
            annotation: Some(prefix.to_string()),
            instance,
        };
        let (whole, _) = analysed(paths, &opts, How::Once);
        let (guessed, n) = analysed(paths, &opts, How::Guess(None));
        assert!(whole == guessed, "{paths:?} {prefix} #{instance} differs");
        let (tight, k) = analysed(paths, &opts, How::Guess(Some(64)));
        assert!(
            whole == tight,
            "{paths:?} {prefix} #{instance} differs holding 64 bytes"
        );
        rereads = (rereads.0 + n, rereads.1 + k);
    }
    let opts = GpuOptions {
        annotation: Some(prefix.to_string()),
        instance: instances,
    };
    let err = |how: How| {
        let again = Arc::new(AtomicUsize::new(0));
        open_inputs(vec![input(&paths[0], how, &again)], &opts)
            .err()
            .expect("no such instance")
            .message
    };
    assert_eq!(err(How::Once), err(How::Guess(None)));
    assert_eq!(err(How::Once), err(How::Guess(Some(64))));
    rereads
}

#[test]
fn one_step_read_past_the_rest_is_the_step_of_the_whole_read() {
    let ddp = [
        example("rank0.pt.trace.json.gz"),
        example("rank1.pt.trace.json.gz"),
    ];
    // Written in Kineto's order: every step is read in one pass.
    assert_eq!(every_instance_alike(&ddp[..1], "ProfilerStep", 4).0, 0);
    every_instance_alike(&ddp, "ProfilerStep", 4);
    // A file read as it is (not compressed).
    let dir = tempfile::tempdir().unwrap();
    let plain = dir.path().join("rank0.json");
    let mut json = kineto::json_of_file(&ddp[0]).unwrap();
    std::io::copy(&mut json, &mut std::fs::File::create(&plain).unwrap()).unwrap();
    assert_eq!(every_instance_alike(&[plain], "ProfilerStep", 4).0, 0);
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

/// The DDP example with its first step's annotation moved: to just before
/// the second step's annotation (after the first step's ops), or to the
/// end of the event array.
fn first_step_moved(to_end: bool, dir: &Path) -> PathBuf {
    let src = example("rank0.pt.trace.json.gz");
    let mut doc: serde_json::Value =
        serde_json::from_reader(kineto::json_of_file(&src).unwrap()).unwrap();
    let events = doc["traceEvents"].as_array_mut().unwrap();
    let steps: Vec<usize> = (0..events.len())
        .filter(|&i| {
            let name = events[i]["name"].as_str().unwrap_or_default();
            name.starts_with("ProfilerStep")
        })
        .collect();
    let ts = |i: usize| events[i]["ts"].as_f64().unwrap();
    assert!(
        steps.windows(2).all(|w| ts(w[0]) < ts(w[1])),
        "in time order"
    );
    let first = events.remove(steps[0]);
    let to = if to_end { events.len() } else { steps[1] - 1 };
    events.insert(to, first);
    let path = dir.join(format!("moved-{to_end}.json"));
    std::fs::write(&path, serde_json::to_string(&doc).unwrap()).unwrap();
    path
}

/// A step's annotation written after the ops it holds: held, those ops are
/// decided when it is met (one pass); let go (a read holding 64 bytes),
/// the bet that the window starts after them is lost, and the read is
/// done again with the window.
#[test]
fn ops_let_go_that_the_window_holds_are_read_again() {
    let dir = tempfile::tempdir().unwrap();
    let path = first_step_moved(false, dir.path());
    let (held, let_go) = every_instance_alike(&[path], "ProfilerStep", 4);
    assert_eq!(held, 0);
    assert!(let_go >= 1);
}

/// The first step's annotation written last: the guess for it is the
/// second step, which the read's own annotations prove wrong at its end;
/// it reads again, with the right window.
#[test]
fn a_wrong_guess_of_the_window_is_read_again() {
    let dir = tempfile::tempdir().unwrap();
    let path = first_step_moved(true, dir.path());
    let (guessed, _) = every_instance_alike(&[path], "ProfilerStep", 4);
    assert!(guessed >= 1);
}
