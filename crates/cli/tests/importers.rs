//! Importers end to end, on small hand-written traces whose critical paths
//! are worked out by hand.

mod common;

use common::*;

#[test]
fn chrome_slices_nesting_and_flows() {
    let dir = tempfile::tempdir().unwrap();
    // Thread A works 0-10 µs ('work' 0-2 and 6-10, with a nested 'parse'
    // 2-6) and hands off to thread B by a flow at 10; B, idle until then,
    // handles it 10-25 µs; A goes on with 'cleanup' 10-40. The longest path
    // is A's own: work 6 + parse 4 + cleanup 30 = 40 µs. To B's end: work 6
    // + parse 4, the flow (0 µs), handle 15 = 25 µs.
    let body = r#"{"traceEvents": [
      {"ph":"M","name":"thread_name","pid":1,"tid":1,"args":{"name":"A"}},
      {"ph":"M","name":"thread_name","pid":1,"tid":2,"args":{"name":"B"}},
      {"ph":"X","name":"work","pid":1,"tid":1,"ts":0,"dur":10},
      {"ph":"X","name":"parse","pid":1,"tid":1,"ts":2,"dur":4},
      {"ph":"s","name":"req","cat":"c","id":7,"pid":1,"tid":1,"ts":10},
      {"ph":"X","name":"cleanup","pid":1,"tid":1,"ts":10,"dur":30},
      {"ph":"X","name":"idle-ish","pid":1,"tid":2,"ts":0,"dur":1},
      {"ph":"f","name":"req","cat":"c","id":7,"pid":1,"tid":2,"ts":10,"bp":"e"},
      {"ph":"B","name":"handle","pid":1,"tid":2,"ts":10},
      {"ph":"E","pid":1,"tid":2,"ts":25}
    ]}"#;
    let p = write(dir.path(), "t.json", body);
    let v = json_of(&["analyze", p.to_str().unwrap(), "--json"]);
    assert_eq!(v["critical_path"]["length_ns"], 40_000);
    assert_eq!(crit(&v, "A", "work"), 6_000);
    assert_eq!(crit(&v, "A", "parse"), 4_000);
    assert_eq!(crit(&v, "A", "cleanup"), 30_000);
    // To B's end instead: A's first 10 µs, then the flow, then 'handle' 15.
    let v = json_of(&["analyze", p.to_str().unwrap(), "--json", "--to", "B"]);
    assert_eq!(v["critical_path"]["length_ns"], 25_000);
    assert_eq!(v["critical_path"]["start"]["sm"], "A");
    assert_eq!(crit(&v, "B", "handle"), 15_000);
    assert_eq!(crit(&v, "A", "work"), 6_000);
    // The gap on B before the flow is a state of its own.
    let idle = v["states"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["sm"] == "B" && s["state"] == "idle")
        .unwrap();
    assert_eq!(idle["total_ns"], 9_000);
}

#[test]
fn chrome_bare_array_bind_ids_and_async_tracks() {
    let dir = tempfile::tempdir().unwrap();
    // Producer slice 0-5 µs flows out (bind_id) into consumer slice 8-20;
    // an async track op:1 spans 3-30 with no link. Fractional µs too.
    let body = r#"[
      {"ph":"X","name":"produce","pid":3,"tid":4,"ts":0,"dur":5,"bind_id":"0x1","flow_out":true},
      {"ph":"X","name":"consume","pid":3,"tid":5,"ts":8,"dur":12.5,"bind_id":"0x1","flow_in":true},
      {"ph":"b","name":"request","cat":"op","id":1,"pid":3,"tid":4,"ts":3},
      {"ph":"e","name":"request","cat":"op","id":1,"pid":3,"tid":4,"ts":30}
    ]"#;
    let p = write(dir.path(), "a.json", body);
    let v = json_of(&["analyze", p.to_str().unwrap(), "--json", "--to", "3:5"]);
    // produce 5, the flow's 3 µs (charged to the consumer's idle gap), consume 12.5.
    assert_eq!(v["critical_path"]["length_ns"], 20_500);
    assert_eq!(crit(&v, "3:4", "produce"), 5_000);
    assert_eq!(crit(&v, "3:5", "idle"), 3_000);
    assert_eq!(crit(&v, "3:5", "consume"), 12_500);
    let v = json_of(&["analyze", p.to_str().unwrap(), "--json"]);
    assert_eq!(v["critical_path"]["length_ns"], 27_000);
    assert_eq!(v["critical_path"]["end"]["sm"], "op:1");
    // Convert to .cpt and back: the same analysis.
    let cpt = dir.path().join("a.cpt");
    assert!(
        run(&["convert", p.to_str().unwrap(), cpt.to_str().unwrap()])
            .status
            .success()
    );
    let w = json_of(&["analyze", cpt.to_str().unwrap(), "--json"]);
    assert_eq!(w["critical_path"], v["critical_path"]);
    assert_eq!(w["states"], v["states"]);
}

