//! Thread names that come late (`RecordSource::prepare(true)`, what
//! `critpath analyze` asks for): only the head of a perf.data file is
//! walked for names before the first event, the in-place reader gathers
//! the rest on its way, and threads first seen under an older name are
//! renamed at the end. Whatever the head's size, the analysis must be the
//! one made with every name final from the first event.

mod common;

use common::fixture;
use critpath_engine::{Analysis, Options};
use critpath_os::PerfSource;
use critpath_trace::RecordSource;

/// Every fixture read in place (the compressed one is read by the general
/// reader, whose names never come late).
const FIXTURES: [&str; 12] = [
    "rename",
    "namesake",
    "sleep3",
    "sleep3_sched_only",
    "pingpong",
    "pingpong_own",
    "pingpong_syscalls",
    "pipe",
    "forkwait",
    "contend",
    "functions",
    "rename_pipe",
];

/// The analysis of fixture `name` with names final first (`head` None),
/// or late after a head of `head` bytes (on two threads when `parallel`);
/// and how many threads were renamed at the end, and how many times the
/// file was read again.
fn run(
    name: &str,
    (head, parallel): (Option<u64>, bool),
    opts: &Options,
) -> (Analysis, Option<usize>, u32) {
    let mut src = PerfSource::open(&fixture(name)).expect("fixture opens");
    match head {
        Some(h) => src.names_head(h),
        None => src.prepare(false),
    }
    let (a, _) = match parallel {
        true => critpath_engine::analyze_parallel(&mut src, opts.clone(), |_, _| {}),
        false => critpath_engine::analyze(&mut src, opts.clone(), |_, _| {}),
    }
    .expect("analysis");
    let (renamed, restarts) = src.late_names();
    (a, renamed, restarts)
}

#[test]
fn names_that_come_late_give_the_analysis_of_names_known_first() {
    let (mut renamed, mut restarted, mut late) = (0, 0, 0);
    for name in FIXTURES {
        let keep = Options {
            keep_path: true,
            ..Options::default()
        };
        let exact = format!("{:?}", run(name, (None, false), &keep).0);
        let len = std::fs::metadata(fixture(name)).unwrap().len();
        for head in (0..len + 4096).step_by(2048) {
            // The one-thread pump and the one on two threads in turn.
            let parallel = head % 4096 != 0;
            let (a, r, again) = run(name, (Some(head), parallel), &keep);
            assert_eq!(format!("{a:?}"), exact, "{name}, head of {head} bytes");
            renamed += r.unwrap_or(0);
            late += usize::from(r.is_some());
            restarted += again;
        }
    }
    // The heads tried cut the files before and after renames and execs:
    // threads were renamed at the end, and a head's wrong guess of the
    // command's thread was read again.
    assert!(late > 0 && renamed > 0, "late {late}, renamed {renamed}");
    assert!(restarted > 0, "no head guessed the command's thread wrong");
}

#[test]
fn a_start_or_speedup_named_by_the_user_has_names_final_first() {
    // `--from` names a thread by its latest name: were names late, the SM
    // would appear under an older one and match nothing.
    let from = Options {
        from: Some("late:17643".into()),
        ..Options::default()
    };
    let mut src = PerfSource::open(&fixture("rename")).expect("fixture opens");
    src.names_head(0);
    let (a, _) = critpath_engine::analyze(&mut src, from.clone(), |_, _| {}).unwrap();
    assert_eq!(src.late_names(), (None, 0));
    let (exact, _, _) = run("rename", (None, false), &from);
    assert_eq!(format!("{a:?}"), format!("{exact:?}"));
    assert!(a.critical_path.length_ns > 0);
}
