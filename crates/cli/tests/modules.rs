//! `critpath modules`: VTRACE's module costs from a TOML configuration, on
//! a hand-worked trace and on a real annotated program.

mod common;
use common::{cc, example, json_of, run, write};
use std::process::Command;

const TRACE: &str = r#"{"t":0,"sm":"srv","ev":"state","state":"idle"}
{"t":10,"sm":"srv","ev":"state","state":"recv"}
{"t":20,"sm":"srv","ev":"state","state":"parse"}
{"t":50,"sm":"srv","ev":"state","state":"runnable"}
{"t":80,"sm":"srv","ev":"state","state":"compute"}
{"t":100,"sm":"srv","ev":"state","state":"reply"}
{"t":105,"sm":"srv","ev":"state","state":"idle"}
{"t":200,"sm":"srv","ev":"state","state":"recv"}
{"t":210,"sm":"srv","ev":"state","state":"parse"}
{"t":220,"sm":"srv","ev":"state","state":"compute"}
{"t":260,"sm":"srv","ev":"state","state":"reply"}
{"t":262,"sm":"srv","ev":"end"}
"#;

const CONFIG: &str = r#"
[[module]]
name = "request"
begin = "recv"
end = "reply"

[[module]]
name = "parse"
sm = "s*"
begin = "parse"
end = "leave:parse"
"#;

#[test]
fn module_statistics_with_nesting_and_switched_out_time() {
    let dir = tempfile::tempdir().unwrap();
    let t = write(dir.path(), "t.jsonl", TRACE);
    let c = write(dir.path(), "m.toml", CONFIG);
    let v = json_of(&[
        "modules",
        t.to_str().unwrap(),
        "--config",
        c.to_str().unwrap(),
        "--json",
    ]);
    let m = v["modules"].as_array().unwrap();
    let names: Vec<&str> = m.iter().map(|r| r["module"].as_str().unwrap()).collect();
    assert_eq!(names, ["request", "request/OTHER", "parse"]);
    // request: 10 + 30 + 20 (the 30 ns runnable left out), 10 + 10 + 40.
    assert_eq!(m[0]["count"], 2);
    assert_eq!(m[0]["total_ns"], 120);
    assert_eq!(m[0]["median_ns"], 60);
    // OTHER: request time outside parse.
    assert_eq!(m[1]["total_ns"], 80);
    assert_eq!(m[1]["parent"], "request");
    assert_eq!(m[2]["parent"], "request");
    assert_eq!(
        (m[2]["min_ns"].as_u64(), m[2]["max_ns"].as_u64()),
        (Some(10), Some(30))
    );
    assert_eq!(m[2]["mean_ns"], 20.0);
    assert_eq!(m[2]["std_ns"], 10.0);
    assert!(v["warnings"].as_array().unwrap().is_empty());
    // The table for people.
    let o = run(&[
        "modules",
        t.to_str().unwrap(),
        "--config",
        c.to_str().unwrap(),
    ]);
    assert!(o.status.success());
    let table = String::from_utf8_lossy(&o.stdout);
    assert!(
        table.contains("request/OTHER") && table.contains("median"),
        "{table}"
    );
}

#[test]
fn events_that_never_occur_are_warned_about_never_a_silent_empty_table() {
    let dir = tempfile::tempdir().unwrap();
    let t = write(dir.path(), "t.jsonl", TRACE);
    let c = write(
        dir.path(),
        "m.toml",
        "[[module]]\nname = \"typo\"\nbegin = \"prase\"\nend = \"reply\"\n",
    );
    let o = run(&[
        "modules",
        t.to_str().unwrap(),
        "--config",
        c.to_str().unwrap(),
    ]);
    assert!(o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("warning: module typo") && err.contains("parse"),
        "{err}"
    );
    assert!(String::from_utf8_lossy(&o.stdout).contains("no module instance was measured"));
}

#[test]
fn a_bad_configuration_names_the_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let t = write(dir.path(), "t.jsonl", TRACE);
    for (body, says) in [
        (
            "[[module]]\nname = \"x\"\nbegin = 3\nend = \"y\"\n",
            "m.toml:3:",
        ),
        (
            "[[module]]\nname = \"x\"\nbegni = \"a\"\nend = \"y\"\n",
            "m.toml:3:",
        ),
        ("# nothing\n", "no module defined"),
    ] {
        let c = write(dir.path(), "m.toml", body);
        let o = run(&[
            "modules",
            t.to_str().unwrap(),
            "--config",
            c.to_str().unwrap(),
        ]);
        assert_eq!(o.status.code(), Some(2), "{body}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains(says), "{body}: {err}");
    }
}

#[test]
fn modules_of_a_real_annotated_program() {
    let have_cc = Command::new("cc")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !have_cc {
        eprintln!("skipped: no C compiler");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let bin = cc(
        dir.path(),
        &example("annotated/pipeline.c"),
        "pipeline",
        &[],
    );
    let out = dir.path().join("p.annot");
    // Stage 2 ten times as long as stage 3, so that stage 3 waits for most
    // of its cycle even when the machine is loaded and its work is
    // preempted more than stage 2's (the work is CPU time, the modules
    // wall time).
    let o = Command::new(&bin)
        .args(["40", "2000", "200"])
        .env("CRITPATH_OUT", &out)
        .env("CRITPATH_CALIBRATE", "1")
        .output()
        .unwrap();
    assert!(o.status.success());
    let cfg = example("modules/pipeline.toml");
    let v = json_of(&["modules", out.to_str().unwrap(), "--config", &cfg, "--json"]);
    let m = v["modules"].as_array().unwrap();
    let get = |n: &str| {
        m.iter()
            .find(|r| r["module"] == n)
            .unwrap_or_else(|| panic!("{n}: {m:?}"))
    };
    // 40 items; stage 2 works 2 ms on each, stage 3 200 us.
    assert_eq!(get("stage2-work")["count"], 40);
    assert!(get("stage2-work")["min_ns"].as_u64().unwrap() >= 2_000_000);
    assert!(get("stage3-work")["median_ns"].as_u64().unwrap() >= 200_000);
    // Stage 3 waits for stage 2: most of its cycle is OTHER.
    let cycle = get("stage3-cycle")["total_ns"].as_u64().unwrap();
    let other = get("stage3-cycle/OTHER")["total_ns"].as_u64().unwrap();
    assert!(other * 2 > cycle, "{other} of {cycle}");
    // Corrected: every instance loses the calibrated cost of its events.
    let c = json_of(&[
        "modules",
        out.to_str().unwrap(),
        "--config",
        &cfg,
        "--json",
        "--correct-overhead",
    ]);
    assert!(c["ns_per_event"].as_f64().unwrap() > 0.0);
    let a = get("stage2-work")["total_ns"].as_u64().unwrap();
    let b = c["modules"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["module"] == "stage2-work")
        .unwrap()["total_ns"]
        .as_u64()
        .unwrap();
    assert!(b < a, "{b} < {a}");
}
