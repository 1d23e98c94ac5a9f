//! The SDK annotation reader on a small committed file of two threads'
//! blocks: names, merged time order, and damage.

mod common;

use common::*;
use critpath_readers::annot::{Annot, AnnotReader};

#[test]
fn reads_blocks_merged_in_time_order() {
    let mut r = AnnotReader::open(&fixture("annot.bin")).unwrap();
    assert!(r.problems.is_empty());
    assert_eq!(r.facts.threads.get(&11).map(String::as_str), Some("main"));
    assert_eq!(r.facts.threads.get(&12).map(String::as_str), Some("helper"));
    let mut seen = Vec::new();
    while let Some(a) = r.next_annotation() {
        seen.push((a.t, a.tid, a.what.to_owned_text()));
    }
    assert!(seen.windows(2).all(|w| w[0].0 <= w[1].0), "{seen:?}");
    assert_eq!(seen.len(), 9);
    assert_eq!(seen[0], (1000, 11, "begin job".to_string()));
    assert!(seen.contains(&(4200, 12, "recv 7".to_string())));
}

#[test]
fn damage_is_reported_and_skipped() {
    let mut body = bytes("annot.bin");
    body.splice(0..0, *b"junk");
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("a.bin");
    std::fs::write(&p, &body[..body.len() - 3]).unwrap();
    let mut r = AnnotReader::open(&p).unwrap();
    let mut n = 0;
    while r.next_annotation().is_some() {
        n += 1;
    }
    assert!(r.problems.len() >= 2, "{:?}", r.problems);
    assert!(r.problems.iter().any(|(_, cut)| *cut));
    assert!(n >= 5);
}

trait Text {
    fn to_owned_text(&self) -> String;
}

impl Text for Annot<'_> {
    fn to_owned_text(&self) -> String {
        match *self {
            Annot::BeginSm(s) => format!("begin {s}"),
            Annot::EndSm(s) => format!("end {s}"),
            Annot::State(s) => format!("state {s}"),
            Annot::Wait { state, .. } => format!("wait {state}"),
            Annot::Send(id) => format!("send {id}"),
            Annot::Recv { id, .. } => format!("recv {id}"),
            Annot::Exit => "exit".to_string(),
        }
    }
}

/// A state record (kind 3) at `t` named by the bytes `name`, or with no
/// name (length 0xffff) for `None`.
fn state(t: u64, name: Option<&[u8]>) -> Vec<u8> {
    let mut r = vec![3];
    r.extend(t.to_le_bytes());
    match name {
        Some(n) => {
            r.extend((n.len() as u16).to_le_bytes());
            r.extend(n);
        }
        None => r.extend(0xffffu16.to_le_bytes()),
    }
    r
}

/// A block of thread 7 of process 1 holding `records`.
fn block(records: &[Vec<u8>]) -> Vec<u8> {
    let body = records.concat();
    let mut b = b"CPAB".to_vec();
    b.extend((body.len() as u32).to_le_bytes());
    b.extend(1u32.to_le_bytes());
    b.extend(7u32.to_le_bytes());
    b.extend(body);
    b
}

/// A reader of the annotation file `file` (written to a directory that
/// lives as long as the reader is used).
fn reader_of(file: &[u8]) -> (tempfile::TempDir, AnnotReader) {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("a.annot");
    std::fs::write(&p, file).unwrap();
    let r = AnnotReader::open(&p).unwrap();
    (dir, r)
}

/// The states read from `file`, in order, and the reader.
fn states_of(file: &[u8]) -> (Vec<(u64, String)>, AnnotReader) {
    let (_dir, mut r) = reader_of(file);
    let mut seen = Vec::new();
    while let Some(a) = r.next_annotation() {
        if let Annot::State(s) = a.what {
            seen.push((a.t, s.to_string()));
        }
    }
    (seen, r)
}

