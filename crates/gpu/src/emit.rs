//! The records' vocabulary and order: each CPU thread is an SM whose state
//! is its innermost op (time between top-level ops is `between ops`; a
//! blocking synchronization is an open wait ended by the GPU ops it waited
//! for), each CUDA stream an SM whose state is the running op or `idle`. A
//! launch is a `send` at the runtime call's start, received when the op
//! starts; an op that something waits for sends at its end, once per
//! waiter. `pass` makes the records.
//!
//! Records are ordered by time, then by class, so that at one instant
//! every `send` comes before the `recv` that depends on it; then by the
//! SM's group (threads, then streams, rank by rank), then as made.

use critpath_readers::recsort::{RecordSort, SortedRecords};
use critpath_trace::{Event, Interner, LinkId, ReadError, Sym, Who};
use std::collections::{BTreeMap, HashMap};

/// The state of a CPU thread between top-level ops.
pub const BETWEEN_OPS: &str = "between ops";
/// The state of a CUDA stream with nothing running.
pub const IDLE: &str = "idle";

/// Ordering classes of records at one instant.
pub mod class {
    pub const OP_END: u8 = 0;
    pub const END_SEND: u8 = 1;
    pub const STREAM_WAIT: u8 = 2;
    pub const CPU: u8 = 3;
    pub const STREAM_INIT: u8 = 4;
    pub const OP_START: u8 = 5;
    /// The last rank of a collective sends its arrival to the others,
    pub const COLLECTIVE: u8 = 6;
    /// which receive it and answer with theirs;
    pub const COLL_JOIN: u8 = 7;
    /// it receives every answer and releases them,
    pub const COLL_GATHER: u8 = 8;
    /// which receive the release.
    pub const COLL_RELEASE: u8 = 9;
}

/// Link-id spaces: kind in bits 56.., rank in bits 40..: 1 a launch (by
/// GPU op), 2 a wait on a GPU op's end (by waiter), 3.. a collective's
/// joining (`pass::colls`).
pub fn link(kind: u64, rank: usize, n: u64) -> LinkId {
    LinkId::Num((kind << 56) | ((rank as u64) << 40) | n)
}

/// The state a rank waits in for a collective's last rank to arrive.
pub fn coll_wait(collective: &str) -> String {
    format!("{collective} wait")
}

/// How a collective's kernel takes part in its instance across ranks.
#[derive(Clone, Debug)]
pub struct Role {
    /// The instance's number (its links' ids).
    pub id: u64,
    /// This rank arrived last.
    pub straggler: bool,
    /// When the last rank arrived, on the aligned clock.
    pub release: u64,
    /// The collective's name (its wait state is `<name> wait`).
    pub name: Sym,
    /// On the straggler: the inputs (ranks) that wait for it and join the
    /// collective (still in it when it arrives): each one's arrival is a
    /// dependence of the collective's start on every rank.
    pub waiting: Vec<usize>,
    /// On a rank before the last: it joins the collective (is in it when
    /// the last rank arrives).
    pub joins: bool,
}

/// One rank's side of a collective's join (see `pass::colls`): its SM and
/// record group, the state it waits in and the one it goes on in.
#[derive(Clone, Copy, Debug)]
pub struct JoinSide {
    pub who: Who,
    pub group: u32,
    pub wait: Sym,
    pub state: Sym,
}

/// The sides of the collectives' joins the ranks' passes met, made into
/// records once every pass is in ([`Emitter::finish`]).
#[derive(Default)]
pub struct JoinBook {
    /// By instance: when the last rank arrived, its side, and the ranks
    /// (inputs) that may join it.
    last: BTreeMap<u64, (u64, JoinSide, Vec<usize>)>,
    /// By (instance, input): a waiting rank's side.
    waiting: HashMap<(u64, usize), JoinSide>,
}

impl JoinBook {
    /// The last rank's side of collective `r` (the first noted counts).
    pub fn last(&mut self, r: &Role, side: JoinSide) {
        let waiting = r.waiting.clone();
        self.last.entry(r.id).or_insert((r.release, side, waiting));
    }

    /// Input `member`'s side of collective `r`, a rank waiting in it.
    pub fn waiting(&mut self, r: &Role, member: usize, side: JoinSide) {
        self.waiting.entry((r.id, member)).or_insert(side);
    }

    /// The records of every join whose two sides were met, at the last
    /// rank's arrival, in the order the classes give (see `class`).
    fn emit(self, records: &mut RecordSort) {
        let link =
            |id: u64, step: u64, m: usize| LinkId::Num(((2 + step) << 56) | (id << 16) | m as u64);
        let mut push = |t, class, group, ev| {
            records.set_group(group);
            records.push(t, class, ev);
        };
        for (id, (t, last, waiting)) in self.last {
            let joined = waiting
                .iter()
                .filter_map(|&m| Some((m, *self.waiting.get(&(id, m))?)));
            let joined: Vec<(usize, JoinSide)> = joined.collect();
            let recv = |who, id, state| Event::Recv {
                who,
                id,
                state,
                waited: true,
            };
            let send = |who, id| Event::Send { who, id };
            for &(m, w) in &joined {
                push(
                    t,
                    class::COLLECTIVE,
                    last.group,
                    send(last.who, link(id, 1, m)),
                );
                push(
                    t,
                    class::COLL_JOIN,
                    w.group,
                    recv(w.who, link(id, 1, m), w.wait),
                );
                push(t, class::COLL_JOIN, w.group, send(w.who, link(id, 2, m)));
                push(
                    t,
                    class::COLL_RELEASE,
                    w.group,
                    recv(w.who, link(id, 3, m), w.state),
                );
            }
            for &(m, _) in &joined {
                push(
                    t,
                    class::COLL_GATHER,
                    last.group,
                    recv(last.who, link(id, 2, m), last.state),
                );
            }
            for &(m, _) in &joined {
                push(
                    t,
                    class::COLL_GATHER,
                    last.group,
                    send(last.who, link(id, 3, m)),
                );
            }
        }
    }
}

/// Records being gathered, with their string table. Each record keeps its
/// ordering class beside it; [`Emitter::finish`] hands them out in order,
/// past a budget from an external sort on disk, so a long trace's records
/// never all sit in memory.
#[derive(Default)]
pub struct Emitter {
    records: RecordSort,
    pub strings: Interner,
    /// Collectives' joins, made into records at the end.
    pub joins: JoinBook,
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

    /// A record of an SM of `group` (see the module's order).
    pub fn push(&mut self, t: u64, class: u8, group: u32, ev: Event) {
        self.records.set_group(group);
        self.records.push(t, class, ev);
    }

    pub fn sym(&mut self, s: &str) -> Sym {
        self.strings.intern(s)
    }

    /// The records, in time order, then class, then the order made; an
    /// error is one of the sort on disk, said of the input `name`.
    pub fn finish(mut self, name: &str) -> Result<Ordered, ReadError> {
        std::mem::take(&mut self.joins).emit(&mut self.records);
        Ok(Ordered {
            records: self.records.finish(name)?,
            strings: self.strings,
        })
    }
}
