//! Unit tests of the builder: small hand-written event sequences and
//! the records, counts and diagnostics they must give.

use super::*;
use critpath_readers::annot::{Annot, AnnotRecord};
use critpath_trace::{Event, LinkId, Who};

fn comm(s: &str) -> Comm {
    let mut c = [0u8; 16];
    c[..s.len()].copy_from_slice(s.as_bytes());
    c
}

fn switch(t: u64, cpu: u32, prev: u32, prev_state: u64, next: u32) -> KRecord {
    KRecord {
        t,
        cpu,
        pid: prev,
        tid: prev,
        ev: KEvent::Switch {
            prev,
            prev_comm: comm(if prev == 0 { "swapper" } else { "app" }),
            prev_state,
            next,
            next_comm: comm(if next == 0 { "swapper" } else { "app" }),
        },
    }
}

fn at(t: u64, cpu: u32, tid: u32, ev: KEvent) -> KRecord {
    KRecord {
        t,
        cpu,
        pid: tid,
        tid,
        ev,
    }
}

/// When `sm` was woken: its first `recv` into `runnable` among `recs`.
fn woken_at(b: &Builder, recs: &[Record], sm: &str) -> Option<u64> {
    let sm = b.strings.get(sm).expect("thread SM");
    let woke = recs.iter().find(|r| {
        matches!(r.ev, Event::Recv { who: Who::Sm(s), state, .. }
            if s == sm && b.strings.resolve(state) == "runnable")
    });
    woke.map(|r| r.t)
}

/// A wakeup done by an interrupt on a CPU a thread holds: the woken
/// thread's wait for that CPU is charged to the thread that held it
/// (a `held` point when it leaves the CPU), never to the interrupt SM,
/// and no link joins the interrupt to the thread it interrupted.
#[test]
fn a_wakeup_inside_an_interrupt_charges_the_wait_to_the_interrupted_holder() {
    let mut strings = Interner::new();
    let eth = strings.intern("eth0");
    let mut b = Builder::new(strings, "host", FxHashMap::default(), None);
    b.holders = true;
    b.feed(&switch(10, 0, 0, 0, 5)); // app:5 holds CPU 0
    b.feed(&switch(11, 1, 0, 0, 6)); // app:6 runs on CPU 1 ...
    b.feed(&switch(12, 1, 6, 1, 0)); // ... and sleeps
    b.feed(&at(20, 0, 5, KEvent::IrqEntry { name: eth }));
    let wake = KEvent::Wake {
        tid: 6,
        comm: comm("app"),
        target: Some(0),
        in_irq: true,
    };
    b.feed(&at(21, 0, 5, wake));
    b.feed(&at(22, 0, 5, KEvent::IrqExit));
    b.feed(&switch(40, 0, 5, 0, 6)); // app:5 is preempted by app:6
    b.finish();
    let recs: Vec<Record> = b.drain_ready(usize::MAX, true).collect();
    let name = |s: Sym| b.strings.resolve(s).to_string();
    let sm_of = |r: &Record| match r.ev {
        Event::Send {
            who: Who::Sm(s), ..
        }
        | Event::Recv {
            who: Who::Sm(s), ..
        }
        | Event::Held {
            who: Who::Sm(s), ..
        } => Some(name(s)),
        _ => None,
    };
    // The irq SM neither receives from nor sends to app:5.
    let irq_links: Vec<_> = recs
        .iter()
        .filter(|r| !matches!(r.ev, Event::Held { .. }))
        .filter_map(sm_of)
        .filter(|s| s.starts_with("irq:"))
        .collect();
    assert!(irq_links.iter().all(|s| s == "irq:eth0"), "{recs:?}");
    let recvs_of_app5 = recs
        .iter()
        .any(|r| matches!(r.ev, Event::Recv { who: Who::Sm(s), .. } if name(s) == "app:5"));
    assert!(!recvs_of_app5, "{recs:?}");
    // app:6's wait, from its wakeup at 21, is charged to app:5 state by
    // state (interrupted until 22, then running), then it runs.
    let held: Vec<(String, String, String, u64)> = recs
        .iter()
        .filter_map(|r| match r.ev {
            Event::Held {
                who: Who::Sm(w),
                on,
                on_state,
                ..
            } => Some((name(w), name(on), name(on_state), r.t)),
            _ => None,
        })
        .collect();
    let got: Vec<(&str, &str, &str, u64)> = held
        .iter()
        .map(|h| (h.0.as_str(), h.1.as_str(), h.2.as_str(), h.3))
        .collect();
    let want = [
        ("app:6", "app:5", "interrupted:irq:eth0", 22),
        ("app:6", "app:5", "running", 40),
    ];
    assert_eq!(got, want);
    let runs_at_40 = recs.iter().any(|r| {
        r.t == 40
            && matches!(r.ev, Event::State { who: Who::Sm(s), state }
                if name(s) == "app:6" && name(state) == "running")
    });
    assert!(runs_at_40, "{recs:?}");
}

