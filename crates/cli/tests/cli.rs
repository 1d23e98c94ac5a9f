//! End-to-end tests of the `critpath` binary: hand-checked scenarios, format
//! round trips, and every kind of bad input the contract names.

mod common;

use common::{bench_trace, json_of, run, state_row as state, write};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Output;

fn example(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples")
        .join(name)
}

fn text(o: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// Asserts a bad-input failure: exit 2, the message names the file and the
/// place, and nothing panicked.
fn assert_bad(o: &Output, file: &str, wants: &[&str]) {
    let (_, err) = text(o);
    assert_eq!(o.status.code(), Some(2), "stderr: {err}");
    assert!(
        !err.contains("panicked") && !err.contains("RUST_BACKTRACE"),
        "panic: {err}"
    );
    assert!(err.contains(file), "message does not name {file}: {err}");
    for w in wants {
        assert!(err.contains(w), "message lacks {w:?}: {err}");
    }
}

#[test]
fn figure3_nic_critical_path() {
    let f = example("nic-fig3.jsonl");
    let v = json_of(&["analyze", f.to_str().unwrap(), "--json"]);
    let p = &v["critical_path"];
    assert_eq!(p["length_ns"], 830);
    assert_eq!(p["edges"], 7);
    assert_eq!(p["start"]["sm"], "nic.descfetch");
    assert_eq!(p["start"]["t"], 0);
    assert_eq!(p["end"]["sm"], "nic.txfifo");
    assert_eq!(p["end"]["t"], 830);
    assert_eq!(v["states"][0]["state"], "DMA packet");
    for (sm, st, visits, total, crit) in [
        ("nic.tx", "DMA packet", 2, 600, 600),
        ("nic.txfifo", "transmit", 2, 240, 120),
        ("nic.descfetch", "fetch desc", 2, 200, 100),
        ("nic.tx", "fill fifo", 2, 20, 10),
        ("nic.txfifo", "wait packet", 3, 590, 0),
        ("nic.tx", "wait desc", 2, 100, 0),
    ] {
        let s = state(&v, sm, st);
        assert_eq!(
            (
                s["visits"].as_u64(),
                s["total_ns"].as_u64(),
                s["critical_ns"].as_u64()
            ),
            (Some(visits), Some(total), Some(crit)),
            "{sm}:{st}"
        );
    }
    let sum: f64 = v["states"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["criticality"].as_f64().unwrap())
        .sum();
    assert!((sum - 1.0).abs() < 1e-9);
    assert_eq!(v["stats"]["records"], 16);
    assert_eq!(v["stats"]["nodes"], 16);
    assert_eq!(v["stats"]["state_machines"], 3);
    assert_eq!(v["diagnostics"].as_array().unwrap().len(), 0);
}

#[test]
fn table_shows_the_top_state() {
    let f = example("nic-fig3.jsonl");
    let o = run(&["analyze", f.to_str().unwrap()]);
    let (out, _) = text(&o);
    assert!(o.status.success());
    assert!(out.contains("critical path: 830 ns"), "{out}");
    let first_row = out
        .lines()
        .find(|l| l.trim_start().starts_with("1 "))
        .unwrap();
    assert!(
        first_row.contains("DMA packet") && first_row.contains("72.29%"),
        "{first_row}"
    );
}

#[test]
fn top_to_and_from() {
    let f = example("nic-fig3.jsonl");
    let f = f.to_str().unwrap();
    let v = json_of(&["analyze", f, "--json", "--top", "2"]);
    assert_eq!(v["states"].as_array().unwrap().len(), 2);
    // The path to Transmit's last entry into "fill fifo" (t=710).
    let v = json_of(&["analyze", f, "--json", "--to", "nic.tx:fill fifo"]);
    assert_eq!(v["critical_path"]["length_ns"], 710);
    assert_eq!(v["critical_path"]["end"]["t"], 710);
    // Transmit's last node is its wait at t=720.
    let v = json_of(&["analyze", f, "--json", "--to", "nic.tx"]);
    assert_eq!(v["critical_path"]["length_ns"], 720);
    // From TX FIFO's first node only TX FIFO's own chain is reachable: its
    // two transmits (its waits weigh 0 once resolved).
    let v = json_of(&["analyze", f, "--json", "--from", "nic.txfifo"]);
    assert_eq!(v["critical_path"]["start"]["sm"], "nic.txfifo");
    assert_eq!(v["critical_path"]["length_ns"], 240);
    assert_eq!(state(&v, "nic.txfifo", "transmit")["criticality"], 1.0);
    // Nothing reaches Descriptor Fetch from TX FIFO: a disconnected diagnostic.
    let v = json_of(&[
        "analyze",
        f,
        "--json",
        "--from",
        "nic.txfifo",
        "--to",
        "nic.descfetch",
    ]);
    assert_eq!(v["critical_path"]["found"], false);
    let d = &v["diagnostics"][0];
    assert_eq!(d["kind"], "disconnected");
    assert!(
        d["message"].as_str().unwrap().contains("nic.descfetch"),
        "{d}"
    );
    // SMs that only wait on one another (b <-> c) have no root to name: the
    // message says so, and names the start that reaches none of them.
    let dir = tempfile::tempdir().unwrap();
    let cyc = dir.path().join("cycle.jsonl");
    let mut body = String::new();
    for sm in ["a", "b", "c"] {
        body += &format!("{{\"t\":0,\"ev\":\"state\",\"sm\":\"{sm}\",\"state\":\"x\"}}\n");
    }
    for (t, ev, sm, id) in [
        (10, "send", "b", 1),
        (12, "recv", "c", 1),
        (20, "send", "c", 2),
        (22, "recv", "b", 2),
    ] {
        body +=
            &format!("{{\"t\":{t},\"ev\":\"{ev}\",\"sm\":\"{sm}\",\"id\":{id},\"state\":\"y\"}}\n");
    }
    std::fs::write(&cyc, body).unwrap();
    let v = json_of(&[
        "analyze",
        cyc.to_str().unwrap(),
        "--json",
        "--from",
        "a",
        "--to",
        "c",
    ]);
    let d = &v["diagnostics"][0];
    assert_eq!(d["kind"], "disconnected");
    let msg = d["message"].as_str().unwrap();
    assert!(
        msg.contains("reaches 2 SM(s), every one with an incoming inter-SM edge"),
        "{msg}"
    );
    assert!(
        msg.contains("a dependence from a into one of them"),
        "{msg}"
    );
}

#[test]
fn unknown_to_and_from_name_nearest() {
    let f = example("nic-fig3.jsonl");
    let o = run(&["analyze", f.to_str().unwrap(), "--to", "nic.txx"]);
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(2));
    assert!(err.contains("nearest: nic.tx"), "{err}");
    let o = run(&["analyze", f.to_str().unwrap(), "--to", "nic.tx:DMA pkt"]);
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(2));
    assert!(err.contains("DMA packet"), "{err}");
    let o = run(&["analyze", f.to_str().unwrap(), "--from", "nope"]);
    assert_eq!(o.status.code(), Some(2));
}

