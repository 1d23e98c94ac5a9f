//! The OS execution graph built from real recordings (tests/fixtures, made
//! by record.sh; README.md there says what each holds): no root or perf is
//! needed to run these. Each test checks what holds for any recording of
//! the fixture's program, not the figures of this one.

mod common;

use common::*;
use critpath_os::names::Blocked;
use critpath_os::{OsSm, OsState};
use critpath_trace::{DiagnosticKind, Location};

const ALL: [&str; 10] = [
    "sleep3",
    "pingpong",
    "pingpong_syscalls",
    "pipe",
    "forkwait",
    "contend",
    "functions",
    "namesake",
    "rename_z",
    "rename_pipe",
];

const MS: u64 = 1_000_000;

#[test]
fn every_reader_gives_the_same_records_on_a_thread_of_its_own_or_not() {
    for name in ALL {
        let a = read_with(name, true, true);
        assert!(!a.recs.is_empty(), "{name}");
        for (in_place, thread) in [(true, false), (false, true), (false, false)] {
            let b = read_with(name, in_place, thread);
            assert_eq!(
                a.recs, b.recs,
                "{name}: in place {in_place}, thread {thread}"
            );
            assert_eq!(
                format!("{:?}", a.summary.diagnostics),
                format!("{:?}", b.summary.diagnostics),
                "{name}: in place {in_place}, thread {thread}"
            );
        }
    }
}

/// A sample written twice (as some recordings hold one) is
/// read once, by either reader, and the summary says how many were
/// dropped.
#[test]
fn samples_a_recording_holds_twice_are_read_once() {
    let dir = tempfile::tempdir().unwrap();
    // (A compressed file's samples lie in zstd frames, copied by none; a
    // pipe-format file has no header for the copier to mend.)
    for name in ALL.into_iter().filter(|&n| !n.starts_with("rename_")) {
        let clean = read(name);
        let (path, copies) = with_repeated_samples(name, dir.path(), 7);
        assert!(copies > 10, "{name}: {copies}");
        for (in_place, thread) in [(true, true), (false, false)] {
            // The kernel events: as many as without the copies. Copies of
            // samples critpath decodes nothing from are not counted.
            let (events, repeated) = kernel_events(&path, in_place);
            assert_eq!(events, kernel_events(&fixture(name), in_place).0, "{name}");
            assert!(repeated > 10 && repeated <= copies, "{name}: {repeated}");
            // The graph: the same, and the summary says so.
            let r = read_path_with(&path, in_place, thread);
            assert_eq!(clean.recs, r.recs, "{name}: in place {in_place}");
            let dropped: Vec<_> = r
                .summary
                .diagnostics
                .iter()
                .filter(|d| d.kind == DiagnosticKind::InputSkipped)
                .collect();
            assert_eq!(dropped.len(), 1, "{name}: {dropped:?}");
            assert_eq!(dropped[0].count, Some(repeated), "{name}");
            assert!(dropped[0].message.contains("twice"), "{name}");
        }
    }
}

/// A sample naming a CPU no kernel has (a corrupt record) is skipped by
/// either reader, not taken to size the per-CPU tables by, and said: the
/// analysis of the rest comes with an error (exit code 2) and a diagnostic,
/// at the record's byte offset where the in-place reader knows it.
#[test]
fn a_sample_on_an_impossible_cpu_is_skipped() {
    let dir = tempfile::tempdir().unwrap();
    let name = "pingpong";
    // Its samples: IDENTIFIER, IP, TID, TIME, then the CPU at byte 40.
    let path = rewrite_samples(name, dir.path(), |i, rec, out| {
        let mut rec = rec.to_vec();
        if i == 5 {
            rec[40..44].copy_from_slice(&0xffff_fff0u32.to_le_bytes());
        }
        out.extend_from_slice(&rec);
    });
    let clean = kernel_events(&fixture(name), true).0;
    for in_place in [true, false] {
        assert_eq!(
            kernel_events(&path, in_place).0,
            clean - 1,
            "in place {in_place}"
        );
        let r = read_path_with(&path, in_place, false);
        assert!(!r.recs.is_empty());
        let e = r.summary.error.as_ref().expect("an error");
        assert!(
            !e.fatal && e.message.contains("1 kernel event(s) could not be read"),
            "{e}"
        );
        assert_eq!(matches!(e.location, Location::Offset(_)), in_place, "{e}");
        let said = r
            .summary
            .diagnostics
            .iter()
            .filter(|d| d.kind == DiagnosticKind::InputSkipped);
        assert!(said
            .clone()
            .any(|d| d.message.contains("could not be read")));
    }
}

