//! A real CPU-only job: PyTorch DistributedDataParallel over gloo, two
//! ranks, rank 1 doing 3.6 times rank 0's compute each step (extra
//! `aten::bmm` calls before its forward). `examples/ddp/ddp_gloo.py` made
//! the traces beside it (four profiled steps) and, in a run of its own
//! without the profiler and with the extra work halved, measured the step
//! times in `steps-half-extra.json`: the what-if below is compared with
//! that committed measurement, not with a run made by the test.

mod common;
use common::{example, json_of};
use serde_json::Value;

fn traces() -> (String, String) {
    (
        example("ddp/rank0.pt.trace.json.gz"),
        example("ddp/rank1.pt.trace.json.gz"),
    )
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// The four profiled steps' `ProfilerStep` windows analysed one by one.
fn each_step() -> Vec<Value> {
    let (r0, r1) = traces();
    (0..4)
        .map(|k| {
            let k = k.to_string();
            json_of(&[
                "analyze",
                &r0,
                &r1,
                "--annotation",
                "ProfilerStep",
                "--instance",
                &k,
                "--json",
            ])
        })
        .collect()
}

#[test]
fn the_straggler_and_its_extra_work_lead_every_step() {
    let (r0, r1) = traces();
    let d = json_of(&["analyze", &r0, &r1, "--json"]);
    let ranks = &d["ranks"];
    assert!(ranks["matched"].as_u64().unwrap() > 0, "{ranks}");
    let steps: Vec<&Value> = ranks["steps"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["step"].as_str().unwrap().starts_with("ProfilerStep"))
        .collect();
    assert_eq!(steps.len(), 4, "{ranks}");
    for s in &steps {
        assert_eq!(s["straggler_rank"], 1, "{s}");
        assert!(s["others_waited_ns"].as_u64().unwrap() > 0, "{s}");
    }
    // The wait is communication, never "between ops" on rank 0.
    let between = d["states"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["state"] == "between ops")
        .map(|r| r["critical_ns"].as_u64().unwrap())
        .sum::<u64>();
    let len = d["critical_path"]["length_ns"].as_u64().unwrap();
    assert!(between * 4 < len, "between ops {between} of {len}");
    assert!(
        d["gpu"]["communication_bound_ns"].as_u64().unwrap() > 0,
        "{}",
        d["gpu"]
    );
    for (k, s) in each_step().iter().enumerate() {
        let top = &s["states"][0];
        assert_eq!(top["state"], "aten::bmm", "step {k}: {top}");
        assert!(top["sm"].as_str().unwrap().starts_with("rank1/"), "{top}");
        let steps = s["ranks"]["steps"].as_array().unwrap();
        assert!(steps.iter().all(|x| x["straggler_rank"] == 1), "{steps:?}");
    }
}

#[test]
fn halving_the_extra_work_predicts_the_real_run_within_15_percent() {
    // 2.6 units of extra work are 23 bmm a step, 1.3 units 12: the real
    // run's extra work is 12/23 of the traced one's.
    let factor = format!("rank1/thread:*:aten::bmm={}", 23.0 / 12.0);
    let (r0, r1) = traces();
    let w = json_of(&["whatif", &r0, &r1, "--speedup", &factor, "--json"]);
    // The path runs through the four profiled steps, one after the other.
    let p = w["predicted_length_ns"].as_f64().unwrap() / 4.0;
    let real: Value = serde_json::from_str(
        &std::fs::read_to_string(example("ddp/steps-half-extra.json")).unwrap(),
    )
    .unwrap();
    let real: Vec<f64> = real["step_ns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64().unwrap())
        .collect();
    // The same processes measured 8 steps right after the 4 traced ones.
    let r = median(real);
    assert!(
        (p - r).abs() <= 0.15 * r,
        "predicted {p} ns a step, real {r} ns"
    );
}