/// An SM named in two systems: `--from` without `SYS/` names both, so it is
/// refused as `--to` is; `SYS/SM` picks one.
#[test]
fn a_start_named_in_two_systems_must_say_which() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("twosys.jsonl");
    std::fs::write(
        &f,
        r#"{"t":0,"sm":"A","ev":"state","state":"a"}
{"t":0,"sys":"h2","sm":"A","ev":"state","state":"a"}
{"t":5,"sys":"h2","sm":"A","ev":"send","id":1}
{"t":7,"sm":"A","ev":"recv","id":1,"state":"b"}
{"t":9,"sm":"A","ev":"wait","state":"w","on":"A","on_sys":"h2"}
{"t":12,"sys":"h2","sm":"A","ev":"state","state":"c"}
{"t":20,"sm":"A","ev":"state","state":"d"}
"#,
    )
    .unwrap();
    let f = f.to_str().unwrap();
    for opt in ["--from", "--to"] {
        let o = run(&["analyze", f, opt, "A"]);
        let (_, err) = text(&o);
        assert_eq!(o.status.code(), Some(2), "{opt}: {err}");
        assert!(err.contains("names 2 state machines (A, h2/A)"), "{err}");
    }
    let v = json_of(&["analyze", f, "--json", "--from", "local/A"]);
    assert_eq!(v["critical_path"]["length_ns"], 9);
    let v = json_of(&["analyze", f, "--json", "--from", "h2/A"]);
    assert_eq!(v["critical_path"]["length_ns"], 20);
}

#[test]
fn call_ret_nesting() {
    let f = example("calls.jsonl");
    let v = json_of(&["analyze", f.to_str().unwrap(), "--json"]);
    assert_eq!(v["critical_path"]["length_ns"], 100);
    for (st, visits, crit) in [("main", 2, 50), ("parse", 2, 35), ("lex", 1, 15)] {
        let s = state(&v, "app", st);
        assert_eq!(
            (s["visits"].as_u64(), s["critical_ns"].as_u64()),
            (Some(visits), Some(crit)),
            "{st}"
        );
    }
}

#[test]
fn sm_stacks_across_threads() {
    let f = example("stacks.jsonl");
    let v = json_of(&["analyze", f.to_str().unwrap(), "--json"]);
    let p = &v["critical_path"];
    assert_eq!(p["length_ns"], 120);
    assert_eq!(p["edges"], 4);
    assert_eq!(
        (p["start"]["sm"].as_str(), p["end"]["sm"].as_str()),
        (Some("udp"), Some("driver"))
    );
    for (sm, st, crit) in [
        ("udp", "udp_sendmsg", 50),
        ("udp", "copy", 30),
        ("driver", "wait pkt", 10),
        ("driver", "xmit", 30),
        ("ip", "ip_output", 0),
    ] {
        assert_eq!(
            state(&v, sm, st)["critical_ns"].as_u64(),
            Some(crit),
            "{sm}:{st}"
        );
    }
    assert_eq!(v["stats"]["state_machines"], 3);
}

