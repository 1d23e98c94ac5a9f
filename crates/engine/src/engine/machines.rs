//! The engine's bookkeeping of state machines: per SM its current state and
//! latest nodes, per `(SM, state)` its counters and latest transition, the
//! SM stack of every thread and the thread on every CPU, so that a record
//! about a thread or a CPU reaches the SM on top of the stack.

use super::diagnose;
use super::{Engine, NodeRef, WaitOn, NONE32};
use critpath_trace::{DiagnosticKind, Interner, Pos, Sym, Who};
use rustc_hash::FxHashMap;

/// One state machine as the rules see it.
///
/// Laid out by use: the first cache line holds what every record of the
/// SM reads (its state, since when, its latest node), the second what a
/// transition reads or writes beside it (the wait, the cgraph nodes, the
/// latest transition), the third the counts it adds to; the rest is read
/// seldom. Left to the compiler, the fields a record touches spread over
/// four or five lines.
#[repr(C, align(64))]
pub(super) struct Sm {
    /// Latest node (transition or send) in the current life.
    pub last: Option<NodeRef>,
    /// Start of the current piece of the current state (moved by sends).
    pub tp: u64,
    /// When the current state was entered.
    pub entered: u64,
    /// Current state (NONE32 when not alive or no state yet).
    pub cur: u32,
    pub cur_key: u32,
    /// Latest transition (any state, or end) ever.
    pub last_trans: Option<NodeRef>,
    pub wait: WaitOn,
    pub cnode: u32,
    /// cgraph "origin" node: the SM before its life begins.
    pub origin: u32,
    pub nodes: u64,
    pub last_t: u64,
    /// The latest end of a `held` piece charged to the current visit
    /// (rule 6; 0: none): if the visit is still open at the end, its time
    /// up to there counts in its total.
    pub held_until: u64,
    /// One-entry memo of `Engine::find_key`: a state of this SM and its key
    /// (NONE32, NONE32 before any).
    pub key_memo: (u32, u32),
    pub first_t: u64,
    pub sys: Sym,
    pub name: Sym,
    /// Is this the start SM whose first node is a path start?
    pub is_from: bool,
    pub calls: Vec<(Sym, u32)>,
}

const _: () = assert!(std::mem::offset_of!(Sm, cur_key) + 4 <= 64);
const _: () = assert!(std::mem::offset_of!(Sm, wait) >= 64);
const _: () = assert!(std::mem::offset_of!(Sm, origin) + 4 <= 128);
const _: () = assert!(std::mem::offset_of!(Sm, key_memo) + 8 <= 192);

impl Sm {
    /// Counts a node of this SM at `t`.
    #[inline]
    pub fn count_node(&mut self, t: u64) {
        if self.nodes == 0 {
            self.first_t = t;
        }
        self.nodes += 1;
        self.last_t = t;
    }
}

/// One `(SM, state)`: the state key of the tables.
///
/// Two cache lines: the first holds what every transition into or out of
/// the state updates (the timed visits and the longest, the latest
/// transition), the second what a few records or the tables read (the
/// visits are counted in the cgraph nodes that enter the state, and added
/// here at the end).
#[repr(C, align(64))]
pub(super) struct Key {
    /// Completed visits that took time.
    pub timed_visits: u64,
    pub max_visit: u64,
    pub max_visit_at: u64,
    pub last_trans: Option<NodeRef>,
    pub visits: u64,
    pub sm: u32,
    pub state: Sym,
    pub total: u64,
    pub critical: u64,
    /// Entered by a `wait`, or ended by a waited `recv`: a waiting state.
    pub waited: bool,
    /// What-if speedup of this state (1.0 = as recorded): its own, else
    /// that of the state it scales with ([`critpath_trace::ScalesWith`]).
    pub factor: f64,
}

const _: () = assert!(std::mem::size_of::<Key>() == 128);
const _: () =
    assert!(std::mem::offset_of!(Key, last_trans) + std::mem::size_of::<Option<NodeRef>>() <= 64);

