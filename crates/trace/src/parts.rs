//! An event's fields in one fixed layout: for the code that encodes events
//! (the `.cpt` writer, the importers' external sort) or rewrites their
//! symbols, so each of them need not take every kind of event apart again.

use crate::event::{Event, LinkId, Who};
use crate::strings::Sym;

/// The kinds of [`Parts`] (the `.cpt` format's record kinds).
pub mod kind {
    pub const STATE: u8 = 0;
    pub const WAIT: u8 = 1;
    pub const SEND: u8 = 2;
    pub const RECV: u8 = 3;
    pub const END: u8 = 4;
    pub const CALL: u8 = 5;
    pub const RET: u8 = 6;
    pub const PUSH: u8 = 7;
    pub const POP: u8 = 8;
    pub const SWITCH: u8 = 9;
    pub const HELD: u8 = 14;
}

/// An event taken apart: its kind, its subject (none for push, pop and
/// switch), up to four symbols, its link id and a `recv`'s `waited` (a
/// `held`'s `ended`).
///
/// The symbols by kind: state `[state]`; wait `[state, on, on_state,
/// on_sys]`; recv `[state]`; held `[on, on_state]`; call and ret `[func]`;
/// push and pop `[thread, sm]`; switch `[cpu, thread]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Parts {
    pub kind: u8,
    pub who: Option<Who>,
    pub syms: [Option<Sym>; 4],
    pub id: Option<LinkId>,
    pub waited: bool,
}

impl Parts {
    fn new(kind: u8, who: Option<Who>, syms: [Option<Sym>; 4]) -> Self {
        Parts {
            kind,
            who,
            syms,
            id: None,
            waited: false,
        }
    }
}

impl Event {
    /// The event taken apart (see [`Parts`]).
    pub fn parts(&self) -> Parts {
        use kind::*;
        let one = |s: Sym| [Some(s), None, None, None];
        let two = |a: Sym, b: Sym| [Some(a), Some(b), None, None];
        match *self {
            Event::State { who, state } => Parts::new(STATE, Some(who), one(state)),
            Event::Wait {
                who,
                state,
                on,
                on_sys,
                on_state,
            } => Parts::new(WAIT, Some(who), [Some(state), on, on_state, on_sys]),
            Event::Send { who, id } => Parts {
                id: Some(id),
                ..Parts::new(SEND, Some(who), [None; 4])
            },
            Event::Recv {
                who,
                id,
                state,
                waited,
            } => Parts {
                id: Some(id),
                waited,
                ..Parts::new(RECV, Some(who), one(state))
            },
            Event::Held {
                who,
                on,
                on_state,
                ended,
            } => Parts {
                waited: ended,
                ..Parts::new(HELD, Some(who), two(on, on_state))
            },
            Event::End { who } => Parts::new(END, Some(who), [None; 4]),
            Event::Call { who, func } => Parts::new(CALL, Some(who), one(func)),
            Event::Ret { who, func } => Parts::new(RET, Some(who), one(func)),
            Event::Push { thread, sm } => Parts::new(PUSH, None, two(thread, sm)),
            Event::Pop { thread, sm } => Parts::new(POP, None, two(thread, sm)),
            Event::Switch { cpu, thread } => Parts::new(SWITCH, None, two(cpu, thread)),
        }
    }

    /// The event [`Event::parts`] took apart; `None` when a field its kind
    /// needs is missing or the kind is unknown.
    pub fn from_parts(p: Parts) -> Option<Event> {
        use kind::*;
        let [a, b, c, d] = p.syms;
        Some(match p.kind {
            STATE => Event::State {
                who: p.who?,
                state: a?,
            },
            WAIT => Event::Wait {
                who: p.who?,
                state: a?,
                on: b,
                on_state: c,
                on_sys: d,
            },
            SEND => Event::Send {
                who: p.who?,
                id: p.id?,
            },
            RECV => Event::Recv {
                who: p.who?,
                id: p.id?,
                state: a?,
                waited: p.waited,
            },
            HELD => Event::Held {
                who: p.who?,
                on: a?,
                on_state: b?,
                ended: p.waited,
            },
            END => Event::End { who: p.who? },
            CALL => Event::Call {
                who: p.who?,
                func: a?,
            },
            RET => Event::Ret {
                who: p.who?,
                func: a?,
            },
            PUSH => Event::Push { thread: a?, sm: b? },
            POP => Event::Pop { thread: a?, sm: b? },
            SWITCH => Event::Switch {
                cpu: a?,
                thread: b?,
            },
            _ => return None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_of_event_comes_apart_and_back() {
        let (a, b, c, d) = (Sym(1), Sym(2), Sym(3), Sym(4));
        let who = Who::Cpu(a);
        let all = [
            Event::State { who, state: b },
            Event::Wait {
                who,
                state: b,
                on: Some(c),
                on_sys: None,
                on_state: Some(d),
            },
            Event::Send {
                who,
                id: LinkId::Num(5),
            },
            Event::Recv {
                who: Who::Thread(b),
                id: LinkId::Str { sym: d, key: 9 },
                state: c,
                waited: true,
            },
            Event::Held {
                who,
                on: c,
                on_state: d,
                ended: true,
            },
            Event::Held {
                who,
                on: d,
                on_state: c,
                ended: false,
            },
            Event::End { who },
            Event::Call { who, func: c },
            Event::Ret { who, func: c },
            Event::Push { thread: a, sm: b },
            Event::Pop { thread: a, sm: b },
            Event::Switch { cpu: c, thread: a },
        ];
        let mut kinds = std::collections::BTreeSet::new();
        for ev in all {
            let p = ev.parts();
            kinds.insert(p.kind);
            assert_eq!(Event::from_parts(p), Some(ev));
            assert_eq!(
                ev.map_syms(|s| Sym(s.0 + 10)).map_syms(|s| Sym(s.0 - 10)),
                ev
            );
        }
        assert_eq!(kinds.len(), Event::NAMES.len());
        let mut missing = Event::State { who, state: b }.parts();
        missing.syms[0] = None;
        assert_eq!(Event::from_parts(missing), None);
    }
}
