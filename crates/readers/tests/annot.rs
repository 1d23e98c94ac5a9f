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
        }
    }
}
