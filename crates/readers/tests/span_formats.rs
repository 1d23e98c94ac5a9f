//! The same spans in every form OpenTelemetry users have on disk (OTLP
//! JSON with hex or base64 ids, the file exporter's JSON lines, protobuf
//! `ExportTraceServiceRequest` alone or length-delimited, Zipkin v2 JSON),
//! written by the real OpenTelemetry Python SDK
//! (examples/spans/gen_otel_formats.py): each read gives the same
//! requests; damaged copies say where they are damaged and keep the rest.

mod common;

use common::*;
use critpath_readers::spans::{self, Requests};
use critpath_trace::{Location, ReadError};
use std::path::PathBuf;

const FORMS: [&str; 6] = [
    "otlp.json",
    "base64.json",
    "export.jsonl",
    "otlp.pb",
    "delimited.pb",
    "zipkin.json",
];

fn example(name: &str) -> Vec<u8> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/spans/otel");
    std::fs::read(dir.join(name)).unwrap()
}

fn requests(body: &[u8], name: &str) -> Requests {
    spans::read_requests(body, name).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// Each request's trace id and records as text.
fn by_request(r: &Requests) -> Vec<(String, Vec<String>)> {
    r.each()
        .map(|(id, one)| {
            let mut one = one.unwrap();
            let (recs, errs) = drain(&mut one);
            assert!(errs.is_empty(), "{errs:?}");
            (id, text(&recs, &one))
        })
        .collect()
}

#[test]
fn every_form_gives_the_same_requests() {
    let want = by_request(&requests(&example("otlp.json"), "otlp.json"));
    assert_eq!(want.len(), 3);
    assert_eq!(want[0].0, "5b8efff798038103d269b633813f0001");
    assert!(want[0].1.iter().any(|l| l.contains(r#""sm":"payment""#)));
    for name in FORMS {
        let r = requests(&example(name), name);
        assert!(r.problems().is_empty(), "{name}: {:?}", r.problems());
        assert_eq!(by_request(&r), want, "{name}");
    }
}

#[test]
fn ids_are_lowercase_hex_whatever_the_input_used() {
    let r = requests(&example("base64.json"), "base64.json");
    let ids: Vec<&str> = r.first_ids().collect();
    assert_eq!(ids[1], "5b8efff798038103d269b633813f0002");
    // Asked for in uppercase hex or in base64, the request is found.
    for asked in [
        "5B8EFFF798038103D269B633813F0002",
        "W47/95gDgQPSabYzgT8AAg==",
    ] {
        assert!(r.request(asked).is_some_and(|one| one.is_ok()), "{asked}");
    }
    assert!(r.request("5b8efff798038103d269b633813f0009").is_none());
}

fn varint(b: &[u8]) -> (usize, usize) {
    let mut v = 0;
    for (i, &byte) in b.iter().enumerate() {
        v |= usize::from(byte & 0x7f) << (7 * i);
        if byte < 0x80 {
            return (v, i + 1);
        }
    }
    panic!("no varint")
}

fn spans_read(r: &Requests) -> usize {
    by_request(r)
        .iter()
        .map(|(_, lines)| {
            lines
                .iter()
                .filter(|l| l.contains(r#""ev":"call""#))
                .count()
        })
        .sum()
}

#[test]
fn a_damaged_line_of_json_lines_loses_that_line_only() {
    let body = String::from_utf8(example("export.jsonl")).unwrap();
    let lines: Vec<&str> = body.lines().collect();
    assert_eq!(lines.len(), 4);
    // Line 2 cut in the middle, line 3 with garbage: lines 1 and 4 are read.
    let cut = &lines[1][..lines[1].len() / 2];
    let damaged = format!(
        "{}\n{cut}\n{{\"resourceSpans\": x}}\n{}\n",
        lines[0], lines[3]
    );
    let r = requests(damaged.as_bytes(), "d.jsonl");
    let problems: Vec<&ReadError> = r.problems().iter().collect();
    assert_eq!(problems.len(), 2, "{problems:?}");
    // Line 2 is the one cut (inside a string, which its newline ends).
    assert_eq!(problems[0].location, Location::Line(2), "{}", problems[0]);
    assert!(problems[0].message.contains("corrupt"), "{}", problems[0]);
    assert!(
        problems[0].message.contains("goes on at line 3"),
        "{}",
        problems[0]
    );
    assert_eq!(problems[1].location, Location::Line(3), "{}", problems[1]);
    assert!(
        problems[1].message.contains("goes on at line 4"),
        "{}",
        problems[1]
    );
    // frontend (3 spans) and payment (3 spans).
    assert_eq!(spans_read(&r), 6);
}

#[test]
fn damaged_protobuf_names_the_byte_offset_and_keeps_the_rest() {
    let pb = example("otlp.pb");
    // Cut short: the resource spans before the cut are read.
    let cut = &pb[..pb.len() - 100];
    let r = requests(cut, "cut.pb");
    let last = r.problems().last().unwrap();
    assert!(
        matches!(last.location, Location::Offset(at) if at < cut.len() as u64),
        "{last}"
    );
    assert!(last.message.contains("end early at byte"), "{last}");
    assert!(spans_read(&r) >= 9, "{}", spans_read(&r));
    // One message of the delimited file damaged inside: it alone is lost.
    let mut d = example("delimited.pb");
    let (len0, n0) = varint(&d);
    let second = n0 + len0;
    let (_, n1) = varint(&d[second..]);
    // The second message's first resource spans (tag, length, body): the
    // first field of its body becomes a group, which `resource` is not.
    let body = second + n1 + 1 + varint(&d[second + n1 + 1..]).1;
    assert_eq!(d[body], 0x0a);
    d[body] = 0x0b;
    let r = requests(&d, "d.pb");
    assert_eq!(r.problems().len(), 1, "{:?}", r.problems());
    let p = &r.problems()[0];
    assert!(matches!(p.location, Location::Offset(_)), "{p}");
    assert!(p.message.starts_with("message 1: resourceSpans[0]"), "{p}");
    assert_eq!(spans_read(&r), 9);
    // Garbage named .pb is refused with where it went wrong.
    let e = spans::read_requests(&b"\x0a\x05ab"[..], "x.pb")
        .err()
        .unwrap();
    assert!(e.to_string().contains("byte"), "{e}");
}

#[test]
fn each_form_is_told_from_its_content() {
    for name in FORMS {
        let body = example(name);
        let head = &body[..body.len().min(8192)];
        let text = String::from_utf8_lossy(head);
        let is_spans = spans::looks_like(&text) || spans::looks_like_protobuf(head, true, "x");
        assert!(is_spans, "{name}");
    }
    assert!(!spans::looks_like_protobuf(
        b"{\"resourceSpans\":[]}",
        true,
        "a.pb"
    ));
    assert!(spans::looks_like_protobuf(b"\x0a\x00", true, "a.binpb"));
}

#[test]
fn spans_of_one_trace_in_several_files_are_one_request() {
    let want = by_request(&requests(&example("otlp.json"), "otlp.json"));
    // frontend and cart in a JSON lines file, db and payment in protobuf.
    let lines = String::from_utf8(example("export.jsonl")).unwrap();
    let a: String = lines.lines().take(2).map(|l| format!("{l}\n")).collect();
    let delimited = example("delimited.pb");
    let (len0, n0) = varint(&delimited);
    let (len1, n1) = varint(&delimited[n0 + len0..]);
    let b = &delimited[n0 + len0 + n1 + len1..];
    let inputs: Vec<(&[u8], String)> = vec![(a.as_bytes(), "a.jsonl".into()), (b, "b.pb".into())];
    let r = spans::read_requests_of(inputs).unwrap();
    assert!(r.problems().is_empty(), "{:?}", r.problems());
    assert_eq!(by_request(&r), want);
    // Each file alone holds parts of the requests only.
    let alone = by_request(&requests(a.as_bytes(), "a.jsonl"));
    assert_eq!(alone.len(), 3);
    assert_ne!(alone, want);
}

/// An OTLP document of `n` requests, each a frontend span calling a cart
/// span, spread over two resources (so the spans of a request are apart).
fn many_requests(n: usize) -> Vec<u8> {
    let span = |t: usize, s: usize, parent: Option<usize>, start: u64, end: u64| {
        let p = parent.map_or(String::new(), |p| format!(r#""parentSpanId":"{p:016x}","#));
        format!(
            r#"{{"traceId":"{t:032x}","spanId":"{s:016x}",{p}"name":"op{s}","kind":2,"attributes":[{{"key":"k","value":{{"intValue":"1"}}}}],"startTimeUnixNano":"{start}","endTimeUnixNano":"{end}"}}"#
        )
    };
    let resource = |svc: &str, spans: Vec<String>| {
        format!(
            r#"{{"resource":{{"attributes":[{{"key":"service.name","value":{{"stringValue":"{svc}"}}}}]}},"scopeSpans":[{{"spans":[{}]}}]}}"#,
            spans.join(",")
        )
    };
    let t0 = 1_700_000_000_000_000_000u64;
    let front = (1..=n).map(|t| span(t, 2 * t, None, t0, t0 + 1000 + t as u64));
    let cart = (1..=n).map(|t| span(t, 2 * t + 1, Some(2 * t), t0 + 10, t0 + 500));
    let doc = format!(
        r#"{{"resourceSpans":[{},{}]}}"#,
        resource("frontend", front.collect()),
        resource("cart", cart.collect())
    );
    doc.into_bytes()
}

#[test]
fn requests_analyzed_on_several_threads_come_back_in_order() {
    // 70,000 requests: 140,000 spans, more than the sort keeps in memory,
    // so the grouped spans are read back from disk.
    for n in [100, 1000, 70_000] {
        let r = requests(&many_requests(n), "many.json");
        assert_eq!(r.len(), n);
        let want = by_request(&r);
        for workers in [1, 2, 3] {
            let got = r.map(workers, |id, one| {
                let mut one = one.unwrap();
                let (recs, errs) = drain(&mut one);
                assert!(errs.is_empty(), "{errs:?}");
                (id, text(&recs, &one))
            });
            assert_eq!(got.len(), n, "{n} requests, {workers} workers");
            assert!(got == want, "{n} requests, {workers} workers: not the same");
        }
    }
}

#[test]
fn a_panic_in_every_worker_ends_the_hand_out() {
    // 1,000 requests are 16 batches, more than the queue holds: with every
    // worker gone, the hand-out must stop rather than wait for room.
    let r = requests(&many_requests(1000), "many.json");
    let run = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        r.map(2, |id, _| -> String { panic!("request {id}") })
    }));
    assert!(run.is_err());
}

#[test]
fn a_span_that_ends_before_it_starts_is_kept_with_no_length_and_reported() {
    let body = r#"{"resourceSpans":[{"scopeSpans":[{"spans":[
{"traceId":"5b8efff798038103d269b633813f0001","spanId":"abcdef0000000001","name":"root","startTimeUnixNano":"1000","endTimeUnixNano":"2000"},
{"traceId":"5b8efff798038103d269b633813f0001","spanId":"abcdef0000000002","parentSpanId":"abcdef0000000001","name":"child","startTimeUnixNano":"1500","endTimeUnixNano":"1"}]}]}]}"#;
    let r = requests(body.as_bytes(), "back.json");
    let problems: Vec<&ReadError> = r.problems().iter().collect();
    assert_eq!(problems.len(), 1, "{problems:?}");
    let msg = &problems[0].message;
    assert!(
        msg.contains("spans[1]") && msg.contains("ends (at 1 ns) before it starts (at 1500 ns)"),
        "{msg}"
    );
    assert!(!problems[0].fatal);
    assert_eq!(spans_read(&r), 2, "both spans are kept");
}
