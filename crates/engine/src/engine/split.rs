//! The walk back on two cores. Following predecessors is a chain of
//! dependent reads, so one walk cannot be cut in two; but every node has a
//! single predecessor, so two chains that meet are one from there on. While
//! the main walk follows the path from the destination, a helper thread
//! follows the chain from a node further back that likely lies on the path
//! (of the nodes noted during the pass as having the greatest `L` at the
//! time, the one nearest half way, see [`Marks::split_point`]). On the
//! recordings measured, such a chain meets the path within ten steps. The
//! helper hands its first steps over, then sums
//! the rest of its chain. If the main walk meets one of those first steps,
//! the path from there is the helper's chain: the main walk sums the first
//! steps itself and takes the helper's sums for the rest. It checks the one
//! thing its sums carry from edge to edge other than by adding up, the blame
//! being gathered (see [`Blamer::open_pair`]), and walks on alone when the
//! chains do not meet there, that differs, the helper fails, or no thread
//! can be started. The result is the one-thread walk's in every case.

use super::blame::Blamer;
use super::walk::{EdgeInfo, Sums};
use crate::nodelog::{Cursor, Entry, NodeLog, NO_PRED};
use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::thread::ScopedJoinHandle;

/// Walks back from fewer nodes than this stay on one thread.
const SPLIT_MIN_NODES: u64 = 1 << 20;
/// Marks kept at most; past that their spacing doubles.
const MAX_MARKS: usize = 1024;

/// The node with the greatest `L` at regular points of the pass: where the
/// walk back may split. Their spacing doubles as the trace grows, so their
/// memory stays flat.
pub(super) struct Marks {
    /// A mark is due at nodes whose id has these bits clear.
    mask: u64,
    ids: Vec<u64>,
    min_nodes: u64,
    /// Steps the helper hands over.
    head: usize,
    /// No helper thread (walks split only when made to split every walk).
    one_thread: bool,
}

impl Marks {
    /// The marks of a pass: walks long enough split, unless `one_thread`.
    pub fn new(one_thread: bool) -> Marks {
        Marks {
            one_thread,
            ..Marks::every(16, SPLIT_MIN_NODES, HEAD)
        }
    }

    /// A mark every `2^shift` nodes; walks from `min_nodes` nodes on split,
    /// the helper handing `head` steps over.
    pub fn every(shift: u32, min_nodes: u64, head: usize) -> Marks {
        Marks {
            mask: (1 << shift) - 1,
            ids: Vec::new(),
            min_nodes,
            head,
            one_thread: false,
        }
    }

    /// Is a mark due at node `node`?
    #[inline(always)]
    pub fn due(&self, node: u64) -> bool {
        node & self.mask == 0
    }

    /// Marks node `best`, the one with the greatest `L` now.
    #[cold]
    pub fn add(&mut self, best: u64) {
        if self.ids.len() == MAX_MARKS {
            let mut keep = false;
            self.ids.retain(|_| {
                keep = !keep;
                keep
            });
            self.mask = self.mask << 1 | 1;
        }
        self.ids.push(best);
    }

    /// Where a walk back from node `dest` splits: the mark nearest half
    /// way, if the walk is long enough and threads are allowed (always, for
    /// marks made to split every walk).
    fn split_point(&self, dest: u64) -> Option<u64> {
        let allowed = self.min_nodes == 0 || !self.one_thread;
        if dest < self.min_nodes || !allowed {
            return None;
        }
        let half = dest / 2;
        self.ids
            .iter()
            .copied()
            .filter(|&m| m < dest)
            .min_by_key(|&m| m.abs_diff(half))
    }
}

/// Steps the helper hands over before it sums. Only a meeting among them
/// lets the main walk take over the helper's sums; below them it walks on
/// alone (the same result, with the second core's work wasted).
const HEAD: usize = 4096;

/// The helper's first steps: (node, entry) from its start back, and the
/// blame open after them (from a fresh start).
struct Head {
    steps: Vec<(u64, Entry)>,
    open: Option<(u32, u32)>,
}