/// The offsets of the records of a perf.data's data section, and its end.
fn record_offsets(b: &[u8]) -> (Vec<usize>, usize) {
    let u = |at: usize| u64::from_le_bytes(b[at..at + 8].try_into().unwrap()) as usize;
    let (start, end) = (u(40), u(40) + u(48));
    let mut at = start;
    let mut offsets = Vec::new();
    while at + 8 <= end {
        offsets.push(at);
        at += u16::from_le_bytes([b[at + 6], b[at + 7]]) as usize;
    }
    (offsets, end)
}

/// A record header that cannot be a record's (shorter than a header, or
/// reaching past the data), in the middle of a file or near its end: the
/// in-place reader skips to where records read again, so that only that
/// record is lost (before, reading ended there, silently), and says so:
/// a diagnostic, and an error at the header's byte offset (exit code 2).
/// The general reader stops there, and says so.
#[test]
fn a_damaged_record_header_is_skipped_over() {
    let dir = tempfile::tempdir().unwrap();
    let name = "pingpong";
    let clean_bytes = std::fs::read(fixture(name)).unwrap();
    let (offsets, end) = record_offsets(&clean_bytes);
    let clean = kernel_events(&fixture(name), true).0;
    let clean_read = read_path_with(&fixture(name), true, true);
    assert!(clean_read.summary.error.is_none());
    let near_end = *offsets.iter().rev().nth(5).unwrap();
    for (at, size) in [(offsets[offsets.len() / 2], 4u16), (near_end, 0xfff8)] {
        assert!(size < 8 || at + size as usize > end);
        let mut b = clean_bytes.clone();
        let lost = u32::from_le_bytes(b[at..at + 4].try_into().unwrap()) == 9;
        b[at + 6..at + 8].copy_from_slice(&size.to_le_bytes());
        let path = dir.path().join(format!("{name}-{at}.data"));
        std::fs::write(&path, &b).unwrap();
        let syms = critpath_os::perf::symbols_path(&fixture(name));
        std::fs::copy(syms, critpath_os::perf::symbols_path(&path)).unwrap();
        // Only the damaged record is lost (when it is a sample).
        let events = kernel_events(&path, true).0;
        assert!(
            events + 1 >= clean && events <= clean,
            "{events} of {clean}"
        );
        assert!(events >= clean / 2 + 10, "read on past the damage");
        let r = read_path_with(&path, true, true);
        assert!(
            r.recs.len() + 16 >= clean_read.recs.len(),
            "{} of {}",
            r.recs.len(),
            clean_read.recs.len()
        );
        if !lost {
            assert_eq!(
                r.recs, clean_read.recs,
                "a record that is no sample: nothing else lost"
            );
        }
        let e = r.summary.error.as_ref().expect("an error");
        assert!(!e.fatal && e.message.contains("1 record header(s)"), "{e}");
        assert_eq!(e.location, Location::Offset(at as u64), "{e}");
        let said: Vec<_> = r
            .summary
            .diagnostics
            .iter()
            .filter(|d| d.kind == DiagnosticKind::InputSkipped && d.message.contains("header"))
            .collect();
        assert_eq!(said.len(), 1, "{said:?}");
        assert_eq!(said[0].count, Some(1));
        // The general reader stops at the damage, and says where.
        let mut strings = critpath_trace::Interner::new();
        let k = critpath_readers::perf::KernelEvents::open(&path, false, &mut strings).unwrap();
        let e = k.error.as_ref().expect("an error");
        assert!(e.message.contains("general reader"), "{e}");
        assert_eq!(e.location, Location::Offset(at as u64), "{e}");
    }
}

