//! Records from a [`RankModel`]: each CPU thread is an SM whose state is its
//! innermost op (time between top-level ops is `between ops`; a blocking
//! synchronization is an open wait ended by the GPU ops it waited for),
//! each CUDA stream an SM whose state is the running op or `idle`. A
//! launch is a `send` at the runtime call's start, received when the op
//! starts; an op that something waits for sends at its end.
//!
//! Records are ordered by time, then by class, so that at one instant
//! every `send` comes before the `recv` that depends on it.

use crate::model::RankModel;
use critpath_readers::recsort::{RecordSort, SortedRecords};
use critpath_trace::{Event, Interner, LinkId, ReadError, Sym, Who};
use std::collections::{HashMap, HashSet};

/// The state of a CPU thread between top-level ops.
pub const BETWEEN_OPS: &str = "between ops";
/// The state of a CUDA stream with nothing running.
pub const IDLE: &str = "idle";

/// Ordering classes of records at one instant.
mod class {
    pub const OP_END: u8 = 0;
    pub const END_SEND: u8 = 1;
    pub const STREAM_WAIT: u8 = 2;
    pub const CPU: u8 = 3;
    pub const STREAM_INIT: u8 = 4;
    pub const OP_START: u8 = 5;
    pub const COLLECTIVE: u8 = 6;
}

/// Link-id spaces: kind in bits 56.., rank in bits 40..
fn link(kind: u64, rank: usize, n: u64) -> LinkId {
    LinkId::Num((kind << 56) | ((rank as u64) << 40) | n)
}

/// How a collective's kernel takes part in its instance across ranks.
#[derive(Clone, Debug)]
pub struct Role {
    /// The instance's link id (the last rank's arrival).
    pub id: u64,
    /// This rank arrived last.
    pub straggler: bool,
    /// When the last rank arrived, on the aligned clock.
    pub release: u64,
    /// The collective's name (its wait state is `<name> wait`).
    pub name: Sym,
    /// On the straggler: the inputs (ranks) that wait for it.
    pub waiting: Vec<usize>,
}

/// Records being gathered, with their string table. Each record keeps its
/// ordering class beside it; [`Emitter::finish`] hands them out in order,
/// past a budget from an external sort on disk, so a long trace's records
/// never all sit in memory.
#[derive(Default)]
pub struct Emitter {
    records: RecordSort,
    pub strings: Interner,
}

/// Records in the order to read them in.
pub struct Ordered {
    pub records: SortedRecords,
    pub strings: Interner,
}

impl Emitter {
    pub fn new() -> Self {
        Emitter::default()
    }

    fn push(&mut self, t: u64, class: u8, ev: Event) {
        self.records.push(t, class, ev);
    }

    pub fn sym(&mut self, s: &str) -> Sym {
        self.strings.intern(s)
    }

    /// The records, in time order, then class, then the order made; an
    /// error is one of the sort on disk, said of the input `name`.
    pub fn finish(self, name: &str) -> Result<Ordered, ReadError> {
        Ok(Ordered {
            records: self.records.finish(name)?,
            strings: self.strings,
        })
    }
}

/// One rank's emission: its model, SM-name prefix, clock shift and index.
pub struct RankEmit<'a> {
    pub m: &'a RankModel,
    pub prefix: String,
    pub shift: i128,
    pub index: usize,
    /// Effective (start, end) of each GPU op on the rank's own clock.
    pub times: &'a HashMap<usize, (u64, u64)>,
    pub roles: &'a HashMap<usize, Role>,
}

