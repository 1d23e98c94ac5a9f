//! The report's timeline, gathered by two observers of the engine's pass:
//! [`Links`] counts the dependences between SMs (first pass), [`lanes`]
//! picks the SMs that get a lane (those on the critical path, the holders
//! blamed for its waits, then the SMs that send to or receive from path
//! SMs the most, at most [`MAX_LANES`]), and [`Collector`] keeps every
//! state those SMs went through during the path (second pass), and those
//! of every other SM with a state during the path: after the chosen lanes,
//! the busiest [`MAX_OTHER_LANES`] of them (time not blocked). The data
//! stays bounded: a state shorter than a bucket (1/[`BUCKETS`] of the
//! path's span) is merged with the other short states of its bucket into
//! one block named after the state that took most of the bucket's time,
//! so a lane holds at most about 2 × [`BUCKETS`] blocks.

use crate::report_path::PathPage;
use critpath_engine::{Analysis, Observer, Visit};
use critpath_os::names::OsState;
use critpath_trace::{Interner, Sym};
use serde::Serialize;
use std::collections::{HashMap, HashSet};

/// Lanes drawn at most.
pub const MAX_LANES: usize = 24;
/// Lanes given to the path's SMs at most (the rest go to the holders and
/// neighbours).
const MAX_PATH_LANES: usize = 16;
/// Lanes given to blamed holders at most.
const MAX_HOLDER_LANES: usize = 4;
/// Lanes given to SMs that are neither on the path nor linked to it, at
/// most (the busiest).
pub const MAX_OTHER_LANES: usize = 24;
/// SMs of their own the collector keeps states for before choosing the
/// busiest (the others are counted as left out).
const MAX_OTHER_CANDIDATES: usize = 256;
/// Buckets the path's span is cut into for merging short states.
pub const BUCKETS: u64 = 2000;

/// A lane's name: the SM, with its system unless it is `local`.
pub fn lane_name(sys: &str, sm: &str) -> String {
    if sys == "local" {
        sm.to_string()
    } else {
        format!("{sys}/{sm}")
    }
}

/// The colour class of a state: `running`, `runnable`, `blocked` or
/// `interrupted` for the OS graph's states, empty for any other name.
pub fn class(state: &str) -> &'static str {
    match OsState::parse(state) {
        Some(OsState::Running | OsState::Syscall { .. } | OsState::Function(_)) => "running",
        Some(OsState::Runnable) => "runnable",
        Some(OsState::Blocked(_) | OsState::Raised | OsState::Armed) => "blocked",
        Some(OsState::Interrupted(_)) => "interrupted",
        None => "",
    }
}

/// Dependences counted between SMs (an observer of the first pass).
#[derive(Default)]
pub struct Links {
    pairs: HashMap<(Sym, Sym, Sym, Sym), u64>,
    names: HashMap<(Sym, Sym), String>,
}

impl Observer for Links {
    fn visit(&mut self, v: &Visit, s: &Interner) {
        if let Visit::Link {
            from_sys,
            from_sm,
            to_sys,
            to_sm,
            ..
        } = *v
        {
            *self
                .pairs
                .entry((from_sys, from_sm, to_sys, to_sm))
                .or_default() += 1;
            for (sys, sm) in [(from_sys, from_sm), (to_sys, to_sm)] {
                self.names
                    .entry((sys, sm))
                    .or_insert_with(|| lane_name(s.resolve(sys), s.resolve(sm)));
            }
        }
    }
}

impl Links {
    /// (sender, receiver, dependences) by lane name.
    fn named(&self) -> Vec<(&str, &str, u64)> {
        self.pairs
            .iter()
            .map(|(&(a, b, c, d), &n)| {
                (
                    self.names[&(a, b)].as_str(),
                    self.names[&(c, d)].as_str(),
                    n,
                )
            })
            .collect()
    }
}

/// Why a lane is drawn.
#[derive(Clone, Copy, Debug, Serialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// The SM is on the critical path.
    Path,
    /// The SM held what a path state waited for (a CPU).
    Holder,
    /// The SM sends to or receives from a path SM.
    Neighbour,
    /// Another SM with states during the path.
    Other,
}

/// SMs that would have had a lane but were left out by [`MAX_LANES`].
#[derive(Clone, Debug, Default, Serialize, PartialEq, Eq)]
pub struct LeftOut {
    pub path: usize,
    pub holders: usize,
    pub neighbours: usize,
    /// Other SMs with states during the path, beyond the busiest drawn.
    pub others: usize,
    /// Lanes without a state during the path.
    pub empty: usize,
}