#[test]
fn chrome_bad_input() {
    let dir = tempfile::tempdir().unwrap();
    let p = write(
        dir.path(),
        "bad.json",
        "{\"traceEvents\": [\n {\"ph\":\"X\",\n",
    );
    let o = run(&["analyze", p.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("bad.json") && err.contains("Chrome/Perfetto"),
        "{err}"
    );
    let p = write(dir.path(), "empty.json", "{\"traceEvents\": [{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":1,\"args\":{\"name\":\"x\"}}]}");
    let o = run(&["analyze", p.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("no slices"));
}

#[test]
fn jaeger_request_critical_path_by_hand() {
    // GET /checkout (frontend, 0-100 ms) calls auth 5-15, cart 15-60 (which
    // calls db 20-55), payment 60-95, one after the other. The path: GET 5,
    // verify 10, load cart 5, SELECT 35, load cart 5, charge 35, GET 5.
    let v = json_of(&["analyze", &example("spans/checkout-jaeger.json"), "--json"]);
    assert_eq!(v["critical_path"]["length_ns"], 100_000_000);
    assert_eq!(v["critical_path"]["start"]["sm"], "frontend");
    for (sm, st, ms) in [
        ("frontend", "GET /checkout", 10),
        ("auth", "verify", 10),
        ("cart", "load cart", 10),
        ("db", "SELECT cart", 35),
        ("payment", "charge", 35),
    ] {
        assert_eq!(crit(&v, sm, st), ms * 1_000_000, "{sm}:{st}");
    }
    assert_eq!(v["stats"]["state_machines"], 5);
    assert!(
        v["diagnostics"].as_array().unwrap().is_empty(),
        "{}",
        v["diagnostics"]
    );
}

#[test]
fn otlp_spans_lanes_and_follows_from() {
    // As the Jaeger trace, plus a second cart span 20-30 ms called by the
    // root while the first (15-60) runs: a sibling within its time, on a
    // lane of its own (cart#2), which the root waits for too but which ends
    // first; and a mailer span 110-130 ms that follows from the
    // request: the request's path ends with its root span (100 ms), and
    // the mailer, after it, is off the path (an `after-root` finding).
    let file = example("spans/checkout-otlp.json");
    let v = json_of(&["analyze", &file, "--json"]);
    assert_eq!(v["critical_path"]["length_ns"], 100_000_000);
    assert_eq!(v["critical_path"]["end"]["sm"], "frontend");
    for (sm, st, ms) in [
        ("frontend", "GET /checkout", 20),
        ("cart", "load cart", 45),
        ("cart#2", "load cart", 0),
        ("payment", "charge", 35),
        ("mailer", "idle", 0),
        ("mailer", "send receipt", 0),
    ] {
        assert_eq!(crit(&v, sm, st), ms * 1_000_000, "{sm}:{st}");
    }
    let d = &v["diagnostics"][0];
    assert_eq!(
        (d["kind"].as_str(), d["count"].as_u64()),
        (Some("after-root"), Some(1))
    );
    assert_eq!(d["ns"], 30_000_000);
    // Growing the mailer's spans cannot lengthen the request: no slack.
    let v = json_of(&["slack", &file, "--json"]);
    let rows = v["states"].as_array().unwrap();
    for r in rows {
        assert_eq!(r.get("slack_ns").is_some(), r["sm"] != "mailer", "{r}");
    }
    // Asked for, the path goes on to the mailer: the 10 ms gap is charged
    // to the mailer's idle state.
    let v = json_of(&["analyze", &file, "--json", "--to", "mailer"]);
    assert_eq!(v["critical_path"]["length_ns"], 130_000_000);
    assert_eq!(crit(&v, "mailer", "idle"), 10_000_000);
    assert_eq!(crit(&v, "mailer", "send receipt"), 20_000_000);
}

#[test]
fn overlapping_spans_of_one_service_get_lanes() {
    let dir = tempfile::tempdir().unwrap();
    // Two concurrent 'work' spans of one service (0-10 and 5-20 ms).
    let body = r#"{"data":[{"traceID":"t","spans":[
      {"traceID":"t","spanID":"1","operationName":"work","references":[],"startTime":0,"duration":10000,"processID":"p"},
      {"traceID":"t","spanID":"2","operationName":"work","references":[],"startTime":5000,"duration":15000,"processID":"p"}],
      "processes":{"p":{"serviceName":"svc"}}}]}"#;
    let p = write(dir.path(), "j.json", body);
    let v = json_of(&["analyze", p.to_str().unwrap(), "--json"]);
    assert_eq!(v["stats"]["state_machines"], 2);
    assert!(v["states"]
        .as_array()
        .unwrap()
        .iter()
        .any(|s| s["sm"] == "svc#2"));
    assert_eq!(v["critical_path"]["length_ns"], 15_000_000);
    let p = write(dir.path(), "none.json", r#"{"resourceSpans": []}"#);
    let o = run(&["analyze", p.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("no spans"));
}

#[test]
fn concurrent_siblings_within_each_others_time_bound_their_parent() {
    let dir = tempfile::tempdir().unwrap();
    // api (0-100 ms) calls w1 10-60, w2 10-80 and w3 10-30 of worker at
    // once: it waits for each, so w2 bounds it (70 ms of the 100).
    let span = |id: &str, parent: &str, name: &str, a: u64, b: u64| {
        format!(
            r#"{{"traceId":"0b","spanId":"{id}","parentSpanId":"{parent}","name":"{name}","startTimeUnixNano":"{a}000000","endTimeUnixNano":"{b}000000"}}"#
        )
    };
    let res = |svc: &str, spans: &[String]| {
        format!(
            r#"{{"resource":{{"attributes":[{{"key":"service.name","value":{{"stringValue":"{svc}"}}}}]}},"scopeSpans":[{{"spans":[{}]}}]}}"#,
            spans.join(",")
        )
    };
    let workers = [
        span("a1", "0r", "w1", 10, 60),
        span("a2", "0r", "w2", 10, 80),
        span("a3", "0r", "w3", 10, 30),
    ];
    let api = res("api", &[span("0r", "", "fanout", 0, 100)]);
    let body = format!(r#"{{"resourceSpans":[{api},{}]}}"#, res("worker", &workers));
    let p = write(dir.path(), "fan.json", &body);
    let f = p.to_str().unwrap();
    let v = json_of(&["analyze", f, "--json"]);
    assert_eq!(v["critical_path"]["length_ns"], 100_000_000);
    assert_eq!(crit(&v, "worker", "w2"), 70_000_000);
    // Removing a shorter sibling changes nothing; halving w2 gives 80 ms
    // (then w1 bounds api). A span name of the service reaches its lanes.
    let predicted = |spec: &str| {
        let v = json_of(&["whatif", f, "--speedup", spec, "--json"]);
        v["predicted_length_ns"].as_u64().unwrap()
    };
    assert_eq!(predicted("worker:w3=1e9"), 100_000_000);
    assert_eq!(predicted("worker:w1=1e9"), 100_000_000);
    assert_eq!(predicted("worker:w2=2"), 80_000_000);
    let lanes: Vec<String> = (v["states"].as_array().unwrap().iter())
        .map(|s| {
            format!(
                "{}: {}",
                s["sm"].as_str().unwrap(),
                s["state"].as_str().unwrap()
            )
        })
        .collect();
    assert!(lanes.contains(&"worker#2: w1".to_string()), "{lanes:?}");
    assert_eq!(predicted("worker#2:w1=1e9"), 100_000_000);
}

/// A relay of `items` 10 µs slices over four threads, each item handed to
/// the next by a flow 3 µs later, written in reverse time order with the
/// thread names last (the importer must sort everything and name threads
/// after the fact). The path: every slice and every gap, 13 µs an item
/// but the last.
fn relay(items: u64) -> String {
    let mut ev = Vec::new();
    for i in 0..items {
        let (tid, t) = (i % 4 + 1, i * 13);
        ev.push(format!(
            r#"{{"ph":"X","name":"work","pid":1,"tid":{tid},"ts":{t},"dur":10}}"#
        ));
        if i > 0 {
            let from = (i - 1) % 4 + 1;
            ev.push(format!(
                r#"{{"ph":"s","name":"h","cat":"r","id":{i},"pid":1,"tid":{from},"ts":{}}}"#,
                t - 3
            ));
            ev.push(format!(
                r#"{{"ph":"f","bp":"e","name":"h","cat":"r","id":{i},"pid":1,"tid":{tid},"ts":{t}}}"#
            ));
        }
    }
    ev.reverse();
    for tid in 1..=4 {
        ev.push(format!(
            r#"{{"ph":"M","name":"thread_name","pid":1,"tid":{tid},"args":{{"name":"relay"}}}}"#
        ));
    }
    format!("{{\"traceEvents\": [\n{}\n]}}\n", ev.join(",\n"))
}

#[test]
fn a_chrome_trace_sorted_on_disk_gives_the_analysis_sorted_in_memory() {
    let dir = tempfile::tempdir().unwrap();
    let p = write(dir.path(), "relay.json", relay(3000));
    let p = p.to_str().unwrap();
    let analyze = |items: &str| {
        let o = std::process::Command::new(env!("CARGO_BIN_EXE_critpath"))
            .args(["analyze", p, "--json"])
            .env("CRITPATH_SORT_ITEMS", items)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        o.stdout
    };
    let memory = analyze("100000000");
    let v: serde_json::Value = serde_json::from_slice(&memory).unwrap();
    assert_eq!(v["critical_path"]["length_ns"], (3000 * 13 - 3) * 1000);
    let work: u64 = (1..=4)
        .map(|t| crit(&v, &format!("relay [tid {t}]"), "work"))
        .sum();
    assert_eq!(work, 3000 * 10_000);
    // A budget of a few items: hundreds of runs on disk, merged by levels.
    for items in ["1", "17", "4096"] {
        assert!(
            memory == analyze(items),
            "budget {items} changes the analysis"
        );
    }
}

#[test]
fn chrome_threads_of_one_name_and_tid_stay_apart() {
    let dir = tempfile::tempdir().unwrap();
    // Two processes' thread 5, both named "w": two SMs named after their
    // processes (process 1's second thread makes 5 not its main thread),
    // not one whose slices would interleave; an async track
    // whose name `CAT:ID` is that of a thread no metadata names takes the
    // next free name.
    let body = r#"[
      {"ph":"M","name":"thread_name","pid":1,"tid":5,"args":{"name":"w"}},
      {"ph":"M","name":"thread_name","pid":2,"tid":5,"args":{"name":"w"}},
      {"ph":"X","name":"a","pid":1,"tid":5,"ts":0,"dur":10},
      {"ph":"X","name":"b","pid":2,"tid":5,"ts":5,"dur":20},
      {"ph":"X","name":"d","pid":1,"tid":9,"ts":5,"dur":2},
      {"ph":"b","name":"c","cat":"1","id":"9","pid":1,"tid":5,"ts":1},
      {"ph":"e","name":"c","cat":"1","id":"9","pid":1,"tid":5,"ts":3}
    ]"#;
    let p = write(dir.path(), "t.json", body);
    let v = json_of(&["analyze", p.to_str().unwrap(), "--json"]);
    let sms: std::collections::BTreeSet<&str> = v["states"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["sm"].as_str().unwrap())
        .collect();
    assert_eq!(
        sms.into_iter().collect::<Vec<_>>(),
        ["1:9", "1:9#2", "pid 1/w", "w [pid 2]"]
    );
    assert_eq!(crit(&v, "w [pid 2]", "b"), 20_000);
}

#[test]
fn every_unusable_chrome_event_is_counted_past_those_listed() {
    let dir = tempfile::tempdir().unwrap();
    let mut ev: Vec<String> = (0..2500)
        .map(|i| format!(r#"{{"ph":"X","name":"bad","pid":1,"tid":1,"ts":{i}}}"#))
        .collect();
    ev.push(r#"{"ph":"X","name":"good","pid":1,"tid":1,"ts":0,"dur":5}"#.into());
    let p = write(dir.path(), "t.json", format!("[{}]", ev.join(",\n")));
    let o = run(&["analyze", p.to_str().unwrap(), "--json"]);
    assert_eq!(o.status.code(), Some(2), "skipped events exit 2");
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(crit(&v, "1:1", "good"), 5_000);
    let skipped: u64 = v["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["kind"] == "input-skipped")
        .map(|d| d["count"].as_u64().unwrap_or(1))
        .sum();
    assert_eq!(skipped, 2500, "{}", v["diagnostics"]);
}

/// `critpath ARGS` with the external sorts' budget set to `items`.
fn with_budget(args: &[&str], items: &str) -> Vec<u8> {
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_critpath"))
        .args(args)
        .env("CRITPATH_SORT_ITEMS", items)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    o.stdout
}

/// OTLP spans of `n` requests in one file, their resource named after its
/// spans: request r (trace id `t{r}`) is a 100 ms `GET` on `front` waiting
/// for `load` on `cart` (10..10+r ms); the requests interleave in the file.
fn otlp_requests(n: u64) -> String {
    let span = |t: u64, id: &str, parent: &str, name: &str, start: u64, end: u64| {
        format!(
            r#"{{"traceId":"t{t}","spanId":"{id}{t}","parentSpanId":"{parent}","name":"{name}","startTimeUnixNano":"{start}","endTimeUnixNano":"{end}"}}"#
        )
    };
    let ms = 1_000_000;
    let (mut front, mut cart) = (Vec::new(), Vec::new());
    for t in 0..n {
        front.push(span(t, "f", "", "GET", 0, 100 * ms));
        let parent = format!("f{t}");
        cart.push(span(t, "c", &parent, "load", 10 * ms, (10 + t) * ms));
    }
    let resource = |svc: &str, spans: &[String], resource_first: bool| {
        let res = format!(
            r#""resource":{{"attributes":[{{"key":"service.name","value":{{"stringValue":"{svc}"}}}}]}}"#
        );
        let scopes = format!(r#""scopeSpans":[{{"spans":[{}]}}]"#, spans.join(","));
        if resource_first {
            format!("{{{res},{scopes}}}")
        } else {
            format!("{{{scopes},{res}}}")
        }
    };
    format!(
        r#"{{"resourceSpans":[{},{}]}}"#,
        resource("front", &front, true),
        resource("cart", &cart, false)
    )
}

#[test]
fn span_files_grouped_on_disk_find_what_lost_context_as_in_memory() {
    // 40 requests: every third's cart call outlives its GET, every fifth
    // holds an orphan (its parent is in no span of the request).
    let mut spans = Vec::new();
    for r in 0..40u64 {
        let t = format!("t{r}");
        spans.push(otlp_span(&t, ("front", "f", "", "GET"), 0, 100));
        let end = if r % 3 == 0 { 105 } else { 50 };
        spans.push(otlp_span(&t, ("cart", "c", "f", "load"), 10, end));
        if r % 5 == 0 {
            spans.push(otlp_span(&t, ("db", "d", "gone", "SELECT"), 20, 30));
        }
    }
    let dir = tempfile::tempdir().unwrap();
    let body = format!(r#"{{"resourceSpans":[{}]}}"#, spans.join(","));
    let p = write(dir.path(), "lost.json", body);
    let cmd = ["analyze", p.to_str().unwrap(), "--json"];
    let memory = with_budget(&cmd, "1000000");
    let v: serde_json::Value = serde_json::from_slice(&memory).unwrap();
    let said = |kind: &str| -> String {
        let d = v["diagnostics"].as_array().unwrap().iter();
        let mut d = d.filter(|d| d["kind"] == kind);
        d.next()
            .map_or("", |d| d["message"].as_str().unwrap())
            .to_string()
    };
    let cut = said("child-outlives-parent");
    assert!(cut.starts_with("14 spans in 14 requests"), "{cut}");
    let orphans = said("span-context");
    assert!(
        orphans.starts_with("8 orphan spans in 8 requests"),
        "{orphans}"
    );
    for items in ["1", "5", "64"] {
        assert!(with_budget(&cmd, items) == memory, "budget {items}");
    }
}

#[test]
fn span_files_grouped_on_disk_give_the_analyses_grouped_in_memory() {
    let dir = tempfile::tempdir().unwrap();
    let p = write(dir.path(), "many.json", otlp_requests(60));
    let p = p.to_str().unwrap();
    let whole = with_budget(&["analyze", p, "--json"], "100000000");
    let v: serde_json::Value = serde_json::from_slice(&whole).unwrap();
    assert_eq!(v["traces"], 60, "{v}");
    let one = ["analyze", p, "--json", "--trace", "t42"];
    let t42 = with_budget(&one, "100000000");
    let v: serde_json::Value = serde_json::from_slice(&t42).unwrap();
    // The cart span named by a resource read after its spans.
    assert_eq!(crit(&v, "cart", "load"), 42_000_000, "{v}");
    // A budget of a few spans: every request's spans come back from disk.
    for items in ["1", "7"] {
        assert!(whole == with_budget(&["analyze", p, "--json"], items));
        assert!(t42 == with_budget(&one, items), "budget {items}");
    }
    let o = run(&["analyze", p, "--trace", "t999"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("the file holds 60 trace ids: t0, t1, t10, t11, t12, ..."),
        "{err}"
    );
}

/// Generated Kineto ranks (crates/gpu/tests/gen/gen_kineto.py) in `dir`;
/// false (with a note) without python3.
fn kineto_ranks(dir: &std::path::Path, args: &[&str]) -> bool {
    let script =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../gpu/tests/gen/gen_kineto.py");
    let ok = std::process::Command::new("python3")
        .arg(script)
        .arg(dir)
        .args(args)
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        eprintln!("note: python3 could not run the generator; test skipped");
    }
    ok
}

#[test]
fn kineto_ranks_sorted_on_disk_give_the_analysis_sorted_in_memory() {
    let dir = tempfile::tempdir().unwrap();
    let args = [
        "--ranks",
        "3",
        "--steps",
        "4",
        "--layers",
        "5",
        "--slow-rank",
        "1",
    ];
    if !kineto_ranks(dir.path(), &args) {
        return;
    }
    let files: Vec<String> = (0..3)
        .map(|r| {
            dir.path()
                .join(format!("rank{r}.pt.trace.json"))
                .display()
                .to_string()
        })
        .collect();
    let mut cmd = vec!["analyze", "--json", "--path"];
    cmd.extend(files.iter().map(|s| s.as_str()));
    let memory = with_budget(&cmd, "1000000");
    for items in ["1", "5", "64"] {
        assert!(with_budget(&cmd, items) == memory, "budget {items}");
    }
    let v: serde_json::Value = serde_json::from_slice(&memory).unwrap();
    assert_eq!(
        v["states"][0]["sm"], "rank1/gpu0:stream7",
        "{}",
        v["states"][0]
    );
    // One rank's window, also through the disk.
    let mut step = cmd.clone();
    step.extend(["--annotation", "ProfilerStep", "--instance", "2"]);
    assert!(with_budget(&step, "3") == with_budget(&step, "1000000"));
}

#[test]
fn a_chrome_flow_step_receives_from_the_event_before_it() {
    let dir = tempfile::tempdir().unwrap();
    // The consumer prepares 0-31 µs and sends; the producer's step at 33
    // receives it and produces 33-53: the path crosses the flow (before,
    // the step received its own send and the path stayed on one thread).
    let body = r#"{"traceEvents": [
      {"ph":"M","name":"thread_name","pid":1,"tid":1,"args":{"name":"consumer"}},
      {"ph":"M","name":"thread_name","pid":1,"tid":2,"args":{"name":"producer"}},
      {"ph":"X","name":"prep","pid":1,"tid":1,"ts":0,"dur":31},
      {"ph":"s","cat":"q","id":"0x2","pid":1,"tid":1,"ts":31},
      {"ph":"t","cat":"q","id":"0x2","pid":1,"tid":2,"ts":33},
      {"ph":"X","name":"produce","pid":1,"tid":2,"ts":33,"dur":20}
    ]}"#;
    let p = write(dir.path(), "flow.json", body);
    let v = json_of(&["analyze", p.to_str().unwrap(), "--json"]);
    assert_eq!(v["critical_path"]["start"]["sm"], "consumer");
    assert_eq!(crit(&v, "consumer", "prep"), 31_000);
    assert_eq!(crit(&v, "producer", "produce"), 20_000);
}

#[test]
fn a_chrome_flow_passed_on_at_the_time_it_arrives_carries_the_path_on() {
    let dir = tempfile::tempdir().unwrap();
    // `a` works 0-10 µs and flows to `b` at 10; `b` passes it on to `c` at
    // once (a flow received and one sent at 10, in that order); `c` works
    // 10-30. The path is a's 10 µs and c's 20 (before, b's send went out
    // before its receive came in: a 20 µs path from `b`). The file lists
    // c's receive and work first.
    let body = r#"{"traceEvents": [
      {"ph":"M","name":"thread_name","pid":1,"tid":1,"args":{"name":"a"}},
      {"ph":"M","name":"thread_name","pid":1,"tid":2,"args":{"name":"b"}},
      {"ph":"M","name":"thread_name","pid":1,"tid":3,"args":{"name":"c"}},
      {"ph":"f","cat":"x","id":2,"pid":1,"tid":3,"ts":10,"bp":"e"},
      {"ph":"X","name":"wc","pid":1,"tid":3,"ts":10,"dur":20},
      {"ph":"X","name":"wa","pid":1,"tid":1,"ts":0,"dur":10},
      {"ph":"f","cat":"x","id":1,"pid":1,"tid":2,"ts":10,"bp":"e"},
      {"ph":"s","cat":"x","id":2,"pid":1,"tid":2,"ts":10},
      {"ph":"s","cat":"x","id":1,"pid":1,"tid":1,"ts":10}
    ]}"#;
    let p = write(dir.path(), "relay.json", body);
    let v = json_of(&["analyze", p.to_str().unwrap(), "--json"]);
    assert_eq!(v["critical_path"]["length_ns"], 30_000);
    assert_eq!(v["critical_path"]["start"]["sm"], "a");
    assert_eq!(crit(&v, "a", "wa"), 10_000);
    assert_eq!(crit(&v, "c", "wc"), 20_000);
    // A thread that sends before it receives at one time keeps that order:
    // b's send (listed first) carries only b's own time.
    let body = body.replace(
        r#"{"ph":"f","cat":"x","id":1,"pid":1,"tid":2,"ts":10,"bp":"e"},
      {"ph":"s","cat":"x","id":2,"pid":1,"tid":2,"ts":10},"#,
        r#"{"ph":"s","cat":"x","id":2,"pid":1,"tid":2,"ts":10},
      {"ph":"f","cat":"x","id":1,"pid":1,"tid":2,"ts":10,"bp":"e"},"#,
    );
    let p = write(dir.path(), "sent-first.json", &body);
    let v = json_of(&["analyze", p.to_str().unwrap(), "--json", "--to", "c"]);
    assert_eq!(v["critical_path"]["length_ns"], 20_000);
    assert_eq!(crit(&v, "a", "wa"), 0);
}

#[test]
fn chrome_json_with_its_events_after_a_large_header_is_chrome_json() {
    let dir = tempfile::tempdir().unwrap();
    let events = r#""traceEvents":[{"ph":"X","name":"work","pid":1,"tid":1,"ts":0,"dur":10}]"#;
    let pad = "x".repeat(10_000);
    let long = format!(r#"{{"otherData":{{"pad":"{pad}"}},{events}}}"#);
    let pretty = format!(
        "{{\n  \"otherData\": {{\n{}    \"k\": 0\n  }},\n  {events}\n}}\n",
        "    \"key\": \"value\",\n".repeat(500)
    );
    for (name, body) in [("late.json", long), ("pretty.json", pretty)] {
        let p = write(dir.path(), name, &body);
        let v = json_of(&["analyze", p.to_str().unwrap(), "--json"]);
        assert_eq!(crit(&v, "1:1", "work"), 10_000, "{name}");
        // Compressed and on standard input alike.
        let line = format!("gzip -c {} | $CRITPATH analyze - --json", p.display());
        let o = std::process::Command::new("sh")
            .args(["-c", &line])
            .env("CRITPATH", env!("CARGO_BIN_EXE_critpath"))
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        assert_eq!(crit(&v, "1:1", "work"), 10_000, "{name} on stdin");
    }
}

/// One OTLP span of request `trace`, as one resource's document (times
/// in ms; ids are prefixed with the trace's).
fn otlp_span(trace: &str, span: (&str, &str, &str, &str), a: u64, b: u64) -> String {
    let (svc, id, parent, name) = span;
    format!(
        r#"{{"resource":{{"attributes":[{{"key":"service.name","value":{{"stringValue":"{svc}"}}}}]}},"scopeSpans":[{{"spans":[{{"traceId":"{trace}","spanId":"{trace}{id}","parentSpanId":"{p}","name":"{name}","startTimeUnixNano":"{}","endTimeUnixNano":"{}"}}]}}]}}"#,
        a * 1_000_000,
        b * 1_000_000,
        p = if parent.is_empty() {
            String::new()
        } else {
            format!("{trace}{parent}")
        },
    )
}

/// A file `name` in `dir` of the OTLP spans of request `t`: (service, id,
/// parent, name, start ms, end ms) each.
fn otlp_file(
    dir: &std::path::Path,
    name: &str,
    spans: &[(&str, &str, &str, &str, u64, u64)],
) -> String {
    let spans: Vec<String> = spans
        .iter()
        .map(|&(svc, id, parent, name, a, b)| otlp_span("t", (svc, id, parent, name), a, b))
        .collect();
    let body = format!(r#"{{"resourceSpans":[{}]}}"#, spans.join(","));
    write(dir, name, body).to_str().unwrap().to_string()
}

/// One request of OTLP spans: GET (front, 0-100 ms) runs 20 ms, then calls
/// b (20-50) and c (20-80) at once, then runs 20 ms; c's db query 30-75.
fn fan_out(trace: &str, base_ms: u64) -> String {
    let span = |svc, id, parent, name, a: u64, b: u64| {
        otlp_span(trace, (svc, id, parent, name), base_ms + a, base_ms + b)
    };
    [
        span("front", "a", "", "GET", 0, 100),
        span("b", "b", "a", "work", 20, 50),
        span("c", "c", "a", "work", 20, 80),
        span("db", "d", "c", "SELECT", 30, 75),
    ]
    .join(",")
}

#[test]
fn a_parent_span_waits_for_its_last_child_and_whatifs_shorten_it() {
    let dir = tempfile::tempdir().unwrap();
    let p = write(
        dir.path(),
        "f.json",
        format!(r#"{{"resourceSpans":[{}]}}"#, fan_out("t1", 0)),
    );
    let p = p.to_str().unwrap();
    let v = json_of(&["analyze", p, "--json"]);
    assert_eq!(v["critical_path"]["length_ns"], 100_000_000);
    for (sm, st, ms) in [
        ("front", "GET", 40),
        ("c", "work", 15),
        ("db", "SELECT", 45),
    ] {
        assert_eq!(crit(&v, sm, st), ms * 1_000_000, "{sm}:{st}");
    }
    // No long-state for the parent that waits.
    assert!(
        v["diagnostics"].as_array().unwrap().is_empty(),
        "{}",
        v["diagnostics"]
    );
    let predict = |spec: &str| {
        let w = json_of(&["whatif", p, "--speedup", spec, "--json"]);
        w["predicted_length_ns"].as_u64().unwrap() / 1_000_000
    };
    // db 45 -> 22.5: c's branch 20-57.5 still outlasts b's (20-50).
    assert_eq!(predict("db=2"), 77);
    assert_eq!(predict("db:SELECT=2"), 77);
    // Without db, c's branch (20-35) ends before b's: the parent waits for
    // the last child.
    assert_eq!(predict("db=1e9"), 70);
    assert_eq!(predict("b=2"), 100);
}

#[test]
fn a_server_span_that_outlives_its_client_span_still_ends_the_clients_wait() {
    // The OpenTelemetry shop's shape: GET (front, 0-100 ms) calls the cart
    // (client span 2-40) and, at once, checkout (client span 3-90, on a
    // second lane of front). The checkout server ends its span after the
    // response is written (4-91), 1 ms after its client span: cut at 90,
    // its end reaches the client span at the same time as the client
    // span's own end leaves for GET. Its db query (10-85) bounds the
    // request, and twice as fast it shortens it by 37.5 ms.
    let dir = tempfile::tempdir().unwrap();
    let p = &otlp_file(
        dir.path(),
        "shop.json",
        &[
            ("front", "a", "", "GET", 0, 100),
            ("front", "c1", "a", "GET /cart", 2, 40),
            ("cart", "c2", "c1", "GET /cart", 3, 39),
            ("front", "k1", "a", "POST /checkout", 3, 90),
            ("checkout", "k2", "k1", "POST /checkout", 4, 91),
            ("checkout", "k3", "k2", "SELECT", 10, 86),
            ("db", "k4", "k3", "SELECT", 11, 85),
        ],
    );
    let v = json_of(&["analyze", p, "--json"]);
    assert_eq!(v["critical_path"]["length_ns"], 100_000_000);
    assert_eq!(crit(&v, "db", "SELECT"), 74_000_000, "{v}");
    assert_eq!(crit(&v, "front#2", "POST /checkout"), 1_000_000, "{v}");
    let w = json_of(&["whatif", p, "--speedup", "db=2", "--json"]);
    assert_eq!(w["predicted_length_ns"], 63_000_000, "{w}");
}

#[test]
fn a_span_that_calls_at_its_own_start_is_called_first() {
    // GET (front, 0-100 ms) calls b at 10; b calls c at once (10-70) and
    // ends at 80. b's start reaches it before it calls c: the path starts
    // at GET's start and is the request's length.
    let dir = tempfile::tempdir().unwrap();
    let spans = [
        ("front", "a", "", "GET", 0, 100),
        ("b", "b", "a", "work", 10, 80),
        ("c", "c", "b", "work", 10, 70),
    ];
    let p = otlp_file(dir.path(), "chain.json", &spans);
    let v = json_of(&["analyze", &p, "--json"]);
    assert_eq!(v["critical_path"]["length_ns"], 100_000_000, "{v}");
    assert_eq!(v["critical_path"]["start"]["sm"], "front", "{v}");
    assert_eq!(crit(&v, "front", "GET"), 30_000_000, "{v}");
    assert_eq!(crit(&v, "c", "work"), 60_000_000, "{v}");
}

#[test]
fn a_span_file_of_one_service_requests_says_its_context_was_lost() {
    let dir = tempfile::tempdir().unwrap();
    let lonely = r#"{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"db"}}]},"scopeSpans":[{"spans":[{"traceId":"t3","spanId":"x","name":"SELECT","startTimeUnixNano":"500000000","endTimeUnixNano":"540000000"}]}]}"#;
    let body = format!(
        r#"{{"resourceSpans":[{},{},{lonely}]}}"#,
        fan_out("t1", 0),
        fan_out("t2", 200)
    );
    let p = write(dir.path(), "many.json", body);
    let p = p.to_str().unwrap();
    let o = run(&["analyze", p]);
    assert!(o.status.success());
    let text = String::from_utf8_lossy(&o.stdout);
    let second = text
        .lines()
        .find(|l| l.starts_with("caution"))
        .unwrap_or("");
    assert!(
        second
            .starts_with("caution (span-context): 1 of 3 requests hold spans of one service only"),
        "{text}"
    );
    let v = json_of(&["analyze", p, "--json"]);
    let d = v["diagnostics"].as_array().unwrap();
    assert!(d.iter().any(|d| d["kind"] == "span-context"), "{v}");
}

#[test]
fn a_chrome_call_by_flow_waits_for_the_slice_it_reached() {
    let dir = tempfile::tempdir().unwrap();
    // The client works 0-10 µs, then calls: `rpc` 10-95 with the flow
    // leaving at 12; the server handles 20-90 (`parse` 20-30, `query`
    // 30-90), and the client finishes 95-100. The client's `rpc` waits for
    // the handler: the path goes through it (12 µs on the client, 8 on the
    // server before `handle`, its 70, the client's last 10), and the query
    // twice as fast shortens the request by 30.
    let body = r#"{"traceEvents": [
      {"ph":"M","name":"thread_name","pid":1,"tid":1,"args":{"name":"client"}},
      {"ph":"M","name":"thread_name","pid":1,"tid":2,"args":{"name":"server"}},
      {"ph":"X","name":"request","pid":1,"tid":1,"ts":0,"dur":100},
      {"ph":"X","name":"rpc","pid":1,"tid":1,"ts":10,"dur":85},
      {"ph":"s","name":"call","cat":"rpc","id":1,"pid":1,"tid":1,"ts":12},
      {"ph":"f","name":"call","cat":"rpc","id":1,"pid":1,"tid":2,"ts":15},
      {"ph":"X","name":"handle","pid":1,"tid":2,"ts":20,"dur":70},
      {"ph":"X","name":"parse","pid":1,"tid":2,"ts":20,"dur":10},
      {"ph":"X","name":"query","pid":1,"tid":2,"ts":30,"dur":60}
    ]}"#;
    let p = write(dir.path(), "call.json", body);
    let p = p.to_str().unwrap();
    let v = json_of(&["analyze", p, "--json", "--path"]);
    assert_eq!(v["critical_path"]["length_ns"], 100_000);
    assert_eq!(crit(&v, "server", "query"), 60_000, "{v}");
    // 2 µs before the flow leaves, 5 after the answer: the wait weighs 0.
    assert_eq!(crit(&v, "client", "rpc"), 7_000);
    let inferred = v["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["kind"] == "inferred-link")
        .expect("the answer is said to be inferred");
    assert_eq!(inferred["count"], 1, "{inferred}");
    let w = json_of(&["whatif", p, "--speedup", "server:query=2", "--json"]);
    assert_eq!(w["predicted_length_ns"], 70_000, "{w}");
    // Converted to .cpt, the trace keeps the finding, and its path's edge
    // over the inferred link is still marked `inferred`.
    let cpt = dir.path().join("call.cpt");
    let o = run(&["convert", p, cpt.to_str().unwrap()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let c = json_of(&["analyze", cpt.to_str().unwrap(), "--json", "--path"]);
    assert_eq!(c, v);
    assert!(c.to_string().contains("\"inferred\":true"), "{c}");
}

#[test]
fn a_span_file_of_many_requests_bounds_each_path_by_its_root_and_says_what_it_settled() {
    let dir = tempfile::tempdir().unwrap();
    // t1: as fan_out, plus a mail span that follows from the request at
    // 110-160 ms (its own root, after GET's end). t2: as fan_out 200 ms
    // later, its db span on a clock 5 ms behind (it starts before c).
    let late = otlp_span("t1", ("mail", "m", "", "send"), 110, 160);
    let skewed = fan_out("t2", 200).replace(
        &otlp_span("t2", ("db", "d", "c", "SELECT"), 230, 275),
        &otlp_span("t2", ("db", "d", "c", "SELECT"), 215, 275),
    );
    assert!(skewed.contains("\"215000000\""), "{skewed}");
    let body = format!(
        r#"{{"resourceSpans":[{},{late},{skewed}]}}"#,
        fan_out("t1", 0)
    );
    let p = write(dir.path(), "many.json", body);
    let p = p.to_str().unwrap();
    let v = json_of(&["analyze", p, "--json"]);
    for r in v["per_trace"].as_array().unwrap() {
        assert_eq!(r["length_ns"], 100_000_000, "{r}");
    }
    let find = |kind: &str| {
        let d = v["diagnostics"].as_array().unwrap();
        d.iter()
            .find(|d| d["kind"] == kind)
            .cloned()
            .unwrap_or_default()
    };
    let after = find("after-root");
    assert_eq!(
        (after["count"].as_u64(), after["ns"].as_u64()),
        (Some(1), Some(60_000_000)),
        "{v}"
    );
    assert_eq!(after["severity"], "worth-knowing");
    let early = find("clock-offset");
    assert_eq!(
        (early["count"].as_u64(), early["ns"].as_u64()),
        (Some(1), Some(5_000_000)),
        "{v}"
    );
    assert!(
        early["message"]
            .as_str()
            .unwrap()
            .contains("db: SELECT before c: work in t2"),
        "{early}"
    );
    let o = run(&["analyze", p]);
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        text.contains("\nnote (after-root): 1 spans in 1 requests started after"),
        "{text}"
    );
    assert!(
        text.contains("\nnote (clock-offset): 1 spans in 1 requests"),
        "{text}"
    );
}