impl RankEmit<'_> {
    fn at(&self, t: u64) -> u64 {
        (i128::from(t) + self.shift).max(0) as u64
    }

    fn gpu_end(&self, op: usize) -> u64 {
        let end = self.at(self.times[&op].1);
        self.roles.get(&op).map_or(end, |r| end.max(r.release))
    }

    /// Emits every thread and every stream of the rank.
    pub fn emit(&self, out: &mut Emitter) {
        for (&(_, tid), ops) in &self.m.threads {
            let sm = out.sym(&format!("{}thread:{tid}", self.prefix));
            self.emit_thread(out, sm, ops);
        }
        let awaited: HashSet<usize> = self
            .m
            .cpu_waits
            .values()
            .chain(self.m.gpu_waits.values())
            .flatten()
            .copied()
            .collect();
        for (&(dev, stream), ops) in &self.m.streams {
            let sm = out.sym(&format!("{}gpu{dev}:stream{stream}", self.prefix));
            self.emit_stream(out, sm, ops, &awaited);
        }
    }

    fn emit_thread(&self, out: &mut Emitter, sm: Sym, ops: &[usize]) {
        let who = Who::Sm(sm);
        let tr = transitions(self.m, ops);
        for (k, &(t, op)) in tr.iter().enumerate() {
            let t = self.at(t);
            let Some(op) = op else {
                let state = out.sym(BETWEEN_OPS);
                out.push(t, class::CPU, Event::State { who, state });
                continue;
            };
            let next = tr.get(k + 1).map_or(t, |x| self.at(x.0));
            self.emit_op(out, who, op, t, next);
        }
        for &op in ops {
            for g in self.m.launched_by(op) {
                let id = link(1, self.index, g as u64);
                let t = self.at(self.m.ev(op).ts);
                out.push(t, class::CPU, Event::Send { who, id });
            }
        }
    }

    /// A thread entering `op` at `t` until `next`: a plain state, or an
    /// open wait left by the GPU ops it waits for that end meanwhile.
    fn emit_op(&self, out: &mut Emitter, who: Who, op: usize, t: u64, next: u64) {
        let state = out.sym(self.m.name(op));
        let awaited = self.m.cpu_waits.get(&op).into_iter().flatten();
        let mut ends: Vec<(u64, usize)> = awaited
            .map(|&g| (self.gpu_end(g), g))
            .filter(|&(e, _)| e > t && e <= next)
            .collect();
        ends.sort_unstable();
        if ends.is_empty() {
            out.push(t, class::CPU, Event::State { who, state });
            return;
        }
        let wait = Event::Wait {
            who,
            state,
            on: None,
            on_sys: None,
            on_state: None,
        };
        out.push(t, class::CPU, wait);
        for (e, g) in ends {
            let id = link(2, self.index, g as u64);
            out.push(
                e,
                class::CPU,
                Event::Recv {
                    who,
                    id,
                    state,
                    waited: false,
                },
            );
        }
    }

    fn emit_stream(&self, out: &mut Emitter, sm: Sym, ops: &[usize], awaited: &HashSet<usize>) {
        let who = Who::Sm(sm);
        let idle = out.sym(IDLE);
        let mut prev_end: Option<u64> = None;
        for &op in ops {
            let start = self.at(self.times[&op].0);
            let end = self.gpu_end(op);
            let launch = self.m.launch_of.get(&op).map(|&l| self.at(self.m.ev(l).ts));
            let mut since = prev_end;
            if prev_end.is_none() {
                if let Some(l) = launch {
                    out.push(
                        l.min(start),
                        class::STREAM_INIT,
                        Event::State { who, state: idle },
                    );
                    since = Some(l.min(start));
                }
            }
            let mut ready = prev_end.unwrap_or(0);
            for &src in self.m.gpu_waits.get(&op).into_iter().flatten() {
                let e = self.gpu_end(src);
                if since.is_some_and(|p| e > p) && e <= start {
                    // The stream was idle waiting for that event: its idle
                    // time until then is not its own (a what-if that makes
                    // the event earlier starts the op earlier).
                    let id = link(2, self.index, src as u64);
                    out.push(
                        e,
                        class::STREAM_WAIT,
                        Event::Recv {
                            who,
                            id,
                            state: idle,
                            waited: true,
                        },
                    );
                    ready = ready.max(e);
                }
            }
            // The launch binds only when the stream was ready before it
            // (HTA's launch delay); otherwise the op waited for the stream.
            let launch = launch.filter(|&l| l >= ready);
            let state = out.sym(self.m.name(op));
            self.emit_start(out, who, op, start, launch, state);
            out.push(end, class::OP_END, Event::State { who, state: idle });
            if awaited.contains(&op) {
                let id = link(2, self.index, op as u64);
                out.push(end, class::END_SEND, Event::Send { who, id });
            }
            prev_end = Some(end);
        }
    }

    /// An op's start: received from its launch. A collective's kernel on a
    /// rank that waits for a later one starts in `<collective> wait`, left
    /// when the last rank arrives (the last rank sends to each of them).
    fn emit_start(
        &self,
        out: &mut Emitter,
        who: Who,
        op: usize,
        start: u64,
        launch: Option<u64>,
        state: Sym,
    ) {
        let role = self.roles.get(&op);
        let id_for =
            |r: &Role, member: usize| LinkId::Num((3 << 56) | (r.id << 16) | member as u64);
        if let Some(r) = role.filter(|r| !r.straggler) {
            let wait_name = format!("{} wait", out.strings.resolve(r.name));
            let wait = Event::Wait {
                who,
                state: out.sym(&wait_name),
                on: None,
                on_sys: None,
                on_state: None,
            };
            out.push(start, class::OP_START, wait);
            let id = id_for(r, self.index);
            out.push(
                r.release.max(start),
                class::COLLECTIVE,
                Event::Recv {
                    who,
                    id,
                    state,
                    waited: false,
                },
            );
            return;
        }
        match launch {
            // The idle stream waited for this launch: the gap is the launch
            // delay on the link, not time of the stream's own.
            Some(_) => {
                let id = link(1, self.index, op as u64);
                out.push(
                    start,
                    class::OP_START,
                    Event::Recv {
                        who,
                        id,
                        state,
                        waited: true,
                    },
                );
            }
            None => out.push(start, class::OP_START, Event::State { who, state }),
        }
        for &member in role.map_or(&[][..], |r| &r.waiting) {
            let id = id_for(role.expect("role"), member);
            out.push(start, class::OP_START, Event::Send { who, id });
        }
    }
}