#[test]
fn records_are_in_time_order_and_no_time_is_negative() {
    for name in ALL {
        let r = read(name);
        assert!(
            r.recs.windows(2).all(|w| w[0].t <= w[1].t),
            "{name}: records out of time order"
        );
        let a = analyze(name);
        assert!(
            a.critical_path.found && a.critical_path.length_ns > 0,
            "{name}"
        );
        let path = a.path.as_ref().expect("kept path");
        assert!(path.iter().all(|s| s.end_ns >= s.start_ns), "{name}");
        let on_path: u64 = path.iter().map(|s| s.end_ns - s.start_ns).sum();
        assert_eq!(on_path, a.critical_path.length_ns, "{name}");
        for s in &a.states {
            assert!(s.critical_ns <= s.total_ns, "{name}: {s:?}");
        }
    }
}

/// An SM's name without its lane (`irq:eth0#2` → `irq:eth0`).
fn base(sm: &str) -> &str {
    match sm.rsplit_once('#') {
        Some((b, lane)) if lane.bytes().all(|c| c.is_ascii_digit()) => b,
        _ => sm,
    }
}

#[test]
fn every_sm_and_state_name_is_an_os_name_that_reads_back() {
    for name in ALL {
        for r in read(name).recs {
            let sm = OsSm::parse(base(&r.sm)).unwrap_or_else(|| panic!("{name}: SM {}", r.sm));
            assert_eq!(sm.to_string(), base(&r.sm));
            let state = match &r.kind {
                Kind::State(s) | Kind::Wait(s) | Kind::Recv(_, s) | Kind::Held(_, s) => s,
                Kind::Send(_) | Kind::End => continue,
            };
            assert_eq!(os_state(state).to_string(), *state, "{name}");
        }
    }
}

#[test]
fn the_scope_is_the_recorded_commands_main_thread() {
    let mains = [
        ("sleep3", "sleepmain"),
        ("pingpong", "pingpong"),
        ("pipe", "pcmain"),
        ("forkwait", "forkmain"),
        ("contend", "contmain"),
        ("functions", "functions"),
        ("rename", "late"),
        ("rename_z", "late"),
        ("rename_pipe", "late"),
    ];
    for (name, comm) in mains {
        let scope = read(name).scope.expect("scope");
        let sm = OsSm::parse(&scope);
        assert!(
            matches!(sm, Some(OsSm::Thread { comm: c, .. }) if c == comm),
            "{name}: {scope}"
        );
    }
}

/// The program renames its main thread "early" on the last CPU, then
/// "late" on CPU 0: perf writes CPU 0's buffer first, so "late" comes first
/// in the file. The thread is named by its latest name in time.
#[test]
fn a_thread_renamed_on_two_cpus_has_its_latest_name_in_time() {
    for (in_place, thread) in [(true, true), (false, false)] {
        let r = read_with("rename", in_place, thread);
        assert_eq!(threads(&r.recs, "late").len(), 1, "in place {in_place}");
        assert!(threads(&r.recs, "early").is_empty(), "in place {in_place}");
        assert!(threads(&r.recs, "rename").is_empty(), "in place {in_place}");
    }
}

/// Recorded compressed (`perf record -z`), the renames and the exec lie
/// only in zstd frames: they are read there, by either reader, and the
/// thread is named by its latest name as in the uncompressed recording.
/// So too when the file is cut (its last record, 8 bytes): the header
/// feature that says the file is compressed is lost, and the compressed
/// records before the first sample say it.
#[test]
fn a_compressed_recording_reads_as_an_uncompressed_one() {
    let dir = tempfile::tempdir().unwrap();
    let bytes = std::fs::read(fixture("rename_z")).unwrap();
    let cut = dir.path().join("cut_z.data");
    std::fs::write(&cut, &bytes[..28_578]).unwrap();
    let pid = std::fs::read(critpath_readers::perf::recorder_path(&fixture("rename_z"))).unwrap();
    std::fs::write(critpath_readers::perf::recorder_path(&cut), pid).unwrap();
    for path in [fixture("rename_z"), cut] {
        for (in_place, thread) in [(true, true), (false, false)] {
            let r = read_path_with(&path, in_place, thread);
            let name = format!("{}, in place {in_place}", path.display());
            assert_eq!(threads(&r.recs, "late").len(), 1, "{name}");
            for other in ["early", "rename", "perf-exec"] {
                assert!(threads(&r.recs, other).is_empty(), "{other}: {name}");
            }
            assert_eq!(r.scope.as_deref(), Some("late:16421"), "{name}");
            assert_eq!(r.recs.len(), 73, "{name}");
        }
    }
}

