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

/// The message for the one line of `line` after a good first line.
fn message_for(line: &str) -> String {
    let body = format!("{{\"t\":0,\"sm\":\"a\",\"ev\":\"state\",\"state\":\"x\"}}\n{line}\n");
    let (_, errs) = read(&body);
    assert_eq!(errs.len(), 1, "{line}: {errs:?}");
    assert_eq!(errs[0].location, Location::Line(2));
    assert!(!errs[0].fatal);
    errs[0].message.clone()
}

#[test]
fn a_field_of_the_wrong_type_is_named_with_what_it_holds() {
    let cases = [
        (
            r#"{"t":"5","sm":"a","ev":"state","state":"x"}"#,
            r#"field "t": expected a non-negative integer (nanoseconds), found the string "5""#,
        ),
        (
            r#"{"t":5,"sm":"a","ev":"wait","state":"x","on":7}"#,
            r#"field "on": expected a string, found the number 7"#,
        ),
        (
            r#"{"t":5,"sm":"a","ev":"send","id":1.5}"#,
            r#"field "id": expected a non-negative integer or a string, found the number 1.5"#,
        ),
        (
            r#"{"t":5,"sm":"a","ev":"send","id":{}}"#,
            r#"field "id": expected a non-negative integer or a string, found an object"#,
        ),
        (
            r#"{"t":5,"sm":"a","ev":"recv","id":true,"state":"x"}"#,
            r#"field "id": expected a non-negative integer or a string, found true"#,
        ),
        (
            r#"{"t":5,"sm":7,"ev":"state","state":"x"}"#,
            r#"field "sm": expected a string, found the number 7"#,
        ),
        (
            r#"{"t":5,"sys":5,"sm":"a","ev":"state","state":"x"}"#,
            r#"field "sys": expected a string, found the number 5"#,
        ),
        (
            r#"{"t":5,"sm":"a","ev":"state","state":["x"]}"#,
            r#"field "state": expected a string, found an array"#,
        ),
        (
            r#"{"t":5,"sm":"a","ev":"wait","state":"x","on":"b","on_state":7}"#,
            r#"field "on_state": expected a string, found the number 7"#,
        ),
        (
            r#"{"t":5,"sm":"a","ev":5}"#,
            r#"field "ev": expected a string, one of state, wait,"#,
        ),
        (
            r#"{"t":5,"cpu":-1,"ev":"state","state":"x"}"#,
            r#"field "cpu": expected a non-negative integer or a string, found the number -1"#,
        ),
        (
            r#"{"t":5,"sm":"a","ev":"recv","id":1,"state":"x","waited":1}"#,
            r#"field "waited": expected true or false, found the number 1"#,
        ),
        (
            "null",
            "expected a JSON object (a record, docs/formats.md), found null",
        ),
        (
            r#""""#,
            r#"expected a JSON object (a record, docs/formats.md), found the string """#,
        ),
        (
            "[1]",
            "expected a JSON object (a record, docs/formats.md), found an array",
        ),
        (r#"{"t":5,"t":6}"#, r#"field "t" appears twice"#),
    ];
    for (line, says) in cases {
        let m = message_for(line);
        assert!(m.starts_with(says), "{line}: {m}");
        assert!(
            !m.contains("invalid type") && !m.contains("struct Line"),
            "{m}"
        );
    }
    // A syntax error still gives the column.
    assert!(message_for(r#"{"t":5,"sm""#).contains("(column "));
}

#[test]
fn a_line_nested_past_serde_jsons_limit_is_refused_whichever_field_holds_it() {
    let nested = |d: usize| format!("{}{}", "[".repeat(d), "]".repeat(d));
    // (How deep, when serde_json read the line; past 128 levels, at which
    // column, when it refused it.)
    let says = |m: &str| m.starts_with("values nested ") && m.contains(" levels deep");
    // An unknown field, an unused field of the wrong type beside it, an
    // unused field: each line is refused, as serde_json refuses to read
    // it as JSON.
    for line in [
        format!(
            r#"{{"t":5,"sm":"a","ev":"state","state":"x","x":{}}}"#,
            nested(100_000)
        ),
        format!(
            r#"{{"t":5,"sm":"a","ev":"state","state":"x","x":{},"waited":1}}"#,
            nested(100_000)
        ),
        format!(r#"{{"t":5,"sm":"a","ev":"end","id":{}}}"#, nested(200)),
    ] {
        let m = message_for(&line);
        assert!(says(&m), "{m}");
    }
    // Up to the limit, an unknown field holds what it likes; past it, the
    // line is refused exactly where serde_json refuses to read it.
    for d in 120..140 {
        let line = format!(
            r#"{{"t":5,"sm":"a","ev":"state","state":"x","x":{}}}"#,
            nested(d)
        );
        let json = serde_json::from_slice::<serde_json::Value>(line.as_bytes());
        let body = format!("{{\"t\":0,\"sm\":\"a\",\"ev\":\"state\",\"state\":\"x\"}}\n{line}\n");
        let (recs, errs) = read(&body);
        assert_eq!(errs.is_empty(), json.is_ok(), "{d}: {errs:?}");
        assert_eq!(recs.len(), 1 + json.is_ok() as usize, "{d}");
    }
}

#[test]
fn fields_a_kind_does_not_use_are_ignored_whatever_they_hold() {
    let body = "{\"t\":1,\"sm\":\"a\",\"ev\":\"end\",\"id\":{}}\n\
                {\"t\":2,\"sm\":\"a\",\"ev\":\"state\",\"state\":\"x\",\"on\":[1],\"waited\":\"no\",\"fn\":null}\n\
                {\"t\":3,\"sm\":\"a\",\"thread\":{},\"ev\":\"state\",\"state\":\"y\"}\n\
                {\"t\":4,\"ev\":\"switch\",\"cpu\":1,\"thread\":2,\"sm\":5}\n\
                {\"t\":5,\"sm\":\"a\",\"ev\":\"state\",\"state\":\"x\\u0041\",\"x\":{}}\n";
    let (recs, errs) = read(body);
    assert!(errs.is_empty(), "{errs:?}");
    assert_eq!(
        recs,
        [
            r#"{"t":1,"ev":"end","sm":"a"}"#,
            r#"{"t":2,"ev":"state","sm":"a","state":"x"}"#,
            r#"{"t":3,"ev":"state","sm":"a","state":"y"}"#,
            r#"{"t":4,"ev":"switch","cpu":1,"thread":2}"#,
            r#"{"t":5,"ev":"state","sm":"a","state":"xA"}"#,
        ]
    );
    // The subject is the first of sm, thread, cpu the line has: a bad one
    // is not passed over.
    let m = message_for(r#"{"t":5,"thread":1.5,"cpu":1,"ev":"state","state":"x"}"#);
    assert!(m.starts_with(r#"field "thread": "#), "{m}");
}