/// Every SM and state key seen, with the stacks and CPUs that lead to them.
#[derive(Default)]
pub(super) struct Machines {
    pub sms: Vec<Sm>,
    pub sm_index: FxHashMap<(Sym, Sym), u32>,
    /// Fast path of `sm_index`: by name, the first system's SM of that name.
    pub sm_by_name: Vec<(Sym, u32)>,
    pub keys: Vec<Key>,
    pub key_index: FxHashMap<(u32, Sym), u32>,
    pub stacks: FxHashMap<(Sym, Sym), Vec<u32>>,
    pub cpus: FxHashMap<(Sym, Sym), Sym>,
}

impl Machines {
    /// The fast path to SM `name` of system `sys`: found when it is the
    /// first system's SM of that name.
    #[inline(always)]
    fn by_name(&self, sys: Sym, name: Sym) -> Option<u32> {
        match self.sm_by_name.get(name.index()) {
            Some(&(s, i)) if s == sys && i != NONE32 => Some(i),
            _ => None,
        }
    }
}

impl Engine<'_> {
    /// The index of SM `name` of system `sys`, created on first sight.
    #[inline]
    pub(super) fn sm_of(&mut self, sys: Sym, name: Sym, strings: &Interner) -> u32 {
        match self.find_sm(sys, name) {
            Some(i) => i,
            None => self.new_sm(sys, name, strings),
        }
    }

    /// The index of SM `name` of system `sys`, if seen.
    #[inline]
    pub(super) fn find_sm(&self, sys: Sym, name: Sym) -> Option<u32> {
        self.m
            .by_name(sys, name)
            .or_else(|| self.m.sm_index.get(&(sys, name)).copied())
    }

    /// The key of SM `sm`'s state `state`, if seen. A key, once made, never
    /// changes, so the SM remembers the last one found.
    #[inline]
    pub(super) fn find_key(&mut self, sm: u32, state: Sym) -> Option<u32> {
        let memo = self.m.sms[sm as usize].key_memo;
        if memo.0 == state.0 {
            return Some(memo.1);
        }
        let k = self.m.key_index.get(&(sm, state)).copied()?;
        self.m.sms[sm as usize].key_memo = (state.0, k);
        Some(k)
    }

    #[cold]
    fn new_sm(&mut self, sys: Sym, name: Sym, strings: &Interner) -> u32 {
        let idx = self.m.sms.len() as u32;
        let origin = self.g.origin(idx);
        let from = self.opts.from.as_deref();
        let how = from
            .and_then(|f| super::names::sm_named(f, strings.resolve(sys), strings.resolve(name)));
        if let Some(how) = how {
            self.from_matched.add(idx, how);
        }
        let is_from = how.is_some();
        self.m.sms.push(Sm {
            sys,
            name,
            origin,
            cur: NONE32,
            cur_key: NONE32,
            wait: WaitOn::No,
            tp: 0,
            entered: 0,
            held_until: 0,
            last: None,
            last_trans: None,
            cnode: origin,
            calls: Vec::new(),
            first_t: 0,
            last_t: 0,
            nodes: 0,
            is_from,
            key_memo: (NONE32, NONE32),
        });
        let m = &mut self.m;
        m.sm_index.insert((sys, name), idx);
        if m.sm_by_name.len() <= name.index() {
            m.sm_by_name.resize(name.index() + 1, (Sym(0), NONE32));
        }
        if m.sm_by_name[name.index()].1 == NONE32 {
            m.sm_by_name[name.index()] = (sys, idx);
        }
        idx
    }

    /// The error of a trace past [`critpath_trace::Limits::max_states`]
    /// (more distinct states and SMs than it allows), `pos` being the
    /// latest record read; checked by the pump after every batch, so the
    /// tables pass the limit by a batch at most.
    pub fn over_limit(&self, pos: Pos) -> Option<crate::error::Error> {
        let (states, sms) = (self.m.keys.len() as u64, self.m.sms.len() as u64);
        let max = self.opts.limits.max_states;
        (states + sms > max).then(|| crate::error::Error::TooManyStates {
            at: match pos {
                Pos::NONE => String::new(),
                p => format!("by {p}: "),
            },
            states,
            sms,
            max,
        })
    }

    /// The key of SM `sm`'s state `state`, created on first sight.
    pub(super) fn key_of(&mut self, sm: u32, state: Sym, strings: &Interner) -> u32 {
        if let Some(k) = self.find_key(sm, state) {
            return k;
        }
        let k = self.m.keys.len() as u32;
        let factor = self.factors(sm, state, strings);
        self.m.keys.push(Key {
            sm,
            state,
            visits: 0,
            total: 0,
            critical: 0,
            max_visit: 0,
            max_visit_at: 0,
            timed_visits: 0,
            waited: false,
            last_trans: None,
            factor,
        });
        self.m.key_index.insert((sm, state), k);
        k
    }

    /// Resolves who a record is about to an SM index, or reports why not.
    #[inline(always)]
    pub(super) fn resolve(
        &mut self,
        sys: Sym,
        who: Who,
        t: u64,
        pos: Pos,
        strings: &Interner,
    ) -> Option<u32> {
        if let Who::Sm(name) = who {
            if let Some(i) = self.m.by_name(sys, name) {
                return Some(i);
            }
        }
        self.resolve_slow(sys, who, t, pos, strings)
    }

    /// [`Engine::resolve`] past the fast path: an SM of another system or
    /// not seen yet, a thread or a CPU.
    #[inline(never)]
    fn resolve_slow(
        &mut self,
        sys: Sym,
        who: Who,
        t: u64,
        pos: Pos,
        strings: &Interner,
    ) -> Option<u32> {
        let thread = match who {
            Who::Sm(name) => return Some(self.sm_of(sys, name, strings)),
            Who::Thread(th) => th,
            Who::Cpu(cpu) => match self.m.cpus.get(&(sys, cpu)) {
                Some(&th) => th,
                None => {
                    if self.diags.want(DiagnosticKind::StackMismatch) {
                        self.diags
                            .push(move |s| diagnose::cpu_unswitched(s, cpu, t, pos));
                    }
                    return None;
                }
            },
        };
        match self.m.stacks.get(&(sys, thread)).and_then(|s| s.last()) {
            Some(&sm) => Some(sm),
            None => {
                if self.diags.want(DiagnosticKind::StackMismatch) {
                    self.diags
                        .push(move |s| diagnose::empty_stack(s, thread, t, pos));
                }
                None
            }
        }
    }

    /// Thread `thread` enters SM `sm`: it goes on top of the thread's stack.
    pub(super) fn push(&mut self, sys: Sym, thread: Sym, sm: Sym, strings: &Interner) {
        let idx = self.sm_of(sys, sm, strings);
        self.m.stacks.entry((sys, thread)).or_default().push(idx);
    }

    /// Thread `thread` leaves SM `name`: pops it, or the SMs above it too
    /// when it is not on top (a stack mismatch).
    pub(super) fn pop(&mut self, sys: Sym, thread: Sym, name: Sym, t: u64, pos: Pos) {
        let target = self.m.sm_index.get(&(sys, name)).copied();
        let stack = self.m.stacks.entry((sys, thread)).or_default();
        let top = stack.last().copied();
        if top.is_some() && top == target {
            stack.pop();
            return;
        }
        let found = target.and_then(|tg| stack.iter().rposition(|&x| x == tg));
        if let Some(i) = found {
            stack.truncate(i);
        }
        if self.diags.want(DiagnosticKind::StackMismatch) {
            let top = top.map(|i| self.m.sms[i as usize].name);
            let mismatch = diagnose::PopMismatch {
                thread,
                name,
                top,
                popped: found.is_some(),
            };
            self.diags.push(move |s| mismatch.diagnostic(s, t, pos));
        }
    }
}