/// Recorded by plain perf in its pipe format (`-o -`): the attributes,
/// the header's features and the tracepoint layouts come as records before
/// the events, the layouts uncounted by their record's size. Both readers
/// read it as a file; the host name and command line are found, and the
/// tracepoint layouts are the file's own.
#[test]
fn a_recording_in_perfs_pipe_format_reads_as_a_file() {
    for (in_place, thread) in [(true, true), (false, false)] {
        let r = read_with("rename_pipe", in_place, thread);
        assert_eq!(
            r.scope.as_deref(),
            Some("late:30851"),
            "in place {in_place}"
        );
        assert_eq!(r.recs.len(), 55, "in place {in_place}");
        let kinds: Vec<_> = r.summary.diagnostics.iter().map(|d| d.kind).collect();
        assert!(
            !kinds.contains(&DiagnosticKind::TracepointFormats),
            "{kinds:?}"
        );
        assert!(!kinds.contains(&DiagnosticKind::InputCut), "{kinds:?}");
        let mut strings = critpath_trace::Interner::new();
        let file = critpath_readers::perf::KernelEvents::open(
            &fixture("rename_pipe"),
            in_place,
            &mut strings,
        );
        assert_eq!(file.expect("opens").recording.host, "vm");
    }
}

/// perf without `-a` records the command's own threads only: the file's
/// command line says so, and so does a `not-system-wide` diagnostic,
/// naming it. No system-wide recording gets one.
#[test]
fn a_recording_of_the_commands_threads_only_says_so() {
    let kinds = |name: &str| {
        let r = read(name);
        let d = r.summary.diagnostics.into_iter();
        d.filter(|d| d.kind == DiagnosticKind::NotSystemWide)
            .map(|d| d.message)
            .collect::<Vec<_>>()
    };
    let said = kinds("pingpong_own");
    assert_eq!(said.len(), 1, "{said:?}");
    assert!(
        said[0].contains("perf record") && said[0].contains("has no -a"),
        "{said:?}"
    );
    for name in ALL {
        assert!(kinds(name).is_empty(), "{name}");
    }
}

/// `rename.data` cut at `len` bytes (its records end at 50 872; the
/// command's exec is at byte 45 040), with its `.recorder` file or not.
fn cut_rename(dir: &std::path::Path, len: usize, recorder: bool) -> std::path::PathBuf {
    let bytes = std::fs::read(fixture("rename")).unwrap();
    let path = dir.join(format!("cut{len}{recorder}.data"));
    std::fs::write(&path, &bytes[..len]).unwrap();
    if recorder {
        let pid = std::fs::read(critpath_readers::perf::recorder_path(&fixture("rename"))).unwrap();
        std::fs::write(critpath_readers::perf::recorder_path(&path), pid).unwrap();
    }
    path
}

/// The diagnostic that says the cut lost the header's host and command.
fn header_lost(r: &Read) -> String {
    let lost: Vec<_> = r
        .summary
        .diagnostics
        .iter()
        .filter(|d| d.message.contains("(host name, command line) are lost"))
        .collect();
    assert_eq!(lost.len(), 1, "{:?}", r.summary.diagnostics);
    assert_eq!(lost[0].kind, DiagnosticKind::InputCut);
    lost[0].message.clone()
}

