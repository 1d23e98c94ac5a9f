//! `critpath demo` and `critpath whatif` end to end: the model's bottlenecks
//! as the analysis finds them, what-if predictions against simulated ground
//! truth, and bad input.

mod common;

use common::*;
use serde_json::Value;
use std::path::Path;

fn demo(extra: &[&str]) -> Value {
    let mut args = vec!["demo", "--json", "--packets", "3000", "--top", "1000"];
    args.extend_from_slice(extra);
    json_of(&args)
}

fn crit(v: &Value, sm: &str, state: &str) -> f64 {
    v["states"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["sm"] == sm && s["state"] == state)
        .map(|s| s["criticality"].as_f64().unwrap())
        .unwrap_or(0.0)
}

fn top(v: &Value) -> (String, String) {
    let s = &v["states"][0];
    (
        s["sm"].as_str().unwrap().to_string(),
        s["state"].as_str().unwrap().to_string(),
    )
}

fn mbps(v: &Value) -> f64 {
    v["model"]["throughput_mbps"].as_f64().unwrap()
}

#[test]
fn pci_is_bound_by_the_nic_dma_and_pcix_by_the_copy() {
    let pci = demo(&["--bus", "pci"]);
    assert_eq!(top(&pci), ("nic.tx".into(), "DMA packet".into()));
    assert!(crit(&pci, "nic.tx", "DMA packet") > 0.9);
    assert!((1700.0..1950.0).contains(&mbps(&pci)), "{}", mbps(&pci));
    assert_eq!(pci["model"]["bus"], "pci");
    assert_eq!(pci["model"]["payload"], 1480);
    assert_eq!(pci["model"]["netfilter"], false);

    let pcix = demo(&["--bus", "pcix"]);
    assert_eq!(top(&pcix), ("kernel.udp".into(), "__copy_user".into()));
    assert!(crit(&pcix, "nic.tx", "DMA packet") < 0.01);
    assert!((2050.0..2300.0).contains(&mbps(&pcix)), "{}", mbps(&pcix));

    for v in [&pci, &pcix] {
        // A complete model: no diagnostic, and the path spans the whole run.
        assert_eq!(
            v["diagnostics"].as_array().unwrap().len(),
            0,
            "{}",
            v["diagnostics"]
        );
        assert_eq!(v["critical_path"]["length_ns"], v["model"]["simulated_ns"]);
        assert_eq!(v["critical_path"]["start"]["sm"], "app");
        assert_eq!(v["critical_path"]["end"]["sm"], "nic.txfifo");
        assert_eq!(v["stats"]["state_machines"], 7);
    }
}

#[test]
fn netfilter_lowers_throughput_and_joins_the_path() {
    let off = demo(&["--bus", "pcix"]);
    let on = demo(&["--bus", "pcix", "--netfilter", "on"]);
    assert!(
        mbps(&on) < mbps(&off) * 0.8,
        "{} vs {}",
        mbps(&on),
        mbps(&off)
    );
    for st in ["nf_hook_slow", "nf_iterate", "ipt_do_table", "csum_partial"] {
        assert!(crit(&on, "kernel.ip", st) > 0.01, "{st}");
        assert_eq!(crit(&off, "kernel.ip", st), 0.0, "{st}");
    }
    assert_eq!(on["model"]["netfilter"], true);
}

#[test]
fn big_payloads_fragment_and_checksum_on_the_path() {
    let v = json_of(&[
        "demo",
        "--json",
        "--top",
        "1000",
        "--bus",
        "pcix",
        "--payload",
        "16384",
        "--packets",
        "500",
    ]);
    for st in ["ip_fragment", "csum_partial", "memcpy", "ip_fast_csum"] {
        assert!(
            crit(&v, "kernel.ip", st) > 0.005,
            "{st}: {}",
            crit(&v, "kernel.ip", st)
        );
    }
    let small = demo(&["--bus", "pcix"]);
    assert_eq!(crit(&small, "kernel.ip", "ip_fragment"), 0.0);
}

#[test]
fn side_by_side_tells_what_moved() {
    let o = run(&["demo", "--packets", "2000"]);
    assert!(o.status.success());
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains("PCI (32-bit, 66 MHz)") && out.contains("PCI-X (64-bit, 133 MHz)"),
        "{out}"
    );
    assert!(
        out.contains("bottleneck moves to kernel.udp: __copy_user"),
        "{out}"
    );
    let v = json_of(&["demo", "--packets", "2000", "--json"]);
    assert_eq!(v["model"]["bus"], "pci");
    assert_eq!(v["runs"].as_array().unwrap().len(), 2);
    assert_eq!(v["runs"][1]["model"]["bus"], "pcix");
}