#[test]
fn diagnostics_name_sm_state_time_and_line() {
    let f = example("diagnostics.jsonl");
    let v = json_of(&["analyze", f.to_str().unwrap(), "--json"]);
    let d = v["diagnostics"].as_array().unwrap();
    let find = |k: &str| {
        d.iter()
            .find(|x| x["kind"] == k)
            .unwrap_or_else(|| panic!("no {k}: {d:?}"))
    };
    let early = find("wait-advanced-early");
    assert_eq!(
        (
            early["sm"].as_str(),
            early["state"].as_str(),
            early["t"].as_u64(),
            early["line"].as_u64()
        ),
        (Some("consumer"), Some("wait data"), Some(5), Some(6))
    );
    let rws = find("recv-without-send");
    assert_eq!(
        (rws["t"].as_u64(), rws["line"].as_u64()),
        (Some(12), Some(8))
    );
    assert!(rws["message"].as_str().unwrap().contains("req-9"));
    let long = find("long-state");
    assert_eq!(
        (long["sm"].as_str(), long["state"].as_str()),
        (Some("producer"), Some("spin"))
    );
    let sm = find("stack-mismatch");
    assert_eq!(sm["line"].as_u64(), Some(12));
    // check fails on such a trace, exit 1.
    let o = run(&["check", f.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    let (out, _) = text(&o);
    assert!(
        out.contains("stack-mismatch") && out.contains("FAILED"),
        "{out}"
    );
}

/// The `long-state` findings of a JSONL trace: (sm, state).
fn long_states(dir: &Path, name: &str, body: &str) -> Vec<(String, String)> {
    let p = write(dir, name, body.as_bytes());
    let v = json_of(&["analyze", p.to_str().unwrap(), "--json"]);
    let diags = v["diagnostics"].as_array().unwrap();
    (diags.iter())
        .filter(|d| d["kind"] == "long-state")
        .map(|d| {
            (
                d["sm"].as_str().unwrap().into(),
                d["state"].as_str().unwrap().into(),
            )
        })
        .collect()
}

#[test]
fn long_state_is_found_in_an_sm_of_few_visits_and_not_in_a_held_wait() {
    let dir = tempfile::tempdir().unwrap();
    // 990 of the SM's 1,010 ns in one visit of `big`, 99 times its other
    // visit: a missing dependence, however few the visits.
    let few = r#"{"t":0,"sm":"a","ev":"state","state":"s1"}
{"t":10,"sm":"a","ev":"state","state":"big"}
{"t":1000,"sm":"a","ev":"state","state":"s3"}
{"t":1010,"sm":"a","ev":"end"}
"#;
    let found = long_states(dir.path(), "few.jsonl", few);
    assert_eq!(found, [("a".to_string(), "big".to_string())]);
    // A lone state is the SM's whole life, not a sign of anything.
    let lone = "{\"t\":0,\"sm\":\"a\",\"ev\":\"state\",\"state\":\"s\"}\n{\"t\":900,\"sm\":\"a\",\"ev\":\"end\"}\n";
    assert!(long_states(dir.path(), "lone.jsonl", lone).is_empty());
    // The same shape, but `h` held what `big` waited for: a modelled wait.
    let held = r#"{"t":0,"sm":"h","ev":"state","state":"run"}
{"t":0,"sm":"a","ev":"state","state":"s1"}
{"t":10,"sm":"a","ev":"state","state":"big"}
{"t":500,"sm":"a","ev":"held","on":"h","on_state":"run"}
{"t":1000,"sm":"a","ev":"held","on":"h","on_state":"run"}
{"t":1000,"sm":"a","ev":"state","state":"s3"}
{"t":1000,"sm":"h","ev":"state","state":"run"}
{"t":1010,"sm":"a","ev":"end"}
"#;
    assert!(long_states(dir.path(), "held.jsonl", held).is_empty());
}

#[test]
fn check_passes_on_good_traces() {
    for name in ["nic-fig3.jsonl", "calls.jsonl", "stacks.jsonl"] {
        let f = example(name);
        let o = run(&["check", f.to_str().unwrap()]);
        let (out, err) = text(&o);
        assert_eq!(o.status.code(), Some(0), "{name}: {out}{err}");
        assert!(out.contains(": ok"), "{out}");
    }
}

#[test]
fn check_of_a_span_file_of_several_requests_checks_each() {
    let f = example("spans/otel/otlp.json");
    let f = f.to_str().unwrap();
    let o = run(&["check", f]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}{err}");
    assert!(
        out.contains("3 requests") && out.ends_with(": ok\n"),
        "{out}"
    );
    let v = json_of(&["check", f, "--json"]);
    assert_eq!(
        (v["ok"].as_bool(), v["requests"].as_u64()),
        (Some(true), Some(3))
    );
    assert_eq!(v["failed"], serde_json::json!([]));
    // The three requests' records, as the many-request analysis counts them.
    let a = json_of(&["analyze", f, "--json"]);
    assert_eq!(a["traces"], 3);
    assert_eq!(v["stats"]["records"], 72, "{v}");
    // One request, as a file holding only it.
    let id = a["per_trace"][0]["trace_id"].as_str().unwrap().to_string();
    let one = json_of(&["check", f, "--trace", &id, "--json"]);
    assert_eq!(one["ok"], true);
    assert!(one["stats"]["records"].as_u64().unwrap() < 72, "{one}");
}

#[test]
fn check_of_several_requests_fails_on_a_skipped_span() {
    let dir = tempfile::tempdir().unwrap();
    let span = |trace: char, id: &str, name: &str, start: &str, end: u64, parent: &str| {
        format!(
            r#"{{"traceId":"{}{trace}","spanId":"{id}","parentSpanId":"{parent}","name":"{name}","startTimeUnixNano":"{start}","endTimeUnixNano":"{end}","kind":2}}"#,
            "0".repeat(31)
        )
    };
    let spans = [
        span('a', "00000000000000a1", "GET /a", "1000", 5000, ""),
        span(
            'a',
            "00000000000000a2",
            "db",
            "2000",
            3000,
            "00000000000000a1",
        ),
        span('b', "00000000000000b1", "GET /b", "1000", 9000, ""),
        span(
            'b',
            "00000000000000b2",
            "bad",
            "soon",
            2,
            "00000000000000b1",
        ),
    ];
    let f = dir.path().join("two.json");
    std::fs::write(
        &f,
        format!(
            r#"{{"resourceSpans":[{{"resource":{{"attributes":[{{"key":"service.name","value":{{"stringValue":"web"}}}}]}},"scopeSpans":[{{"spans":[{}]}}]}}]}}"#,
            spans.join(",")
        ),
    )
    .unwrap();
    let f = f.to_str().unwrap();
    let o = run(&["check", f, "--json"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o).1);
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(
        (v["ok"].as_bool(), v["requests"].as_u64()),
        (Some(false), Some(2))
    );
    assert_eq!(v["trace_errors"][0]["kind"], "input-skipped", "{v}");
    assert!(
        v["trace_errors"][0]["message"]
            .as_str()
            .unwrap()
            .contains("spans[3]"),
        "{v}"
    );
    let (out, _) = text(&run(&["check", f]));
    assert!(
        out.contains("2 requests") && out.contains("FAILED"),
        "{out}"
    );
}

#[test]
fn convert_to_a_name_without_a_format_writes_the_other_side() {
    let dir = tempfile::tempdir().unwrap();
    let (bin, back) = (dir.path().join("t.bin"), dir.path().join("back"));
    let src = example("nic-fig3.jsonl");
    let o = run(&["convert", src.to_str().unwrap(), bin.to_str().unwrap()]);
    assert!(o.status.success(), "{}", text(&o).1);
    assert!(text(&o).1.contains("writing native .cpt"), "{}", text(&o).1);
    assert_eq!(&std::fs::read(&bin).unwrap()[..8], b"CRITPATH");
    let o = run(&["convert", bin.to_str().unwrap(), back.to_str().unwrap()]);
    assert!(o.status.success(), "{}", text(&o).1);
    assert!(text(&o).1.contains("writing JSONL"), "{}", text(&o).1);
    assert!(std::fs::read_to_string(&back)
        .unwrap()
        .starts_with("{\"t\":0,"));
    assert_eq!(
        analysis_bytes(&src),
        analysis_bytes(&back),
        "the round trip keeps the analysis"
    );
    // An extension in capitals names its format, as in lower case.
    let upper = dir.path().join("T.CPT");
    let o = run(&["convert", back.to_str().unwrap(), upper.to_str().unwrap()]);
    assert!(
        o.status.success() && text(&o).1.is_empty(),
        "{}",
        text(&o).1
    );
    assert_eq!(&std::fs::read(&upper).unwrap()[..8], b"CRITPATH");
}

#[test]
fn convert_lists_a_thousand_bad_lines_and_counts_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    let mut body = String::from("{\"t\":100000,\"sm\":\"a\",\"ev\":\"state\",\"state\":\"s\"}\n");
    for i in 0..1500 {
        // Each one earlier than the first: out of time order, skipped.
        body.push_str(&format!(
            "{{\"t\":{i},\"sm\":\"a\",\"ev\":\"state\",\"state\":\"s\"}}\n"
        ));
    }
    let src = write(dir.path(), "back.jsonl", &body);
    let out = dir.path().join("out.cpt");
    let o = run(&["convert", src.to_str().unwrap(), out.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    let err = text(&o).1;
    let listed = err.lines().filter(|l| l.contains("back.jsonl:")).count();
    // 1,000 warnings, then the error naming the first.
    assert_eq!(listed, 1001, "{err:.400}");
    assert!(
        err.contains("critpath: warning: 500 more bad records skipped (1500 in all)"),
        "{}",
        &err[err.len().saturating_sub(400)..]
    );
    assert!(out.exists());
}

#[test]
fn cgraph_dot() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("g.dot");
    let f = example("nic-fig3.jsonl");
    let o = run(&["cgraph", f.to_str().unwrap(), "-o", out.to_str().unwrap()]);
    assert!(o.status.success());
    let dot = std::fs::read_to_string(&out).unwrap();
    assert!(dot.starts_with("digraph cgraph {"));
    assert!(dot.contains("style=dashed"), "inter-SM edges are dashed");
    // Each DMA packet edge holds 300 of the path's 830 ns: red 0x5c.
    let dma: Vec<&str> = dot
        .lines()
        .filter(|l| l.contains("label=\"DMA packet\\n(1, 300 ns, 300 ns)\""))
        .collect();
    assert_eq!(dma.len(), 2, "{dot}");
    assert!(dma.iter().all(|l| l.contains("color=\"#5c0000\"")), "{dot}");
    // A state off the path stays black.
    assert!(
        dot.lines()
            .any(|l| l.contains("label=\"wait packet\\n") && l.contains("color=\"#000000\"")),
        "{dot}"
    );
    assert!(
        dot.contains("label=\"nic.tx\";"),
        "one cluster per SM: {dot}"
    );
    let o = run(&[
        "cgraph",
        f.to_str().unwrap(),
        "-o",
        dir.path().join("g.png").to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2));
    // The extension in any case.
    let svg = dir.path().join("G.SVG");
    let o = run(&["cgraph", f.to_str().unwrap(), "-o", svg.to_str().unwrap()]);
    assert!(o.status.success(), "{}", text(&o).1);
    assert!(std::fs::read_to_string(&svg).unwrap().contains("<svg"));
}

fn analysis_bytes(path: &Path) -> Vec<u8> {
    let o = run(&["analyze", path.to_str().unwrap(), "--json", "--path"]);
    assert!(o.status.success(), "{}", text(&o).1);
    // The file name is not part of the JSON, so outputs compare directly.
    o.stdout
}

#[test]
fn convert_round_trip_is_lossless() {
    let dir = tempfile::tempdir().unwrap();
    // A larger synthetic trace too, spanning several .cpt chunks.
    let big = dir.path().join("big.jsonl");
    let mut lines = String::new();
    let mut t = 0u64;
    for i in 0..300_000u64 {
        t += i % 3;
        let sm = format!("sm{}", i % 7);
        match i % 5 {
            0 => lines.push_str(&format!("{{\"t\":{t},\"sm\":\"{sm}\",\"ev\":\"state\",\"state\":\"s{}\"}}\n", i % 11)),
            1 => lines.push_str(&format!("{{\"t\":{t},\"sys\":\"h{}\",\"sm\":\"{sm}\",\"ev\":\"send\",\"id\":{}}}\n", i % 2, i / 5)),
            2 => lines.push_str(&format!("{{\"t\":{t},\"sm\":\"{sm}\",\"ev\":\"wait\",\"state\":\"w\",\"on\":\"sm{}\",\"on_state\":\"s{}\"}}\n", (i + 1) % 7, i % 11)),
            3 => lines.push_str(&format!("{{\"t\":{t},\"sm\":\"{sm}\",\"ev\":\"recv\",\"id\":\"k{}\",\"state\":\"r\"}}\n", i / 5)),
            _ => lines.push_str(&format!("{{\"t\":{t},\"thread\":{},\"ev\":\"call\",\"fn\":\"f\\\"{}\"}}\n", i % 3, i % 4)),
        }
    }
    std::fs::write(&big, lines).unwrap();
    for src in [
        example("nic-fig3.jsonl"),
        example("stacks.jsonl"),
        example("calls.jsonl"),
        example("diagnostics.jsonl"),
        big,
    ] {
        let base = analysis_bytes(&src);
        for compress in ["zstd", "none"] {
            let cpt = dir.path().join(format!("a-{compress}.cpt"));
            let back = dir.path().join(format!("b-{compress}.jsonl"));
            let o = run(&[
                "convert",
                src.to_str().unwrap(),
                cpt.to_str().unwrap(),
                "--compress",
                compress,
            ]);
            assert!(o.status.success(), "{}", text(&o).1);
            assert_eq!(&std::fs::read(&cpt).unwrap()[..8], b"CRITPATH");
            let o = run(&["convert", cpt.to_str().unwrap(), back.to_str().unwrap()]);
            assert!(o.status.success(), "{}", text(&o).1);
            let strip = |b: Vec<u8>| -> Value {
                let mut v: Value = serde_json::from_slice(&b).unwrap();
                // Positions differ by format (line vs record index).
                for d in v["diagnostics"].as_array_mut().unwrap() {
                    d.as_object_mut().unwrap().remove("line");
                    d.as_object_mut().unwrap().remove("record");
                    d.as_object_mut().unwrap().remove("message");
                }
                v
            };
            assert_eq!(
                strip(analysis_bytes(&cpt)),
                strip(base.clone()),
                "{} via {compress}",
                src.display()
            );
            // Without diagnostics (whose positions say line or record) the
            // analyses are byte-identical across formats.
            let plain =
                !src.to_str().unwrap().contains("diagnostics") && !src.ends_with("big.jsonl");
            if plain {
                assert_eq!(analysis_bytes(&cpt), base, "{}", src.display());
                assert_eq!(analysis_bytes(&back), base, "{}", src.display());
            }
            assert_eq!(strip(analysis_bytes(&back)), strip(base.clone()));
            let again = dir.path().join(format!("c-{compress}.cpt"));
            assert!(run(&[
                "convert",
                back.to_str().unwrap(),
                again.to_str().unwrap(),
                "--compress",
                compress
            ])
            .status
            .success());
            assert_eq!(
                std::fs::read(&again).unwrap(),
                std::fs::read(&cpt).unwrap(),
                "cpt is reproducible"
            );
            assert_eq!(analysis_bytes(&again), analysis_bytes(&cpt));
        }
    }
}

#[test]
fn bad_jsonl_names_file_line_and_field() {
    let dir = tempfile::tempdir().unwrap();
    let good = "{\"t\":0,\"sm\":\"a\",\"ev\":\"state\",\"state\":\"x\"}\n";
    let cases: &[(&str, &str, &[&str])] = &[
        (
            "malformed.jsonl",
            "{\"t\":1,\"sm\":\"a\",\"ev\":\"state\",\"state\":\"y\"\n",
            &[":2:", "expected"],
        ),
        (
            "unknown-ev.jsonl",
            "{\"t\":1,\"sm\":\"a\",\"ev\":\"jump\",\"state\":\"y\"}\n",
            &[":2:", "unknown ev \"jump\"", "state, wait"],
        ),
        (
            "missing-state.jsonl",
            "{\"t\":1,\"sm\":\"a\",\"ev\":\"state\"}\n",
            &[":2:", "field `state`"],
        ),
        (
            "missing-t.jsonl",
            "{\"sm\":\"a\",\"ev\":\"state\",\"state\":\"y\"}\n",
            &[":2:", "field `t`"],
        ),
        (
            "missing-sm.jsonl",
            "{\"t\":1,\"ev\":\"state\",\"state\":\"y\"}\n",
            &[":2:", "`sm`"],
        ),
        (
            "missing-id.jsonl",
            "{\"t\":1,\"sm\":\"a\",\"ev\":\"send\"}\n",
            &[":2:", "field `id`"],
        ),
        (
            "bad-t.jsonl",
            "{\"t\":-4,\"sm\":\"a\",\"ev\":\"state\",\"state\":\"y\"}\n",
            &[
                ":2:",
                "field \"t\": expected a non-negative integer",
                "found the number -4",
            ],
        ),
        (
            "backwards.jsonl",
            "{\"t\":0,\"sm\":\"a\",\"ev\":\"state\",\"state\":\"y\"}\n",
            &[":2:", "time goes backwards"],
        ),
    ];
    for (name, second, wants) in cases {
        let body = if *name == "backwards.jsonl" {
            format!("{{\"t\":5,\"sm\":\"a\",\"ev\":\"state\",\"state\":\"x\"}}\n{second}")
        } else {
            format!("{good}{second}{{\"t\":9,\"sm\":\"a\",\"ev\":\"end\"}}\n")
        };
        let p = write(dir.path(), name, body.as_bytes());
        let o = run(&["analyze", p.to_str().unwrap(), "--json"]);
        assert_bad(&o, name, wants);
        // What could be read is still analyzed, with a diagnostic.
        let v: Value =
            serde_json::from_slice(&o.stdout).unwrap_or_else(|_| panic!("{name}: no analysis"));
        assert!(
            v["diagnostics"]
                .as_array()
                .unwrap()
                .iter()
                .any(|d| d["kind"] == "input-skipped"),
            "{name}"
        );
        assert!(v["stats"]["records"].as_u64().unwrap() >= 1);
    }
}

#[test]
fn empty_and_foreign_files() {
    let dir = tempfile::tempdir().unwrap();
    let cases: &[(&str, &[u8], &str)] = &[
        ("empty.jsonl", b"", "empty"),
        ("comments.jsonl", b"# nothing here\n\n", "no records"),
        ("image.png", b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR", "not a trace"),
        ("notes.txt", b"hello world\nthis is text\n", "not a trace"),
        ("perf.data", b"PERFILE2\0\0\0\0\0\0\0\0", "perf.data"),
        ("trace.json", b"{\"traceEvents\":[]}", "Chrome"),
    ];
    for (name, body, want) in cases {
        let p = write(dir.path(), name, body);
        for cmd in ["analyze", "check"] {
            let o = run(&[cmd, p.to_str().unwrap()]);
            assert_bad(&o, name, &[want]);
        }
    }
    let o = run(&[
        "analyze",
        dir.path().join("missing.jsonl").to_str().unwrap(),
    ]);
    assert_bad(&o, "missing.jsonl", &["cannot open"]);
}

#[test]
fn truncated_and_corrupt_cpt() {
    let dir = tempfile::tempdir().unwrap();
    // Enough records for several chunks.
    let mut body = String::new();
    for i in 0..400_000u64 {
        body.push_str(&format!(
            "{{\"t\":{},\"sm\":\"sm{}\",\"ev\":\"state\",\"state\":\"s{}\"}}\n",
            i * 10,
            i % 5,
            i % 13
        ));
    }
    let src = write(dir.path(), "src.jsonl", body.as_bytes());
    for compress in ["none", "zstd"] {
        let cpt = dir.path().join(format!("t-{compress}.cpt"));
        assert!(run(&[
            "convert",
            src.to_str().unwrap(),
            cpt.to_str().unwrap(),
            "--compress",
            compress
        ])
        .status
        .success());
        let bytes = std::fs::read(&cpt).unwrap();
        // Cut in the middle: the whole chunks before the cut are analyzed.
        let cut = write(
            dir.path(),
            &format!("cut-{compress}.cpt"),
            &bytes[..bytes.len() * 2 / 3],
        );
        let o = run(&["analyze", cut.to_str().unwrap(), "--json"]);
        assert_bad(&o, &format!("cut-{compress}.cpt"), &["truncated", "byte"]);
        let v: Value = serde_json::from_slice(&o.stdout).expect("analysis of the intact part");
        let n = v["stats"]["records"].as_u64().unwrap();
        assert!(n > 0 && n < 400_000, "{n}");
        let d = v["diagnostics"]
            .as_array()
            .unwrap()
            .iter()
            .find(|d| d["kind"] == "input-cut")
            .expect("cut diagnostic");
        assert!(d["message"].as_str().unwrap().contains("truncated"));
        // Cut just before the end marker.
        let cut = write(dir.path(), "nomarker.cpt", &bytes[..bytes.len() - 16]);
        let o = run(&["analyze", cut.to_str().unwrap(), "--json"]);
        assert_bad(&o, "nomarker.cpt", &["end marker"]);
        let v: Value = serde_json::from_slice(&o.stdout).unwrap();
        assert_eq!(v["stats"]["records"], 400_000);
        // A flipped byte inside a chunk fails its checksum.
        let mut bad = bytes.clone();
        let at = bad.len() / 2;
        bad[at] ^= 0x55;
        let p = write(dir.path(), "corrupt.cpt", &bad);
        let o = run(&["analyze", p.to_str().unwrap(), "--json"]);
        assert_bad(&o, "corrupt.cpt", &["checksum", "byte offset"]);
        // A cut header.
        let p = write(dir.path(), "header.cpt", &bytes[..10]);
        let o = run(&["analyze", p.to_str().unwrap()]);
        assert_bad(&o, "header.cpt", &["header"]);
    }
}

#[test]
fn bom_and_crlf_are_accepted() {
    let dir = tempfile::tempdir().unwrap();
    let body = "\u{feff}{\"t\":0,\"sm\":\"a\",\"ev\":\"state\",\"state\":\"x\"}\r\n{\"t\":7,\"sm\":\"a\",\"ev\":\"end\"}\r\n";
    let p = write(dir.path(), "bom.jsonl", body.as_bytes());
    let v = json_of(&["analyze", p.to_str().unwrap(), "--json"]);
    assert_eq!(v["critical_path"]["length_ns"], 7);
}

#[test]
fn usage_errors_exit_2() {
    let o = run(&["analyze"]);
    assert_eq!(o.status.code(), Some(2));
    let o = run(&["frobnicate"]);
    assert_eq!(o.status.code(), Some(2));
    let f = example("nic-fig3.jsonl");
    let o = run(&["convert", f.to_str().unwrap(), "out.cpt", "--format", "xml"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o).1.contains("cpt, jsonl"), "{}", text(&o).1);
}

#[test]
fn bench_reports_rate_and_rss() {
    let o = run(&[
        "bench",
        "--records",
        "20k",
        "--formats",
        "cpt,jsonl,engine",
        "--runs",
        "3",
        "--json",
    ]);
    assert!(o.status.success(), "{}", text(&o).1);
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    let rows = v.as_array().unwrap();
    assert_eq!(rows.len(), 3);
    // The same trace gives the same path whatever the format.
    let len = rows[0]["length_ns"].as_u64().unwrap();
    assert!(len > 0);
    for r in rows {
        assert_eq!(r["length_ns"].as_u64(), Some(len));
        assert_eq!(r["records"].as_u64(), Some(20_000));
        assert!(r["records_per_s"].as_f64().unwrap() > 0.0);
        assert!(r["peak_rss_kib"].as_u64().unwrap() > 0);
        assert!(r["cpu_s"].as_f64().unwrap() > 0.0, "{r}");
        // The median of three runs lies within their extremes.
        assert_eq!(r["runs"].as_u64(), Some(3));
        let s = |k: &str| r[k].as_f64().unwrap();
        assert!(s("analyze_min_s") <= s("analyze_s"), "{r}");
        assert!(s("analyze_s") <= s("analyze_max_s"), "{r}");
    }
}

#[test]
fn bench_text_fits_a_terminal_and_names_a_bad_recording() {
    let o = run(&[
        "bench",
        "--records",
        "10k",
        "--formats",
        "cpt",
        "--runs",
        "1",
    ]);
    assert!(o.status.success(), "{}", text(&o).1);
    let out = text(&o).0;
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 2, "{out}");
    assert!(lines[0].starts_with("records format"), "{out}");
    assert!(lines[1].trim_start().starts_with("10k cpt "), "{out}");
    assert!(lines.iter().all(|l| l.chars().count() <= 80), "{out}");
    // --runs 0 is refused; so is a recording analyze cannot read, by name.
    let o = run(&["bench", "--records", "1k", "--runs", "0"]);
    assert_eq!(o.status.code(), Some(2));
    let tmp = tempfile::tempdir().unwrap();
    let bad = tmp.path().join("bad.data");
    std::fs::write(&bad, b"PERFILE2 cut short").unwrap();
    let o = run(&[
        "bench",
        "--records",
        "1k",
        "--formats",
        "engine",
        "--runs",
        "1",
        "--perf-data",
        bad.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o).1);
    assert!(text(&o).1.contains("bad.data"), "{}", text(&o).1);
}

#[test]
fn bench_replays_a_recording_from_cpt_and_finds_its_path() {
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("../readers/tests/fixtures/perf.data");
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path().to_str().unwrap();
    let o = run(&[
        "bench",
        "--formats",
        "none",
        "--perf-data",
        data.to_str().unwrap(),
        "--runs",
        "1",
        "--dir",
        d,
        "--keep",
        "--json",
    ]);
    assert!(o.status.success(), "{}", text(&o).1);
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    let rows = v.as_array().unwrap();
    let formats: Vec<&str> = rows.iter().map(|r| r["format"].as_str().unwrap()).collect();
    assert_eq!(formats, ["perf.data", "replay.cpt"]);
    for k in ["records", "nodes", "length_ns"] {
        assert_eq!(rows[0][k], rows[1][k], "{k}");
    }
    assert!(rows[0]["length_ns"].as_u64().unwrap() > 0);
    // The replay is kept, and analyzes as the recording does.
    let kept = tmp.path().join("replay.cpt");
    let a = run(&["analyze", "--json", kept.to_str().unwrap()]);
    let b = run(&["analyze", "--json", data.to_str().unwrap()]);
    assert!(a.status.success(), "{}", text(&a).1);
    assert_eq!(a.stdout, b.stdout);
}

#[test]
fn bench_makes_its_dir_and_keeps_the_traces_there() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("new/traces");
    let d = dir.to_str().unwrap();
    let o = run(&[
        "bench",
        "--records",
        "5k",
        "--formats",
        "cpt",
        "--dir",
        d,
        "--keep",
    ]);
    assert!(o.status.success(), "{}", text(&o).1);
    let kept = dir.join("bench-5000.cpt");
    assert!(kept.is_file(), "{} kept", kept.display());
    // The kept trace is a whole one: all its records read, none damaged.
    let a = run(&["analyze", "--json", kept.to_str().unwrap()]);
    assert!(a.status.success(), "{}", text(&a).1);
    let v: Value = serde_json::from_slice(&a.stdout).unwrap();
    assert_eq!(v["stats"]["records"].as_u64(), Some(5000));
    let kinds: Vec<&str> = v["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|d| d["kind"].as_str())
        .collect();
    assert!(!kinds.iter().any(|k| k.starts_with("input-")), "{kinds:?}");
    // A directory that cannot be made is a usage error naming it.
    let bad = tmp.path().join("file");
    std::fs::write(&bad, "x").unwrap();
    let under = bad.join("sub");
    let o = run(&["bench", "--records", "5k", "--dir", under.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        text(&o).1.contains(under.to_str().unwrap()),
        "{}",
        text(&o).1
    );
}

/// `critpath analyze ARGS FILE`, with `CRITPATH_THREADS=THREADS` when given.
fn analyze_threads(args: &[&str], f: &Path, threads: Option<&str>) -> Output {
    let mut c = std::process::Command::new(env!("CARGO_BIN_EXE_critpath"));
    c.arg("analyze").args(args).arg(f);
    if let Some(t) = threads {
        c.env("CRITPATH_THREADS", t);
    }
    c.output().expect("runs")
}

#[test]
fn two_threads_and_one_give_the_same_output_on_every_example() {
    // The reader runs on a thread of its own unless CRITPATH_THREADS=1.
    let run_with = |f: &Path, threads: Option<&str>| analyze_threads(&["--json"], f, threads);
    let mut compared = 0;
    let mut dirs = vec![example("")];
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                dirs.push(p);
                continue;
            }
            let ext = p.extension().and_then(|e| e.to_str()).unwrap_or("");
            if !["jsonl", "cpt", "json", "gz"].contains(&ext) {
                continue;
            }
            let one = run_with(&p, Some("1"));
            let two = run_with(&p, None);
            assert_eq!(one.status.code(), two.status.code(), "{}", p.display());
            assert_eq!(text(&one), text(&two), "{}", p.display());
            compared += 1;
        }
    }
    assert!(compared >= 5, "only {compared} examples found");
}