/// What the helper found: the sums of its chain past its first steps, and
/// the chain's root entry; `None` when told to stop, or when its chain ends
/// within the first steps.
type Tail = Option<(Sums, Entry)>;

/// Follows the path from node `id` to its root, adding its edges to `sums`,
/// and returns the root's entry; a helper may walk the chain from one of
/// `marks` meanwhile (see the module's documentation).
pub(super) fn follow(
    log: &NodeLog,
    info: &[EdgeInfo],
    id: u64,
    marks: &Marks,
    sums: &mut Sums,
) -> io::Result<Entry> {
    let from = marks.split_point(id);
    follow_with(log, info, (id, from), sums, marks.head)
}

/// [`follow`] with `head` first steps handed over.
fn follow_with(
    log: &NodeLog,
    info: &[EdgeInfo],
    (id, from): (u64, Option<u64>),
    sums: &mut Sums,
    head: usize,
) -> io::Result<Entry> {
    let mut cur = log.cursor();
    let Some(from) = from.filter(|&f| f < id) else {
        return alone(log, info, &mut cur, id, sums);
    };
    let stop = AtomicBool::new(false);
    std::thread::scope(|sc| {
        let (tx, rx) = sync_channel(1);
        let stop = &stop;
        let helper = std::thread::Builder::new()
            .name("critpath-walk".into())
            .spawn_scoped(sc, move || help(log, info, (from, head), stop, tx));
        let Ok(helper) = helper else {
            return alone(log, info, &mut cur, id, sums);
        };
        let res = lead(log, info, (&mut cur, id, from), (rx, helper, stop), sums);
        stop.store(true, Ordering::Relaxed);
        res
    })
}

/// One step back from node `*id`: its entry when it is the root (`*id`
/// stays), else adds its edge to `sums` and moves `*id` to its predecessor.
#[inline]
fn step(
    log: &NodeLog,
    info: &[EdgeInfo],
    cur: &mut Cursor,
    id: &mut u64,
    sums: &mut Sums,
) -> io::Result<Option<Entry>> {
    let e = cur.get(log, *id)?;
    if e.pred == NO_PRED {
        return Ok(Some(e));
    }
    sums.add(info, &e);
    *id = e.pred;
    Ok(None)
}

/// The chain from `id` to its root, on this thread alone.
fn alone(
    log: &NodeLog,
    info: &[EdgeInfo],
    cur: &mut Cursor,
    mut id: u64,
    sums: &mut Sums,
) -> io::Result<Entry> {
    loop {
        if let Some(root) = step(log, info, cur, &mut id, sums)? {
            return Ok(root);
        }
    }
}

/// The main walk: alone down to the helper's start, then watching for the
/// helper's first steps, then the helper's sums or alone again.
fn lead<'s>(
    log: &NodeLog,
    info: &[EdgeInfo],
    (cur, mut id, from): (&mut Cursor, u64, u64),
    (rx, helper, stop): (
        Receiver<Head>,
        ScopedJoinHandle<'s, io::Result<Tail>>,
        &AtomicBool,
    ),
    sums: &mut Sums,
) -> io::Result<Entry> {
    while id > from {
        if let Some(root) = step(log, info, cur, &mut id, sums)? {
            return Ok(root);
        }
    }
    // The helper failed before handing over: its error, if real, is met
    // again alone. (A panic, a bug, would end the scope with a panic.)
    let Ok(head) = rx.recv() else {
        return alone(log, info, cur, id, sums);
    };
    let Some(p) = meet(log, info, (cur, &mut id), &head.steps, sums)? else {
        stop.store(true, Ordering::Relaxed);
        return alone(log, info, cur, id, sums);
    };
    for &(_, e) in &head.steps[p..] {
        if e.pred == NO_PRED {
            return Ok(e);
        }
        sums.add(info, &e);
        id = e.pred;
    }
    if sums.blame.open_pair() != head.open {
        stop.store(true, Ordering::Relaxed);
        return alone(log, info, cur, id, sums);
    }
    match helper.join() {
        Ok(Ok(Some((tail, root)))) => {
            #[cfg(test)]
            tests::MERGED.with(|m| m.set(m.get() + 1));
            sums.blame.end();
            sums.absorb(tail);
            Ok(root)
        }
        _ => alone(log, info, cur, id, sums),
    }
}