/// A cut file's header has no host name or command line: the diagnostic
/// says so, and the command's thread is inferred from the recorder's child
/// (by the `.recorder` pid, else by the parent's name `perf`), as the
/// complete file's scope. Cut before the command's exec, nothing is
/// inferred, and the diagnostic says that too.
#[test]
fn a_cut_file_says_its_header_is_lost_and_infers_the_commands_thread() {
    let dir = tempfile::tempdir().unwrap();
    let whole = read("rename").scope.expect("scope");
    let tid = whole.rsplit(':').next().unwrap().to_string();
    for recorder in [false, true] {
        let path = cut_rename(dir.path(), 50_000, recorder);
        for (in_place, thread) in [(true, true), (false, false)] {
            let r = read_path_with(&path, in_place, thread);
            let scope = r.scope.clone().expect("an inferred scope");
            assert_eq!(scope, format!("late:{tid}"), "recorder {recorder}");
            let said = header_lost(&r);
            assert!(said.contains("host `local`"), "{said}");
            assert!(
                said.contains(&format!("inferred instead: late:{tid}")),
                "{said}"
            );
            let by = if recorder {
                "perf, pid "
            } else {
                "a process named perf"
            };
            assert!(said.contains(by), "{said}");
        }
    }
    let r = read_path_with(&cut_rename(dir.path(), 40_000, true), true, true);
    assert_eq!(r.scope, None);
    let said = header_lost(&r);
    assert!(said.contains("could not be inferred"), "{said}");
    // A complete file says nothing of the kind.
    assert!(!read("rename")
        .summary
        .diagnostics
        .iter()
        .any(|d| d.message.contains("are lost")));
}

/// `namesake` recorded while other processes exec'd `namesake rival`
/// without pause, the first of them before the command (record.sh makes
/// sure): the command's thread is the one perf forked (it renames itself
/// `recorded`), by the `.recorder` pid or, without that file, as the child
/// of the process named perf. With a `.recorder` naming a process that
/// forked none of them, no fork record shows the command: the earliest
/// namesake is taken, and a `command-guessed` diagnostic says so.
#[test]
fn the_commands_thread_is_the_recorders_child_not_a_namesake() {
    let guessed = |r: &Read| {
        let mut d = r.summary.diagnostics.iter();
        d.find(|d| d.kind == DiagnosticKind::CommandGuessed)
            .cloned()
    };
    let whole = read("namesake");
    let scope = whole.scope.clone().expect("the command's thread");
    assert!(scope.starts_with("recorded:"), "{scope}");
    assert!(guessed(&whole).is_none());
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("namesake.data");
    std::fs::copy(fixture("namesake"), &path).unwrap();
    for (in_place, thread) in [(true, true), (false, false)] {
        let r = read_path_with(&path, in_place, thread);
        assert_eq!(r.scope.as_ref(), Some(&scope), "no .recorder, {in_place}");
        assert!(guessed(&r).is_none());
    }
    std::fs::write(critpath_readers::perf::recorder_path(&path), "1\n").unwrap();
    for (in_place, thread) in [(true, true), (false, false)] {
        let r = read_path_with(&path, in_place, thread);
        let guess = r.scope.clone().expect("a guess");
        assert!(guess.starts_with("namesake:"), "{guess}");
        let d = guessed(&r).expect("command-guessed");
        let said = &d.message;
        assert!(
            said.contains(&format!("the earliest, {guess} at t=")),
            "{said}"
        );
        assert!(said.contains("the recorder (perf, pid 1, from "), "{said}");
        // (this file) 50 execs of `namesake`, the first at 17776458912210.
        assert_eq!(d.count, Some(50), "{said}");
        assert!(said.starts_with("50 threads exec'd `namesake`"), "{said}");
        assert!(said.contains(" at t=17776458912210, is taken"), "{said}");
    }
}

