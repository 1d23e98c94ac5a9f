//! Slack (paper §2): how much each state could grow before it joins the
//! critical path. While the engine streams it writes every node's `L` and
//! all its in-edges (not only the chosen one) to a graph log on disk; at the
//! end a backward pass over that log computes `R(n)`, the longest path from
//! each node to any end (to the destination, when one was named: an edge
//! from which no path reaches it has no slack to speak of, and is left
//! out), in a disk-backed array. An edge `p → n` of weight `w` has slack
//! `L_max − (L(p) + w + R(n))`; a state's slack is the least over its
//! edges. Both arrays live in memory-mapped temporary files, so
//! memory does not grow with the trace.

use memmap2::{Mmap, MmapMut};
use std::fs::File;
use std::io::{self, BufWriter, Write};

const REC: usize = 64;

/// One in-edge: predecessor node, weight, and the state key it is charged to.
#[derive(Clone, Copy, Debug)]
pub struct InEdge {
    pub pred: u64,
    pub weight: u64,
    pub key: u32,
}

pub struct GraphLog {
    out: BufWriter<File>,
    nodes: u64,
}

impl GraphLog {
    pub fn new() -> io::Result<Self> {
        Ok(GraphLog {
            out: BufWriter::with_capacity(1 << 20, tempfile::tempfile()?),
            nodes: 0,
        })
    }

    /// Appends the next node: its `L` and its in-edges (at most two).
    pub fn push(&mut self, l: i64, edges: &[InEdge]) -> io::Result<()> {
        let mut rec = [0u8; REC];
        rec[0..8].copy_from_slice(&l.to_le_bytes());
        rec[8] = edges.len().min(2) as u8;
        for (i, e) in edges.iter().take(2).enumerate() {
            let at = 16 + i * 24;
            rec[at..at + 8].copy_from_slice(&e.pred.to_le_bytes());
            rec[at + 8..at + 16].copy_from_slice(&e.weight.to_le_bytes());
            rec[at + 16..at + 20].copy_from_slice(&e.key.to_le_bytes());
        }
        self.nodes += 1;
        self.out.write_all(&rec)
    }

    /// Per state key: the least slack of the edges charged to it and their
    /// mean (`None` for a state with no edge), given the path length `lmax`
    /// and, when the path's destination was named, its node `to` (then only
    /// edges from which a path reaches it count; none past the last node).
    pub fn slack(
        self,
        lmax: i64,
        keys: usize,
        to: Option<u64>,
    ) -> io::Result<Vec<Option<(u64, f64)>>> {
        let n = self.nodes as usize;
        if n == 0 {
            return Ok(vec![None; keys]);
        }
        let file = self.out.into_inner().map_err(|e| e.into_error())?;
        // SAFETY: both files are anonymous temporary files that only this
        // function can reach; nothing else maps or writes them.
        let g = unsafe { Mmap::map(&file)? };
        let rfile = tempfile::tempfile()?;
        rfile.set_len((n * 8) as u64)?;
        let mut r = unsafe { MmapMut::map_mut(&rfile)? };
        // `R` as stored: toward a named destination one more than `R`, 0
        // where no path reaches it (the file starts zeroed); else `R`.
        let bias = u64::from(to.is_some());
        if let Some(d) = to.filter(|&d| (d as usize) < n) {
            r[d as usize * 8..d as usize * 8 + 8].copy_from_slice(&1u64.to_le_bytes());
        }
        let mut best: Vec<Option<u64>> = vec![None; keys];
        let mut sum: Vec<(u128, u64)> = vec![(0, 0); keys];
        let get = |b: &[u8], at: usize| u64::from_le_bytes(b[at..at + 8].try_into().unwrap());
        for node in (0..n).rev() {
            let rec = &g[node * REC..node * REC + REC];
            let Some(rn) = get(&r, node * 8).checked_sub(bias) else {
                continue;
            };
            for i in 0..rec[8] as usize {
                let at = 16 + i * 24;
                let (pred, w) = (get(rec, at) as usize, get(rec, at + 8));
                let key = u32::from_le_bytes(rec[at + 16..at + 20].try_into().unwrap());
                let through = w + rn;
                if through + bias > get(&r, pred * 8) {
                    r[pred * 8..pred * 8 + 8].copy_from_slice(&(through + bias).to_le_bytes());
                }
                let lp = get(&g, pred * REC) as i64;
                if lp == i64::MIN || (key as usize) >= keys {
                    continue;
                }
                let s = (lmax - (lp + through as i64)).max(0) as u64;
                let b = &mut best[key as usize];
                *b = Some(b.map_or(s, |x| x.min(s)));
                sum[key as usize].0 += u128::from(s);
                sum[key as usize].1 += 1;
            }
        }
        Ok(best
            .into_iter()
            .zip(sum)
            .map(|(b, (total, n))| b.map(|m| (m, total as f64 / n.max(1) as f64)))
            .collect())
    }
}