/// The lanes to draw, in order: the path's SMs by their first time on the
/// path, then holders, then neighbours by dependences with path SMs.
pub fn lanes(a: &Analysis, on_path: &PathPage, links: &Links) -> (Vec<(String, Role)>, LeftOut) {
    let mut path: Vec<(String, (u64, u64))> = (on_path.lanes.iter())
        .map(|l| (l.name.clone(), (l.ns, l.first_ns)))
        .collect();
    path.sort_by(|x, y| y.1 .0.cmp(&x.1 .0).then_with(|| x.0.cmp(&y.0)));
    let mut left = LeftOut {
        path: path.len().saturating_sub(MAX_PATH_LANES),
        ..LeftOut::default()
    };
    path.truncate(MAX_PATH_LANES);
    path.sort_by_key(|p| p.1 .1);
    let all_path: HashSet<&str> = on_path.lanes.iter().map(|l| l.name.as_str()).collect();
    let mut chosen: Vec<(String, Role)> = path.into_iter().map(|p| (p.0, Role::Path)).collect();
    let mut taken: HashSet<String> = chosen.iter().map(|c| c.0.clone()).collect();
    let mut holders: Vec<(String, u64)> = Vec::new();
    for s in a.states.iter().filter(|s| s.critical_ns > 0) {
        for b in &s.blame {
            let name = lane_name(&s.sys, &b.sm);
            match holders.iter_mut().find(|h| h.0 == name) {
                Some(h) => h.1 += b.ns,
                None => holders.push((name, b.ns)),
            }
        }
    }
    holders.retain(|h| !taken.contains(&h.0));
    holders.sort_by(|x, y| y.1.cmp(&x.1).then_with(|| x.0.cmp(&y.0)));
    let room = MAX_HOLDER_LANES.min(MAX_LANES - chosen.len());
    left.holders = holders.len().saturating_sub(room);
    for (h, _) in holders.into_iter().take(room) {
        taken.insert(h.clone());
        chosen.push((h, Role::Holder));
    }
    let mut near: HashMap<&str, u64> = HashMap::new();
    for (from, to, n) in links.named() {
        if all_path.contains(from) && !taken.contains(to) {
            *near.entry(to).or_default() += n;
        } else if all_path.contains(to) && !taken.contains(from) {
            *near.entry(from).or_default() += n;
        }
    }
    let mut near: Vec<(&str, u64)> = near.into_iter().collect();
    near.sort_by(|x, y| y.1.cmp(&x.1).then_with(|| x.0.cmp(y.0)));
    let room = MAX_LANES - chosen.len();
    left.neighbours = near.len().saturating_sub(room);
    chosen.extend(
        near.into_iter()
            .take(room)
            .map(|(n, _)| (n.to_string(), Role::Neighbour)),
    );
    (chosen, left)
}

/// One lane of the timeline.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Lane {
    pub name: String,
    pub role: Role,
    /// `[start_ns, end_ns, state index, visits merged]`, in time order.
    pub blocks: Vec<[u64; 4]>,
}

/// What the report's timeline draws.
#[derive(Clone, Debug, Default, Serialize, PartialEq)]
pub struct Timeline {
    pub t0: u64,
    pub t1: u64,
    /// States shorter than this were merged per bucket.
    pub bucket_ns: u64,
    pub lanes: Vec<Lane>,
    /// State names, indexed by the blocks.
    pub states: Vec<String>,
    /// Each state's colour class (see [`class`]).
    pub classes: Vec<&'static str>,
    pub left_out: LeftOut,
    /// Visits merged into blocks of several.
    pub merged: u64,
}

/// A lane being filled: its blocks and the short states of the current
/// bucket.
#[derive(Default)]
struct Acc {
    blocks: Vec<[u64; 4]>,
    bucket: Option<u64>,
    span: (u64, u64),
    time: Vec<(u64, u64)>,
    visits: u64,
    /// Time in states that are not blocked.
    busy: u64,
}

impl Acc {
    /// Closes the current bucket's block; returns the visits it merged.
    fn flush(&mut self) -> u64 {
        if self.bucket.take().is_none() {
            return 0;
        }
        let top = self
            .time
            .iter()
            .max_by_key(|t| (t.1, std::cmp::Reverse(t.0)))
            .map_or(0, |t| t.0);
        self.blocks
            .push([self.span.0, self.span.1, top, self.visits]);
        self.time.clear();
        let n = std::mem::take(&mut self.visits);
        if n > 1 {
            n
        } else {
            0
        }
    }
}