/// A write cut short by a full disk leaves part of a block, and the next
/// block (saying how many events were dropped) follows it: the part's
/// whole records are read, the cut is named where it is, and the next
/// block is read whole.
#[test]
fn a_block_cut_short_by_the_next_one_ends_where_that_one_starts() {
    let first = block(&[state(10, Some(b"even")), state(20, Some(b"odd"))]);
    let cut = block(&[state(30, Some(b"even")), state(40, Some(b"odd"))]);
    let mut lost = vec![8];
    lost.extend(7u64.to_le_bytes());
    let next = block(&[lost, state(50, Some(b"even"))]);
    // The cut block's write stopped inside the name "odd".
    let kept = cut.len() - 2;
    let file = [&first[..], &cut[..kept], &next[..]].concat();
    let (seen, r) = states_of(&file);
    let want: Vec<(u64, String)> = [(10, "even"), (20, "odd"), (30, "even"), (50, "even")]
        .map(|(t, s)| (t, s.to_string()))
        .to_vec();
    assert_eq!(seen, want);
    assert_eq!(r.facts.lost, 7, "the next block's count of dropped events");
    assert_eq!(r.problems.len(), 1, "{:?}", r.problems);
    let (e, cut_short) = &r.problems[0];
    let whole = first.len() + 16 + state(30, Some(b"even")).len();
    assert!(*cut_short);
    let msg = e.to_string();
    assert!(msg.contains(&format!("at byte offset {whole}")), "{msg}");
    let starts = first.len() + kept;
    assert!(
        msg.contains(&format!("a block that starts at byte offset {starts}")),
        "{msg}"
    );
}

/// Names that are not UTF-8 stay apart (U+FFFD in place of the bytes that
/// are not) and are counted; a record with no name where one is needed is
/// named by its kind, not called unknown.
#[test]
fn names_not_utf8_stay_apart_and_a_missing_name_is_named() {
    let file = block(&[
        state(10, Some(b"caf\xe9")),
        state(20, Some(b"na\xefve")),
        state(30, None),
        state(40, Some(b"after")),
    ]);
    let (seen, r) = states_of(&file);
    let names: Vec<&str> = seen.iter().map(|(_, s)| s.as_str()).collect();
    assert_eq!(names, ["caf\u{FFFD}", "na\u{FFFD}ve"]);
    assert_eq!(r.facts.not_utf8, Some((2, 16 + 1 + 8 + 2)));
    let msg = r.problems[0].0.to_string();
    assert!(msg.contains("record of kind 3 (state)"), "{msg}");
    assert!(!msg.contains("unknown"), "{msg}");
    let mut r = r;
    let kinds: Vec<_> = (critpath_readers::annot::summary(&mut r).diagnostics.iter())
        .map(|d| (d.kind, d.count))
        .collect();
    let not_utf8 = (critpath_trace::DiagnosticKind::LossyNames, Some(2));
    assert!(kinds.contains(&not_utf8), "{kinds:?}");
}

/// A thread's `exit` (kind 11) is read in time order as the thread's own,
/// even after records of an asyncio task in its block.
#[test]
fn an_exit_is_the_threads_after_a_tasks_records() {
    let mut task = vec![10];
    task.extend(99u64.to_le_bytes());
    task.extend(2u16.to_le_bytes());
    task.extend(b"tk");
    let mut exit = vec![11];
    exit.extend(50u64.to_le_bytes());
    let file = block(&[state(10, Some(b"a")), task, state(20, Some(b"b")), exit]);
    let (_dir, mut r) = reader_of(&file);
    let mut seen = Vec::new();
    while let Some(a) = r.next_annotation() {
        seen.push((a.t, a.task, a.what.to_owned_text()));
    }
    assert!(r.problems.is_empty(), "{:?}", r.problems);
    assert_eq!(
        seen,
        [
            (10, 0, "state a".to_string()),
            (20, 99, "state b".to_string()),
            (50, 0, "exit".to_string())
        ]
    );
}