/// A thread's innermost op over time: (time, op or none), one entry per
/// instant. Children that outlast their parent are cut at its end.
fn transitions(m: &RankModel, ops: &[usize]) -> Vec<(u64, Option<usize>)> {
    let mut out: Vec<(u64, Option<usize>)> = Vec::new();
    let mut stack: Vec<(u64, usize)> = Vec::new();
    let put = |t: u64, op: Option<usize>, out: &mut Vec<(u64, Option<usize>)>| {
        if out.last().is_some_and(|l| l.0 == t) {
            out.pop();
        }
        out.push((t, op));
    };
    for &i in ops {
        let e = m.ev(i);
        while let Some(&(end, _)) = stack.last() {
            if end > e.ts {
                break;
            }
            stack.pop();
            put(end, stack.last().map(|x| x.1), &mut out);
        }
        let end = stack.last().map_or(e.end(), |p| p.0.min(e.end()));
        stack.push((end, i));
        put(e.ts, Some(i), &mut out);
    }
    while let Some((end, _)) = stack.pop() {
        put(end, stack.last().map(|x| x.1), &mut out);
    }
    out
}

/// Effective (start, end) of every GPU op: an op starts no earlier than
/// the previous op on its stream ends (timestamps that overlap by rounding).
pub fn gpu_times(m: &RankModel) -> HashMap<usize, (u64, u64)> {
    let mut times = HashMap::new();
    for ops in m.streams.values() {
        let mut prev = 0u64;
        for &op in ops {
            let e = m.ev(op);
            let start = e.ts.max(prev);
            let end = e.end().max(start);
            times.insert(op, (start, end));
            prev = end;
        }
    }
    times
}