/// The `held` pieces of app:5's waits for CPU 0, as (time, holder,
/// ended).
fn pieces_of_5(wake_ctx_and_switches: &[KRecord]) -> Vec<(u64, String, bool)> {
    let strings = Interner::new();
    let mut b = Builder::new(strings, "host", FxHashMap::default(), None);
    b.holders = true;
    b.feed(&switch(1, 1, 0, 0, 6)); // app:6 runs on CPU 1 ...
    b.feed(&switch(2, 1, 6, 1, 0)); // ... and sleeps
    b.feed(&switch(10, 0, 0, 0, 5)); // app:5 runs on CPU 0
                                     // Released as they would be while the recording is read.
    let mut recs = Vec::new();
    for r in wake_ctx_and_switches {
        b.feed(r);
        recs.extend(b.drain_ready(usize::MAX, false));
    }
    b.finish();
    recs.extend(b.drain_ready(usize::MAX, true));
    let name = |s: Sym| b.strings.resolve(s).to_string();
    recs.iter()
        .filter_map(|r| match r.ev {
            Event::Held {
                who: Who::Sm(w),
                on,
                ended,
                ..
            } if name(w) == "app:5" && name(on) != "app:5" => Some((r.t, name(on), ended)),
            _ => None,
        })
        .collect()
}

fn wake6_at(t: u64) -> KRecord {
    let wake = KEvent::Wake {
        tid: 6,
        comm: comm("app"),
        target: Some(0),
        in_irq: false,
    };
    at(t, 0, 5, wake)
}

/// A holder whose run ends (it sleeps or exits) while the thread it
/// preempted still waits: that thread waited for the run whole, and its
/// pieces say `ended`; when the waiter is done first (it sleeps before the
/// holder's run ends), its pieces are its fair share and say nothing.
#[test]
fn a_wait_for_a_holders_whole_run_says_the_run_ended() {
    // app:6 preempts app:5, runs and sleeps; app:5 runs again.
    let slept = pieces_of_5(&[wake6_at(20), switch(21, 0, 5, 0, 6), switch(30, 0, 6, 1, 5)]);
    assert_eq!(slept, [(30, "app:6".to_string(), true)]);
    // The same, app:6 preempted once on the way: both pieces were its run.
    let sliced = pieces_of_5(&[
        wake6_at(20),
        switch(21, 0, 5, 0, 6),
        switch(25, 0, 6, 0, 5),    // app:6 preempted
        switch(27, 0, 5, 0, 6),    // app:5 preempted
        switch(30, 0, 6, 0x10, 5), // app:6 exits
    ]);
    assert_eq!(
        sliced,
        [
            (25, "app:6".to_string(), true),
            (30, "app:6".to_string(), true)
        ]
    );
    // app:5 sleeps while app:6 still runs: its piece is a fair share.
    let shared = pieces_of_5(&[
        wake6_at(20),
        switch(21, 0, 5, 0, 6),
        switch(25, 0, 6, 0, 5), // app:6 preempted
        switch(27, 0, 5, 1, 6), // app:5 sleeps
        switch(30, 0, 6, 1, 0), // app:6 sleeps
    ]);
    assert_eq!(shared, [(25, "app:6".to_string(), false)]);
}

/// A thread woken from inside its CPU holder's system call (or after an
/// interrupt there) waits for the CPU from its wakeup only: the holder's
/// state named late, when a tracepoint ends the call's segment, begins
/// before the wakeup and is charged to the waiters of then, not to it.
#[test]
fn a_wakeup_inside_a_system_call_charges_no_time_before_it() {
    let wake5 = || KEvent::Wake {
        tid: 5,
        comm: comm("app"),
        target: Some(0),
        in_irq: false,
    };
    let enter = at(20, 0, 7, KEvent::SysEnter { nr: 1 });
    let exit = at(30, 0, 7, KEvent::SysExit);
    // app:5 sleeps and app:7 runs on CPU 0; it wakes app:5 at 25 inside
    // the call it entered at 20, then is preempted by it at 40.
    let sleeps = switch(12, 0, 5, 1, 7);
    let plain = pieces_of_5(&[
        sleeps,
        enter,
        at(25, 0, 7, wake5()),
        exit,
        switch(40, 0, 7, 0, 5),
    ]);
    let want = [
        (30, "app:7".to_string(), false),
        (40, "app:7".to_string(), false),
    ];
    assert_eq!(plain, want);
    // The same with a softirq inside the call (21 to 23): the call's
    // segment after it is named at the exit too.
    let vec = 3;
    let softirq = pieces_of_5(&[
        sleeps,
        enter,
        at(21, 0, 7, KEvent::SoftirqEntry { vec }),
        at(23, 0, 7, KEvent::SoftirqExit { vec }),
        at(25, 0, 7, wake5()),
        exit,
        switch(40, 0, 7, 0, 5),
    ]);
    assert_eq!(softirq, want);
}

