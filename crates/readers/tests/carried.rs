//! What a converted trace carries beside its records (`critpath_readers::meta`):
//! a scope before the first record and a source's summary after the last,
//! through JSONL and `.cpt` and from one to the other.

mod common;

use common::*;
use critpath_readers::{Codec, CptReader, CptWriter, JsonlReader, JsonlWriter};
use critpath_trace::{
    AnnotationCost, Diagnostic, DiagnosticKind, Location, Record, RecordSource, ScalesWith, Scope,
    Summary,
};
use std::io::Cursor;

fn scope() -> Scope {
    Scope {
        from: Some("app:412".into()),
        to: Some("app:412".into()),
        scales_with: vec![ScalesWith {
            state: "runnable".into(),
            with: "running".into(),
        }],
    }
}

fn summary() -> Summary {
    let mut d = Diagnostic::new(
        DiagnosticKind::LostSwitchIn,
        "app:413: seen running \"twice\"",
    );
    (d.sm, d.sys, d.count, d.ns) = (
        Some("app:413".into()),
        Some("vm".into()),
        Some(2),
        Some(900),
    );
    Summary {
        diagnostics: vec![
            d,
            Diagnostic::new(DiagnosticKind::RecorderShare, "perf: 1%"),
        ],
        program: vec!["app:412".into(), "app:413".into()],
        annotation_costs: vec![AnnotationCost {
            sys: "local".into(),
            sm: "stage1".into(),
            ns_per_event: 61.5,
        }],
        wall_clock: true,
        ..Summary::default()
    }
}

/// More inferred links than one summary object holds.
fn inferred() -> Vec<(String, u64)> {
    (0..70_000u64)
        .map(|i| (format!("w{}", i % 7), i * 3))
        .collect()
}

/// The committed small trace's records and their reader.
fn records() -> (Vec<Record>, JsonlReader<Cursor<Vec<u8>>>) {
    let mut r = JsonlReader::new(Cursor::new(bytes("small.jsonl")), "small.jsonl");
    let (recs, errs) = drain(&mut r);
    assert!(errs.is_empty(), "{errs:?}");
    (recs, r)
}

fn jsonl() -> Vec<u8> {
    let (recs, src) = records();
    let mut w = JsonlWriter::new(Vec::new());
    w.scope(&scope()).unwrap();
    for r in &recs {
        w.write(r, src.strings()).unwrap();
    }
    w.summary(&summary(), &inferred()).unwrap();
    w.finish().unwrap()
}

/// `src`'s scope, records, summary and inferred links, read as an analysis
/// reads them (the scope first), or with no look at the scope.
fn read_all(
    src: &mut dyn RecordSource,
    ask: bool,
) -> (Scope, Vec<String>, Summary, Vec<(String, u64)>) {
    let scope = if ask { src.scope() } else { Scope::default() };
    let (recs, errs) = drain(src);
    assert!(errs.is_empty(), "{errs:?}");
    let lines = text(&recs, src);
    (scope, lines, src.summary(), src.inferred_links())
}

fn assert_carried(got: (Scope, Vec<String>, Summary, Vec<(String, u64)>), what: &str) {
    let (recs, src) = records();
    assert_eq!(got.0, scope(), "{what}");
    assert_eq!(got.1, text(&recs, &src), "{what}");
    let (s, want) = (got.2, summary());
    assert_eq!(s.diagnostics, want.diagnostics, "{what}");
    assert_eq!(s.program, want.program, "{what}");
    assert_eq!(s.annotation_costs, want.annotation_costs, "{what}");
    assert!(s.wall_clock, "{what}");
    assert_eq!(got.3, inferred(), "{what}");
}

#[test]
fn scope_and_summary_go_through_jsonl_and_cpt() {
    let body = jsonl();
    let text_body = String::from_utf8(body.clone()).unwrap();
    assert!(
        text_body.starts_with("{\"ev\":\"scope\",\"from\":\"app:412\""),
        "{text_body:.200}"
    );
    // The links take two summary objects, after the last record.
    assert_eq!(text_body.matches("\"ev\":\"summary\"").count(), 2);
    let mut r = JsonlReader::new(Cursor::new(body.clone()), "c.jsonl");
    assert_carried(read_all(&mut r, true), "jsonl");
    for codec in [Codec::None, Codec::Zstd] {
        // JSONL to .cpt, as `convert` does it: the scope asked first.
        let mut src = JsonlReader::new(Cursor::new(body.clone()), "c.jsonl");
        let mut w = CptWriter::with_scope(Vec::new(), codec, &src.scope()).unwrap();
        let (recs, errs) = drain(&mut src);
        assert!(errs.is_empty(), "{errs:?}");
        for rec in &recs {
            w.write(rec, src.strings()).unwrap();
        }
        w.summary(&src.summary(), &src.inferred_links()).unwrap();
        let cpt = w.finish().unwrap();
        let mut r = CptReader::new(Cursor::new(cpt.clone()), "c.cpt").unwrap();
        assert_carried(read_all(&mut r, true), "cpt");
        // A reader that never asks for the scope reads the same records.
        let mut r = CptReader::new(Cursor::new(cpt), "c.cpt").unwrap();
        let (_, lines, _, _) = read_all(&mut r, false);
        let (recs, src) = records();
        assert_eq!(lines, text(&recs, &src));
    }
    let mut r = JsonlReader::new(Cursor::new(body), "c.jsonl");
    let (_, lines, _, _) = read_all(&mut r, false);
    let (recs, src) = records();
    assert_eq!(lines, text(&recs, &src));
}

