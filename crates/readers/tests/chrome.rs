//! The Chrome / Perfetto importer: slices, flows, the unterminated array,
//! and the events it cannot use, each reported with its index, line and
//! field.

mod common;

use common::*;
use critpath_readers::chrome;
use critpath_trace::Location;

#[test]
fn reads_the_object_form() {
    let mut src = chrome::read(&bytes("chrome.json")[..], "chrome.json").unwrap();
    let (recs, errs) = drain(&mut src);
    assert!(errs.is_empty(), "{errs:?}");
    let lines = text(&recs, &src);
    assert!(lines
        .iter()
        .any(|l| l.contains(r#""ev":"call","sm":"reader","fn":"read block""#)));
    assert!(lines.iter().any(|l| l.contains(r#""ev":"send""#)));
    assert!(recs.windows(2).all(|w| w[0].t <= w[1].t));
}

#[test]
fn an_array_without_its_closing_bracket_is_read_whole() {
    let body = bytes("chrome-array.json");
    assert!(!String::from_utf8_lossy(&body).contains(']'));
    let mut src = chrome::read(&body[..], "a.json").unwrap();
    let (recs, errs) = drain(&mut src);
    assert!(errs.is_empty(), "{errs:?}");
    let lines = text(&recs, &src);
    // handle 10-25 on thread 2, after the flow from A.
    assert!(
        lines.contains(&r#"{"t":25000,"ev":"ret","sm":"1:2","fn":"handle"}"#.to_string()),
        "{lines:#?}"
    );
    assert!(lines.iter().any(|l| l.contains(r#""ev":"recv""#)));
}

#[test]
fn events_it_cannot_use_are_reported_with_index_line_and_field() {
    let body = r#"{"traceEvents": [
{"ph":"X","name":"ok","pid":1,"tid":1,"ts":0,"dur":10},
{"ph":"X","name":"no dur","pid":1,"tid":1,"ts":20},
{"ph":"X","name":"string ts","pid":1,"tid":1,"ts":"30","dur":1},
{"ph":"s","pid":1,"tid":1,"ts":40},
{"ph":"E","pid":1,"tid":3,"ts":50},
{"name":"no phase"},
17
]}"#;
    let mut src = chrome::read(body.as_bytes(), "bad.json").unwrap();
    let (recs, errs) = drain(&mut src);
    let want = [
        (3, "traceEvents[1]", "`dur`"),
        (4, "traceEvents[2]", "`ts` = \"30\""),
        (5, "traceEvents[3]", "`id`"),
        (6, "traceEvents[4]", "no open `B`"),
        (7, "traceEvents[5]", "`ph`"),
        (8, "traceEvents[6]", "expected an event"),
    ];
    assert_eq!(errs.len(), want.len(), "{errs:?}");
    for (e, (line, at, field)) in errs.iter().zip(want) {
        assert_eq!(e.location, Location::Line(line), "{e}");
        assert!(
            e.message.starts_with(at) && e.message.contains(field),
            "{e}"
        );
        assert!(!e.fatal && e.file == "bad.json");
    }
    // The good slice is still there.
    assert_eq!(text(&recs, &src).len(), 3);
}

#[test]
fn an_end_before_its_begin_a_name_not_a_string_and_a_time_past_the_limit_are_said() {
    let body = r#"{"traceEvents": [
{"ph":"B","name":"x","pid":1,"tid":1,"ts":100},
{"ph":"E","pid":1,"tid":1,"ts":50},
{"ph":"X","name":{"n":1},"pid":1,"tid":1,"ts":200,"dur":5},
{"ph":"X","name":null,"pid":1,"tid":1,"ts":210,"dur":5},
{"ph":"X","pid":1,"tid":1,"ts":9300000000000000.0,"dur":1},
{"ph":"E","pid":1,"tid":1,"ts":300}
]}"#;
    let mut src = chrome::read(body.as_bytes(), "bad.json").unwrap();
    let (recs, errs) = drain(&mut src);
    let want = [
        (
            3,
            "traceEvents[1]",
            "earlier than the begin it would end (ts 100000 ns); skipped",
        ),
        (
            4,
            "traceEvents[2]",
            "field `name` = {\"n\":1} is not a string; the slice is named `?`",
        ),
        (5, "traceEvents[3]", "field `name` = null is not a string"),
        (
            6,
            "traceEvents[4]",
            "past the latest time (9223372036854775807 ns",
        ),
    ];
    assert_eq!(errs.len(), want.len(), "{errs:?}");
    for (e, (line, at, what)) in errs.iter().zip(want) {
        assert_eq!(e.location, Location::Line(line), "{e}");
        assert!(e.message.starts_with(at) && e.message.contains(what), "{e}");
    }
    // The begin is ended by the later `E`; the two slices named `?` are kept.
    let lines = text(&recs, &src);
    assert!(
        lines.contains(&r#"{"t":300000,"ev":"ret","sm":"1:1","fn":"x"}"#.to_string()),
        "{lines:#?}"
    );
    assert_eq!(
        lines.iter().filter(|l| l.contains(r#""fn":"?""#)).count(),
        4,
        "{lines:#?}"
    );
}

#[test]
fn a_cut_object_keeps_the_events_before_the_cut() {
    let body = "{\"traceEvents\": [\n{\"ph\":\"X\",\"name\":\"a\",\"ts\":0,\"dur\":5},\n{\"ph\":\"X\",\"na";
    let mut src = chrome::read(body.as_bytes(), "cut.json").unwrap();
    let (recs, errs) = drain(&mut src);
    assert_eq!(errs.len(), 1);
    assert!(errs[0].message.contains("ends early"), "{}", errs[0]);
    assert_eq!(recs.len(), 3);
    // Nothing whole before the cut: a fatal error.
    let e = chrome::read(&b"{\"traceEvents\": [{\"ph\":"[..], "c.json")
        .err()
        .unwrap();
    assert!(e.fatal && e.message.contains("Chrome/Perfetto"));
}

#[test]
fn an_empty_event_array_is_found_and_said_to_hold_no_slices() {
    let e = chrome::read(&b"{\"traceEvents\": [ ]}"[..], "empty.json")
        .err()
        .unwrap();
    assert!(e.fatal && e.message.contains("holds no slices"), "{e}");
    let e = chrome::read(&b"{\"other\": 1}"[..], "none.json")
        .err()
        .unwrap();
    assert!(e.message.contains("`traceEvents` array"), "{e}");
}

/// The send and recv records of a trace's flows, as (time, ev, sm, id).
fn links(body: &str) -> Vec<(u64, String, String, String)> {
    let mut src = chrome::read(body.as_bytes(), "flow.json").unwrap();
    let (recs, errs) = drain(&mut src);
    assert!(errs.is_empty(), "{errs:?}");
    text(&recs, &src)
        .iter()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|v| v["ev"] == "send" || v["ev"] == "recv")
        .map(|v| {
            let s = |k: &str| v[k].as_str().map_or(v[k].to_string(), str::to_string);
            (v["t"].as_u64().unwrap(), s("ev"), s("sm"), s("id"))
        })
        .collect()
}

#[test]
fn a_flow_step_receives_the_hop_before_it_and_sends_the_next() {
    let names = r#"{"ph":"M","name":"thread_name","pid":1,"tid":1,"args":{"name":"consumer"}},
{"ph":"M","name":"thread_name","pid":1,"tid":2,"args":{"name":"producer"}},
{"ph":"M","name":"thread_name","pid":1,"tid":3,"args":{"name":"sink"}},
{"ph":"X","name":"work","pid":1,"tid":1,"ts":30,"dur":5},
{"ph":"X","name":"work","pid":1,"tid":2,"ts":32,"dur":5},
{"ph":"X","name":"work","pid":1,"tid":3,"ts":34,"dur":5}"#;
    // s on consumer, t on producer: the step receives the consumer's send,
    // then sends the next hop (so the next hop carries what it received).
    let body = format!(
        r#"{{"traceEvents":[{names},
{{"ph":"s","cat":"q","id":"0x2","pid":1,"tid":1,"ts":31}},
{{"ph":"t","cat":"q","id":"0x2","pid":1,"tid":2,"ts":33}}]}}"#
    );
    let l = |t, ev: &str, sm: &str, id: &str| (t, ev.into(), sm.into(), id.into());
    assert_eq!(
        links(&body),
        [
            l(31000, "send", "consumer", "flow:q:0x2"),
            l(33000, "recv", "producer", "flow:q:0x2"),
            l(33000, "send", "producer", "flow:q:0x2#1"),
        ]
    );
    // s → t → t → f, each hop its own link, numeric ids too.
    let body = format!(
        r#"{{"traceEvents":[{names},
{{"ph":"s","cat":"q","id":7,"pid":1,"tid":1,"ts":31}},
{{"ph":"t","cat":"q","id":7,"pid":1,"tid":2,"ts":33}},
{{"ph":"t","cat":"q","id":7,"pid":1,"tid":1,"ts":34}},
{{"ph":"f","cat":"q","id":7,"pid":1,"tid":3,"ts":36}}]}}"#
    );
    assert_eq!(
        links(&body),
        [
            l(31000, "send", "consumer", "flow:q:7"),
            l(33000, "recv", "producer", "flow:q:7"),
            l(33000, "send", "producer", "flow:q:7#1"),
            l(34000, "recv", "consumer", "flow:q:7#1"),
            l(34000, "send", "consumer", "flow:q:7#2"),
            l(36000, "recv", "sink", "flow:q:7#2"),
        ]
    );
}

/// Flow ids that are strings, each met once, are named beside the slices
/// but are no states: more of them than the limit of distinct names of
/// slices and tracks (250,000) are read, every one linked.
#[test]
fn distinct_string_flow_ids_do_not_count_as_names() {
    let n = 260_000u64;
    let mut body = String::from("{\"traceEvents\":[\n");
    for i in 0..n {
        let t = i * 10;
        body.push_str(&format!(
            "{{\"ph\":\"X\",\"name\":\"a\",\"pid\":1,\"tid\":1,\"ts\":{t},\"dur\":2}},\n\
             {{\"ph\":\"s\",\"name\":\"h\",\"cat\":\"c\",\"id\":\"m-{i}\",\"pid\":1,\"tid\":1,\"ts\":{}}},\n\
             {{\"ph\":\"X\",\"name\":\"b\",\"pid\":1,\"tid\":2,\"ts\":{},\"dur\":2}},\n\
             {{\"ph\":\"f\",\"bp\":\"e\",\"name\":\"h\",\"cat\":\"c\",\"id\":\"m-{i}\",\"pid\":1,\"tid\":2,\"ts\":{}}},\n",
            t + 1,
            t + 5,
            t + 5
        ));
    }
    body.push_str("{\"ph\":\"X\",\"name\":\"a\",\"pid\":1,\"tid\":1,\"ts\":1,\"dur\":1}]}\n");
    let mut src = chrome::read(body.as_bytes(), "flows.json").unwrap();
    let (recs, errs) = drain(&mut src);
    assert!(errs.is_empty(), "{errs:?}");
    let count = |send: bool| {
        recs.iter()
            .filter(|r| match r.ev {
                critpath_trace::Event::Send { .. } => send,
                critpath_trace::Event::Recv { .. } => !send,
                _ => false,
            })
            .count() as u64
    };
    let (sends, recvs) = (count(true), count(false));
    assert_eq!((sends, recvs), (n, n));
}
