//! The JSONL reader and writer on a small committed trace and on bad lines.

mod common;

use common::*;
use critpath_readers::JsonlReader;
use critpath_trace::Location;
use std::io::Cursor;

fn read(text: &str) -> (Vec<String>, Vec<critpath_trace::ReadError>) {
    let mut r = JsonlReader::new(Cursor::new(text.as_bytes().to_vec()), "t.jsonl");
    let (recs, errs) = drain(&mut r);
    (text_of(&recs, &r), errs)
}

fn text_of(recs: &[critpath_trace::Record], r: &dyn critpath_trace::RecordSource) -> Vec<String> {
    text(recs, r)
}

#[test]
fn reads_the_fixture_and_writes_it_back_the_same() {
    let body = String::from_utf8(bytes("small.jsonl")).unwrap();
    let (recs, errs) = read(&body);
    assert!(errs.is_empty(), "{errs:?}");
    assert_eq!(recs.len(), 13);
    assert_eq!(
        recs[0],
        r#"{"t":0,"ev":"state","sm":"client","state":"prepare"}"#
    );
    assert_eq!(recs[9], r#"{"t":500,"ev":"call","thread":7,"fn":"log"}"#);
    // The canonical lines read back as themselves.
    let (again, errs) = read(&recs.join("\n"));
    assert!(errs.is_empty());
    assert_eq!(again, recs);
}

#[test]
fn bad_lines_name_the_line_and_the_field_and_are_skipped() {
    let body = "{\"t\":5,\"sm\":\"a\",\"ev\":\"state\",\"state\":\"x\"}\n\
                {\"t\":6,\"sm\":\"a\",\"ev\":\"state\"}\n\
                {\"t\":7,\"ev\":\"send\",\"sm\":\"a\"}\n\
                {\"t\":1,\"sm\":\"a\",\"ev\":\"end\"}\n\
                {\"t\":8,\"sm\":\"a\",\"ev\":\"j\\u0007mp\"}\n\
                not json\n\
                {\"t\":9,\"sm\":\"a\",\"ev\":\"end\"}\n";
    let (recs, errs) = read(body);
    assert_eq!(recs.len(), 2);
    let at: Vec<_> = errs.iter().map(|e| e.location.clone()).collect();
    assert_eq!(at, [2, 3, 4, 5, 6].map(Location::Line).to_vec(), "{errs:?}");
    assert!(errs.iter().all(|e| !e.fatal));
    assert!(errs[0].message.contains("missing field `state`"));
    assert!(errs[1].message.contains("missing field `id`"));
    assert!(errs[2].message.contains("time goes backwards"));
    // A control character in the input is escaped in the message.
    assert!(
        errs[3].message.contains(r#"unknown ev "j\u{7}mp""#),
        "{}",
        errs[3].message
    );
    assert!(!errs[3].message.contains('\u{7}'));
    assert!(errs[4].message.contains("column"));
}
