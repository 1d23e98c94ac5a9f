//! The event model (docs/event-model.md): records in time order, each naming a state
//! machine (directly, or through a thread's SM stack or a CPU's current
//! thread) and what it does.

use crate::strings::Sym;

/// Who a record is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Who {
    /// A state machine named directly (`sm`).
    Sm(Sym),
    /// The SM on top of this thread's SM stack (`thread`).
    Thread(Sym),
    /// The SM on top of the stack of the thread running on this CPU (`cpu`).
    Cpu(Sym),
}

/// The id of a causal link between a `send` and a `recv`: a number or a string.
/// A string id carries its text's symbol (often transient, see
/// [`crate::Interner::transient_link`]) and the key it is matched by, a hash
/// of the text ([`crate::strings::link_key`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LinkId {
    Num(u64),
    Str { sym: Sym, key: u64 },
}

/// What a record does. Field meanings follow docs/event-model.md.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    /// Transition into `state`.
    State { who: Who, state: Sym },
    /// Transition into a waiting `state`, waiting until SM `on` (in system
    /// `on_sys`, default the record's own) enters `on_state` (any state when
    /// `None`). With `on == None` only a `recv` ends the wait.
    Wait {
        who: Who,
        state: Sym,
        on: Option<Sym>,
        on_sys: Option<Sym>,
        on_state: Option<Sym>,
    },
    /// A point node inside the current state; the state goes on.
    Send { who: Who, id: LinkId },
    /// Transition into `state` that depends on the `send` with the same id.
    /// With `waited` the state it leaves was waiting for this link: its time
    /// is not charged (the intra-SM edge weighs nothing).
    Recv {
        who: Who,
        id: LinkId,
        state: Sym,
        waited: bool,
    },
    /// A point node inside the current state, like a `send` without a link:
    /// the piece of the state since the SM's previous node was spent waiting
    /// for what SM `on` held while it was in `on_state` (a runnable thread
    /// waiting for the CPU `on` ran on). That piece is charged to (`on`,
    /// `on_state`), scaled by its what-ifs, and blamed on `on`; the state
    /// goes on. `ended`: `on`'s run ended (it blocked or exited) while
    /// the waiting SM still needed what `on` held, so the piece is the
    /// holder's whole run, which the waiter's own work does not shorten
    /// (docs/path-rules.md, "What-ifs that spread").
    Held {
        who: Who,
        on: Sym,
        on_state: Sym,
        ended: bool,
    },
    /// The SM's life ends.
    End { who: Who },
    /// Implicit software state: enter state `func`.
    Call { who: Who, func: Sym },
    /// Return from `func` to the caller's state.
    Ret { who: Who, func: Sym },
    /// Push SM `sm` on `thread`'s SM stack.
    Push { thread: Sym, sm: Sym },
    /// Pop SM `sm` (which must be on top) from `thread`'s SM stack.
    Pop { thread: Sym, sm: Sym },
    /// `thread` now runs on `cpu`.
    Switch { cpu: Sym, thread: Sym },
}

impl Event {
    /// The `ev` name used by the JSONL format.
    pub fn name(&self) -> &'static str {
        match self {
            Event::State { .. } => "state",
            Event::Wait { .. } => "wait",
            Event::Send { .. } => "send",
            Event::Recv { .. } => "recv",
            Event::Held { .. } => "held",
            Event::End { .. } => "end",
            Event::Call { .. } => "call",
            Event::Ret { .. } => "ret",
            Event::Push { .. } => "push",
            Event::Pop { .. } => "pop",
            Event::Switch { .. } => "switch",
        }
    }

    /// The same event with every symbol passed through `f` (to move it to
    /// another string table).
    pub fn map_syms(&self, mut f: impl FnMut(Sym) -> Sym) -> Event {
        let mut p = self.parts();
        p.who = p.who.map(|w| match w {
            Who::Sm(s) => Who::Sm(f(s)),
            Who::Thread(s) => Who::Thread(f(s)),
            Who::Cpu(s) => Who::Cpu(f(s)),
        });
        p.syms = p.syms.map(|s| s.map(&mut f));
        p.id = p.id.map(|id| match id {
            LinkId::Num(n) => LinkId::Num(n),
            LinkId::Str { sym, key } => LinkId::Str { sym: f(sym), key },
        });
        Event::from_parts(p).expect("the parts of an event")
    }

    /// All `ev` names, for error messages.
    pub const NAMES: &'static [&'static str] = &[
        "state", "wait", "send", "recv", "held", "end", "call", "ret", "push", "pop", "switch",
    ];
}

/// One trace record: a time in nanoseconds, a system and an event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Record {
    pub t: u64,
    /// The system (`sys`); `Sym::LOCAL` by default.
    pub sys: Sym,
    pub ev: Event,
}

/// Where a record came from, for diagnostics: a line of a text file or the
/// index of a record in a binary file. Eight bytes (the kind in the top
/// two bits), so that a record and its place fill one cache line on their
/// way from the reader's thread to the engine's.
#[derive(Clone, Copy, PartialEq, Eq, Default)]
pub struct Pos(u64);

/// What a [`Pos`] says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum At {
    None,
    Line(u64),
    Record(u64),
}

const POS_KIND: u32 = 62;
const POS_N: u64 = (1 << POS_KIND) - 1;

impl Pos {
    /// No place.
    pub const NONE: Pos = Pos(0);

    /// Line `n` of a text file (numbers past 2⁶² − 1 keep their low bits).
    pub const fn line(n: u64) -> Pos {
        Pos(1 << POS_KIND | (n & POS_N))
    }

    /// Record `n` of a binary file.
    pub const fn record(n: u64) -> Pos {
        Pos(2 << POS_KIND | (n & POS_N))
    }

    pub const fn at(self) -> At {
        let n = self.0 & POS_N;
        match self.0 >> POS_KIND {
            1 => At::Line(n),
            2 => At::Record(n),
            _ => At::None,
        }
    }
}

impl std::fmt::Debug for Pos {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.at().fmt(f)
    }
}

impl std::fmt::Display for Pos {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.at() {
            At::None => Ok(()),
            At::Line(n) => write!(f, "line {n}"),
            At::Record(n) => write!(f, "record {n}"),
        }
    }
}