fn length(path: &Path) -> u64 {
    json_of(&["analyze", path.to_str().unwrap(), "--json", "--top", "1"])["critical_path"]
        ["length_ns"]
        .as_u64()
        .unwrap()
}

fn predicted(trace: &Path, speedups: &[&str]) -> (u64, u64) {
    let mut args = vec!["whatif", trace.to_str().unwrap(), "--json"];
    for s in speedups {
        args.push("--speedup");
        args.push(s);
    }
    let v = json_of(&args);
    let (b, p) = (
        v["baseline_length_ns"].as_u64().unwrap(),
        v["predicted_length_ns"].as_u64().unwrap(),
    );
    assert!((v["predicted_speedup"].as_f64().unwrap() - b as f64 / p as f64).abs() < 1e-9);
    (b, p)
}

fn simulated(dir: &Path, name: &str, args: &[&str]) -> std::path::PathBuf {
    let out = dir.join(format!("{name}.cpt"));
    let mut a = vec!["demo", "--packets", "3000", "-o", out.to_str().unwrap()];
    a.extend_from_slice(args);
    let o = run(&a);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    out
}

#[test]
fn whatif_predictions_match_simulation_within_10_percent() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let pci = simulated(d, "pci", &["--bus", "pci"]);
    let pcix = simulated(d, "pcix", &["--bus", "pcix"]);
    let nf = simulated(d, "nf", &["--bus", "pcix", "--netfilter", "on"]);
    let copy2 = simulated(
        d,
        "copy2",
        &["--bus", "pcix", "--param", "copy_bytes_per_us=1120"],
    );
    let pci_copy2 = simulated(
        d,
        "pcicopy2",
        &["--bus", "pci", "--param", "copy_bytes_per_us=1120"],
    );
    let nf_names = [
        "nf_hook_slow",
        "nf_iterate",
        "_read_lock_bh",
        "ipt_do_table",
        "_read_unlock_bh",
        "csum_partial",
    ];
    let nf_off: Vec<String> = nf_names
        .iter()
        .map(|s| format!("kernel.ip:{s}=1e9"))
        .collect();
    let nf_off: Vec<&str> = nf_off.iter().map(String::as_str).collect();
    let cases: Vec<(&str, &Path, Vec<&str>, &Path)> = vec![
        (
            "DMA 4x faster: PCI -> PCI-X",
            &pci,
            vec!["nic.tx:DMA packet=4"],
            &pcix,
        ),
        (
            "DMA 4x slower: PCI-X -> PCI",
            &pcix,
            vec!["nic.tx:DMA packet=0.25"],
            &pci,
        ),
        (
            "copy 2x faster on PCI-X",
            &pcix,
            vec!["kernel.udp:__copy_user=2"],
            &copy2,
        ),
        (
            "copy 2x faster on PCI",
            &pci,
            vec!["kernel.udp:__copy_user=2"],
            &pci_copy2,
        ),
        ("netfilter removed", &nf, nf_off, &pcix),
    ];
    for (what, from, speedups, truth) in cases {
        let (base, pred) = predicted(from, &speedups);
        assert_eq!(base, length(from));
        let real = length(truth);
        let err = (pred as f64 - real as f64).abs() / real as f64;
        assert!(
            err < 0.10,
            "{what}: predicted {pred} ns, simulated {real} ns ({:.1}% off)",
            err * 100.0
        );
    }
}

#[test]
fn demo_trace_reanalyzes_the_same() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("t.cpt");
    let v = json_of(&[
        "demo",
        "--bus",
        "pci",
        "--packets",
        "1000",
        "--json",
        "-o",
        out.to_str().unwrap(),
    ]);
    let a = json_of(&["analyze", out.to_str().unwrap(), "--json", "--top", "5"]);
    assert_eq!(a["critical_path"], v["critical_path"]);
    assert_eq!(a["stats"]["records"], v["model"]["records"]);
    // Side by side writes two traces.
    let base = dir.path().join("both.cpt");
    assert!(
        run(&["demo", "--packets", "200", "-o", base.to_str().unwrap()])
            .status
            .success()
    );
    assert!(dir.path().join("both-pci.cpt").exists() && dir.path().join("both-pcix.cpt").exists());
}