/// Keeps the states of the chosen lanes during the path (an observer of
/// the second pass).
pub struct Collector {
    t0: u64,
    t1: u64,
    bw: u64,
    lanes: Vec<(String, Role)>,
    acc: Vec<Acc>,
    /// Lanes added for SMs seen in the pass ([`Role::Other`]).
    others: usize,
    by_name: HashMap<String, usize>,
    seen: HashMap<(Sym, Sym), Option<usize>>,
    state_ix: HashMap<Sym, u64>,
    states: Vec<String>,
    /// Whether each state is of the `blocked` class.
    blocked: Vec<bool>,
    merged: u64,
}

impl Collector {
    /// A collector for `lanes` over the span of the path.
    pub fn new(path: &PathPage, lanes: Vec<(String, Role)>) -> Self {
        let (t0, t1) = path.span.unwrap_or((0, 0));
        let t1 = t1.max(t0 + 1);
        let by_name = lanes
            .iter()
            .enumerate()
            .map(|(i, l)| (l.0.clone(), i))
            .collect();
        Collector {
            t0,
            t1,
            bw: ((t1 - t0) / BUCKETS).max(1),
            acc: lanes.iter().map(|_| Acc::default()).collect(),
            lanes,
            others: 0,
            by_name,
            seen: HashMap::new(),
            state_ix: HashMap::new(),
            states: Vec::new(),
            blocked: Vec::new(),
            merged: 0,
        }
    }

    /// The timeline; lanes without a state are left out (and counted), and
    /// the other SMs' lanes follow the chosen ones, busiest first.
    pub fn finish(mut self, mut left_out: LeftOut) -> Timeline {
        let mut lanes = Vec::new();
        let mut others = Vec::new();
        for ((name, role), mut acc) in self.lanes.into_iter().zip(self.acc) {
            self.merged += acc.flush();
            if acc.blocks.is_empty() {
                left_out.empty += 1;
                continue;
            }
            let lane = Lane {
                name,
                role,
                blocks: acc.blocks,
            };
            match role {
                Role::Other => others.push((acc.busy, lane)),
                _ => lanes.push(lane),
            }
        }
        others.sort_by(|x, y| y.0.cmp(&x.0).then_with(|| x.1.name.cmp(&y.1.name)));
        left_out.others += others.len().saturating_sub(MAX_OTHER_LANES);
        lanes.extend(others.into_iter().take(MAX_OTHER_LANES).map(|o| o.1));
        Timeline {
            t0: self.t0,
            t1: self.t1,
            bucket_ns: self.bw,
            lanes,
            classes: self.states.iter().map(|s| class(s)).collect(),
            states: self.states,
            left_out,
            merged: self.merged,
        }
    }
}

impl Collector {
    /// The lane of SM (`sys`, `sm`): a chosen one, or a new lane of its own
    /// while there is room for candidates (`None` past that).
    fn lane_of(&mut self, sys: Sym, sm: Sym, s: &Interner) -> Option<usize> {
        if let Some(&lane) = self.seen.get(&(sys, sm)) {
            return lane;
        }
        let name = lane_name(s.resolve(sys), s.resolve(sm));
        let lane = match self.by_name.get(&name) {
            Some(&i) => Some(i),
            None if self.others < MAX_OTHER_CANDIDATES => {
                self.others += 1;
                self.by_name.insert(name.clone(), self.lanes.len());
                self.lanes.push((name, Role::Other));
                self.acc.push(Acc::default());
                Some(self.lanes.len() - 1)
            }
            None => None,
        };
        self.seen.insert((sys, sm), lane);
        lane
    }
}