/// A thread believed blocked whose wakeup was not recorded (perf
/// recorded the command's threads only) and whose next event is its exit,
/// or another tracepoint in its context, is alive then: it gets an
/// inferred transition into `running` there, so its chain (and the path)
/// reaches its exit.
#[test]
fn an_exit_or_any_tracepoint_of_a_blocked_thread_is_a_sign_of_life() {
    for ev in [KEvent::Exit, KEvent::Other] {
        let mut b = Builder::new(Interner::new(), "host", FxHashMap::default(), None);
        b.feed(&switch(10, 0, 0, 0, 5)); // app:5 runs ...
        b.feed(&switch(20, 0, 5, 1, 0)); // ... and sleeps: its wakeup is lost
        b.feed(&at(300, 0, 5, ev));
        b.finish();
        let recs: Vec<Record> = b.drain_ready(usize::MAX, true).collect();
        let sm = b.strings.get("app:5").expect("app:5");
        let last = recs.iter().rev().find(|r| match r.ev {
            Event::State {
                who: Who::Sm(s), ..
            } => s == sm,
            _ => false,
        });
        let ran = last.map(|r| (r.t, r.ev));
        let running = b.strings.get("running").expect("running");
        assert_eq!(
            ran,
            Some((
                300,
                Event::State {
                    who: Who::Sm(sm),
                    state: running
                }
            )),
            "{ev:?}: {recs:?}"
        );
        assert_eq!(b.counts.inferred, 1, "{ev:?}");
    }
}

/// A piece's `held` record is found where it went even when records of
/// earlier times were placed before it since (the segments of a system
/// call on the other CPU, named at its exit), and after drains.
#[test]
fn a_piece_is_marked_after_earlier_records_went_before_it() {
    const MS: u64 = 1_000_000;
    let sys = |t: u64, nr: Option<u64>| {
        let ev = match nr {
            Some(nr) => KEvent::SysEnter { nr },
            None => KEvent::SysExit,
        };
        at(t * MS, 1, 7, ev)
    };
    let sw = |t: u64, cpu, prev, state, next| switch(t * MS, cpu, prev, state, next);
    let got = pieces_of_5(&[
        sw(3, 1, 0, 0, 7), // app:7 runs on CPU 1
        wake6_at(20 * MS),
        sw(21, 0, 5, 0, 6),
        sys(22, Some(0)),
        sw(25, 0, 6, 0, 5), // app:6 preempted: a piece at 25 ms
        sys(26, None),      // app:7's segment from 22 ms goes before it
        sw(27, 0, 5, 0, 6), // app:5 preempted
        sys(28, Some(0)),
        sys(29, None),
        sw(30, 0, 6, 0x10, 5), // app:6 exits
    ]);
    let want = [
        (25 * MS, "app:6".to_string(), true),
        (30 * MS, "app:6".to_string(), true),
    ];
    assert_eq!(got, want);
}

/// The pieces of a holder's run stay in the reorder window until the run
/// ends, up to the window's length: a run that ends 30 ms after the first
/// piece still marks it, one that ends past the window does not.
#[test]
fn a_holders_run_that_ends_late_still_marks_its_pieces() {
    const MS: u64 = 1_000_000;
    for (end, marked) in [(50 * MS, true), (20 * MS + WINDOW_NS + 10 * MS, false)] {
        let mut recs = vec![
            wake6_at(20 * MS),
            switch(21 * MS, 0, 5, 0, 6),
            switch(25 * MS, 0, 6, 0, 5), // app:6 preempted
            switch(27 * MS, 0, 5, 0, 6), // app:5 preempted
        ];
        // Two other threads take turns on CPU 1 meanwhile.
        for ms in 28..end / MS {
            let (prev, next) = if ms % 2 == 0 { (7, 8) } else { (8, 7) };
            recs.push(switch(ms * MS, 1, prev, 0, next));
        }
        recs.push(switch(end, 0, 6, 0x10, 5)); // app:6 exits
        let got = pieces_of_5(&recs);
        let want = [
            (25 * MS, "app:6".to_string(), marked),
            (end, "app:6".to_string(), true),
        ];
        assert_eq!(got, want, "app:6 exits at {end}");
    }
}

