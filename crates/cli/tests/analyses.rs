//! `analyze --next/--remove/--window` and `diff` end to end, on the paper's
//! Figure 3 scenario (worked out by hand) and on the demo model's traces.

mod common;

use common::*;
use std::path::{Path, PathBuf};

fn fig3() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples/nic-fig3.jsonl")
        .to_str()
        .unwrap()
        .to_string()
}

fn demo_trace(dir: &Path, bus: &str) -> PathBuf {
    let p = dir.join(format!("{bus}.cpt"));
    assert!(run(&[
        "demo",
        "--bus",
        bus,
        "--packets",
        "2000",
        "-o",
        p.to_str().unwrap()
    ])
    .status
    .success());
    p
}

#[test]
fn next_path_of_figure3_by_hand() {
    // Without the DMA time: descfetch enters 'have desc' at 100 (L=100), so
    // TX FIFO's first transmit starts at L=100 (t=400), its wait at L=220
    // (t=520), the second transmit at L=220 (t=710, its own chain beats
    // Transmit's L=110) and its last node at L=340 (t=830).
    let v = json_of(&["analyze", &fig3(), "--json", "--next"]);
    let n = &v["next_critical_path"];
    assert_eq!(n["length_ns"], 340);
    assert!((n["shorter"].as_f64().unwrap() - (1.0 - 340.0 / 830.0)).abs() < 1e-12);
    assert_eq!(n["removed"][0], "nic.tx:DMA packet");
    assert_eq!(n["states"][0]["state"], "transmit");
    assert_eq!(n["states"][0]["critical_ns"], 240);
    // --remove names the states instead.
    let v = json_of(&[
        "analyze",
        &fig3(),
        "--json",
        "--remove",
        "nic.txfifo:transmit",
    ]);
    assert_eq!(v["next_critical_path"]["removed"][0], "nic.txfifo:transmit");
    // Transmit's chain: fetch desc 100, DMA 300, fill 10, DMA 300, fill 10.
    assert_eq!(v["next_critical_path"]["length_ns"], 720);
    // The table says how much shorter.
    let o = run(&["analyze", &fig3(), "--next"]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("next most critical path: 340 ns (340 ns), 59.0% shorter, with nic.tx:DMA packet removed"), "{out}");
    // Under --to, the next paths end where the path does: Transmit's chain
    // (720) without its DMA is fetch desc 100 + fill 10 + fill 10, and
    // without fetch desc too 20; TX FIFO's transmit, after nic.tx's end,
    // is on none of them.
    let v = json_of(&[
        "analyze",
        &fig3(),
        "--json",
        "--to",
        "nic.tx",
        "--next",
        "2",
    ]);
    assert_eq!(v["critical_path"]["length_ns"], 720);
    let next = v["next_critical_paths"].as_array().unwrap();
    let lens: Vec<u64> = next
        .iter()
        .map(|n| n["length_ns"].as_u64().unwrap())
        .collect();
    assert_eq!(lens, [120, 20], "{next:?}");
    assert_eq!(next[1]["removed"][1], "nic.descfetch:fetch desc");
}

#[test]
fn next_paths_of_the_demo_return_to_the_copy() {
    let dir = tempfile::tempdir().unwrap();
    let pci = demo_trace(dir.path(), "pci");
    let v = json_of(&[
        "analyze",
        pci.to_str().unwrap(),
        "--json",
        "--next",
        "2",
        "--top",
        "3",
    ]);
    let next = v["next_critical_paths"].as_array().unwrap();
    assert_eq!(next.len(), 2);
    assert_eq!(next[0]["removed"][0], "nic.tx:DMA packet");
    assert_eq!(next[0]["states"][0]["state"], "__copy_user");
    assert_eq!(next[1]["removed"].as_array().unwrap().len(), 2);
    assert!(next[1]["length_ns"].as_u64() < next[0]["length_ns"].as_u64());
    assert_eq!(next[0]["states"].as_array().unwrap().len(), 3);
}