impl Observer for Collector {
    fn visit(&mut self, v: &Visit, s: &Interner) {
        let Visit::State {
            sys,
            sm,
            state,
            start,
            end,
        } = *v
        else {
            return;
        };
        if end < self.t0 || start > self.t1 {
            return;
        }
        let Some(lane) = self.lane_of(sys, sm, s) else {
            return;
        };
        let (states, blocked) = (&mut self.states, &mut self.blocked);
        let st = *self.state_ix.entry(state).or_insert_with(|| {
            states.push(s.resolve(state).to_string());
            blocked.push(class(s.resolve(state)) == "blocked");
            states.len() as u64 - 1
        });
        let (a, b) = (start.max(self.t0), end.min(self.t1));
        let acc = &mut self.acc[lane];
        if !self.blocked[st as usize] {
            acc.busy += b - a;
        }
        if b - a >= self.bw {
            self.merged += acc.flush();
            acc.blocks.push([a, b, st, 1]);
            return;
        }
        let bucket = (a - self.t0) / self.bw;
        if acc.bucket != Some(bucket) {
            self.merged += acc.flush();
            acc.bucket = Some(bucket);
            acc.span = (a, b);
        }
        acc.span.1 = acc.span.1.max(b);
        acc.visits += 1;
        match acc.time.iter_mut().find(|t| t.0 == st) {
            Some(t) => t.1 += b - a,
            None => acc.time.push((st, b - a)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A path of `sm` over `[0, span)`.
    fn path(sm: &str, span: u64) -> PathPage {
        PathPage {
            span: Some((0, span)),
            lanes: vec![crate::report_path::PathLane {
                name: sm.into(),
                ns: span,
                first_ns: 0,
            }],
            ..PathPage::default()
        }
    }

    #[test]
    fn short_states_merge_per_bucket_and_long_ones_stay_whole() {
        let mut s = Interner::new();
        let (sys, sm, other) = (s.intern("local"), s.intern("a"), s.intern("b"));
        let (short, long) = (s.intern("running"), s.intern("blocked:io"));
        let a = path("a", 1_000_000);
        let mut c = Collector::new(&a, vec![("a".into(), Role::Path)]);
        let mut visit = |sm, state, start, end| {
            let v = Visit::State {
                sys,
                sm,
                state,
                start,
                end,
            };
            c.visit(&v, &s);
        };
        // 100,000 visits of 5 ns (a bucket is 500 ns), then one of 500 µs;
        // `b` gets a lane of its own after `a`'s.
        for i in 0..100_000u64 {
            visit(sm, short, i * 5, i * 5 + 5);
        }
        visit(sm, long, 500_000, 1_000_000);
        visit(other, long, 0, 1_000_000);
        let t = c.finish(LeftOut::default());
        assert_eq!(t.bucket_ns, 500);
        assert_eq!(t.lanes.len(), 2);
        assert_eq!(
            (t.lanes[1].name.as_str(), t.lanes[1].role),
            ("b", Role::Other)
        );
        let blocks = &t.lanes[0].blocks;
        assert_eq!(
            blocks.len(),
            1001,
            "one block per bucket, then the long state"
        );
        assert_eq!(blocks[0], [0, 500, 0, 100]);
        assert_eq!(blocks[1000], [500_000, 1_000_000, 1, 1]);
        assert_eq!(t.merged, 100_000);
        assert_eq!(t.states, ["running", "blocked:io"]);
        assert_eq!(t.classes, ["running", "blocked"]);
    }

    #[test]
    fn every_sm_with_states_gets_a_lane_after_the_path_busiest_first() {
        let mut s = Interner::new();
        let sys = s.intern("local");
        let names = ["main", "logger", "consumer", "producer", "idle"];
        let sms: Vec<Sym> = names.iter().map(|n| s.intern(n)).collect();
        let (run, wait) = (s.intern("running"), s.intern("blocked:sleep"));
        let a = path("main", 1_000);
        let mut c = Collector::new(&a, vec![("main".into(), Role::Path)]);
        // (sm, state, start, end): the consumer is busiest, then the
        // producer, then the logger; `idle` only waits.
        let visits = [
            (4, wait, 0, 1_000),
            (1, run, 0, 100),
            (2, run, 0, 900),
            (3, run, 0, 500),
            (0, wait, 0, 1_000),
        ];
        for (i, state, start, end) in visits {
            let v = Visit::State {
                sys,
                sm: sms[i],
                state,
                start,
                end,
            };
            c.visit(&v, &s);
        }
        let t = c.finish(LeftOut::default());
        let order: Vec<(&str, Role)> = t.lanes.iter().map(|l| (l.name.as_str(), l.role)).collect();
        assert_eq!(
            order,
            [
                ("main", Role::Path),
                ("consumer", Role::Other),
                ("producer", Role::Other),
                ("logger", Role::Other),
                ("idle", Role::Other),
            ]
        );
    }

    #[test]
    fn os_states_get_their_class_and_others_none() {
        assert_eq!(class("runnable"), "runnable");
        assert_eq!(class("running:syscall:read"), "running");
        assert_eq!(class("blocked:sleep"), "blocked");
        assert_eq!(class("DMA packet"), "");
    }
}
