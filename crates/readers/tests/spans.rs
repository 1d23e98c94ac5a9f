//! The OTLP / Jaeger importer: the committed examples, and spans it cannot
//! use, each reported with its place in the document, its line and field.

mod common;

use common::*;
use critpath_readers::spans;
use critpath_trace::Location;

#[test]
fn reads_otlp_and_jaeger() {
    for name in ["otlp.json", "jaeger.json"] {
        let mut src = spans::read(&bytes(name)[..], name).unwrap();
        let (recs, errs) = drain(&mut src);
        assert!(errs.is_empty(), "{name}: {errs:?}");
        let lines = text(&recs, &src);
        assert!(
            lines
                .iter()
                .any(|l| l.contains(r#""ev":"call","sm":"frontend","fn":"GET /checkout""#)),
            "{name}"
        );
        assert!(
            lines.iter().any(|l| l.contains(r#""sm":"payment""#)),
            "{name}"
        );
    }
}

#[test]
fn spans_it_cannot_use_are_reported() {
    let body = r#"{"resourceSpans": [{
  "resource": {"attributes": [{"key": "service.name", "value": {"stringValue": "svc"}}]},
  "scopeSpans": [{"spans": [
    {"spanId": "a", "name": "root", "startTimeUnixNano": "1000", "endTimeUnixNano": "9000"},
    {"spanId": "b", "name": "open", "startTimeUnixNano": "2000"},
    {"spanId": "c", "parentSpanId": {"x": 1}, "name": "odd parent", "startTimeUnixNano": "3000", "endTimeUnixNano": "4000"},
    {"name": "no id", "startTimeUnixNano": "3000", "endTimeUnixNano": "4000"}
  ]}]}]}"#;
    let mut src = spans::read(body.as_bytes(), "s.json").unwrap();
    let (recs, errs) = drain(&mut src);
    assert_eq!(errs.len(), 3, "{errs:?}");
    let at = "resourceSpans[0].scopeSpans[0].spans";
    assert_eq!(errs[0].location, Location::Line(5));
    assert!(
        errs[0]
            .message
            .starts_with(&format!("{at}[1]: span is missing field `endTimeUnixNano`")),
        "{}",
        errs[0]
    );
    assert_eq!(errs[1].location, Location::Line(6));
    assert!(
        errs[1].message.contains("`parentSpanId`") && errs[1].message.contains("kept"),
        "{}",
        errs[1]
    );
    assert!(
        errs[2].message.starts_with(&format!("{at}[3]")) && errs[2].message.contains("`spanId`")
    );
    // root and the span with the odd parent are read.
    let lines = text(&recs, &src);
    assert!(lines.iter().any(|l| l.contains("odd parent")));
    assert!(!lines.iter().any(|l| l.contains("\"open\"")));
}

#[test]
fn jaeger_spans_without_times_are_reported() {
    let body = r#"{"data": [{"traceID": "t", "processes": {"p1": {"serviceName": "api"}}, "spans": [
  {"traceID": "t", "spanID": "1", "operationName": "a", "startTime": 10, "duration": 5, "processID": "p1"},
  {"traceID": "t", "spanID": "2", "operationName": "b", "startTime": "x", "duration": 5, "processID": "p1"}
]}]}"#;
    let mut src = spans::read(body.as_bytes(), "j.json").unwrap();
    let (recs, errs) = drain(&mut src);
    assert_eq!(errs.len(), 1);
    assert!(
        errs[0]
            .message
            .starts_with("data[0].spans[1]: field `startTime`"),
        "{}",
        errs[0]
    );
    assert!(text(&recs, &src)
        .iter()
        .any(|l| l.contains(r#""sm":"api""#)));
}
