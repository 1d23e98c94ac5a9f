//! What a person sees in the terminal: the verdict line, tables cut to
//! `COLUMNS`, names printed by one command accepted by the next, errors that
//! name the option used, and the messages that replace degenerate output.

mod common;

use common::*;
use std::path::Path;
use std::process::{Command, Output};

/// Runs critpath with `COLUMNS` set (or removed when `None`).
fn run_cols(columns: Option<&str>, args: &[&str]) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_critpath"));
    c.args(args);
    match columns {
        Some(v) => c.env("COLUMNS", v),
        None => c.env_remove("COLUMNS"),
    };
    c.output().expect("runs")
}

fn ok(o: &Output) -> String {
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8(o.stdout.clone()).unwrap()
}

fn err(o: &Output) -> String {
    assert_eq!(
        o.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
    String::from_utf8_lossy(&o.stderr).to_string()
}

/// Terminal columns: CJK ideographs and fullwidth forms take two.
fn cols(s: &str) -> usize {
    s.chars()
        .map(|c| match c as u32 {
            0x1100..=0x115F
            | 0x2E80..=0xA4CF
            | 0xAC00..=0xD7A3
            | 0xF900..=0xFAFF
            | 0xFF00..=0xFF60 => 2,
            _ => 1,
        })
        .sum()
}

/// A trace of two SMs: `worker` goes through `long` (600 ns, the
/// bottleneck) then `short` and ends last, `other` through `idle` then
/// `busy`.
fn two_sms(worker: &str, long: &str, other: &str) -> String {
    let line = |t: u64, sm: &str, st: &str| {
        format!("{{\"t\":{t},\"sm\":{sm:?},\"ev\":\"state\",\"state\":{st:?}}}\n")
    };
    [
        line(0, worker, long),
        line(0, other, "idle"),
        line(600, worker, "short"),
        line(650, other, "busy"),
        line(690, other, "done"),
        line(700, worker, "done"),
    ]
    .concat()
}

#[test]
fn verdict_line_comes_first_with_a_real_what_if() {
    let out = ok(&run_cols(None, &["analyze", &example("nic-fig3.jsonl")]));
    let first = out.lines().next().unwrap();
    // DMA packet twice as fast: 830 ns becomes 530 ns (1.57x shorter), as
    // `whatif` predicts on its own.
    assert_eq!(
        first,
        "bound by nic.tx: DMA packet — 72% of an 830 ns path; 2× faster → 1.6× shorter"
    );
    let w = json_of(&[
        "whatif",
        &example("nic-fig3.jsonl"),
        "--speedup",
        "nic.tx:DMA packet=2",
        "--json",
    ]);
    assert_eq!(w["predicted_length_ns"], 530);
    // The summary and the table follow unchanged.
    assert!(out.lines().nth(1).unwrap().contains("16 records, 16 nodes"));
    assert!(out.contains("1  nic.tx         DMA packet        2  600 ns    600 ns       72.29%"));
}

#[test]
fn long_names_are_cut_to_columns_and_printed_whole_with_wide() {
    let dir = tempfile::tempdir().unwrap();
    let (sm, state) = ("w".repeat(300), "s".repeat(300));
    let p = write(dir.path(), "long.jsonl", two_sms(&sm, &state, "other"));
    let p = p.to_str().unwrap();
    let out = ok(&run_cols(Some("100"), &["analyze", p]));
    for l in out.lines() {
        assert!(cols(l) <= 100, "{} columns: {l}", cols(l));
    }
    assert!(out.contains('…'), "{out}");
    // The table's rows are all there, names cut in the middle.
    assert!(out
        .lines()
        .any(|l| l.starts_with("1  www") && l.contains("…")));
    assert!(out.lines().any(|l| l.starts_with("3  other")), "{out}");
    // Twice as fast, the long state leaves `other` (690 ns) as the path:
    // said on a line of its own, the verdict being too wide for one.
    assert!(out.lines().next().unwrap().ends_with("of a 700 ns path;"));
    assert_eq!(
        out.lines().nth(1).unwrap(),
        "  2× faster → 1.4% shorter (another path takes over)",
        "{out}"
    );
    // --wide: names whole.
    let wide = ok(&run_cols(Some("100"), &["analyze", p, "--wide"]));
    assert!(wide.contains(&state) && wide.contains(&sm));
    // Piped with COLUMNS unset: today's full output.
    let piped = ok(&run_cols(None, &["analyze", p]));
    assert!(piped.contains(&state) && !piped.contains('…'));
}

#[test]
fn cjk_names_align() {
    let dir = tempfile::tempdir().unwrap();
    let p = write(
        dir.path(),
        "cjk.jsonl",
        two_sms("解码器", "解码帧", "reader-thread"),
    );
    let out = ok(&run_cols(Some("100"), &["analyze", p.to_str().unwrap()]));
    let table: Vec<&str> = out
        .lines()
        .skip_while(|l| !l.starts_with("#  "))
        .take_while(|l| !l.is_empty())
        .collect();
    assert!(table.len() >= 5, "{out}");
    // The last column is right-aligned: every line ends at the same column.
    let w = cols(table[0]);
    for l in &table {
        assert_eq!(cols(l), w, "{out}");
    }
    assert!(table
        .iter()
        .any(|l| l.contains("解码器") && l.contains("解码帧")));
}

#[test]
fn a_verdict_wider_than_the_terminal_takes_two_lines() {
    let pipeline = format!(
        "{}/../../examples/chrome/pipeline.json",
        env!("CARGO_MANIFEST_DIR")
    );
    let one = "bound by decoder: decode — 65% of an 80.00 µs path; 2× faster → 6.2% shorter (another path takes over)";
    // Piped, with no COLUMNS: one line, whatever its width.
    let out = ok(&run_cols(None, &["analyze", &pipeline]));
    assert_eq!(out.lines().next().unwrap(), one);
    // Wide enough: the same line.
    let out = ok(&run_cols(Some("120"), &["analyze", &pipeline]));
    assert_eq!(out.lines().next().unwrap(), one);
    // 80 columns: the what-if on a line of its own, indented.
    let out = ok(&run_cols(Some("80"), &["analyze", &pipeline]));
    let lines: Vec<&str> = out.lines().take(2).collect();
    assert_eq!(
        lines,
        [
            "bound by decoder: decode — 65% of an 80.00 µs path;",
            "  2× faster → 6.2% shorter (another path takes over)"
        ]
    );
    // Narrower than the first line: the name is cut in the middle too.
    let out = ok(&run_cols(Some("50"), &["analyze", &pipeline]));
    let first = out.lines().next().unwrap();
    assert!(cols(first) <= 50, "{first}");
    assert!(
        first.starts_with("bound by de") && first.contains('…'),
        "{first}"
    );
    assert!(out.lines().nth(1).unwrap().starts_with("  2× faster → "));
}

#[test]
fn names_as_printed_are_accepted_back() {
    let fig3 = example("nic-fig3.jsonl");
    let out = ok(&run_cols(None, &["analyze", &fig3]));
    // The verdict's name.
    let name = out
        .lines()
        .next()
        .unwrap()
        .strip_prefix("bound by ")
        .unwrap()
        .split(" — ")
        .next()
        .unwrap()
        .to_string();
    assert_eq!(name, "nic.tx: DMA packet");
    // A table row's SM and state.
    let row: Vec<&str> = out
        .lines()
        .find(|l| l.starts_with("2  "))
        .unwrap()
        .split("  ")
        .map(str::trim)
        .filter(|c| !c.is_empty())
        .collect();
    let row_name = format!("{}: {}", row[1], row[2]);
    assert_eq!(row_name, "nic.txfifo: transmit");
    for n in [&name, &row_name] {
        let w = json_of(&["whatif", &fig3, "--speedup", &format!("{n}=2"), "--json"]);
        assert!(w["predicted_length_ns"].as_u64().unwrap() < 830, "{n}");
        let to = json_of(&["analyze", &fig3, "--to", n, "--json"]);
        assert!(to["critical_path"]["found"].as_bool().unwrap(), "{n}");
        let rm = json_of(&["analyze", &fig3, "--remove", n, "--json"]);
        assert_eq!(rm["next_critical_path"]["removed"][0], n.as_str());
    }
    // The whatif's own listing prints names the same way.
    let w = ok(&run_cols(
        None,
        &["whatif", &fig3, "--speedup", "nic.tx: DMA packet=2"],
    ));
    assert!(w.contains("nic.tx: DMA packet"), "{w}");
}

#[test]
fn errors_name_the_option_used() {
    let fig3 = example("nic-fig3.jsonl");
    let e = err(&run_cols(
        None,
        &["analyze", &fig3, "--remove", "nic.tx:nope"],
    ));
    assert!(e.contains("--remove nic.tx:nope"), "{e}");
    assert!(!e.contains("--speedup"), "{e}");
    let e = err(&run_cols(
        None,
        &["whatif", &fig3, "--speedup", "nic.tx:nope=2"],
    ));
    assert!(e.contains("--speedup nic.tx:nope"), "{e}");
    let e = err(&run_cols(None, &["analyze", &fig3, "--to", "nic.tx: nope"]));
    assert!(e.contains("--to nic.tx: nope"), "{e}");
}

#[test]
fn the_verdict_says_another_path_takes_over_only_when_one_does() {
    let dir = tempfile::tempdir().unwrap();
    let verdict = |name: &str, body: String| {
        let p = write(dir.path(), name, body);
        let out = ok(&run_cols(None, &["analyze", p.to_str().unwrap()]));
        out.lines().next().unwrap().to_string()
    };
    // One SM through ten states of 100 ns: twice as fast, the top one
    // takes 50 ns off, and the path is the same.
    let mut chain = String::new();
    for i in 0..=10 {
        let line = format!(
            "{{\"t\":{},\"sm\":\"a\",\"ev\":\"state\",\"state\":\"s{i}\"}}\n",
            i * 100
        );
        chain.push_str(&line);
    }
    let v = verdict("chain.jsonl", chain);
    assert!(v.ends_with("2× faster → 5.0% shorter"), "{v}");
    // A 1 ns path: half of it rounds to the same length.
    let one = "{\"t\":1,\"sm\":\"a\",\"ev\":\"state\",\"state\":\"x\"}\n\
               {\"t\":2,\"sm\":\"a\",\"ev\":\"state\",\"state\":\"y\"}\n";
    let v = verdict("one.jsonl", one.to_string());
    assert!(v.ends_with("2× faster → no shorter"), "{v}");
}

#[test]
fn whatif_to_zero_says_the_path_vanishes() {
    let dir = tempfile::tempdir().unwrap();
    let body = "{\"t\":0,\"sm\":\"a\",\"ev\":\"state\",\"state\":\"work\"}\n\
                {\"t\":600,\"sm\":\"a\",\"ev\":\"state\",\"state\":\"done\"}\n";
    let p = write(dir.path(), "one.jsonl", body);
    let out = ok(&run_cols(
        None,
        &["whatif", p.to_str().unwrap(), "--speedup", "a:work=1e9"],
    ));
    assert!(out.contains("the path vanishes"), "{out}");
    assert!(!out.contains("inf"), "{out}");
}

#[test]
fn next_zero_is_an_error_that_says_what_is_expected() {
    let e = err(&run_cols(
        None,
        &["analyze", &example("nic-fig3.jsonl"), "--next", "0"],
    ));
    assert!(e.contains("--next 0") && e.contains("1 or more"), "{e}");
}

#[test]
fn identical_runs_differ_in_nothing() {
    let fig3 = example("nic-fig3.jsonl");
    let out = ok(&run_cols(None, &["diff", &fig3, &fig3]));
    assert!(out.contains("no difference"), "{out}");
    assert!(!out.contains("+0.00%"), "{out}");
}

#[test]
fn too_many_windows_are_folded() {
    let trace = example("chrome/pipeline.json");
    let out = ok(&run_cols(None, &["analyze", &trace, "--window", "10ns"]));
    assert!(out.lines().count() < 100, "{} lines", out.lines().count());
    assert!(out.contains("8000 windows are too many"), "{out}");
    // A width that gives few windows still lists them.
    let out = ok(&run_cols(None, &["analyze", &trace, "--window", "20us"]));
    let listed = out
        .lines()
        .skip_while(|l| !l.starts_with("critical path by time window"))
        .skip(1)
        .count();
    assert_eq!(listed, 4, "{out}");
}

#[test]
fn no_state_is_more_critical_than_long() {
    // decoder's decode ends with a recv of a frame sent 12 µs before
    // decode began: that wait counts in its total too.
    let trace = example("chrome/pipeline.json");
    let out = ok(&run_cols(None, &["analyze", &trace]));
    assert!(!out.contains("exceeds total"), "{out}");
    let json: serde_json::Value =
        serde_json::from_str(&ok(&run_cols(None, &["analyze", &trace, "--json"]))).unwrap();
    let rows = json["states"].as_array().unwrap();
    let decode = rows
        .iter()
        .find(|r| r["sm"] == "decoder" && r["state"] == "decode")
        .expect("decode row");
    assert_eq!(decode["critical_ns"], 52_000, "{decode}");
    assert_eq!(decode["total_ns"], 55_000, "{decode}");
    for r in rows {
        assert!(r["critical_ns"].as_u64() <= r["total_ns"].as_u64(), "{r}");
    }
}

#[test]
fn on_a_terminal_the_table_fits_the_screen_with_a_footer() {
    // `script` gives the command a terminal of 30 rows and 80 columns.
    if !std::path::Path::new("/usr/bin/script").exists() {
        eprintln!("skipped: no /usr/bin/script to run under a terminal");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let mut body = String::new();
    for (t0, st) in [(0, "x"), (1000, "y")] {
        for i in 0..60 {
            body.push_str(&format!(
                "{{\"t\":{},\"sm\":\"s{i}\",\"ev\":\"state\",\"state\":\"{st}\"}}\n",
                t0 + i * if t0 == 0 { 10 } else { 1 }
            ));
        }
    }
    let p = write(dir.path(), "many.jsonl", body);
    let line = format!(
        "stty rows 30 cols 80; env -u COLUMNS {} analyze {}",
        env!("CARGO_BIN_EXE_critpath"),
        p.display()
    );
    let o = Command::new("/usr/bin/script")
        .args(["-qc", &line, "/dev/null"])
        .output()
        .expect("runs");
    let out = String::from_utf8_lossy(&o.stdout).replace('\r', "");
    assert!(out.lines().count() <= 30, "{out}");
    assert!(out.contains("more states folded"), "{out}");
    // Piped, the same command prints all 120 states.
    let piped = ok(&run_cols(None, &["analyze", p.to_str().unwrap()]));
    assert!(piped.lines().any(|l| l.starts_with("120  ")), "{piped}");
    assert!(!piped.contains("folded"));
}

#[test]
fn slack_diff_and_whatif_listings_fit_columns() {
    let dir = tempfile::tempdir().unwrap();
    let (sm, state) = ("w".repeat(300), "s".repeat(300));
    let a = write(dir.path(), "a.jsonl", two_sms(&sm, &state, "other"));
    // Run B: the long state lasts 620 ns instead of 600.
    let slower = two_sms(&sm, &state, "other").replace("{\"t\":600,", "{\"t\":620,");
    let b = write(dir.path(), "b.jsonl", slower);
    let (a, b) = (a.to_str().unwrap(), b.to_str().unwrap());
    let target = format!("{sm}:{state}=2");
    let listings: [Vec<&str>; 3] = [
        vec!["slack", a],
        vec!["diff", a, b],
        vec!["whatif", a, "--speedup", &target],
    ];
    for args in listings {
        let out = ok(&run_cols(Some("100"), &args));
        for l in out.lines() {
            assert!(cols(l) <= 100, "{args:?}: {} columns: {l}", cols(l));
        }
        // The long state's row is there, its name cut in the middle.
        assert!(
            out.lines().any(|l| l.contains("www…sss")),
            "{args:?}: {out}"
        );
        // --wide: names whole.
        let wide = ok(&run_cols(
            Some("100"),
            &[args.as_slice(), &["--wide"]].concat(),
        ));
        assert!(wide.contains(&format!("{sm}: {state}")), "{args:?}: {wide}");
        assert!(!wide.contains('…'), "{args:?}: {wide}");
    }
}

#[test]
fn control_characters_in_names_are_escaped_in_text_and_exact_in_json() {
    let dir = tempfile::tempdir().unwrap();
    let (sm, state) = ("evil\u{1b}[2J\u{1b}[31m", "line\none\u{202e}\t 解码 é");
    let rec = |t: u64, ev: serde_json::Value| {
        let mut r = serde_json::json!({"t": t, "sm": sm});
        r.as_object_mut()
            .unwrap()
            .extend(ev.as_object().unwrap().clone());
        format!("{r}\n")
    };
    let body = [
        rec(0, serde_json::json!({"ev": "state", "state": state})),
        rec(100, serde_json::json!({"ev": "state", "state": "done"})),
        rec(
            150,
            serde_json::json!({"ev": "recv", "id": 7, "state": "x\u{7}"}),
        ),
    ]
    .concat();
    let p = write(dir.path(), "esc.jsonl", body);
    let p = p.to_str().unwrap();
    let speedup = format!("{sm}:{state}=2");
    let shown = [
        run_cols(Some("80"), &["analyze", p, "--path"]),
        run_cols(None, &["analyze", p, "--path"]),
        run_cols(None, &["whatif", p, "--speedup", &speedup]),
        run_cols(None, &["check", p]),
    ];
    let escaped_sm = "evil\\u001b[2J\\u001b[31m";
    for (i, o) in shown.iter().enumerate() {
        let out = String::from_utf8(o.stdout.clone()).unwrap();
        assert!(
            !out.contains(['\u{1b}', '\u{7}', '\u{202e}', '\t']),
            "{out:?}"
        );
        assert!(out.contains(escaped_sm), "{out}");
        // Printable Unicode is left alone (check names no state).
        assert!(i == 3 || out.contains("解码 é"), "{out}");
    }
    let table = String::from_utf8(shown[1].stdout.clone()).unwrap();
    assert!(table.starts_with(&format!(
        "bound by {escaped_sm}: line\\none\\u202e\\t 解码 é — "
    )));
    assert!(table.contains("x\\u0007"), "{table}");
    // Each row of the table is one line.
    assert!(
        table
            .lines()
            .any(|l| l.starts_with("1  evil") && l.ends_with("66.67%")),
        "{table}"
    );
    // Errors that quote a name escape it too.
    let e = err(&run_cols(
        None,
        &["whatif", p, "--speedup", &format!("{sm}:nope=2")],
    ));
    assert!(!e.contains('\u{1b}') && e.contains(escaped_sm), "{e}");
    // JSON keeps the names exact.
    let v = json_of(&["analyze", p, "--json"]);
    assert!(v["states"]
        .as_array()
        .unwrap()
        .iter()
        .any(|s| s["sm"] == sm && s["state"] == state));
}

/// A timer's `armed` as the OS graph has it: its time is the arming
/// link's, none on an edge of its own.
const ARMED: &str = r#"{"t":0,"sm":"app","ev":"state","state":"running"}
{"t":100,"sm":"app","ev":"send","id":1}
{"t":100,"sm":"app","ev":"wait","state":"blocked"}
{"t":10100,"sm":"timer","ev":"recv","id":1,"state":"armed"}
{"t":10100,"sm":"timer","ev":"state","state":"running"}
{"t":10150,"sm":"timer","ev":"send","id":2}
{"t":10150,"sm":"timer","ev":"end"}
{"t":10200,"sm":"app","ev":"recv","id":2,"state":"running"}
{"t":10300,"sm":"app","ev":"end"}
"#;

#[test]
fn a_speedup_of_a_state_whose_time_is_a_link_says_no_edge_changed() {
    let dir = tempfile::tempdir().unwrap();
    let p = write(dir.path(), "armed.jsonl", ARMED);
    let p = p.to_str().unwrap();
    let out = ok(&run_cols(None, &["analyze", p]));
    let v = out.lines().next().unwrap();
    assert!(v.starts_with("bound by timer: armed — 97%"), "{v}");
    assert!(
        v.ends_with("2× faster → no edge changed (its path time is a link's wait)"),
        "{v}"
    );
    assert!(!out.contains("another path takes over"), "{out}");
    let w = ok(&run_cols(
        None,
        &["whatif", p, "--speedup", "timer:armed=2"],
    ));
    assert!(
        w.contains("\nno edge changed: the states sped up carry no time of their own"),
        "{w}"
    );
    let j = json_of(&["whatif", p, "--speedup", "timer:armed=2", "--json"]);
    assert_eq!(
        (
            j["scaled_edges"].as_u64(),
            j["predicted_length_ns"].as_u64()
        ),
        (Some(0), Some(10300))
    );
    // A state with time of its own is scaled.
    let j = json_of(&["whatif", p, "--speedup", "app:running=2", "--json"]);
    assert_eq!(
        (
            j["scaled_edges"].as_u64(),
            j["predicted_length_ns"].as_u64()
        ),
        (Some(2), Some(10200))
    );
    let w = ok(&run_cols(
        None,
        &["whatif", p, "--speedup", "app:running=2"],
    ));
    assert!(!w.contains("no edge changed"), "{w}");
}

/// Two SMs of long names, each through long-named states, the second
/// waiting on a message from the first.
fn long_named_pair() -> String {
    let (a, b) = ("a".repeat(200), "名前".repeat(60));
    let st = |i: u32| format!("state-{i}-{}", "q".repeat(150));
    let rec = |t: u64, sm: &str, ev: &str, extra: String| {
        format!("{{\"t\":{t},\"sm\":{sm:?},\"ev\":\"{ev}\"{extra}}}\n")
    };
    let state = |s: String| format!(",\"state\":{s:?}");
    [
        rec(0, &a, "state", state(st(0))),
        rec(0, &b, "state", state(st(1))),
        rec(300, &a, "send", ",\"id\":1".into()),
        rec(300, &a, "state", state(st(2))),
        rec(350, &b, "recv", format!(",\"id\":1{}", state(st(3)))),
        rec(500, &a, "state", state("done".into())),
        rec(900, &b, "state", state("done".into())),
    ]
    .concat()
}

/// Asserts every line of `out` but those starting with one of `prose`
/// takes at most `w` columns.
fn assert_fits(out: &str, w: usize, prose: &[&str], what: &[&str]) {
    for l in out
        .lines()
        .filter(|l| !prose.iter().any(|p| l.starts_with(p)))
    {
        assert!(cols(l) <= w, "{what:?}: {} columns: {l}\n{out}", cols(l));
    }
}

#[test]
fn listings_profiles_and_the_demo_fit_columns() {
    let dir = tempfile::tempdir().unwrap();
    let p = write(dir.path(), "long.jsonl", long_named_pair());
    let p = p.to_str().unwrap();
    let pingpong = Path::new(env!("CARGO_MANIFEST_DIR")).join("../os/tests/fixtures/pingpong.data");
    let pingpong = pingpong.to_str().unwrap();
    let (sm, state) = ("a".repeat(200), format!("state-0-{}", "q".repeat(150)));
    let listings: [&[&str]; 7] = [
        &["analyze", p, "--path"],
        &["analyze", p, "--window", "100ns"],
        &["analyze", p, "--next", "2"],
        &["profile", p],
        &["profile", pingpong],
        &["profile", pingpong, "--by", "kernel"],
        &["demo", "--packets", "2000"],
    ];
    for args in listings {
        let out = ok(&run_cols(Some("80"), args));
        // Sentences may wrap: the notes, the fixture's long path heading
        // its profile and the footer, the demo's header and story.
        let prose = [
            "note: ",
            pingpong,
            "(and ",
            "critpath demo: ",
            "(the system",
            "On ",
        ];
        assert_fits(&out, 80, &prose, args);
        let shown = match args[1..] {
            [_, "--path"] => "waits on",
            [_, "--next", _] => "  with ",
            ["--by", ..] => "outliers",
            _ => "",
        };
        assert!(out.contains(shown), "{args:?}: {out}");
        if args[0] == "demo" {
            assert!(out.contains("kernel.udp: udp…"), "{out}");
            let wide = ok(&run_cols(Some("80"), &[args, &["--wide"]].concat()));
            assert!(wide.contains("udp_push_pending_frames"), "{wide}");
            continue;
        }
        // Piped without COLUMNS, and with --wide, names are whole.
        let piped = ok(&run_cols(None, args));
        let wide = ok(&run_cols(Some("80"), &[args, &["--wide"]].concat()));
        for whole in [&piped, &wide] {
            assert!(!whole.contains('…'), "{args:?}: {whole}");
            if args[1] == p {
                assert!(whole.contains(&sm) && whole.contains(&state), "{whole}");
            }
        }
    }
}