/// A running thread's system call on a CPU it was not seen switched to
/// (its migration lost) is a sign of life there: that CPU no longer idles,
/// so a thread woken for it and then seen running there ran from no
/// earlier than its wakeup, with the time since at stake.
#[test]
fn a_running_threads_system_call_elsewhere_says_its_cpu_is_busy() {
    let strings = Interner::new();
    let mut b = Builder::new(strings, "host", FxHashMap::default(), None);
    let wake7 = KEvent::Wake {
        tid: 7,
        comm: comm("app"),
        target: Some(1),
        in_irq: false,
    };
    for k in [
        switch(1, 1, 0, 0, 7),
        switch(2, 1, 7, 1, 0),                    // app:7 sleeps: CPU 1 idles
        switch(3, 0, 0, 0, 9),                    // app:9 runs on CPU 0
        switch(4, 2, 0, 0, 5),                    // app:5 runs on CPU 2 ...
        at(10, 1, 5, KEvent::SysEnter { nr: 0 }), // ... and is seen on CPU 1
        at(11, 1, 5, KEvent::SysExit),
        at(12, 0, 9, wake7),                      // app:9 wakes app:7 for CPU 1
        at(20, 1, 7, KEvent::SysEnter { nr: 0 }), // app:7 seen running there
    ] {
        b.feed(&k);
    }
    b.finish();
    assert_lost(&b, "app:7", (1, 0, 8));
}

/// Thread SM `sm`'s lost switch-ins are `(seen, on_idle_cpu, at_stake_ns)`.
fn assert_lost(b: &Builder, sm: &str, (seen, on_idle_cpu, at_stake_ns): (u64, u64, u64)) {
    let sym = b.strings.get(sm).expect("thread SM");
    let lost = LostSwitchIns {
        seen,
        on_idle_cpu,
        at_stake_ns,
    };
    assert_eq!(b.counts.lost_switch_ins.get(&sym), Some(&lost), "{sm}");
}

/// A preempted thread is next seen leaving a CPU it was never seen
/// entering (its switch-in came from a context whose events were lost):
/// it is reported, with the time since that CPU's last visible event.
#[test]
fn a_lost_switch_in_is_reported_with_the_time_at_stake() {
    let strings = Interner::new();
    let mut b = Builder::new(strings, "host", FxHashMap::default(), None);
    b.feed(&switch(10, 0, 0, 0, 5));
    b.feed(&switch(20, 0, 5, 0, 7)); // app:5 preempted (R) by app:7
    b.feed(&switch(30, 0, 7, 1, 9)); // app:7 sleeps; app:9 runs, unseen after
    b.feed(&switch(45, 0, 5, 0, 7)); // app:5 leaves CPU 0: it ran
    b.finish();
    assert_lost(&b, "app:5", (1, 0, 15));
    let d = b.diagnostics();
    let lost: Vec<_> = d
        .iter()
        .filter(|d| d.sm.as_deref() == Some("app:5"))
        .collect();
    assert_eq!(lost.len(), 1, "{d:?}");
    assert!(
        lost[0].message.contains("up to 15 ns"),
        "{}",
        lost[0].message
    );
    // A thread switched in as seen loses nothing.
    let app7 = b.strings.get("app:7").expect("thread SM");
    assert!(!b.counts.lost_switch_ins.contains_key(&app7));
}

