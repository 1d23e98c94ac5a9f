//! A perf.data source whose thread names came late renames its threads at
//! its end, in its string table. The records the first pass kept are then
//! replayed under the final names (a later pass opens nothing), and the
//! graph the pass kept answers a what-if on a renamed thread: both give
//! what a pass with every name final from the first event gives.

use critpath_engine::{Analysis, Options, Speedup};
use critpath_os::PerfSource;
use critpath_session::Recorder;
use critpath_trace::RecordSource;
use std::path::PathBuf;

/// The fixture's main thread renames itself to `late` (see its source).
fn fixture() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../os/tests/fixtures/rename.data")
}

/// The renamed thread's `running` twice as fast.
fn whatif(renamed: &str) -> Options {
    Options {
        speedups: vec![Speedup::of_state("vm", renamed, "running", 2.0)],
        ..Options::default()
    }
}

/// A pass over the fixture with every name final first.
fn fresh(opts: Options) -> Analysis {
    let mut src = PerfSource::open(&fixture()).expect("fixture opens");
    src.prepare(false);
    critpath_engine::analyze(&mut src, opts, |_, _| {})
        .expect("analysis")
        .0
}

#[test]
fn after_late_renames_a_replay_and_a_rewalk_name_threads_by_their_final_names() {
    let len = std::fs::metadata(fixture()).unwrap().len();
    let exact = fresh(Options::default());
    let renamed = (exact.states.iter())
        .find(|r| r.sm.starts_with("late:"))
        .map(|r| r.sm.clone())
        .expect("the renamed thread has states");
    let want = fresh(whatif(&renamed));
    let mut renames = 0;
    for head in (0..len).step_by(1024) {
        let mut src = PerfSource::open(&fixture()).expect("fixture opens");
        src.names_head(head);
        let mut rec = Recorder::new(&mut src, usize::MAX);
        let kept = Options {
            rewalk: true,
            ..Options::default()
        };
        let (first, _) = critpath_engine::analyze(&mut rec, kept, |_, _| {}).expect("analysis");
        let mut replay = rec.into_replay().expect("every record was kept");
        if src.late_names().0.is_some_and(|n| n > 0) {
            renames += 1;
        }
        assert_eq!(first.states, exact.states, "head of {head} bytes");
        // The kept graph's what-if on the thread, by its final name.
        let predicted = first.predict(&whatif(&renamed).speedups);
        assert_eq!(
            predicted.map(|p| p.length_ns),
            Some(want.critical_path.length_ns),
            "head of {head} bytes"
        );
        // The replay: the same analysis and the same what-if pass.
        let again = critpath_engine::analyze(&mut replay, Options::default(), |_, _| {});
        assert_eq!(again.expect("replay").0.states, exact.states);
        replay.rewind();
        let w = critpath_engine::analyze(&mut replay, whatif(&renamed), |_, _| {});
        let w = w.expect("the speed-up names a state of the replay").0;
        assert_eq!(w.critical_path, want.critical_path, "head of {head} bytes");
        assert_eq!(w.states, want.states, "head of {head} bytes");
    }
    assert!(
        renames > 0,
        "no head left a thread to be renamed at the end"
    );
}
