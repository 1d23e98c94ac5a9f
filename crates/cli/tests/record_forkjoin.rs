//! Waits for a holder's whole run on a real recording
//! (examples/os/forkjoin.c): each round's slow worker shares the CPUs with
//! three short workers, and where one of them ran to its end on the slow
//! worker's CPU while the slow worker waited, that wait was the worker's
//! whole run. A what-if that halves the slow workers' running halves
//! their running and their own queueing, not the workers' runs they
//! waited for (docs/os-graph.md, "What-ifs on a shared CPU"). Skips,
//! saying why, where perf cannot record (not root, no perf, no compiler).

mod common;
use common::{cc, example, json_of, ns, record, recording_slot, thread_states};
use serde_json::Value;

/// The critical time of the rows of threads named `comm:TID` in `state`,
/// and the time their `blame` puts on threads named `on:TID` and on
/// others (a blamed piece is charged to the holder's row, not theirs).
fn critical(v: &Value, comm: &str, state: &str, on: &str) -> (f64, f64, f64) {
    let by = format!("{on}:");
    let mut rows = thread_states(v, comm);
    rows.retain(|s| s["state"] == state);
    let crit = rows.iter().map(|r| ns(&r["critical_ns"])).sum();
    let blame: Vec<(bool, f64)> = rows
        .iter()
        .flat_map(|r| r["blame"].as_array().cloned().unwrap_or_default())
        .map(|b| (b["sm"].as_str().unwrap().starts_with(&by), ns(&b["ns"])))
        .collect();
    let sum = |of_on: bool| blame.iter().filter(|b| b.0 == of_on).map(|b| b.1).sum();
    (crit, sum(true), sum(false))
}

#[test]
fn a_wait_for_a_workers_whole_run_stays_when_the_waiter_gets_faster() {
    let Some(_slot) = recording_slot() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let bin = cc(dir.path(), &example("os/forkjoin.c"), "forkjoin", &[]);
    let (data, o) = record(dir.path(), "fj", &[], &[bin.to_str().unwrap()]);
    let data = data.to_str().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v = json_of(&["analyze", data, "--json", "--top", "100000"]);
    let len = ns(&v["critical_path"]["length_ns"]);
    let (ran, ..) = critical(&v, "slow", "running", "-");
    let (queued, on_workers, on_others) = critical(&v, "slow", "runnable", "worker");
    // 30 rounds of 6 ms of the slow worker's own CPU time lead the path
    // (in most rounds: under load the workers may be later).
    assert!(
        (0.5 * 180e6..=1.1 * 180e6).contains(&ran),
        "slow ran {ran} ns: {v}"
    );
    let w = json_of(&["whatif", data, "--json", "--speedup", "slow:*:running=2"]);
    let pred = ns(&w["predicted_length_ns"]);
    eprintln!(
        "fork-join: baseline {len} ns, slow running {ran} ns, its CPU waits on the path: {queued} ns its own, {on_workers} ns blamed on workers, {on_others} ns on others; slow 2x predicted {pred} ns"
    );
    // At most the slow workers' running, their own queueing and the waits
    // blamed on other threads halve, but not the waits blamed on the
    // workers: a worker's run ended while the slow one waited (the workers
    // exit), so it was waited for whole and its pieces say `ended`. (A
    // model that halved every wait with the waiter's work would predict
    // `len - (ran + queued + on_workers + on_others) / 2`.)
    let floor = len - (ran + queued + on_others) / 2.0 - 1e6;
    assert!(pred >= floor, "predicted {pred} ns, below {floor} ns: {w}");
    assert!(pred < len, "{w}");
}

/// Under outside load (a spinner per CPU, not the recorded program's), the
/// verdict names a state of the program's own threads, those of one name
/// summed up (`slow:*`: each round's slow worker is a thread of its own),
/// and its what-if is that state's: another program is no lever. When the
/// spinners lead the table, the verdict says first that the path is
/// mostly the rest of the machine's.
#[test]
fn the_verdict_names_the_programs_own_state_beside_outside_load() {
    let Some(_slot) = recording_slot() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let bin = cc(dir.path(), &example("os/forkjoin.c"), "forkjoin", &[]);
    let spin = || {
        std::process::Command::new("sh")
            .args(["-c", "while :; do :; done"])
            .spawn()
            .expect("sh runs")
    };
    let mut spinners = [spin(), spin()];
    let (data, o) = record(dir.path(), "fjload", &[], &[bin.to_str().unwrap()]);
    for s in &mut spinners {
        s.kill().ok();
        s.wait().ok();
    }
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let data = data.to_str().unwrap();
    let text = common::stdout_of(&["analyze", data]);
    // The verdict's lines (one, unless COLUMNS asks for fewer columns).
    let verdict: Vec<&str> = text
        .lines()
        .take_while(|l| !l.contains(" records, "))
        .collect();
    let verdict = verdict.join(" ");
    // The verdict weighs every row, however few the table shows.
    let short = common::stdout_of(&["analyze", data, "--top", "1"]);
    assert!(
        short.starts_with(text.lines().next().unwrap()),
        "--top 1: {short}\nall rows: {text}"
    );
    let own = match verdict.strip_prefix("bound by the rest of the machine — ") {
        Some(rest) => {
            rest.split_once("; the program's own: ")
                .unwrap_or_else(|| panic!("the program's own state: {verdict}"))
                .1
        }
        None => verdict.strip_prefix("bound by ").expect("a verdict"),
    };
    // `HOST/COMM:TID: STATE`, or `HOST/COMM:*: STATE (N threads)`.
    let lever = own.split(" — ").next().unwrap();
    let sm = lever.split_once('/').map_or(lever, |(_, sm)| sm);
    assert!(
        ["slow:", "worker:", "forkjoin:"]
            .iter()
            .any(|comm| sm.starts_with(comm)),
        "the verdict's state is not the program's: {verdict}"
    );
    eprintln!("fork-join under two spinners: {verdict}");
}