/// A thread sleeps on a timer whose expiry was lost (an idle CPU): it
/// is woken at the expiry, which its slack may put before the latest
/// expiry the timer was armed with.
#[test]
fn a_lost_timer_expiry_is_inferred_within_the_timers_slack() {
    let mut strings = Interner::new();
    let func = strings.intern("hrtimer_wakeup");
    let mut b = Builder::new(strings, "host", FxHashMap::default(), None);
    b.feed(&switch(10, 0, 0, 0, 5));
    b.feed(&KRecord {
        t: 20,
        cpu: 0,
        pid: 5,
        tid: 5,
        ev: KEvent::TimerStart {
            timer: 0xabc,
            func,
            expires: Some((100, 150)),
        },
    });
    b.feed(&switch(30, 0, 5, 1, 0));
    // Seen running at 120: inside the slack window, before the latest
    // expiry.
    b.feed(&switch(120, 1, 0, 0, 5));
    b.finish();
    let recs: Vec<Record> = b.drain_ready(usize::MAX, true).collect();
    assert_eq!(b.counts.inferred_by_timer, 1, "{:?}", b.counts);
    assert_eq!(woken_at(&b, &recs, "app:5"), Some(120), "{recs:?}");
}
/// The window holds records back only as far as an inferred wakeup may
/// go: to the expiry of the timer a blocked thread armed (within
/// `WINDOW_NS`), else the last `SLACK_NS`.
#[test]
fn the_window_reaches_back_only_to_a_blocked_threads_timer() {
    const MS: u64 = 1_000_000;
    let mut strings = Interner::new();
    let func = strings.intern("hrtimer_wakeup");
    let mut b = Builder::new(strings, "host", FxHashMap::default(), None);
    // (Threads taking turns on a CPU hold back the pieces of their waits
    // for it: a_holders_run_that_ends_late_still_marks_its_pieces.)
    b.holders = false;
    let released = |b: &mut Builder| b.drain_ready(usize::MAX, false).map(|r| r.t).max();
    b.feed(&switch(0, 0, 0, 0, 5));
    let arm = KEvent::TimerStart {
        timer: 0xabc,
        func,
        expires: Some((50 * MS, 50 * MS)),
    };
    b.feed(&at(MS, 0, 5, arm));
    b.feed(&switch(2 * MS, 0, 5, 1, 0)); // app:5 sleeps on it
                                         // Two threads take turns on CPU 1 meanwhile.
    let turns = |b: &mut Builder, from: u64, to: u64| {
        for ms in from..to {
            let (prev, next) = if ms % 2 == 0 { (7, 6) } else { (6, 7) };
            b.feed(&switch(ms * MS, 1, prev, 0, next));
        }
    };
    turns(&mut b, 3, 100);
    let out = released(&mut b).expect("records before the expiry");
    assert!(out < 50 * MS, "released up to {out}");
    // The expiry's event was lost: app:5 is next seen running.
    b.feed(&switch(100 * MS, 0, 0, 0, 5));
    turns(&mut b, 101, 150);
    // (Records strictly before the horizon leave: one a ms here.)
    let out = released(&mut b).expect("records up to the slack");
    assert!((148 * MS - SLACK_NS..150 * MS).contains(&out), "{out}");
    assert_eq!((b.counts.inferred_by_timer, b.counts.late), (1, 0));
    // A timer further back than the window holds back no more than it.
    let arm = KEvent::TimerStart {
        timer: 0xdef,
        func,
        expires: Some((160 * MS, 160 * MS)),
    };
    b.feed(&at(151 * MS, 0, 5, arm));
    b.feed(&switch(152 * MS, 0, 5, 1, 0));
    turns(&mut b, 153, 500);
    let out = released(&mut b).expect("the window's records");
    assert!((498 * MS - WINDOW_NS..300 * MS).contains(&out), "{out}");
}

/// A thread sleeps on its timer; the CPU idles; the expiry, the wakeup
/// and the switch-in from idle were lost, and the thread is next seen at
/// 400. It ran from the expiry (150) on the CPU that idled, and from its
/// sign of life on a CPU whose past is unknown.
#[test]
fn a_thread_woken_by_its_timer_on_an_idle_cpu_ran_from_the_expiry() {
    for (seen_cpu, runs_at, on_idle) in [(0, 150, 1), (1, 400, 0)] {
        let mut strings = Interner::new();
        let func = strings.intern("hrtimer_wakeup");
        let mut b = Builder::new(strings, "host", FxHashMap::default(), None);
        b.feed(&switch(10, 0, 0, 0, 5));
        let arm = KEvent::TimerStart {
            timer: 0xabc,
            func,
            expires: Some((100, 150)),
        };
        b.feed(&at(20, 0, 5, arm));
        b.feed(&switch(30, 0, 5, 1, 0)); // app:5 sleeps; CPU 0 idles
        b.feed(&at(400, seen_cpu, 5, KEvent::Exec));
        b.finish();
        let recs: Vec<Record> = b.drain_ready(usize::MAX, true).collect();
        assert_eq!(b.counts.inferred_by_timer, 1, "{:?}", b.counts);
        assert_eq!(b.counts.ran_when_woken, on_idle, "{:?}", b.counts);
        let running = recs
            .iter()
            .filter(|r| r.t > 30)
            .find(|r| {
                matches!(r.ev, Event::State { who: Who::Sm(s), state }
                    if b.strings.resolve(s) == "app:5" && b.strings.resolve(state) == "running")
            })
            .map(|r| r.t);
        assert_eq!(running, Some(runs_at), "CPU {seen_cpu}: {recs:?}");
    }
}

