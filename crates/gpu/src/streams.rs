//! GPU ops in stream order: an op starts no earlier than the previous op on
//! its stream ends (timestamps that overlap by rounding), which gives each
//! op its effective (start, end). On the way the streams, the collectives
//! (for joining ranks) and the communication states are noted; they are
//! few, whatever the trace's length.

use crate::emit::coll_wait;
use crate::items::{Pass, StreamKey, StreamOp};
use crate::kineto::{parse_ranks, Names};
use critpath_readers::extsort::ExtSort;
use std::collections::BTreeSet;

/// A collective's kernel on one rank, with its effective times.
#[derive(Clone, Debug)]
pub struct CollOp {
    pub op: u64,
    pub name: String,
    pub group: String,
    /// The ranks of the process group, in order.
    pub ranks: Vec<i64>,
    pub start: u64,
    pub end: u64,
    /// When it was launched (its start when no launch is known).
    pub launched: u64,
    /// Its sequence number in its process group, when the trace says.
    pub seq: Option<i64>,
}

/// What one rank's streams hold.
#[derive(Default)]
pub struct RankStreams {
    pub keys: BTreeSet<StreamKey>,
    pub collectives: Vec<CollOp>,
    /// NCCL kernels' names and collectives' wait states.
    pub comm_states: BTreeSet<String>,
}

/// Reads the kept GPU ops in stream order, gives each its effective times
/// and puts it in the pass; notes the collectives when `collectives` (to
/// join ranks: a few hundred bytes each).
pub fn order(
    ops: ExtSort<StreamOp>,
    names: &Names,
    pass: &mut ExtSort<Pass>,
    collectives: bool,
) -> std::io::Result<RankStreams> {
    let mut out = RankStreams::default();
    let mut sorted = ops.finish()?;
    let mut prev: Option<(StreamKey, u64)> = None;
    while let Some(StreamOp { ev, launch }) = sorted.next_item()? {
        let key = (ev.device, ev.stream);
        let after = prev.filter(|p| p.0 == key).map_or(0, |p| p.1);
        let start = ev.ts.max(after);
        let end = ev.end().max(start);
        prev = Some((key, end));
        out.keys.insert(key);
        let name = names.get(ev.name);
        if name.to_ascii_lowercase().contains("nccl") && !out.comm_states.contains(name) {
            out.comm_states.insert(name.to_string());
        }
        if ev.is_collective() {
            let wait = coll_wait(names.get(ev.coll_name));
            if !out.comm_states.contains(&wait) {
                out.comm_states.insert(wait);
            }
        }
        if collectives && ev.is_collective() {
            let c = CollOp {
                op: ev.index,
                name: names.get(ev.coll_name).to_string(),
                group: names.get(ev.coll_group).to_string(),
                ranks: parse_ranks(names.get(ev.coll_ranks)),
                start,
                end,
                launched: launch.map_or(start, |l| l.0),
                seq: None,
            };
            out.collectives.push(c);
        }
        pass.push(Pass::Op {
            ev,
            start,
            end,
            launch,
        });
    }
    Ok(out)
}