#[test]
fn windows_of_figure3() {
    let v = json_of(&["analyze", &fig3(), "--json", "--window", "400ns"]);
    let w = v["windows"].as_array().unwrap();
    // [0,400): fetch desc 100 + DMA 300; [400,800): fill 10 + DMA 300 + transmit 90; [800,1200): transmit 30.
    let path: Vec<u64> = w.iter().map(|x| x["path_ns"].as_u64().unwrap()).collect();
    assert_eq!(path, vec![400, 400, 30]);
    assert_eq!(w[0]["states"][0]["state"], "DMA packet");
    assert_eq!(w[0]["states"][0]["critical_ns"], 300);
    assert_eq!(w[2]["states"][0]["state"], "transmit");
    let o = run(&["analyze", &fig3(), "--window", "soon"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--window soon"));
}

#[test]
fn diff_says_the_bottleneck_moved() {
    let dir = tempfile::tempdir().unwrap();
    let (pci, pcix) = (
        demo_trace(dir.path(), "pci"),
        demo_trace(dir.path(), "pcix"),
    );
    let v = json_of(&[
        "diff",
        pci.to_str().unwrap(),
        pcix.to_str().unwrap(),
        "--json",
    ]);
    assert_eq!(v["top_moved"], true);
    assert_eq!(v["top_a"], "nic.tx:DMA packet");
    assert_eq!(v["top_b"], "kernel.udp:__copy_user");
    let first = &v["states"][0];
    assert_eq!(first["state"], "DMA packet");
    assert!(first["criticality_change"].as_f64().unwrap() < -0.9);
    let changes: Vec<f64> = v["states"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["criticality_change"].as_f64().unwrap().abs())
        .collect();
    assert!(changes.windows(2).all(|w| w[0] >= w[1]), "sorted by change");
    // The same run twice: nothing moved.
    let v = json_of(&[
        "diff",
        pci.to_str().unwrap(),
        pci.to_str().unwrap(),
        "--json",
    ]);
    assert_eq!(v["top_moved"], false);
    assert_eq!(v["length_ratio"], 1.0);
    let o = run(&["diff", pci.to_str().unwrap(), pcix.to_str().unwrap()]);
    assert!(String::from_utf8_lossy(&o.stdout)
        .contains("the bottleneck moved: nic.tx:DMA packet -> kernel.udp:__copy_user"));
}

#[test]
fn slack_of_figure3_by_hand() {
    let v = json_of(&["slack", &fig3(), "--json"]);
    let st = |sm: &str, state: &str| state_row(&v, sm, state);
    // On the path: no slack.
    assert_eq!(st("nic.tx", "DMA packet")["slack_ns"], 0);
    assert_eq!(st("nic.txfifo", "transmit")["slack_ns"], 0);
    // 'have desc' (100-110 and 210-220): the longest paths through it are
    // 100 + 10 + 110 and 210 + 10 + 0, both 220 of 830.
    assert_eq!(st("nic.descfetch", "have desc")["slack_ns"], 610);
    assert_eq!(st("nic.descfetch", "have desc")["slack_mean_ns"], 610.0);
    // Never left: no edge, no slack.
    assert!(st("nic.descfetch", "idle").get("slack_ns").is_none());
    // Sorted by least slack.
    let slacks: Vec<u64> = v["states"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|s| s["slack_ns"].as_u64())
        .collect();
    assert!(slacks.windows(2).all(|w| w[0] <= w[1]));
}

#[test]
fn slack_of_the_demo_shows_the_cpu_has_room_on_pci() {
    let dir = tempfile::tempdir().unwrap();
    let pci = demo_trace(dir.path(), "pci");
    let v = json_of(&["slack", pci.to_str().unwrap(), "--json"]);
    let st = |sm: &str, state: &str| state_row(&v, sm, state);
    assert_eq!(st("nic.tx", "DMA packet")["slack_ns"], 0);
    assert!(
        st("nic.tx", "DMA packet")["slack_mean_ns"]
            .as_f64()
            .unwrap()
            < 1_000.0
    );
    // The copy waits on the ring most of the time: lots of room on average.
    assert!(
        st("kernel.udp", "__copy_user")["slack_mean_ns"]
            .as_f64()
            .unwrap()
            > 100_000.0
    );
}

#[test]
fn two_hosts_with_skewed_clocks() {
    let v = json_of(&[
        "analyze",
        &example("rpc/client.jsonl"),
        &example("rpc/server.jsonl"),
        "--json",
    ]);
    let off = &v["clock_offsets"];
    assert_eq!(off[0]["offset_ns"], 0);
    assert_eq!(off[0]["method"], "reference");
    assert_eq!(off[1]["offset_ns"], 10000);
    assert_eq!(off[1]["method"], "both-ways");
    assert_eq!(off[1]["sys"], "server");
    let p = &v["critical_path"];
    assert_eq!(p["length_ns"], 800);
    assert_eq!(
        (p["start"]["sys"].as_str(), p["start"]["t"].as_u64()),
        (Some("client"), Some(0))
    );
    assert_eq!(p["end"]["t"], 800);
    let crit = |sys: &str, st: &str| {
        v["states"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["sys"] == sys && s["state"] == st)
            .unwrap()["critical_ns"]
            .as_u64()
            .unwrap()
    };
    assert_eq!(crit("server", "handle"), 400);
    assert_eq!(crit("server", "idle"), 50);
    assert_eq!(crit("client", "wait reply"), 50);
    assert!(v["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .any(|d| d["kind"] == "clock-offset"));
    assert!(!v["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .any(|d| d["kind"] == "recv-without-send"));
}

#[test]
fn one_way_links_and_a_chain_of_hosts() {
    let dir = tempfile::tempdir().unwrap();
    let w = |name: &str, body: &str| {
        let p = dir.path().join(name);
        std::fs::write(&p, body).unwrap();
        p.to_str().unwrap().to_string()
    };
    // a -> b only (b's clock 500 behind: a message appears to arrive before
    // it left, so b is moved forward to make the fastest delay 0); b <-> c.
    let a = w("a.jsonl", "{\"t\":1000,\"sm\":\"p\",\"ev\":\"state\",\"state\":\"work\"}\n{\"t\":1100,\"sm\":\"p\",\"ev\":\"send\",\"id\":1}\n{\"t\":1200,\"sm\":\"p\",\"ev\":\"end\"}\n");
    let b = w("b.jsonl", "{\"t\":0,\"sm\":\"q\",\"ev\":\"wait\",\"state\":\"idle\"}\n{\"t\":600,\"sm\":\"q\",\"ev\":\"recv\",\"id\":1,\"state\":\"work\"}\n{\"t\":700,\"sm\":\"q\",\"ev\":\"send\",\"id\":2}\n{\"t\":700,\"sm\":\"q\",\"ev\":\"wait\",\"state\":\"idle\"}\n{\"t\":2000,\"sm\":\"q\",\"ev\":\"recv\",\"id\":3,\"state\":\"done\"}\n");
    let c = w("c.jsonl", "{\"t\":5000,\"sm\":\"r\",\"ev\":\"wait\",\"state\":\"idle\"}\n{\"t\":5710,\"sm\":\"r\",\"ev\":\"recv\",\"id\":2,\"state\":\"work\"}\n{\"t\":6000,\"sm\":\"r\",\"ev\":\"send\",\"id\":3}\n{\"t\":6000,\"sm\":\"r\",\"ev\":\"end\"}\n");
    let v = json_of(&["analyze", &a, &b, &c, "--json"]);
    let off = v["clock_offsets"].as_array().unwrap();
    assert_eq!(off[1]["method"], "one-way");
    assert_eq!(off[1]["offset_ns"], -500);
    // b -> c: 5710 - 700 = 5010; c -> b: 2000 - 6000 = -4000; theta = 4505 from b.
    assert_eq!(off[2]["method"], "both-ways");
    assert_eq!(off[2]["offset_ns"], -500 + 4505);
    assert!(v["critical_path"]["length_ns"].as_u64().unwrap() > 0);
}

#[test]
fn unlinked_hosts_are_analyzed_each_on_their_own() {
    let v = json_of(&["analyze", &example("rpc/client.jsonl"), &fig3(), "--json"]);
    assert_eq!(v["diagnostics"][0]["kind"], "disconnected");
    assert!(v["diagnostics"][0]["message"]
        .as_str()
        .unwrap()
        .contains("nic-fig3.jsonl"));
    let a = v["analyses"].as_array().unwrap();
    assert_eq!(a.len(), 2);
    assert_eq!(a[1]["critical_path"]["length_ns"], 830);
    assert!(a[0]["file"].as_str().unwrap().ends_with("client.jsonl"));
}

#[test]
fn a_wait_for_a_held_resource_is_blamed_on_its_holder() {
    let dir = tempfile::tempdir().unwrap();
    // w is runnable from 2 to 10 until h, running since 0, lets go of the
    // CPU: the recv says the runnable state waited for that link.
    let trace = write(
        dir.path(),
        "held.jsonl",
        concat!(
            "{\"t\":0,\"ev\":\"state\",\"sm\":\"h\",\"state\":\"running\"}\n",
            "{\"t\":0,\"ev\":\"state\",\"sm\":\"w\",\"state\":\"running\"}\n",
            "{\"t\":2,\"ev\":\"state\",\"sm\":\"w\",\"state\":\"runnable\"}\n",
            "{\"t\":10,\"ev\":\"send\",\"sm\":\"h\",\"id\":1}\n",
            "{\"t\":10,\"ev\":\"end\",\"sm\":\"h\"}\n",
            "{\"t\":10,\"ev\":\"recv\",\"sm\":\"w\",\"id\":1,\"state\":\"running\",\"waited\":true}\n",
            "{\"t\":12,\"ev\":\"end\",\"sm\":\"w\"}\n",
        ),
    );
    let t = trace.to_str().unwrap();
    let v = json_of(&["analyze", t, "--json"]);
    let row = state_row(&v, "w", "runnable");
    assert_eq!(row["critical_ns"], 0, "{row}");
    assert_eq!(
        row["blame"],
        serde_json::json!([{"sm": "h", "ns": 10}]),
        "{row}"
    );
    // A state no one held: its blame is there, and empty.
    assert_eq!(
        state_row(&v, "h", "running")["blame"],
        serde_json::json!([])
    );
    let o = run(&["analyze", t]);
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        text.lines()
            .any(|l| l.starts_with("w runnable — held by h 100%")),
        "{text}"
    );
    // convert keeps the flag: the .cpt gives the same blame.
    let cpt = dir.path().join("held.cpt");
    assert!(run(&["convert", t, cpt.to_str().unwrap()]).status.success());
    let c = json_of(&["analyze", cpt.to_str().unwrap(), "--json"]);
    assert_eq!(state_row(&c, "w", "runnable")["blame"], row["blame"]);
}