/// A sleep arms its wakeup, then the scheduler arms the deadline server's
/// timer in the thread's context before it switches out. The lost wakeup
/// is the sleep's timer's: whether the other timer expires long after
/// (not while it slept) or before (but wakes no sleeper).
#[test]
fn a_lost_timer_wakeup_is_the_sleepers_timer_not_the_last_armed() {
    for dl_expires in [10_000, 60] {
        let mut strings = Interner::new();
        let wakeup = strings.intern("hrtimer_wakeup");
        let dl = strings.intern("dl_task_timer");
        let mut b = Builder::new(strings, "host", FxHashMap::default(), None);
        b.feed(&switch(10, 0, 0, 0, 5));
        let arm = |timer, func, e| KEvent::TimerStart {
            timer,
            func,
            expires: Some((e, e)),
        };
        b.feed(&at(20, 0, 5, arm(0xabc, wakeup, 150)));
        b.feed(&at(21, 0, 5, arm(0xdef, dl, dl_expires)));
        b.feed(&switch(30, 0, 5, 1, 0)); // app:5 sleeps; CPU 0 idles
        b.feed(&at(400, 0, 5, KEvent::Exec));
        b.finish();
        let recs: Vec<Record> = b.drain_ready(usize::MAX, true).collect();
        assert_eq!(b.counts.inferred_by_timer, 1, "{:?}", b.counts);
        let woke = woken_at(&b, &recs, "app:5");
        assert_eq!(woke, Some(150), "dl at {dl_expires}: {recs:?}");
    }
}

/// A thread woken for an idle CPU is next seen there, its switch-in from
/// idle lost: it ran from the CPU's last visible event (or its wakeup, if
/// later), and nothing is at stake. Woken for another CPU, it runs from
/// its sign of life and the time since its CPU's last event is at stake.
#[test]
fn a_thread_woken_for_an_idle_cpu_ran_from_its_last_visible_event() {
    for (target, runs_at, lost) in [
        (0, 25, (1, 1, 0)), // CPU 0's last event: the sleep at 25
        (1, 50, (1, 0, 25)),
    ] {
        let strings = Interner::new();
        let mut b = Builder::new(strings, "host", FxHashMap::default(), None);
        b.feed(&switch(10, 0, 0, 0, 5));
        b.feed(&switch(11, 1, 0, 0, 7));
        let wake = KEvent::Wake {
            tid: 5,
            comm: comm("app"),
            target: Some(target),
            in_irq: false,
        };
        b.feed(&switch(20, 0, 5, 1, 0)); // app:5 sleeps; CPU 0 idles
        b.feed(&at(22, 1, 7, wake)); // app:7 wakes it
        b.feed(&at(25, 0, 0, KEvent::Exec)); // the idle task's own event
        b.feed(&at(50, 0, 5, KEvent::Exec)); // app:5 is seen
        b.finish();
        let recs: Vec<Record> = b.drain_ready(usize::MAX, true).collect();
        let app5 = b.strings.get("app:5").expect("thread SM");
        let want = LostSwitchIns {
            seen: lost.0,
            on_idle_cpu: lost.1,
            at_stake_ns: lost.2,
        };
        assert_eq!(b.counts.lost_switch_ins.get(&app5), Some(&want));
        let running = recs
            .iter()
            .filter(|r| r.t > 20)
            .find(|r| {
                matches!(r.ev, Event::State { who: Who::Sm(s), state }
                    if s == app5 && b.strings.resolve(state) == "running")
            })
            .map(|r| r.t);
        assert_eq!(running, Some(runs_at), "target {target}: {recs:?}");
        let d = b.diagnostics();
        let d = d.iter().find(|d| d.sm.as_deref() == Some("app:5"));
        assert_eq!(d.and_then(|d| d.ns), Some(lost.2), "{d:?}");
    }
}

/// How `app:6`, asleep on CPU 1, was woken by the events `wake` feeds on
/// CPU 0 (where `app:5` runs): through a link from another SM (`recv`),
/// or from itself (`self`: its wait is its own time), and the builder's
/// counts then.
fn woken_how(wake: impl Fn(&mut Builder, Sym, Sym)) -> (&'static str, Counts) {
    let mut strings = Interner::new();
    let eth = strings.intern("eth0");
    let func = strings.intern("hrtimer_wakeup");
    let mut b = Builder::new(strings, "host", FxHashMap::default(), None);
    b.feed(&switch(10, 0, 0, 0, 5));
    b.feed(&switch(11, 1, 0, 0, 6));
    b.feed(&switch(12, 1, 6, 1, 0)); // app:6 sleeps
    wake(&mut b, eth, func);
    b.feed(&switch(40, 1, 0, 0, 6));
    b.finish();
    let recs: Vec<Record> = b.drain_ready(usize::MAX, true).collect();
    let app6 = b.strings.get("app:6").expect("thread SM");
    let sender = |id: LinkId| {
        recs.iter().find_map(|r| match r.ev {
            Event::Send {
                who: Who::Sm(s),
                id: i,
            } if i == id => Some(s),
            _ => None,
        })
    };
    let how = recs.iter().find_map(|r| match r.ev {
        Event::Recv {
            who: Who::Sm(s),
            id,
            state,
            ..
        } if s == app6 => {
            assert_eq!((b.strings.resolve(state), r.t), ("runnable", 30));
            Some(if sender(id) == Some(app6) {
                "self"
            } else {
                "recv"
            })
        }
        _ => None,
    });
    (how.expect("app:6 woken at 30"), b.counts.clone())
}

