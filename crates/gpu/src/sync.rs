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

/// What resolving needs to look up.
struct Resolver<'a> {
    m: &'a RankModel,
    syncs: HashMap<i64, usize>,
    launch_order: Launches,
    /// cudaEventRecord calls: correlation -> time.
    records: HashMap<i64, u64>,
    /// Runtime call -> the GPU op it launched (or copied with).
    op_of: HashMap<usize, usize>,
    /// Per thread, the stream it launched on last.
    last_stream: HashMap<i64, StreamKey>,
}

/// The stream a `cuda_sync` event names (its device is `device` or `pid`).
fn stream_of(m: &RankModel, s: usize, stream: i64) -> StreamKey {
    let e = m.ev(s);
    (e.device.max(e.pid), stream)
}

impl Resolver<'_> {
    /// The GPU ops a CPU call waits for (none for calls that do not wait).
    fn cpu_awaited(&self, call: usize) -> Vec<usize> {
        let (m, e) = (self.m, self.m.ev(call));
        let last_on = |key: &StreamKey| {
            let ops = m.streams.get(key)?;
            last_started(m, ops, e.end())
        };
        let sync = self.syncs.get(&e.corr).copied();
        let kind = sync.map(|s| m.trace.name(m.ev(s)));
        match (m.name(call), sync, kind) {
            ("cudaMemcpy", _, _) => self.op_of.get(&call).copied().into_iter().collect(),
            (_, Some(s), Some("Event Sync")) => self.recorded_op(s).into_iter().collect(),
            (_, Some(s), Some("Stream Sync")) => last_on(&stream_of(m, s, m.ev(s).stream))
                .into_iter()
                .collect(),
            (_, Some(s), Some("Context Sync")) => {
                every_stream(m, Some(stream_of(m, s, 0).0), e.end())
            }
            ("cudaDeviceSynchronize", None, _) => every_stream(m, None, e.end()),
            ("cudaStreamSynchronize", None, _) => self
                .last_stream
                .get(&e.tid)
                .and_then(last_on)
                .into_iter()
                .collect(),
            _ => Vec::new(),
        }
    }

    /// A cudaStreamWaitEvent: (the op that waits, the op it waits for).
    fn stream_wait(&self, call: usize) -> Option<(usize, usize)> {
        let (m, e) = (self.m, self.m.ev(call));
        let s = *self.syncs.get(&e.corr)?;
        let key = stream_of(m, s, m.ev(s).stream);
        let dest = next_launched_after(m, &self.launch_order, key, e.ts, e.tid)?;
        Some((dest, self.recorded_op(s)?))
    }

    /// The op an event record captured: the last op launched on the
    /// recorded stream before the cudaEventRecord the sync event names.
    fn recorded_op(&self, sync: usize) -> Option<usize> {
        let s = self.m.ev(sync);
        let at = *self.records.get(&s.wait_record_corr)?;
        last_launched_before(
            &self.launch_order,
            stream_of(self.m, sync, s.wait_stream),
            at,
        )
    }
}

/// Resolves every synchronization: (CPU waits, GPU-GPU waits).
pub fn resolve(m: &RankModel) -> (Waits, Waits) {
    let records = m
        .trace
        .events
        .iter()
        .filter(|e| e.kind == Kind::Runtime && m.trace.name(e) == "cudaEventRecord")
        .map(|e| (e.corr, e.ts))
        .collect();
    let mut r = Resolver {
        m,
        syncs: sync_events(m),
        launch_order: launches(m),
        records,
        op_of: m.launch_of.iter().map(|(&o, &l)| (l, o)).collect(),
        last_stream: HashMap::new(),
    };
    let (mut cpu, mut gpu) = (Waits::new(), Waits::new());
    let mut calls: Vec<usize> = m.threads.values().flatten().copied().collect();
    calls.sort_by_key(|&i| m.ev(i).ts);
    for call in calls {
        let e = m.ev(call);
        if let Some(&op) = r.op_of.get(&call) {
            r.last_stream
                .insert(e.tid, (m.ev(op).device, m.ev(op).stream));
        }
        if m.name(call) == "cudaStreamWaitEvent" {
            if let Some((dest, src)) = r.stream_wait(call) {
                gpu.entry(dest).or_default().push(src);
            }
            continue;
        }
        let awaited = r.cpu_awaited(call);
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