#[test]
fn a_sleepers_time_lies_on_the_timer_that_wakes_it() {
    let r = read("sleep3");
    let sleeper = threads(&r.recs, "sleeper");
    assert_eq!(sleeper.len(), 1, "{sleeper:?}");
    let sleeper = sleeper[0];
    let sleeps = r
        .recs
        .iter()
        .filter(|x| x.sm == sleeper && x.kind == Kind::Wait("blocked:sleep".into()))
        .count();
    assert!(sleeps >= 3, "{sleeps} sleeps");
    // Each nanosleep ends by the hrtimer's expiry waking the sleeper.
    let woken = links(&r.recs, "timer:hrtimer_wakeup", sleeper, "runnable");
    assert!(woken.len() >= 3, "{woken:?}");
    // ... and the expiry hangs on the sleeper arming it.
    let armed = links(&r.recs, sleeper, "timer:hrtimer_wakeup", "armed");
    assert!(armed.len() >= 3, "{armed:?}");
    // On the critical path, the 3 x 5 ms of sleep are the timer's wait.
    let a = analyze("sleep3");
    let (_, critical) = row(&a, "timer:hrtimer_wakeup", "armed");
    assert!(critical >= 12 * MS, "{critical} ns");
    assert_eq!(row(&a, sleeper, "blocked:sleep").1, 0);
}

/// The same sleeps recorded by plain `perf record -e 'sched:*'`: with no
/// interrupt events, whichever thread ran when the timer fired is no waker
/// (the wakeups' flags say they fired in an interrupt), so the sleeps stay
/// on the path as the sleeper's own wait instead of vanishing.
#[test]
fn without_interrupt_events_a_sleep_stays_the_sleepers_wait() {
    let a = analyze("sleep3_sched_only");
    let r = read("sleep3_sched_only");
    let sleeper = threads(&r.recs, "sleeper");
    assert_eq!(sleeper.len(), 1, "{sleeper:?}");
    let (_, critical) = row(&a, sleeper[0], "blocked:sleep");
    assert!(critical >= 12 * MS, "{critical} ns");
    let length = a.critical_path.length_ns;
    assert!(length >= 15 * MS, "{length} ns");
    let unrecorded = a
        .diagnostics
        .iter()
        .find(|d| d.message.contains("recording has no interrupt events"))
        .expect("a diagnostic says the interrupts were not recorded");
    assert!(unrecorded.count.unwrap_or(0) >= 3, "{unrecorded:?}");
}

#[test]
fn ping_and_pong_wake_each_other_every_round() {
    let r = read("pingpong");
    let (ping, pong) = (threads(&r.recs, "pingpong"), threads(&r.recs, "pong"));
    assert_eq!((ping.len(), pong.len()), (1, 1), "{ping:?} {pong:?}");
    let (ping, pong) = (ping[0], pong[0]);
    // Pong's write wakes ping every round.
    let back = links(&r.recs, pong, ping, "runnable");
    assert!(back.len() >= 45, "{}", back.len());
    // Ping's write wakes pong whenever pong blocked in read() (when both
    // share a CPU, the ping pong woke preempts it and pong finds the byte
    // there without blocking: no wakeup then, pong only waits runnable).
    let there = links(&r.recs, ping, pong, "runnable");
    let blocked = r
        .recs
        .iter()
        .filter(|x| x.sm == pong && matches!(x.kind, Kind::Wait(_)))
        .count();
    assert!(
        !there.is_empty() && there.len() + 1 >= blocked,
        "{} {blocked}",
        there.len()
    );
    // A wakeup's receive is at or after its send.
    assert!(there.iter().chain(&back).all(|(s, r)| r >= s));
}

#[test]
fn the_producer_wakes_the_blocked_consumer() {
    let r = read("pipe");
    let (prod, cons) = (threads(&r.recs, "producer"), threads(&r.recs, "consumer"));
    assert_eq!((prod.len(), cons.len()), (1, 1), "{prod:?} {cons:?}");
    let woken = links(&r.recs, prod[0], cons[0], "runnable");
    assert!(woken.len() >= 10, "{woken:?}");
    // The producer's 20 x 200 us of work is on the critical path.
    let a = analyze("pipe");
    let (_, critical) = row(&a, prod[0], "running");
    assert!(critical >= 3 * MS, "{critical} ns");
}