#[test]
fn a_trace_without_them_carries_nothing() {
    let (recs, src) = records();
    let mut w = CptWriter::with_scope(Vec::new(), Codec::None, &Scope::default()).unwrap();
    for r in &recs {
        w.write(r, src.strings()).unwrap();
    }
    w.summary(&Summary::default(), &[]).unwrap();
    // Nothing written: the file is the committed one.
    assert_eq!(w.finish().unwrap(), bytes("small.cpt"));
    let mut r = CptReader::new(Cursor::new(bytes("small.cpt")), "small.cpt").unwrap();
    assert_eq!(r.scope(), Scope::default());
    let (got, errs) = drain(&mut r);
    assert!(errs.is_empty(), "{errs:?}");
    assert_eq!(text(&got, &r), text(&recs, &src));
    assert!(r.summary().diagnostics.is_empty());
}

#[test]
fn a_misplaced_or_bad_object_is_an_error_and_the_records_are_read() {
    let body = concat!(
        "# a comment\n",
        "{\"t\":1,\"ev\":\"state\",\"sm\":\"a\",\"state\":\"x\"}\n",
        "{\"ev\":\"scope\",\"from\":\"a\"}\n",
        "{\"ev\":\"summary\",\"diagnostics\":[{\"kind\":\"no-such-kind\",\"message\":\"m\"}]}\n",
        "{\"ev\":\"summary\",\"program\":\"not a list\"}\n",
        "{\"t\":2,\"ev\":\"state\",\"sm\":\"a\",\"state\":\"y\"}\n",
    );
    let mut r = JsonlReader::new(Cursor::new(body.as_bytes().to_vec()), "m.jsonl");
    assert_eq!(r.scope(), Scope::default());
    let (recs, errs) = drain(&mut r);
    assert_eq!(recs.len(), 2);
    let lines: Vec<_> = errs.iter().map(|e| (e.location.clone(), e.fatal)).collect();
    assert_eq!(
        lines,
        [3, 4, 5].map(|l| (Location::Line(l), false)).to_vec(),
        "{errs:?}"
    );
    assert!(
        errs[0].message.contains("after the first record"),
        "{}",
        errs[0]
    );
    assert!(errs[1].message.contains("no-such-kind"), "{}", errs[1]);
    assert!(
        errs[2].message.contains("expected a sequence at column"),
        "{}",
        errs[2]
    );
    // After a bad first line, a scope comes too late for the analysis that
    // asked for it: an error too.
    let body = "{\"t\":\"x\"}\n{\"ev\":\"scope\",\"from\":\"a\"}\n";
    let mut r = JsonlReader::new(Cursor::new(body.as_bytes().to_vec()), "m.jsonl");
    assert_eq!(r.scope(), Scope::default());
    let (recs, errs) = drain(&mut r);
    assert!(recs.is_empty());
    assert_eq!(errs.len(), 2, "{errs:?}");
    assert!(errs[1].message.contains("scope line after"), "{}", errs[1]);
}

#[test]
fn the_committed_converted_files_read_as_written() {
    let (recs, src) = records();
    let want = text(&recs, &src);
    let jsonl = JsonlReader::new(Cursor::new(bytes("small-carried.jsonl")), "c.jsonl");
    let cpt = CptReader::new(Cursor::new(bytes("small-carried.cpt")), "c.cpt").unwrap();
    let sources: [Box<dyn RecordSource>; 2] = [Box::new(jsonl), Box::new(cpt)];
    for mut r in sources {
        let (scope, lines, summary, links) = read_all(&mut *r, true);
        assert_eq!(scope.from.as_deref(), Some("client"));
        assert_eq!(scope.to.as_deref(), Some("server"));
        assert_eq!(scope.scales_with.len(), 1);
        assert_eq!(lines, want);
        assert_eq!(summary.diagnostics[0].kind, DiagnosticKind::LostSwitchIn);
        assert_eq!(summary.diagnostics[0].ns, Some(900));
        assert_eq!(summary.program, ["client", "server"]);
        assert!(summary.wall_clock);
        assert_eq!(
            links,
            [("server".to_string(), 300), ("client".to_string(), 400)]
        );
    }
    // `convert --compress none` of the JSONL made the .cpt.
    let mut src = JsonlReader::new(Cursor::new(bytes("small-carried.jsonl")), "c.jsonl");
    let mut w = CptWriter::with_scope(Vec::new(), Codec::None, &src.scope()).unwrap();
    let (recs, _) = drain(&mut src);
    for r in &recs {
        w.write(r, src.strings()).unwrap();
    }
    w.summary(&src.summary(), &src.inferred_links()).unwrap();
    assert_eq!(w.finish().unwrap(), bytes("small-carried.cpt"));
}