#[test]
fn a_spilled_node_log_reads_back_the_same_with_its_writer_thread_or_without() {
    // 1M records: a node log of some 4.5 MB, spilled in 2 MB pieces by a
    // thread of its own, or on the engine's thread with CRITPATH_THREADS=1.
    let dir = tempfile::tempdir().unwrap();
    let trace = bench_trace(dir.path(), 1_000_000, "cpt");
    let analyze = |threads| analyze_threads(&["--json", "--path"], &trace, threads);
    let (one, two) = (analyze(Some("1")), analyze(None));
    assert!(two.status.success(), "{}", text(&two).1);
    assert_eq!(text(&one), text(&two));
    let v: Value = serde_json::from_slice(&two.stdout).unwrap();
    assert!(
        v["stats"]["node_log_bytes"].as_u64().unwrap() > 2 << 20,
        "{v:#}"
    );
    assert!(v["critical_path"]["edges"].as_u64().unwrap() > 10_000);
}

#[test]
fn whatif_on_a_damaged_input_prints_what_was_read_and_exits_2() {
    let dir = tempfile::tempdir().unwrap();
    let mut body = String::new();
    for i in 0..400_000u64 {
        let st = if i % 2 == 0 { "work" } else { "rest" };
        body.push_str(&format!(
            "{{\"t\":{},\"sm\":\"a\",\"ev\":\"state\",\"state\":\"{st}\"}}\n",
            i * 10 + i % 7
        ));
    }
    let src = write(dir.path(), "src.jsonl", body.as_bytes());
    let cpt = dir.path().join("t.cpt");
    assert!(
        run(&["convert", src.to_str().unwrap(), cpt.to_str().unwrap()])
            .status
            .success()
    );
    let bytes = std::fs::read(&cpt).unwrap();
    let cut = write(dir.path(), "cut.cpt", &bytes[..bytes.len() * 3 / 4]);
    let cut = cut.to_str().unwrap();
    let o = run(&["whatif", cut, "--speedup", "a:work=2"]);
    assert_bad(&o, "cut.cpt", &["truncated", "byte offset"]);
    let (out, _) = text(&o);
    assert!(out.starts_with("baseline critical path"), "{out}");
    assert!(
        out.contains("2x faster") && out.contains("input-cut: "),
        "{out}"
    );
    let o = run(&["whatif", cut, "--speedup", "a:work=2", "--json"]);
    assert_bad(&o, "cut.cpt", &["truncated"]);
    let v: Value = serde_json::from_slice(&o.stdout).expect("the what-if of the intact part");
    let (b, p) = (
        v["baseline_length_ns"].as_u64().unwrap(),
        v["predicted_length_ns"].as_u64().unwrap(),
    );
    assert!(b > 0 && p < b, "{v}");
    assert_eq!(v["diagnostics"][0]["kind"], "input-cut");
    // A bad JSONL line: skipped, the rest analyzed.
    let fig3 = std::fs::read_to_string(example("nic-fig3.jsonl")).unwrap();
    let mut lines: Vec<&str> = fig3.lines().collect();
    lines.insert(5, "{\"t\":");
    let bad = write(dir.path(), "bad.jsonl", lines.join("\n"));
    let o = run(&[
        "whatif",
        bad.to_str().unwrap(),
        "--speedup",
        "nic.tx:DMA packet=2",
    ]);
    assert_bad(&o, "bad.jsonl:", &["expected a JSON object"]);
    let (out, _) = text(&o);
    assert!(out.contains("predicted critical path  530 ns"), "{out}");
    // A speed-up of a state beyond the damage: the damage is the error.
    let o = run(&["whatif", cut, "--speedup", "a:nowhere=2"]);
    assert_bad(&o, "cut.cpt", &["truncated"]);
}