fn wake6(in_irq: bool) -> KEvent {
    KEvent::Wake {
        tid: 6,
        comm: comm("app"),
        target: Some(1),
        in_irq,
    }
}

/// A wakeup is a dependence only where its chain of causes is seen: a
/// thread, a timer it armed, a softirq it raised. A device's interrupt (or
/// a softirq it raised), or an interrupt the recording lacks (the event's
/// flags say so, but no entry was seen), makes no link, so the sleeper's
/// wait stays its own time on the path instead of vanishing.
#[test]
fn only_wakeups_with_a_seen_cause_are_links() {
    let by_thread = woken_how(|b, _, _| b.feed(&at(30, 0, 5, wake6(false))));
    assert_eq!(by_thread.0, "recv");
    let by_device = woken_how(|b, eth, _| {
        b.feed(&at(29, 0, 5, KEvent::IrqEntry { name: eth }));
        b.feed(&at(30, 0, 5, wake6(true)));
        b.feed(&at(31, 0, 5, KEvent::IrqExit));
    });
    assert_eq!(by_device.0, "self");
    assert_eq!(by_device.1.uncaused_wakeups, 1);
    let unrecorded = woken_how(|b, _, _| b.feed(&at(30, 0, 5, wake6(true))));
    assert_eq!(unrecorded.0, "self");
    assert_eq!(unrecorded.1.unrecorded_interrupts, 1);
    assert_eq!(unrecorded.1.interrupts_seen, 0);
    // A timer armed by a thread, expiring inside a device's interrupt.
    let armed = woken_how(|b, eth, func| {
        let timer = 0xfeed;
        let start = KEvent::TimerStart {
            timer,
            func,
            expires: None,
        };
        b.feed(&at(20, 0, 5, start));
        b.feed(&at(29, 0, 5, KEvent::IrqEntry { name: eth }));
        b.feed(&at(29, 0, 5, KEvent::TimerEntry { timer, func }));
        b.feed(&at(30, 0, 5, wake6(true)));
        b.feed(&at(31, 0, 5, KEvent::TimerExit));
        b.feed(&at(31, 0, 5, KEvent::IrqExit));
    });
    assert_eq!(armed.0, "recv");
    // Softirqs: raised by a thread, or by a device's interrupt.
    for (raiser_irq, want) in [(false, "recv"), (true, "self")] {
        let got = woken_how(|b, eth, _| {
            if raiser_irq {
                b.feed(&at(28, 0, 5, KEvent::IrqEntry { name: eth }));
            }
            b.feed(&at(28, 0, 5, KEvent::SoftirqRaise { vec: 3 }));
            if raiser_irq {
                b.feed(&at(28, 0, 5, KEvent::IrqExit));
            }
            b.feed(&at(29, 0, 5, KEvent::SoftirqEntry { vec: 3 }));
            b.feed(&at(30, 0, 5, wake6(true)));
            b.feed(&at(31, 0, 5, KEvent::SoftirqExit { vec: 3 }));
        });
        assert_eq!(got.0, want, "raised in an interrupt: {raiser_irq}");
    }
}

/// The `unknown-waker` message for a wakeup inside an interrupt no event
/// shows says that interrupt events are missing only when the recording
/// has none; with some, the wakeup's interrupt is one without a
/// tracepoint (or its entry was lost).
#[test]
fn unrecorded_interrupt_message_follows_the_recording() {
    let message = |with_irq: bool| {
        let mut strings = Interner::new();
        let eth = strings.intern("eth0");
        let mut b = Builder::new(strings, "host", FxHashMap::default(), None);
        b.feed(&switch(10, 0, 0, 0, 5));
        b.feed(&switch(11, 1, 0, 0, 6));
        b.feed(&switch(12, 1, 6, 1, 0));
        if with_irq {
            b.feed(&at(20, 0, 5, KEvent::IrqEntry { name: eth }));
            b.feed(&at(21, 0, 5, KEvent::IrqExit));
        }
        b.feed(&at(30, 0, 5, wake6(true)));
        b.feed(&switch(40, 1, 0, 0, 6));
        b.finish();
        b.drain_ready(usize::MAX, true).for_each(drop);
        let d = b.diagnostics();
        let d = d.iter().find(|d| d.message.contains("inside an interrupt"));
        d.expect("unknown-waker").message.clone()
    };
    let none = message(false);
    assert!(none.contains("has no interrupt events"), "{none}");
    let some = message(true);
    assert!(!some.contains("has no interrupt events"), "{some}");
    assert!(some.contains("does not show"), "{some}");
}

