//! The Rust SDK end to end: threads annotate, the file CRITPATH_OUT names
//! is read back by critpath's own reader and analyzed. One test function:
//! the SDK reads CRITPATH_OUT once per process.

use std::time::Duration;

fn spin(d: Duration) {
    let t0 = std::time::Instant::now();
    while t0.elapsed() < d {}
}

#[test]
fn annotations_from_threads_are_read_back_and_analyzed() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("t.annot");
    std::env::set_var("CRITPATH_OUT", &out);

    // A producer makes an item in 30 ms; a consumer waits for it (blocked
    // on a channel until the item is sent, however late either thread
    // runs), then uses it for 10 ms. The path: make (30) -> idle's link ->
    // use (10).
    let (tx, rx) = std::sync::mpsc::channel::<()>();
    let began = std::time::Instant::now();
    let consumer = std::thread::Builder::new()
        .name("consumer".into())
        .spawn(move || {
            let _sm = critpath_sdk::sm("consumer");
            critpath_sdk::wait("idle", None, None);
            rx.recv().expect("the producer sends");
            critpath_sdk::recv(7, "use");
            spin(Duration::from_millis(10));
        })
        .unwrap();
    let producer = std::thread::Builder::new()
        .name("producer".into())
        .spawn(move || {
            let _sm = critpath_sdk::sm("producer");
            critpath_sdk::state("make");
            spin(Duration::from_millis(30));
            critpath_sdk::send(7);
            tx.send(()).expect("the consumer waits");
            critpath_sdk::state("tidy");
        })
        .unwrap();
    producer.join().unwrap();
    consumer.join().unwrap();
    // The main thread's own SM, flushed by hand.
    {
        let _m = critpath_sdk::sm("main");
        critpath_sdk::state("report");
    }
    critpath_sdk::flush();
    let run = began.elapsed().as_nanos() as u64;

    let mut src = critpath_import::open(&out).expect("opens");
    let (a, err) = critpath_engine::analyze(&mut src, Default::default(), |_, _| {}).unwrap();
    assert!(err.is_none(), "{err:?}");
    let get = |sm: &str, st: &str| {
        a.states
            .iter()
            .find(|r| r.sm == sm && r.state == st)
            .unwrap_or_else(|| panic!("{sm}:{st} in {:#?}", a.states))
            .clone()
    };
    let make = get("producer", "make");
    assert_eq!(make.visits, 1);
    assert!(make.total_ns >= 30_000_000);
    let use_ = get("consumer", "use");
    assert!(use_.total_ns >= 10_000_000);
    assert_eq!(use_.critical_ns, use_.total_ns);
    // The idle wait is charged from the send to the recv (the consumer's
    // wakeup, as long as the machine's load makes it), and lies on the
    // path between make and use.
    let idle = get("consumer", "idle");
    assert!(idle.critical_ns > 0, "{idle:?}");
    assert!(
        idle.critical_ns < idle.total_ns,
        "not the wait before the send: {idle:?}"
    );
    assert!(make.critical_ns >= 30_000_000, "{make:?}");
    let len = a.critical_path.length_ns;
    // make (30) + the consumer's wakeup + use (10), within the run.
    assert!((40_000_000..=run).contains(&len), "{len} of a {run} ns run");
    // Each SM sits on its thread, named COMM:TID.
    assert!(a
        .states
        .iter()
        .any(|r| r.sm.starts_with("producer:") && r.state == "sm:producer"));
    assert!(a
        .states
        .iter()
        .any(|r| r.state == "sm:main" && r.sm.contains(':')));
    assert_eq!(get("main", "report").visits, 1);
}

#[test]
fn calibrate_measures_a_plausible_cost() {
    let ns = critpath_sdk::calibrate();
    assert!(ns > 0.5 && ns < 5_000.0, "{ns} ns per event");
}