#[test]
fn each_forked_child_hangs_on_its_parent_and_wakes_it_at_exit() {
    let r = read("forkwait");
    let (parent, children) = (threads(&r.recs, "forkmain"), threads(&r.recs, "child"));
    assert_eq!(
        (parent.len(), children.len()),
        (1, 2),
        "{parent:?} {children:?}"
    );
    for child in &children {
        // Its first record is the fork's link from the parent.
        let first = r.recs.iter().find(|x| x.sm == *child).expect("child");
        assert!(
            matches!(&first.kind, Kind::Recv(_, s) if s == "runnable"),
            "{first:?}"
        );
        assert_eq!(links(&r.recs, parent[0], child, "runnable").len(), 1);
        // Its life ends, and its exit wakes the waiting parent.
        let last = r.recs.iter().rev().find(|x| x.sm == *child).expect("child");
        assert_eq!(last.kind, Kind::End, "{last:?}");
        assert!(!links(&r.recs, child, parent[0], "runnable").is_empty());
    }
}

#[test]
fn a_worker_competing_with_hogs_waits_runnable() {
    let r = read("contend");
    let worker = threads(&r.recs, "worker");
    assert_eq!(worker.len(), 1, "{worker:?}");
    assert_eq!(threads(&r.recs, "hog").len(), 2);
    let a = analyze("contend");
    let (runnable, _) = row(&a, worker[0], "runnable");
    let (running, _) = row(&a, worker[0], "running");
    assert!(running >= 15 * MS, "{running} ns running");
    assert!(runnable >= MS, "{runnable} ns runnable");
}

/// A thread waiting for a CPU another thread held has that wait charged to
/// the holder: each `held` point of the worker comes while it is runnable
/// (after it became runnable, at or before its switch-in), names a thread
/// (never an interrupt) in a running state, and some name a hog. No link
/// joins the waiter and the holder.
#[test]
fn a_thread_waiting_for_a_held_cpu_has_its_wait_charged_to_the_holder() {
    let r = read("contend");
    let worker = threads(&r.recs, "worker")[0];
    let hogs = threads(&r.recs, "hog");
    let mut by_hog = 0;
    let mut runnable = false;
    for x in r.recs.iter().filter(|x| x.sm == worker) {
        match &x.kind {
            Kind::Recv(_, s) | Kind::State(s) => runnable = s == "runnable",
            Kind::Wait(_) | Kind::End => runnable = false,
            Kind::Held(on, on_state) => {
                assert!(runnable, "a held point outside a wait for a CPU: {x:?}");
                assert!(
                    matches!(OsSm::parse(on), Some(OsSm::Thread { .. })),
                    "{x:?}"
                );
                assert!(
                    matches!(
                        os_state(on_state),
                        OsState::Running
                            | OsState::Function(_)
                            | OsState::Syscall { .. }
                            | OsState::Interrupted(_)
                    ),
                    "{x:?}"
                );
                assert_ne!(on, worker);
                by_hog += usize::from(hogs.contains(&on.as_str()));
            }
            Kind::Send(_) => {}
        }
        assert!(!x.waited, "no waited recv: {x:?}");
    }
    assert!(by_hog >= 1, "no wait of the worker is charged to a hog");
}

/// Over the worker's own life, the hogs that held its CPU hold critical
/// time, and the worker's runnable row blames them.
#[test]
fn the_hogs_hold_the_time_the_worker_waited_for_a_cpu() {
    let r = read("contend");
    let worker = threads(&r.recs, "worker")[0].to_string();
    let a = analyze_with(
        "contend",
        critpath_engine::Options {
            from: Some(worker.clone()),
            to: Some(worker.clone()),
            ..Default::default()
        },
    );
    let hogs: u64 = a
        .states
        .iter()
        .filter(|s| s.sm.starts_with("hog:") && s.state == "running")
        .map(|s| s.critical_ns)
        .sum();
    assert!(hogs >= MS, "hogs hold {hogs} ns of the worker's path");
    let runnable = a
        .states
        .iter()
        .find(|s| s.sm == worker && s.state == "runnable")
        .expect("the worker waited for a CPU");
    assert!(
        runnable.blame.iter().any(|b| b.sm.starts_with("hog:")),
        "{runnable:?}"
    );
}