/// The recorded program is its command's thread and whatever it forks,
/// fork by fork; another thread that runs meanwhile is not in it.
#[test]
fn the_program_is_the_command_and_what_it_forks() {
    let mut names = FxHashMap::default();
    names.insert(5, "cmd".to_string());
    let mut b = Builder::new(Interner::new(), "host", FxHashMap::default(), None);
    b.name_threads(names, Some((5, 10)));
    b.feed(&switch(10, 0, 0, 0, 5)); // the command runs
    b.feed(&switch(11, 1, 0, 0, 9)); // someone else
    let fork = |child| KEvent::Fork {
        child,
        comm: comm("app"),
    };
    b.feed(&at(12, 0, 5, fork(6))); // the command forks 6
    b.feed(&at(13, 1, 9, fork(8))); // the other forks 8
    b.feed(&switch(14, 0, 5, 1, 6));
    b.feed(&at(15, 0, 6, fork(7))); // 6 forks 7
    assert_eq!(b.program_threads(), ["cmd:5", "app:6", "app:7"]);
}

/// Annotation `what` at `t` of thread `tid` of process 5.
fn annot(t: u64, tid: u32, what: Annot<'static>) -> AnnotRecord<'static> {
    AnnotRecord {
        t,
        pid: 5,
        tid,
        task: 0,
        task_name: None,
        what,
        offset: 0,
    }
}

/// An annotated SM still begun when its thread exits ends there, linked
/// to the thread's SM, which waited for its end (`sm:leak`): that wait
/// ends with a recv of the SM's end, not by the thread's own end.
#[test]
fn an_annotated_sm_still_begun_at_its_threads_exit_ends_the_threads_wait() {
    let annot = |t, what| annot(t, 5, what);
    let mut b = Builder::new(Interner::new(), "host", FxHashMap::default(), None);
    b.feed(&switch(10, 0, 0, 0, 5)); // app:5 runs ...
    b.feed_annot(&annot(20, Annot::BeginSm("leak")));
    b.feed_annot(&annot(21, Annot::State("x")));
    b.feed(&switch(30, 0, 5, 0x10, 0)); // ... and exits without end_sm
    b.finish();
    let recs: Vec<Record> = b.drain_ready(usize::MAX, true).collect();
    let leak = b.strings.get("leak").expect("leak");
    let app = b.strings.get("app:5").expect("app:5");
    let sent = recs.iter().find_map(|r| match r.ev {
        Event::Send {
            who: Who::Sm(s),
            id,
        } if s == leak && r.t == 30 => Some(id),
        _ => None,
    });
    let got = recs.iter().find_map(|r| match r.ev {
        Event::Recv {
            who: Who::Sm(s),
            id,
            ..
        } if s == app && r.t == 30 => Some(id),
        _ => None,
    });
    assert!(sent.is_some() && sent == got, "{recs:?}");
}

/// An annotation file read alone says when each thread ended (`exit`):
/// the SMs still begun on it end there, the last state keeps its time, and
/// the name is free again for another thread's `begin_sm`. With a kernel
/// recording the kernel's exit is the one that counts.
#[test]
fn an_annotation_files_exit_ends_the_thread_and_its_sms() {
    let run = |alone: bool| {
        let mut b = Builder::new(Interner::new(), "local", FxHashMap::default(), None);
        if alone {
            b = b.annotations_only();
        }
        b.feed_annot(&annot(20, 5, Annot::BeginSm("leak")));
        b.feed_annot(&annot(21, 5, Annot::State("x")));
        b.feed_annot(&annot(30, 5, Annot::Exit));
        b.feed_annot(&annot(31, 5, Annot::Exit)); // said twice: nothing more
        b.feed_annot(&annot(40, 6, Annot::BeginSm("leak")));
        b.feed_annot(&annot(45, 6, Annot::EndSm("leak")));
        b.finish();
        let recs: Vec<Record> = b.drain_ready(usize::MAX, true).collect();
        let ends: Vec<(u64, String)> = recs
            .iter()
            .filter_map(|r| match r.ev {
                Event::End { who: Who::Sm(s) } => Some((r.t, b.strings.resolve(s).to_string())),
                _ => None,
            })
            .collect();
        (ends, b.strings.get("leak#2").is_some())
    };
    let (ends, second_lane) = run(true);
    assert!(ends.contains(&(30, "leak".into())), "{ends:?}");
    assert!(
        ends.iter().any(|(t, s)| *t == 30 && s.ends_with(":5")),
        "{ends:?}"
    );
    assert!(!ends.iter().any(|(t, _)| *t == 31), "{ends:?}");
    assert!(ends.contains(&(45, "leak".into())), "{ends:?}");
    assert!(
        !second_lane,
        "the exited thread's `leak` still held its name"
    );
    let (ends, second_lane) = run(false);
    assert!(!ends.iter().any(|(t, _)| *t == 30), "{ends:?}");
    assert!(second_lane);
}
