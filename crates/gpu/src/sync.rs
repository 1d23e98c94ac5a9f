//! What each synchronization waited for. With the `cuda_sync` events of
//! recent profilers: `Context Sync` (cudaDeviceSynchronize) waits for the
//! last op on every stream of the device, `Stream Sync`
//! (cudaStreamSynchronize) for the last op on its stream, `Event Sync`
//! (cudaEventSynchronize) for the op launched on the recorded stream just
//! before the matching cudaEventRecord, and `Stream Wait Event`
//! (cudaStreamWaitEvent) makes the next op launched on the waiting stream
//! wait for that same op. A synchronous cudaMemcpy waits for its own copy.
//! Without `cuda_sync` events, cudaDeviceSynchronize waits for every
//! stream and cudaStreamSynchronize for the stream the thread launched on
//! last.

use crate::kineto::Kind;
use crate::model::{RankModel, StreamKey};
use std::collections::HashMap;

type Waits = HashMap<usize, Vec<usize>>;

/// The last op of `ops` (in start order) that started at or before `t`.
fn last_started(m: &RankModel, ops: &[usize], t: u64) -> Option<usize> {
    let n = ops.partition_point(|&i| m.ev(i).ts <= t);
    n.checked_sub(1).map(|k| ops[k])
}

/// The launch time of a GPU op (its own start when no launch is known).
fn launched_at(m: &RankModel, op: usize) -> u64 {
    m.launch_of.get(&op).map_or(m.ev(op).ts, |&l| m.ev(l).ts)
}

/// Each stream's ops in launch order, as (launch time, op).
type Launches = HashMap<StreamKey, Vec<(u64, usize)>>;

fn launches(m: &RankModel) -> Launches {
    m.streams
        .iter()
        .map(|(&k, ops)| {
            let mut v: Vec<(u64, usize)> = ops.iter().map(|&o| (launched_at(m, o), o)).collect();
            v.sort_unstable();
            (k, v)
        })
        .collect()
}

/// The last op launched on `stream` before `t`.
fn last_launched_before(l: &Launches, stream: StreamKey, t: u64) -> Option<usize> {
    let v = l.get(&stream)?;
    let n = v.partition_point(|x| x.0 < t);
    n.checked_sub(1).map(|k| v[k].1)
}

/// The first op launched on `stream` at or after `t` by thread `tid`.
fn next_launched_after(
    m: &RankModel,
    l: &Launches,
    stream: StreamKey,
    t: u64,
    tid: i64,
) -> Option<usize> {
    let v = l.get(&stream)?;
    let from = v.partition_point(|x| x.0 < t);
    v[from..]
        .iter()
        .map(|x| x.1)
        .find(|o| m.launch_of.get(o).is_some_and(|&c| m.ev(c).tid == tid))
}

/// Per (correlation) the cuda_sync event that describes a runtime call.
fn sync_events(m: &RankModel) -> HashMap<i64, usize> {
    let mut by_corr = HashMap::new();
    for (i, e) in m.trace.events.iter().enumerate() {
        if e.kind == Kind::Sync && e.corr >= 0 {
            by_corr.insert(e.corr, i);
        }
    }
    by_corr
}

/// The op an event record captured: the last op launched on the recorded
/// stream before the cudaEventRecord call with that correlation.
fn recorded_op(
    m: &RankModel,
    l: &Launches,
    records: &HashMap<i64, u64>,
    sync: usize,
) -> Option<usize> {
    let s = m.ev(sync);
    let at = *records.get(&s.wait_record_corr)?;
    last_launched_before(l, (s.device.max(s.pid), s.wait_stream), at)
}

/// Resolves every synchronization: (CPU waits, GPU-GPU waits).
pub fn resolve(m: &RankModel) -> (Waits, Waits) {
    let syncs = sync_events(m);
    let launch_order = launches(m);
    let records: HashMap<i64, u64> = m
        .trace
        .events
        .iter()
        .filter(|e| e.kind == Kind::Runtime && m.trace.name(e) == "cudaEventRecord")
        .map(|e| (e.corr, e.ts))
        .collect();
    let mut cpu = Waits::new();
    let mut gpu = Waits::new();
    let mut last_stream: HashMap<i64, StreamKey> = HashMap::new();
    let mut calls: Vec<usize> = m.threads.values().flatten().copied().collect();
    calls.sort_by_key(|&i| m.ev(i).ts);
    let copy_of: HashMap<usize, usize> = m.launch_of.iter().map(|(&o, &l)| (l, o)).collect();
    for call in calls {
        let e = m.ev(call);
        if let Some(&op) = copy_of.get(&call) {
            let o = m.ev(op);
            last_stream.insert(e.tid, (o.device, o.stream));
        }
        let name = m.name(call);
        let awaited: Vec<usize> = match (name, syncs.get(&e.corr)) {
            ("cudaMemcpy", _) => copy_of.get(&call).copied().into_iter().collect(),
            ("cudaStreamWaitEvent", Some(&s)) => {
                let s_ev = m.ev(s);
                let dest = next_launched_after(
                    m,
                    &launch_order,
                    (s_ev.device.max(s_ev.pid), s_ev.stream),
                    e.ts,
                    e.tid,
                );
                if let (Some(src), Some(dest)) = (recorded_op(m, &launch_order, &records, s), dest)
                {
                    gpu.entry(dest).or_default().push(src);
                }
                continue;
            }
            (_, Some(&s)) if m.trace.name(m.ev(s)) == "Event Sync" => {
                recorded_op(m, &launch_order, &records, s)
                    .into_iter()
                    .collect()
            }
            (_, Some(&s)) if m.trace.name(m.ev(s)) == "Stream Sync" => {
                let s_ev = m.ev(s);
                let key = (s_ev.device.max(s_ev.pid), s_ev.stream);
                m.streams
                    .get(&key)
                    .and_then(|ops| last_started(m, ops, e.end()))
                    .into_iter()
                    .collect()
            }
            (_, Some(&s)) if m.trace.name(m.ev(s)) == "Context Sync" => {
                let dev = m.ev(s).device.max(m.ev(s).pid);
                every_stream(m, Some(dev), e.end())
            }
            ("cudaDeviceSynchronize", None) => every_stream(m, None, e.end()),
            ("cudaStreamSynchronize", None) => last_stream
                .get(&e.tid)
                .and_then(|k| m.streams.get(k))
                .and_then(|ops| last_started(m, ops, e.end()))
                .into_iter()
                .collect(),
            _ => continue,
        };
        if !awaited.is_empty() {
            cpu.insert(call, awaited);
        }
    }
    (cpu, gpu)
}

/// The last op started by `t` on every stream (of `device`, or of all).
fn every_stream(m: &RankModel, device: Option<i64>, t: u64) -> Vec<usize> {
    m.streams
        .iter()
        .filter(|(k, _)| device.is_none_or(|d| k.0 == d))
        .filter_map(|(_, ops)| last_started(m, ops, t))
        .collect()
}