#[test]
fn cpu_holders_zero_leaves_a_threads_wait_for_a_cpu_its_own() {
    // A recording where `hog` waits for CPUs other threads hold: by
    // default its wait is charged to the holders (blame, no runnable
    // time of its own on the path); CRITPATH_CPU_HOLDERS=0, resolved at
    // the command's edge and handed to the reader, keeps it hog's own.
    let f = Path::new(env!("CARGO_MANIFEST_DIR")).join("../os/tests/fixtures/contend.data");
    let runnable = |holders: Option<&str>| {
        let mut c = std::process::Command::new(env!("CARGO_BIN_EXE_critpath"));
        c.args(["analyze", "--json", "--top", "1000"]).arg(&f);
        if let Some(h) = holders {
            c.env("CRITPATH_CPU_HOLDERS", h);
        }
        let o = c.output().expect("runs");
        assert!(o.status.success(), "{}", text(&o).1);
        let v: Value = serde_json::from_slice(&o.stdout).unwrap();
        let row = v["states"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["sm"] == "hog:13825" && s["state"] == "runnable")
            .cloned()
            .expect("hog's runnable row");
        let blamed = row["blame"].as_array().map_or(0, |b| b.len());
        (row["critical_ns"].as_u64().unwrap(), blamed)
    };
    let (own, blamed) = runnable(None);
    assert!(own < 1_000_000 && blamed > 0, "{own} ns, {blamed} holders");
    let (own, blamed) = runnable(Some("0"));
    assert!(
        own > 30_000_000 && blamed == 0,
        "{own} ns, {blamed} holders"
    );
}