fn assert_bad(args: &[&str], wants: &[&str]) {
    let o = run(args);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
    assert!(!err.contains("panicked"), "{err}");
    for w in wants {
        assert!(err.contains(w), "{args:?}: {err} lacks {w}");
    }
}

#[test]
fn bad_demo_and_whatif_input() {
    assert_bad(&["demo", "--bus", "isa"], &["isa", "pci"]);
    assert_bad(&["demo", "--payload", "0"], &["--payload 0"]);
    assert_bad(&["demo", "--payload", "70000"], &["65507"]);
    assert_bad(&["demo", "--packets", "0"], &["--packets 0"]);
    assert_bad(&["demo", "--packets", "-5"], &["-5"]);
    assert_bad(&["demo", "--netfilter", "maybe"], &["maybe"]);
    assert_bad(
        &["demo", "--param", "copy_byte_per_us=3"],
        &["unknown model parameter", "copy_bytes_per_us"],
    );
    assert_bad(&["demo", "--param", "mtu=-1"], &["positive"]);
    let dir = tempfile::tempdir().unwrap();
    let t = simulated(dir.path(), "t", &["--bus", "pci"]);
    let t = t.to_str().unwrap();
    assert_bad(
        &["whatif", t, "--speedup", "nic.tx:DMA pakcet=4"],
        &["no such state", "nic.tx:DMA packet"],
    );
    assert_bad(
        &["whatif", t, "--speedup", "nic.tx:DMA packet=fast"],
        &["FACTOR"],
    );
    assert_bad(
        &["whatif", t, "--speedup", "nic.tx:DMA packet=0"],
        &["positive"],
    );
    // A state 10^17 times slower would make path lengths overflow.
    assert_bad(
        &["whatif", t, "--speedup", "nic.tx:DMA packet=1e-17"],
        &["at least 0.001"],
    );
    assert_bad(&["whatif", t, "--speedup", "=2"], &["SM:STATE=FACTOR"]);
    assert_bad(&["whatif", t], &["--speedup"]);
}

#[test]
fn params_are_listed_with_sources() {
    let o = run(&["demo", "--list-params"]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success());
    for name in [
        "pci_mhz",
        "pcix_width",
        "arb_cycles",
        "desc_bytes",
        "copy_bytes_per_us",
        "ring_size",
        "link_gbps",
    ] {
        let line = out
            .lines()
            .find(|l| l.starts_with(name))
            .unwrap_or_else(|| panic!("{name} missing"));
        assert!(
            line.contains("paper")
                || line.contains("calibrated")
                || line.contains("e1000")
                || line.contains("Intel")
                || line.contains("802.3"),
            "{line}"
        );
    }
}

/// A trace that is not a recording has no time that depends on the rest
/// of the machine: the prediction's band is the prediction itself, and the
/// text prints no band. On an OS recording the band widens it (tested in
/// record_contention.rs).
#[test]
fn whatif_on_a_model_trace_has_no_band() {
    let t = example("nic-fig3.jsonl");
    let v = json_of(&["whatif", &t, "--speedup", "nic.tx:DMA packet=2", "--json"]);
    let p = v["predicted_length_ns"].as_u64().unwrap();
    assert!(
        p > 0 && p < v["baseline_length_ns"].as_u64().unwrap(),
        "{v}"
    );
    assert_eq!(v["predicted_range_ns"], serde_json::json!([p, p]), "{v}");
    assert_eq!(v["machine_share"], 0.0);
    let o = run(&["whatif", &t, "--speedup", "nic.tx:DMA packet=2"]);
    assert!(o.status.success());
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.contains("predicted critical path"), "{text}");
    assert!(!text.contains("another run may not see"), "{text}");
}

/// `demo --json` holds every state (SPEC: "unless --top is given"), their
/// criticalities summing to 1; `--top` cuts them.
#[test]
fn demo_json_holds_every_state_unless_top_is_given() {
    let all = json_of(&["demo", "--json", "--packets", "300"]);
    let states = all["states"].as_array().unwrap();
    assert!(states.len() > 5, "{} states", states.len());
    let sum: f64 = states
        .iter()
        .map(|s| s["criticality"].as_f64().unwrap())
        .sum();
    assert!((sum - 1.0).abs() < 1e-9, "{sum}");
    let two = json_of(&["demo", "--json", "--packets", "300", "--top", "2"]);
    assert_eq!(two["states"].as_array().unwrap().len(), 2);
}