/// A wait for a CPU is charged to threads only: on every fixture, each
/// `held` point is a thread's and names a thread, never an interrupt SM
/// (an interrupt is never a CPU's holder), and no interrupt SM receives a
/// link a thread sent.
#[test]
fn cpu_waits_are_charged_to_threads_only() {
    for name in ALL {
        let r = read(name);
        let sent = senders(&r.recs);
        for x in &r.recs {
            if let Kind::Held(on, _) = &x.kind {
                for sm in [x.sm.as_str(), on.as_str()] {
                    assert!(
                        matches!(OsSm::parse(sm), Some(OsSm::Thread { .. })),
                        "{name}: {x:?}"
                    );
                }
            }
            let Kind::Recv(l, _) = &x.kind else { continue };
            let Some(&(from, _)) = sent.get(l) else {
                continue;
            };
            let from_thread = matches!(OsSm::parse(from), Some(OsSm::Thread { .. }));
            let to_irq = matches!(OsSm::parse(base(&x.sm)), Some(OsSm::Irq(_)));
            assert!(!(from_thread && to_irq), "{name}: {x:?} from {from}");
        }
    }
}

#[test]
fn probed_functions_are_running_states_of_their_thread() {
    let a = analyze("functions");
    let sm = a.critical_path.start.sm.clone();
    let (compute, _) = row(&a, &sm, &OsState::Function("compute").to_string());
    let (parse, _) = row(&a, &sm, &OsState::Function("parse").to_string());
    // 3 x (2 ms of parse + 8 ms of compute), on the CPU or waiting for it.
    assert!(parse >= 3 * MS, "{parse} ns in parse");
    assert!(compute > parse, "{compute} ns in compute");
}

#[test]
fn system_calls_name_the_running_segments_inside_them() {
    let r = read("pingpong_syscalls");
    let calls: Vec<String> = r
        .recs
        .iter()
        .filter_map(|x| match &x.kind {
            Kind::State(s) => match os_state(s) {
                OsState::Syscall { name, .. } => Some(name.to_string()),
                _ => None,
            },
            _ => None,
        })
        .collect();
    for call in ["read", "write"] {
        assert!(calls.iter().any(|c| c == call), "no {call} in {calls:?}");
    }
}

#[test]
fn an_interrupt_never_depends_on_the_thread_it_interrupts() {
    for name in ALL {
        let r = read(name);
        let sent = senders(&r.recs);
        for x in &r.recs {
            // A hard-IRQ handler has no cause the trace knows.
            if matches!(OsSm::parse(base(&x.sm)), Some(OsSm::Irq(_))) {
                assert!(!matches!(x.kind, Kind::Recv(..)), "{name}: {x:?}");
            }
            // The thread it interrupts sends the interrupt SM nothing then.
            let Kind::State(s) = &x.kind else { continue };
            let Some(OsState::Interrupted(by)) = OsState::parse(s) else {
                continue;
            };
            let by = by.to_string();
            let hung_on_thread = r.recs.iter().any(|y| {
                base(&y.sm) == by
                    && y.t == x.t
                    && matches!(y.kind, Kind::Recv(l, _) if sent.get(&l) == Some(&(x.sm.as_str(), x.t)))
            });
            assert!(!hung_on_thread, "{name}: {x:?}");
        }
    }
}

#[test]
fn blocked_states_say_why() {
    let r = read("sleep3");
    let waits: Vec<OsState> = r
        .recs
        .iter()
        .filter_map(|x| match &x.kind {
            Kind::Wait(s) => Some(os_state(s)),
            _ => None,
        })
        .collect();
    assert!(waits.contains(&OsState::Blocked(Blocked::Sleep)));
    assert!(
        waits.iter().all(|w| matches!(w, OsState::Blocked(_))),
        "{waits:?}"
    );
}

#[test]
fn inferred_transitions_are_counted_in_one_diagnostic() {
    let mut any = false;
    for name in ALL {
        let r = read(name);
        let d = r
            .summary
            .diagnostics
            .iter()
            .find(|d| d.kind.as_str() == "inferred-transition");
        match d {
            Some(d) => assert_eq!(d.count, Some(r.inferred), "{name}"),
            None => assert_eq!(r.inferred, 0, "{name}"),
        }
        any |= r.inferred > 0;
    }
    // Some recordings lose a wakeup (an idle CPU's events).
    assert!(any, "no fixture has an inferred transition");
}