#[test]
fn a_recording_of_another_kernel_names_its_timers_by_address() {
    // The fixture was recorded by plain `perf record` on kernel
    // 6.18.44-fc-v657, with no .syms file beside it: this machine's
    // /proc/kallsyms would name other functions at its timers' addresses.
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("../readers/tests/fixtures/perf.data");
    let running = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    if running.trim() == "6.18.44-fc-v657" {
        eprintln!("skipped: this machine runs the fixture's kernel");
        return;
    }
    let v = json_of(&["analyze", "--json", data.to_str().unwrap()]);
    let diags = v["diagnostics"].as_array().unwrap();
    let d = diags
        .iter()
        .find(|d| d["kind"] == "kernel-symbols")
        .unwrap_or_else(|| panic!("no kernel-symbols finding: {diags:?}"));
    let msg = d["message"].as_str().unwrap();
    assert!(
        msg.contains("6.18.44-fc-v657") && msg.contains(running.trim()),
        "{msg}"
    );
    let timers: Vec<&str> = v["states"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|s| s["sm"].as_str())
        .filter(|sm| sm.starts_with("timer:"))
        .collect();
    assert!(!timers.is_empty());
    for sm in timers {
        assert!(
            sm.starts_with("timer:0xffff"),
            "{sm} named by another kernel's table"
        );
    }
}