/// Walks on from `*id` until the chain reaches one of the helper's first
/// `steps` (its index), or passes below all of them or reaches its root
/// without (`None`; `*id` is then the node to go on from, or the root).
/// Both chains only go back, so one pass over `steps` does.
fn meet(
    log: &NodeLog,
    info: &[EdgeInfo],
    (cur, id): (&mut Cursor, &mut u64),
    steps: &[(u64, Entry)],
    sums: &mut Sums,
) -> io::Result<Option<usize>> {
    let mut p = 0;
    loop {
        while p < steps.len() && steps[p].0 > *id {
            p += 1;
        }
        if p == steps.len() {
            return Ok(None);
        }
        if steps[p].0 == *id {
            return Ok(Some(p));
        }
        if step(log, info, cur, id, sums)?.is_some() {
            // The path's root: the walk alone reads it again and ends.
            return Ok(None);
        }
    }
}

/// The helper: hands over its first `head` steps from `from`, then sums
/// the rest of its chain, going on from the blame its first steps left
/// open, until the root or until told to stop.
fn help(
    log: &NodeLog,
    info: &[EdgeInfo],
    (from, head): (u64, usize),
    stop: &AtomicBool,
    tx: SyncSender<Head>,
) -> io::Result<Tail> {
    let mut cur = log.cursor();
    // Summed only for the blame they leave open.
    let mut first = Sums::new(info.len());
    let mut steps = Vec::with_capacity(head);
    let mut id = from;
    while steps.len() < head {
        let e = cur.get(log, id)?;
        steps.push((id, e));
        if e.pred == NO_PRED {
            let _ = tx.send(Head { steps, open: None });
            return Ok(None);
        }
        first.add(info, &e);
        id = e.pred;
    }
    let open = first.blame.open_pair();
    let _ = tx.send(Head { steps, open });
    let mut sums = Sums::new(info.len());
    sums.blame = Blamer::resume(open);
    for n in 1u64.. {
        if n % 4096 == 0 && stop.load(Ordering::Relaxed) {
            return Ok(None);
        }
        if let Some(root) = step(log, info, &mut cur, &mut id, &mut sums)? {
            sums.blame.end();
            return Ok(Some((sums, root)));
        }
    }
    unreachable!("a chain of nodes ends")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nodelog::Entry;
    use std::cell::Cell;

    thread_local! {
        /// Walks on this thread that took the helper's sums.
        pub(super) static MERGED: Cell<usize> = const { Cell::new(0) };
    }
    const NONE32: u32 = u32::MAX;

    /// A small deterministic generator.
    struct Rng(u64);
    impl Rng {
        fn below(&mut self, n: u64) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0 % n
        }
    }

    /// A cgraph of 16 edges between 2 SMs: intra-SM edges, the `held`
    /// inter-SM edges of waited recvs (which open blame that the sender's
    /// intra-SM edges after them add to), and `held` pieces (some held by
    /// the waiter itself).
    fn infos(rng: &mut Rng) -> Vec<EdgeInfo> {
        (0..16)
            .map(|i| {
                let a = rng.below(2) as u32;
                let (sms, held, piece) = match i % 8 {
                    0 | 1 => ((a, 1 - a), true, false),
                    2 => ((a, a), false, true),
                    _ => ((a, a), false, false),
                };
                EdgeInfo {
                    sms,
                    key: rng.below(6) as u32,
                    held_for: if piece { rng.below(6) as u32 } else { NONE32 },
                    holder: if piece { rng.below(2) as u32 } else { NONE32 },
                    held,
                    cost: [0, 0, 3, 40][i % 4],
                }
            })
            .collect()
    }

    /// A sealed log of `n` nodes whose chains mostly step back a node or
    /// two, now and then further, with a root one node in `roots`.
    fn log(rng: &mut Rng, n: u64, roots: u64) -> NodeLog {
        let mut log = NodeLog::new();
        for i in 0..n {
            let e = if i == 0 || rng.below(roots) == 0 {
                Entry {
                    pred: NO_PRED,
                    weight: i,
                    tag: rng.below(4) as u32,
                    span: i,
                }
            } else {
                let back = match rng.below(10) {
                    0..=5 => 1,
                    6 | 7 => 2,
                    _ => 1 + rng.below(40),
                };
                let weight = rng.below(1000);
                Entry {
                    pred: i.saturating_sub(back),
                    weight,
                    tag: rng.below(16) as u32,
                    span: weight,
                }
            };
            log.push(e).unwrap();
        }
        log.seal().unwrap();
        log
    }

    fn walk(
        log: &NodeLog,
        info: &[EdgeInfo],
        id: u64,
        from: Option<u64>,
        head: usize,
    ) -> (Entry, Sums) {
        let mut sums = Sums::new(info.len());
        let root = follow_with(log, info, (id, from), &mut sums, head).unwrap();
        sums.blame.end();
        (root, sums)
    }

    fn same(a: &(Entry, Sums), b: &(Entry, Sums), what: &str) {
        assert_eq!(a.0, b.0, "root, {what}");
        assert_eq!(a.1.critical, b.1.critical, "critical, {what}");
        assert_eq!(a.1.edges, b.1.edges, "edges, {what}");
        assert_eq!(a.1.blame.sums, b.1.blame.sums, "blame, {what}");
        assert_eq!(a.1.cut, b.1.cut, "annotations' cost, {what}");
    }

    #[test]
    fn a_split_walk_sums_what_one_thread_does() {
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        let info = infos(&mut rng);
        let n = 200_000;
        let log = log(&mut rng, n, 3000);
        let merged = MERGED.with(Cell::get);
        for _ in 0..40 {
            let id = n / 2 + rng.below(n / 2);
            let one = walk(&log, &info, id, None, HEAD);
            for head in [1, 3, 16, 300] {
                for _ in 0..4 {
                    // Mostly a little way back, where chains meet; now and
                    // then anywhere, or past the walk's start.
                    let from = match rng.below(4) {
                        0 => rng.below(id + 10),
                        _ => id.saturating_sub(rng.below(3000)),
                    };
                    let two = walk(&log, &info, id, Some(from), head);
                    same(
                        &one,
                        &two,
                        &format!("from {id} split at {from}, {head} steps"),
                    );
                }
            }
        }
        // Many of these chains meet: the helper's sums were taken over.
        let merged = MERGED.with(Cell::get) - merged;
        assert!(merged > 100, "{merged} of 640 walks took the helper's sums");
    }

    #[test]
    fn a_split_walk_of_a_spilled_log_sums_what_one_thread_does() {
        let mut rng = Rng(7);
        let info = infos(&mut rng);
        let n = 3_000_000;
        // Roots so rare that the path reaches back across the whole log,
        // over many windows of the spill file.
        let log = log(&mut rng, n, u64::MAX);
        assert!(log.disk_bytes() > 0, "the log spills");
        let one = walk(&log, &info, n - 1, None, HEAD);
        assert!(one.1.edges > n / 8, "the path spans the log");
        let merged = MERGED.with(Cell::get);
        for from in [n / 2, n / 3, 1_000, n - 2] {
            let two = walk(&log, &info, n - 1, Some(from), HEAD);
            same(&one, &two, &format!("split at {from}"));
        }
        let merged = MERGED.with(Cell::get) - merged;
        assert!(merged >= 2, "{merged} of 4 walks took the helper's sums");
    }
}
