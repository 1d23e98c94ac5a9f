//! SMs their threads never ended: a thread that exits, and the process
//! that exits, end the SMs still begun on them. Read alone, the file says
//! when (each thread's `exit`), so their last states keep their time and
//! their names are free for the next `begin_sm`.

use std::process::Command;
use std::time::{Duration, Instant};

fn spin(d: Duration) {
    let t0 = Instant::now();
    while t0.elapsed() < d {}
}

/// Child mode of the test below (set by its environment).
#[test]
fn child_leaves_sms_begun() {
    if std::env::var_os("CRITPATH_UNENDED_CHILD").is_none() {
        return;
    }
    std::thread::spawn(|| {
        critpath_sdk::begin_sm("job");
        critpath_sdk::state("a");
        spin(Duration::from_millis(10));
        critpath_sdk::state("b");
        spin(Duration::from_millis(20));
        // The thread ends with `job` begun.
    })
    .join()
    .unwrap();
    std::thread::spawn(|| {
        let _job = critpath_sdk::sm("job");
        critpath_sdk::state("c");
        spin(Duration::from_millis(5));
    })
    .join()
    .unwrap();
    critpath_sdk::begin_sm("main-job");
    critpath_sdk::state("tail");
    spin(Duration::from_millis(15));
    // The process ends with `main-job` begun.
    std::process::exit(0);
}

#[test]
fn sms_left_begun_end_with_their_thread_or_the_process() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("t.annot");
    let o = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "child_leaves_sms_begun", "--nocapture"])
        .env("CRITPATH_UNENDED_CHILD", "1")
        .env("CRITPATH_OUT", &out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let mut src = critpath_import::open(&out).expect("opens");
    let (a, err) = critpath_engine::analyze(&mut src, Default::default(), |_, _| {}).unwrap();
    assert!(err.is_none(), "{err:?}");
    let total = |sm: &str, state: &str| {
        a.states
            .iter()
            .find(|r| r.sm == sm && r.state == state)
            .map(|r| r.total_ns)
    };
    let ms = 1_000_000;
    // The last states run until their thread's exit, the process's.
    assert!(
        total("job", "b").is_some_and(|t| t >= 19 * ms),
        "{:#?}",
        a.states
    );
    assert!(
        total("main-job", "tail").is_some_and(|t| t >= 14 * ms),
        "{:#?}",
        a.states
    );
    // The second `job` begins after the first one's thread exited.
    assert!(
        total("job", "c").is_some_and(|t| t >= 4 * ms),
        "{:#?}",
        a.states
    );
    assert!(a.states.iter().all(|r| r.sm != "job#2"), "{:#?}", a.states);
}