#[test]
fn check_of_a_recording_fails_on_damage_not_on_its_findings() {
    // `critpath record -- sleep 0.05` on this project's machine: the kernel
    // gave no wakeup for one of rcu_preempt's waits (an idle CPU's), so the
    // OS graph's open wait was left without one.
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("../os/tests/fixtures/open_wait.data");
    let data = data.to_str().unwrap();
    let v = json_of(&["analyze", "--json", data]);
    let kinds: Vec<&str> = (v["diagnostics"].as_array().unwrap().iter())
        .map(|d| d["kind"].as_str().unwrap())
        .collect();
    assert!(kinds.contains(&"wait-advanced-early"), "{kinds:?}");
    let o = run(&["check", data]);
    assert!(o.status.success(), "{}", text(&o).0);
    assert!(text(&o).0.trim_end().ends_with(": ok"), "{}", text(&o).0);
    // The same finding in a trace someone wrote is an error of the trace.
    let dir = tempfile::tempdir().unwrap();
    let t = write(
        dir.path(),
        "w.jsonl",
        "{\"t\":0,\"sm\":\"A\",\"ev\":\"wait\",\"state\":\"w\"}\n{\"t\":5,\"sm\":\"A\",\"ev\":\"state\",\"state\":\"x\"}\n{\"t\":9,\"sm\":\"A\",\"ev\":\"end\"}\n",
    );
    let o = run(&["check", t.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o).0);
    assert!(text(&o).0.contains("wait-advanced-early"), "{}", text(&o).0);
}
