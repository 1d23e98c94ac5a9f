//! The streaming critical-path engine (SPEC §2).
//!
//! Records arrive in time order. Each transition or `send` is a node of the
//! dependence graph (bgraph); the engine computes its longest-path length `L`
//! from the candidates the rules allow (the SM's previous node, the
//! transition a wait was waiting for, the matching `send`), writes the chosen
//! predecessor to the [`NodeLog`], and keeps only what later nodes can still
//! need: per SM its latest node, per `(SM, state)` its latest transition, and
//! the pending sends. At the end it walks the node log back from the
//! destination node and attributes each path edge to the state it spent time
//! in. The combined graph (cgraph) is accumulated on the way.

use crate::nodelog::{Entry, NodeLog, NO_PRED};
use crate::results::{
    Analysis, CEdgeRow, CGraph, CNodeRow, CriticalPath, Endpoint, PathSegment, StateRow, Stats,
    WindowRow, WindowState,
};
use crate::slack::{GraphLog, InEdge};
use critpath_trace::Diagnostic;
use critpath_trace::{Event, LinkId, Pos, Record, Who};
use critpath_trace::{Interner, Sym};
use rustc_hash::{FxHashMap, FxHashSet};
use std::io;

/// `L` of a node that no path from `--from` reaches.
const UNREACHED: i64 = i64::MIN;
/// Sentinels for the `from`/`to` of cgraph nodes.
const M_START: u32 = u32::MAX;
const M_END: u32 = u32::MAX - 1;
const M_SEND: u32 = u32::MAX - 2;
const M_ORIGIN: u32 = u32::MAX - 3;
const NONE32: u32 = u32::MAX;
/// Detailed diagnostics kept per kind; the rest are counted.
const DIAG_DETAIL: usize = 10;

/// What the user asked for.
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// `--from SM`: keep only paths starting at this SM's first node.
    pub from: Option<String>,
    /// `--to SM[:STATE]`: end at this SM's last node (or last transition into STATE).
    pub to: Option<String>,
    /// Keep the critical path's segments (for timelines and exports).
    pub keep_path: bool,
    /// A state visit longer than this share of its SM's observed life, with no
    /// wait, is reported as `long-state`.
    pub long_state_share: Option<f64>,
    /// Compute every state's slack (needs a graph log on disk).
    pub slack: bool,
    /// Break the critical path down by time windows of this many ns.
    pub window_ns: Option<u64>,
    /// What-if: make these states FACTOR times faster (their intra-SM edges
    /// weigh `time / FACTOR`), and compute the path that results.
    pub speedups: Vec<Speedup>,
}

/// `SM:STATE=FACTOR` of `critpath whatif`: `target` is `SM:STATE` (or
/// `SYS/SM:STATE`).
#[derive(Clone, Debug)]
pub struct Speedup {
    pub target: String,
    pub factor: f64,
}

impl Speedup {
    /// Parses `SM:STATE=FACTOR`.
    pub fn parse(spec: &str) -> Result<Speedup, String> {
        let (target, factor) = spec
            .rsplit_once('=')
            .ok_or_else(|| format!("--speedup {spec}: expected SM:STATE=FACTOR"))?;
        if !target.contains(':') {
            return Err(format!(
                "--speedup {spec}: expected SM:STATE=FACTOR (no ':' between SM and STATE)"
            ));
        }
        let factor: f64 = factor
            .trim()
            .parse()
            .map_err(|_| format!("--speedup {spec}: FACTOR must be a number, such as 2 or 1.5"))?;
        if !(factor.is_finite() && factor > 0.0) {
            return Err(format!("--speedup {spec}: FACTOR must be a positive number (2 = twice as fast; use a huge factor such as 1e9 to remove a state)"));
        }
        Ok(Speedup {
            target: target.to_string(),
            factor,
        })
    }
}

/// A node's handle kept in memory: id, `L`, time and cgraph node.
#[derive(Clone, Copy, Debug)]
struct NodeRef {
    id: u64,
    l: i64,
    t: u64,
    cnode: u32,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum WaitOn {
    /// Not a waiting state.
    No,
    /// Only a `recv` ends it.
    Open,
    /// Waits for SM `(sys, sm)` to enter `state` (any when NONE32).
    On { sys: Sym, sm: Sym, state: u32 },
}

struct Sm {
    sys: Sym,
    name: Sym,
    /// cgraph "origin" node: the SM before its life begins.
    origin: u32,
    /// Current state (NONE32 when not alive or no state yet).
    cur: u32,
    cur_key: u32,
    wait: WaitOn,
    /// Start of the current piece of the current state (moved by sends).
    tp: u64,
    /// When the current state was entered.
    entered: u64,
    /// Latest node (transition or send) in the current life.
    last: Option<NodeRef>,
    /// Latest transition (any state, or end) ever.
    last_trans: Option<NodeRef>,
    cnode: u32,
    calls: Vec<(Sym, u32)>,
    first_t: u64,
    last_t: u64,
    nodes: u64,
    /// Is this the `--from` SM whose first node is a path start?
    is_from: bool,
}

struct Key {
    sm: u32,
    state: Sym,
    visits: u64,
    total: u64,
    critical: u64,
    max_visit: u64,
    max_visit_at: u64,
    /// Completed visits that took time.
    timed_visits: u64,
    waited: bool,
    last_trans: Option<NodeRef>,
    /// What-if speedup of this state (1.0 = as recorded).
    factor: f64,
}

struct CNode {
    /// One-entry memo of `Engine::trans`: the last `to` taken from here and
    /// where it led (cnode, intra cedge).
    memo: (u32, u32, u32),
    sm: u32,
    from: u32,
    to: u32,
    /// State key entered by this transition (NONE32 for end/send/origin).
    to_key: u32,
}

struct CEdge {
    from: u32,
    to: u32,
    key: u32,
    inter: bool,
    visits: u64,
    total: u64,
    critical: u64,
}

#[derive(Default)]
struct DiagSink {
    detail: Vec<Diagnostic>,
    counts: FxHashMap<&'static str, u64>,
}

impl DiagSink {
    fn want(&mut self, kind: &'static str) -> bool {
        let c = self.counts.entry(kind).or_insert(0);
        *c += 1;
        *c as usize <= DIAG_DETAIL
    }
    fn push(&mut self, d: Diagnostic) {
        self.detail.push(d);
    }
}

/// What happened, for views that draw timelines: a state visit that ended,
/// or a dependence between SMs (a send received, a wait resolved). Names are
/// symbols of the source's string table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Visit {
    State {
        sys: Sym,
        sm: Sym,
        state: Sym,
        start: u64,
        end: u64,
    },
    Link {
        from_sys: Sym,
        from_sm: Sym,
        to_sys: Sym,
        to_sm: Sym,
        sent: u64,
        received: u64,
        wait: bool,
    },
}

/// The streaming engine. Feed it records with [`Engine::feed`], then call
/// [`Engine::finish`].
pub struct Engine {
    opts: Options,
    /// Called with every state visit and dependence, when set.
    hook: Option<Box<dyn FnMut(Visit)>>,
    sms: Vec<Sm>,
    sm_index: FxHashMap<(Sym, Sym), u32>,
    /// Fast path of `sm_index`: by name, the first system's SM of that name.
    sm_by_name: Vec<(Sym, u32)>,
    keys: Vec<Key>,
    key_index: FxHashMap<(u32, Sym), u32>,
    cnodes: Vec<CNode>,
    cnode_index: FxHashMap<(u32, u32, u32), u32>,
    /// (from cnode, to state or marker) -> (cnode, intra cedge or NONE32).
    trans: FxHashMap<(u32, u32), (u32, u32)>,
    cedges: Vec<CEdge>,
    inter_index: FxHashMap<(u32, u32), u32>,
    /// Pending sends by numeric id, and by string id.
    pending: FxHashMap<u64, NodeRef>,
    pending_str: FxHashMap<Sym, NodeRef>,
    stacks: FxHashMap<(Sym, Sym), Vec<u32>>,
    cpus: FxHashMap<(Sym, Sym), Sym>,
    sm_links: FxHashSet<(u32, u32)>,
    log: NodeLog,
    /// All in-edges of every node, for slack.
    graph: Option<GraphLog>,
    /// Which `--speedup`s matched a state.
    speedup_used: Vec<bool>,
    next_node: u64,
    records: u64,
    best: Option<(NodeRef, u32)>,
    diags: DiagSink,
    extra: Vec<Diagnostic>,
    io_error: Option<io::Error>,
}

impl Engine {
    pub fn new(opts: Options) -> Self {
        let speedup_used = vec![false; opts.speedups.len()];
        let (graph, io_error) = if opts.slack {
            match GraphLog::new() {
                Ok(g) => (Some(g), None),
                Err(e) => (None, Some(e)),
            }
        } else {
            (None, None)
        };
        Engine {
            opts,
            hook: None,
            sms: Vec::new(),
            sm_index: FxHashMap::default(),
            sm_by_name: Vec::new(),
            keys: Vec::new(),
            key_index: FxHashMap::default(),
            cnodes: Vec::new(),
            cnode_index: FxHashMap::default(),
            trans: FxHashMap::default(),
            cedges: Vec::new(),
            inter_index: FxHashMap::default(),
            pending: FxHashMap::default(),
            pending_str: FxHashMap::default(),
            stacks: FxHashMap::default(),
            cpus: FxHashMap::default(),
            sm_links: FxHashSet::default(),
            log: NodeLog::new(),
            graph,
            speedup_used,
            next_node: 0,
            records: 0,
            best: None,
            diags: DiagSink::default(),
            extra: Vec::new(),
            io_error,
        }
    }

    /// Calls `hook` with every state visit that ends and every dependence.
    pub fn set_hook(&mut self, hook: Box<dyn FnMut(Visit)>) {
        self.hook = Some(hook);
    }

    /// Records processed so far.
    pub fn records(&self) -> u64 {
        self.records
    }

    /// Nodes created so far.
    pub fn nodes(&self) -> u64 {
        self.next_node
    }

    /// Adds a diagnostic that does not come from the engine (a reader's
    /// error, a truncated file...).
    pub fn add_diagnostic(&mut self, d: Diagnostic) {
        self.extra.push(d);
    }

    #[inline]
    fn sm_of(&mut self, sys: Sym, name: Sym, strings: &Interner) -> u32 {
        if let Some(&(s, i)) = self.sm_by_name.get(name.index()) {
            if s == sys && i != NONE32 {
                return i;
            }
        }
        if let Some(&i) = self.sm_index.get(&(sys, name)) {
            return i;
        }
        self.new_sm(sys, name, strings)
    }

    #[cold]
    fn new_sm(&mut self, sys: Sym, name: Sym, strings: &Interner) -> u32 {
        let idx = self.sms.len() as u32;
        let origin = self.cnodes.len() as u32;
        self.cnodes.push(CNode {
            memo: (NONE32, 0, 0),
            sm: idx,
            from: M_ORIGIN,
            to: M_ORIGIN,
            to_key: NONE32,
        });
        let is_from = match &self.opts.from {
            Some(f) => sm_matches(f, strings.resolve(sys), strings.resolve(name)),
            None => false,
        };
        self.sms.push(Sm {
            sys,
            name,
            origin,
            cur: NONE32,
            cur_key: NONE32,
            wait: WaitOn::No,
            tp: 0,
            entered: 0,
            last: None,
            last_trans: None,
            cnode: origin,
            calls: Vec::new(),
            first_t: 0,
            last_t: 0,
            nodes: 0,
            is_from,
        });
        self.sm_index.insert((sys, name), idx);
        if self.sm_by_name.len() <= name.index() {
            self.sm_by_name.resize(name.index() + 1, (Sym(0), NONE32));
        }
        if self.sm_by_name[name.index()].1 == NONE32 {
            self.sm_by_name[name.index()] = (sys, idx);
        }
        idx
    }

    fn key_of(&mut self, sm: u32, state: Sym, strings: &Interner) -> u32 {
        if let Some(&k) = self.key_index.get(&(sm, state)) {
            return k;
        }
        let k = self.keys.len() as u32;
        let mut factor = 1.0;
        if !self.opts.speedups.is_empty() {
            let s = &self.sms[sm as usize];
            let (sys, name, st) = (
                strings.resolve(s.sys),
                strings.resolve(s.name),
                strings.resolve(state),
            );
            for (i, sp) in self.opts.speedups.iter().enumerate() {
                if sp.target == format!("{name}:{st}") || sp.target == format!("{sys}/{name}:{st}")
                {
                    factor = sp.factor;
                    self.speedup_used[i] = true;
                }
            }
        }
        self.keys.push(Key {
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
        self.key_index.insert((sm, state), k);
        k
    }

    fn cnode_of(&mut self, sm: u32, from: u32, to: u32, strings: &Interner) -> u32 {
        if let Some(&c) = self.cnode_index.get(&(sm, from, to)) {
            return c;
        }
        let to_key = if to < M_SEND {
            self.key_of(sm, Sym(to), strings)
        } else {
            NONE32
        };
        let c = self.cnodes.len() as u32;
        self.cnodes.push(CNode {
            memo: (NONE32, 0, 0),
            sm,
            from,
            to,
            to_key,
        });
        self.cnode_index.insert((sm, from, to), c);
        c
    }

    /// The cgraph node reached from `from_cnode` by going to `to` (a state
    /// or marker), and the intra-SM cgraph edge between them (NONE32 from the
    /// origin). `key` is the state the edge spends time in.
    #[inline]
    fn step(
        &mut self,
        sm: u32,
        from_cnode: u32,
        cur: u32,
        cur_key: u32,
        to: u32,
        strings: &Interner,
    ) -> (u32, u32) {
        let memo = self.cnodes[from_cnode as usize].memo;
        if memo.0 == to {
            return (memo.1, memo.2);
        }
        let r = self.step_slow(sm, from_cnode, cur, cur_key, to, strings);
        self.cnodes[from_cnode as usize].memo = (to, r.0, r.1);
        r
    }

    fn step_slow(
        &mut self,
        sm: u32,
        from_cnode: u32,
        cur: u32,
        cur_key: u32,
        to: u32,
        strings: &Interner,
    ) -> (u32, u32) {
        if let Some(&r) = self.trans.get(&(from_cnode, to)) {
            return r;
        }
        let (cnode, edge) = if self.cnodes[from_cnode as usize].from == M_ORIGIN {
            (self.cnode_of(sm, M_START, to, strings), NONE32)
        } else {
            let cn = self.cnode_of(sm, cur, to, strings);
            let e = self.cedges.len() as u32;
            self.cedges.push(CEdge {
                from: from_cnode,
                to: cn,
                key: cur_key,
                inter: false,
                visits: 0,
                total: 0,
                critical: 0,
            });
            (cn, e)
        };
        self.trans.insert((from_cnode, to), (cnode, edge));
        (cnode, edge)
    }

    fn inter_edge(&mut self, from: u32, to: u32, key: u32) -> u32 {
        if let Some(&e) = self.inter_index.get(&(from, to)) {
            return e;
        }
        let e = self.cedges.len() as u32;
        self.cedges.push(CEdge {
            from,
            to,
            key,
            inter: true,
            visits: 0,
            total: 0,
            critical: 0,
        });
        self.inter_index.insert((from, to), e);
        let (a, b) = (self.cnodes[from as usize].sm, self.cnodes[to as usize].sm);
        if a != b {
            self.sm_links.insert((a, b));
        }
        e
    }

    /// Records a node's `L` and all its in-edges for slack.
    fn graph_node(&mut self, l: i64, edges: &[InEdge]) {
        if let Some(g) = self.graph.as_mut() {
            if let Err(err) = g.push(l, edges) {
                self.io_error.get_or_insert(err);
            }
        }
    }

    fn log(&mut self, e: Entry) {
        if let Err(err) = self.log.push(e) {
            if self.io_error.is_none() {
                self.io_error = Some(err);
            }
        }
    }

    /// Resolves who a record is about to an SM index, or reports why not.
    fn resolve(&mut self, sys: Sym, who: Who, t: u64, pos: Pos, strings: &Interner) -> Option<u32> {
        let thread = match who {
            Who::Sm(name) => return Some(self.sm_of(sys, name, strings)),
            Who::Thread(th) => th,
            Who::Cpu(cpu) => match self.cpus.get(&(sys, cpu)) {
                Some(&th) => th,
                None => {
                    if self.diags.want("stack-mismatch") {
                        self.diags.push(Diagnostic::new(
                            "stack-mismatch",
                            format!(
                                "record for CPU {} at t={t} ({pos}) but no thread was switched onto that CPU; record ignored",
                                strings.resolve(cpu)
                            ),
                        ).at(t, pos));
                    }
                    return None;
                }
            },
        };
        match self.stacks.get(&(sys, thread)).and_then(|s| s.last()) {
            Some(&sm) => Some(sm),
            None => {
                if self.diags.want("stack-mismatch") {
                    self.diags.push(
                        Diagnostic::new(
                            "stack-mismatch",
                            format!(
                                "record for thread {} at t={t} ({pos}) but its SM stack is empty (missing push?); record ignored",
                                strings.resolve(thread)
                            ),
                        )
                        .at(t, pos),
                    );
                }
                None
            }
        }
    }

    /// Processes one record.
    pub fn feed(&mut self, rec: &Record, pos: Pos, strings: &Interner) {
        self.records += 1;
        let t = rec.t;
        let sys = rec.sys;
        match rec.ev {
            Event::State { who, state } => {
                if let Some(sm) = self.resolve(sys, who, t, pos, strings) {
                    self.transition(sm, t, state.0, WaitOn::No, None, pos, strings);
                }
            }
            Event::Wait {
                who,
                state,
                on,
                on_sys,
                on_state,
            } => {
                if let Some(sm) = self.resolve(sys, who, t, pos, strings) {
                    let wait = match on {
                        None => WaitOn::Open,
                        Some(on) => WaitOn::On {
                            sys: on_sys.unwrap_or(sys),
                            sm: on,
                            state: on_state.map(|s| s.0).unwrap_or(NONE32),
                        },
                    };
                    self.transition(sm, t, state.0, wait, None, pos, strings);
                }
            }
            Event::Recv { who, id, state } => {
                if let Some(sm) = self.resolve(sys, who, t, pos, strings) {
                    self.transition(sm, t, state.0, WaitOn::No, Some(id), pos, strings);
                }
            }
            Event::End { who } => {
                if let Some(sm) = self.resolve(sys, who, t, pos, strings) {
                    self.transition(sm, t, M_END, WaitOn::No, None, pos, strings);
                }
            }
            Event::Send { who, id } => {
                if let Some(sm) = self.resolve(sys, who, t, pos, strings) {
                    self.send(sm, t, id, strings);
                }
            }
            Event::Call { who, func } => {
                if let Some(sm) = self.resolve(sys, who, t, pos, strings) {
                    let caller = self.sms[sm as usize].cur;
                    self.sms[sm as usize].calls.push((func, caller));
                    self.transition(sm, t, func.0, WaitOn::No, None, pos, strings);
                }
            }
            Event::Ret { who, func } => {
                if let Some(sm) = self.resolve(sys, who, t, pos, strings) {
                    self.ret(sm, t, func, pos, strings);
                }
            }
            Event::Push { thread, sm } => {
                let idx = self.sm_of(sys, sm, strings);
                self.stacks.entry((sys, thread)).or_default().push(idx);
            }
            Event::Pop { thread, sm } => self.pop(sys, thread, sm, t, pos, strings),
            Event::Switch { cpu, thread } => {
                self.cpus.insert((sys, cpu), thread);
            }
        }
    }

    fn ret(&mut self, sm: u32, t: u64, func: Sym, pos: Pos, strings: &Interner) {
        let s = &mut self.sms[sm as usize];
        let found = s.calls.iter().rposition(|&(f, _)| f == func);
        match found {
            Some(i) => {
                let depth = s.calls.len() - 1 - i;
                let (_, caller) = s.calls[i];
                s.calls.truncate(i);
                if depth > 0 && self.diags.want("stack-mismatch") {
                    let s = &self.sms[sm as usize];
                    self.diags.push(
                        Diagnostic::new(
                            "stack-mismatch",
                            format!(
                                "{}: ret from {} at t={t} ({pos}) skips {depth} inner call(s) that never returned",
                                sm_label(strings, s.sys, s.name),
                                strings.resolve(func)
                            ),
                        )
                        .on(strings, s.sys, s.name)
                        .at(t, pos),
                    );
                }
                if caller == NONE32 {
                    if self.diags.want("stack-mismatch") {
                        let s = &self.sms[sm as usize];
                        self.diags.push(
                            Diagnostic::new(
                                "stack-mismatch",
                                format!(
                                    "{}: ret from {} at t={t} ({pos}) but the call was made before any state; no state to return to",
                                    sm_label(strings, s.sys, s.name),
                                    strings.resolve(func)
                                ),
                            )
                            .on(strings, s.sys, s.name)
                            .at(t, pos),
                        );
                    }
                    return;
                }
                self.transition(sm, t, caller, WaitOn::No, None, pos, strings);
            }
            None => {
                if self.diags.want("stack-mismatch") {
                    let s = &self.sms[sm as usize];
                    let inner = s
                        .calls
                        .last()
                        .map(|&(f, _)| format!("the innermost call is {}", strings.resolve(f)))
                        .unwrap_or_else(|| "there is no call to return from".to_string());
                    self.diags.push(
                        Diagnostic::new(
                            "stack-mismatch",
                            format!(
                                "{}: ret from {} at t={t} ({pos}) but {inner}; record ignored",
                                sm_label(strings, s.sys, s.name),
                                strings.resolve(func)
                            ),
                        )
                        .on(strings, s.sys, s.name)
                        .at(t, pos),
                    );
                }
            }
        }
    }

    fn pop(&mut self, sys: Sym, thread: Sym, name: Sym, t: u64, pos: Pos, strings: &Interner) {
        let target = self.sm_index.get(&(sys, name)).copied();
        let stack = self.stacks.entry((sys, thread)).or_default();
        let top = stack.last().copied();
        if top.is_some() && top == target {
            stack.pop();
            return;
        }
        let found = target.and_then(|tg| stack.iter().rposition(|&x| x == tg));
        if let Some(i) = found {
            stack.truncate(i);
        }
        if self.diags.want("stack-mismatch") {
            let what = match top {
                Some(top) => {
                    let s = &self.sms[top as usize];
                    format!("the top is {}", strings.resolve(s.name))
                }
                None => "the stack is empty".to_string(),
            };
            let fix = if found.is_some() {
                "popped it and the SMs above it"
            } else {
                "record ignored"
            };
            self.diags.push(
                Diagnostic::new(
                    "stack-mismatch",
                    format!(
                        "thread {}: pop {} at t={t} ({pos}) but {what}; {fix}",
                        strings.resolve(thread),
                        strings.resolve(name)
                    ),
                )
                .at(t, pos),
            );
        }
    }

    fn root_l(&self, sm: u32) -> i64 {
        let s = &self.sms[sm as usize];
        match &self.opts.from {
            None => 0,
            Some(_) if s.is_from && s.last_trans.is_none() && s.last.is_none() => 0,
            Some(_) => UNREACHED,
        }
    }

    /// An intra-SM edge's weight under the what-if speedups.
    #[inline]
    fn scaled(&self, key: u32, w: u64) -> u64 {
        if self.opts.speedups.is_empty() {
            return w;
        }
        let f = self.keys[key as usize].factor;
        if f == 1.0 {
            w
        } else {
            (w as f64 / f).round() as u64
        }
    }

    fn note_node(&mut self, sm: u32, n: NodeRef) {
        if n.l == UNREACHED {
            return;
        }
        match self.best {
            Some((b, _)) if b.l > n.l => {}
            _ => self.best = Some((n, sm)),
        }
    }

    fn send(&mut self, sm: u32, t: u64, id: LinkId, strings: &Interner) {
        let node = self.next_node;
        self.next_node += 1;
        let s = &self.sms[sm as usize];
        let (cur, cur_key, cnode_from, tp, last) = (s.cur, s.cur_key, s.cnode, s.tp, s.last);
        let n = match (cur, last) {
            (c, Some(prev)) if c != NONE32 => {
                let occ = t.saturating_sub(tp);
                let (cn, edge) = self.step(sm, cnode_from, cur, cur_key, M_SEND, strings);
                let ce = &mut self.cedges[edge as usize];
                ce.visits += 1;
                ce.total += occ;
                let w = self.scaled(cur_key, occ);
                let l = if prev.l == UNREACHED {
                    UNREACHED
                } else {
                    prev.l + w as i64
                };
                self.log(Entry {
                    pred: prev.id,
                    weight: w,
                    tag: edge,
                });
                if self.graph.is_some() {
                    self.graph_node(
                        l,
                        &[InEdge {
                            pred: prev.id,
                            weight: w,
                            key: cur_key,
                        }],
                    );
                }
                NodeRef {
                    id: node,
                    l,
                    t,
                    cnode: cn,
                }
            }
            _ => {
                // A send from an SM that is in no state: a root node.
                let cn = self.cnode_of(sm, M_START, M_SEND, strings);
                let l = self.root_l(sm);
                self.log(Entry {
                    pred: NO_PRED,
                    weight: t,
                    tag: sm,
                });
                if self.graph.is_some() {
                    self.graph_node(l, &[]);
                }
                NodeRef {
                    id: node,
                    l,
                    t,
                    cnode: cn,
                }
            }
        };
        let s = &mut self.sms[sm as usize];
        if s.nodes == 0 {
            s.first_t = t;
        }
        s.nodes += 1;
        s.last_t = t;
        s.tp = t;
        s.last = Some(n);
        if cur != NONE32 {
            s.cnode = n.cnode;
        }
        match id {
            LinkId::Num(k) => self.pending.insert(k, n),
            LinkId::Str(k) => self.pending_str.insert(k, n),
        };
        self.note_node(sm, n);
    }

    /// The SM leaves its current state (if any) at `t` and enters `to` (a
    /// state symbol, or `M_END`).
    #[allow(clippy::too_many_arguments)]
    fn transition(
        &mut self,
        sm: u32,
        t: u64,
        to: u32,
        wait: WaitOn,
        recv: Option<LinkId>,
        pos: Pos,
        strings: &Interner,
    ) {
        let node = self.next_node;
        self.next_node += 1;
        let s = &self.sms[sm as usize];
        let (cur, cur_key, cnode_from, tp, entered, cur_wait, last) =
            (s.cur, s.cur_key, s.cnode, s.tp, s.entered, s.wait, s.last);
        let alive = cur != NONE32 && last.is_some();

        // Inter-SM candidate: the matching send, or the awaited transition.
        let mut inter: Option<NodeRef> = None;
        let mut intra_zero = false;
        if let Some(id) = recv {
            let snd = match id {
                LinkId::Num(k) => self.pending.remove(&k),
                LinkId::Str(k) => self.pending_str.remove(&k),
            };
            match snd {
                Some(snd) => {
                    inter = Some(snd);
                    intra_zero = cur_wait != WaitOn::No;
                }
                None => {
                    if self.diags.want("recv-without-send") {
                        let s = &self.sms[sm as usize];
                        self.diags.push(
                            Diagnostic::new(
                                "recv-without-send",
                                format!(
                                    "{}: recv of id {} at t={t} ({pos}) has no earlier send; the dependence is missing (record the send before the recv)",
                                    sm_label(strings, s.sys, s.name),
                                    link_label(strings, id)
                                ),
                            )
                            .on(strings, s.sys, s.name)
                            .at(t, pos),
                        );
                    }
                }
            }
        } else if alive {
            match cur_wait {
                WaitOn::No => {}
                WaitOn::Open => {
                    self.early(sm, cur_key, t, pos, strings, "it is an open wait that only a recv can end, and the SM moved on without one".into());
                }
                WaitOn::On { sys, sm: on, state } => {
                    let target = self.sm_index.get(&(sys, on)).copied();
                    let m = target.and_then(|b| {
                        if state == NONE32 {
                            self.sms[b as usize].last_trans
                        } else {
                            self.key_index
                                .get(&(b, Sym(state)))
                                .and_then(|&k| self.keys[k as usize].last_trans)
                        }
                    });
                    match m {
                        Some(m) if m.t >= entered && m.t <= t => {
                            inter = Some(m);
                            intra_zero = true;
                        }
                        _ => {
                            let what = if state == NONE32 {
                                format!("{} to make a transition", strings.resolve(on))
                            } else {
                                format!(
                                    "{} to enter {}",
                                    strings.resolve(on),
                                    strings.resolve(Sym(state))
                                )
                            };
                            let seen = match m {
                                Some(m) => format!("its latest such transition was at t={}, before the wait began at t={entered}", m.t),
                                None => "none had happened yet".into(),
                            };
                            self.early(
                                sm,
                                cur_key,
                                t,
                                pos,
                                strings,
                                format!("it waited for {what} and {seen}"),
                            );
                        }
                    }
                }
            }
        }

        // cgraph step and the intra-SM edge.
        let (cn, edge) = self.step(sm, cnode_from, cur, cur_key, to, strings);
        // A first node starts at 0 (or is unreached under --from); otherwise
        // the intra-SM edge is the first candidate.
        let mut best_l = if alive { UNREACHED } else { self.root_l(sm) };
        let mut entry = Entry {
            pred: NO_PRED,
            weight: t,
            tag: sm,
        };
        // The in-edges, kept for slack's graph log.
        let mut intra_in: Option<InEdge> = None;
        let mut inter_in: Option<InEdge> = None;
        if alive {
            let prev = last.expect("alive SM has a node");
            let occ = t.saturating_sub(tp);
            let w = if intra_zero {
                0
            } else {
                self.scaled(cur_key, occ)
            };
            let ce = &mut self.cedges[edge as usize];
            ce.visits += 1;
            ce.total += occ;
            if let Some(h) = self.hook.as_mut() {
                let s = &self.sms[sm as usize];
                h(Visit::State {
                    sys: s.sys,
                    sm: s.name,
                    state: Sym(cur),
                    start: entered,
                    end: t,
                });
            }
            let visit = t.saturating_sub(entered);
            let k = &mut self.keys[cur_key as usize];
            k.timed_visits += u64::from(visit > 0);
            if visit > k.max_visit {
                k.max_visit = visit;
                k.max_visit_at = entered;
            }
            entry = Entry {
                pred: prev.id,
                weight: w,
                tag: edge,
            };
            intra_in = Some(InEdge {
                pred: prev.id,
                weight: w,
                key: cur_key,
            });
            if prev.l != UNREACHED {
                best_l = prev.l + w as i64;
            }
        }
        if let Some(m) = inter {
            let w = t.saturating_sub(m.t);
            // A first node has no previous state: its wait is charged to the
            // state it enters.
            let key = if alive {
                cur_key
            } else {
                self.cnodes[cn as usize].to_key
            };
            if !alive {
                // ... and that state's total holds the wait, so that no
                // state is more critical than it is long.
                self.keys[key as usize].total += w;
            }
            let ie = self.inter_edge(m.cnode, cn, key);
            let ce = &mut self.cedges[ie as usize];
            ce.visits += 1;
            ce.total += w;
            if let Some(h) = self.hook.as_mut() {
                let (a, b) = (
                    &self.sms[self.cnodes[m.cnode as usize].sm as usize],
                    &self.sms[sm as usize],
                );
                h(Visit::Link {
                    from_sys: a.sys,
                    from_sm: a.name,
                    to_sys: b.sys,
                    to_sm: b.name,
                    sent: m.t,
                    received: t,
                    wait: recv.is_none(),
                });
            }
            inter_in = Some(InEdge {
                pred: m.id,
                weight: w,
                key,
            });
            // Ties go to the inter-SM edge (SPEC §2 rule 5).
            if m.l != UNREACHED && m.l + w as i64 >= best_l {
                best_l = m.l + w as i64;
                entry = Entry {
                    pred: m.id,
                    weight: w,
                    tag: ie,
                };
            }
        }
        self.log(entry);
        if self.graph.is_some() {
            let edges: Vec<InEdge> = intra_in.into_iter().chain(inter_in).collect();
            self.graph_node(best_l, &edges);
        }
        let n = NodeRef {
            id: node,
            l: best_l,
            t,
            cnode: cn,
        };

        let s = &mut self.sms[sm as usize];
        if s.nodes == 0 {
            s.first_t = t;
        }
        s.nodes += 1;
        s.last_t = t;
        s.last_trans = Some(n);
        if to == M_END {
            s.cur = NONE32;
            s.cur_key = NONE32;
            s.wait = WaitOn::No;
            s.last = None;
            s.cnode = s.origin;
            s.calls.clear();
        } else {
            let key = self.cnodes[cn as usize].to_key;
            s.cur = to;
            s.cur_key = key;
            s.wait = wait;
            s.tp = t;
            s.entered = t;
            s.last = Some(n);
            s.cnode = cn;
            let k = &mut self.keys[key as usize];
            k.visits += 1;
            k.last_trans = Some(n);
            if wait != WaitOn::No {
                k.waited = true;
            }
        }
        self.note_node(sm, n);
    }

    fn early(&mut self, sm: u32, key: u32, t: u64, pos: Pos, strings: &Interner, why: String) {
        if !self.diags.want("wait-advanced-early") {
            return;
        }
        let s = &self.sms[sm as usize];
        let state = strings.resolve(self.keys[key as usize].state);
        self.diags.push(
            Diagnostic::new(
                "wait-advanced-early",
                format!(
                    "{}: left waiting state '{state}' at t={t} ({pos}) too early: {why}; the dependence is probably wrong or incomplete",
                    sm_label(strings, s.sys, s.name),
                ),
            )
            .on(strings, s.sys, s.name)
            .state(state)
            .at(t, pos),
        );
    }

    /// Ends the pass: picks the destination, walks the node log back, and
    /// builds the results.
    pub fn finish(mut self, strings: &Interner) -> io::Result<Analysis> {
        if let Some(e) = self.io_error.take() {
            return Err(e);
        }
        self.log.seal()?;

        let mut diagnostics = Vec::new();
        // Destination.
        let mut dest: Option<(NodeRef, u32)> = self.best;
        if let Some(spec) = self.opts.to.clone() {
            match self.find_to(&spec, strings) {
                Ok(d) => dest = d,
                Err(msg) => return Err(io::Error::new(io::ErrorKind::InvalidInput, msg)),
            }
        }
        if let Some(f) = &self.opts.from {
            if !self.sms.iter().any(|s| s.is_from) {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!(
                        "--from {f}: no state machine of that name in the trace{}",
                        self.nearest_sms(f, strings)
                    ),
                ));
            }
        }
        for (i, sp) in self.opts.speedups.iter().enumerate() {
            if !self.speedup_used[i] {
                let names: Vec<String> = self
                    .keys
                    .iter()
                    .map(|k| {
                        format!(
                            "{}:{}",
                            strings.resolve(self.sms[k.sm as usize].name),
                            strings.resolve(k.state)
                        )
                    })
                    .collect();
                let names: Vec<&str> = names.iter().map(String::as_str).collect();
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!(
                        "--speedup {}: no such state in the trace{}",
                        sp.target,
                        nearest(&sp.target, &names)
                    ),
                ));
            }
        }
        let unreachable = matches!(dest, Some((n, _)) if n.l == UNREACHED);
        if self.opts.from.is_some() && (dest.is_none() || unreachable) {
            diagnostics.push(self.disconnected(dest.map(|d| d.1), strings));
            dest = None;
        }

        let mut path = CriticalPath::default();
        let mut segments = Vec::new();
        let mut windows: std::collections::BTreeMap<u64, FxHashMap<u32, u64>> = Default::default();
        if let Some((n, sm)) = dest {
            let s = &self.sms[sm as usize];
            path.found = true;
            path.length_ns = n.l.max(0) as u64;
            path.end = Endpoint {
                sys: strings.resolve(s.sys).to_string(),
                sm: strings.resolve(s.name).to_string(),
                t: n.t,
            };
            let mut id = n.id;
            let mut t = n.t;
            loop {
                let e = self.log.get(id)?;
                if e.pred == NO_PRED {
                    let s = &self.sms[e.tag as usize];
                    path.start = Endpoint {
                        sys: strings.resolve(s.sys).to_string(),
                        sm: strings.resolve(s.name).to_string(),
                        t: e.weight,
                    };
                    break;
                }
                let ce = &mut self.cedges[e.tag as usize];
                ce.critical += e.weight;
                if ce.key != NONE32 {
                    self.keys[ce.key as usize].critical += e.weight;
                }
                path.edges += 1;
                if let Some(d) = self.opts.window_ns.filter(|&d| d > 0) {
                    // Clip the edge's time span at window boundaries.
                    let (mut a, b) = (t.saturating_sub(e.weight), t);
                    while a < b {
                        let k = a / d;
                        let end = b.min((k + 1).saturating_mul(d));
                        *windows.entry(k).or_default().entry(ce.key).or_default() += end - a;
                        a = end;
                    }
                }
                if self.opts.keep_path {
                    segments.push((ce.from, ce.to, ce.key, ce.inter, t - e.weight.min(t), t));
                }
                t = t.saturating_sub(e.weight);
                id = e.pred;
            }
        }

        let slack = match self.graph.take() {
            Some(g) => Some(g.slack(path.length_ns as i64, self.keys.len())?),
            None => None,
        };

        // A state's total is the time on its intra-SM cgraph edges.
        for ce in &self.cedges {
            if !ce.inter && ce.key != NONE32 {
                self.keys[ce.key as usize].total += ce.total;
            }
        }
        // Per SM: state visits and their summed time, for long-state.
        let mut sm_visits = vec![(0u64, 0u64); self.sms.len()];
        for k in &self.keys {
            sm_visits[k.sm as usize].0 += k.timed_visits;
            sm_visits[k.sm as usize].1 += k.total;
        }

        // Tables.
        let len = path.length_ns;
        let mut states: Vec<StateRow> = self
            .keys
            .iter()
            .enumerate()
            .filter(|(_, k)| k.visits > 0)
            .map(|(i, k)| {
                let s = &self.sms[k.sm as usize];
                StateRow {
                    sys: strings.resolve(s.sys).to_string(),
                    sm: strings.resolve(s.name).to_string(),
                    state: strings.resolve(k.state).to_string(),
                    visits: k.visits,
                    total_ns: k.total,
                    critical_ns: k.critical,
                    criticality: if len > 0 {
                        k.critical as f64 / len as f64
                    } else {
                        0.0
                    },
                    slack_ns: slack.as_ref().and_then(|v| v[i]).map(|x| x.0),
                    slack_mean_ns: slack.as_ref().and_then(|v| v[i]).map(|x| x.1),
                }
            })
            .collect();
        states.sort_by(|a, b| {
            b.critical_ns
                .cmp(&a.critical_ns)
                .then(b.total_ns.cmp(&a.total_ns))
                .then_with(|| (&a.sys, &a.sm, &a.state).cmp(&(&b.sys, &b.sm, &b.state)))
        });

        // long-state
        let share = self.opts.long_state_share.unwrap_or(0.5);
        let mut long = Vec::new();
        for k in &self.keys {
            let s = &self.sms[k.sm as usize];
            let life = s.last_t.saturating_sub(s.first_t);
            // Long against the SM's life and against its other visits.
            let (visits, visit_sum) = sm_visits[k.sm as usize];
            let others = visits.saturating_sub(1);
            let other_mean = if others > 0 {
                visit_sum.saturating_sub(k.max_visit) as f64 / others as f64
            } else {
                f64::INFINITY
            };
            if !k.waited
                && others >= 3
                && life > 0
                && k.max_visit as f64 >= share * life as f64
                && k.max_visit as f64 >= 10.0 * other_mean
            {
                long.push((k.max_visit, k));
            }
        }
        long.sort_by_key(|x| std::cmp::Reverse(x.0));
        let long_count = long.len();
        for (v, k) in long.into_iter().take(DIAG_DETAIL) {
            let s = &self.sms[k.sm as usize];
            let life = s.last_t - s.first_t;
            let state = strings.resolve(k.state);
            diagnostics.push(
                Diagnostic::new(
                    "long-state",
                    format!(
                        "{}: one visit of '{state}' from t={} lasted {v} ns, {:.0}% of the SM's observed life ({life} ns), with no wait: probably a missing dependence (mark it as a wait on what it waits for)",
                        sm_label(strings, s.sys, s.name),
                        k.max_visit_at,
                        100.0 * v as f64 / life as f64
                    ),
                )
                .on(strings, s.sys, s.name)
                .state(state)
                .time(k.max_visit_at),
            );
        }
        if long_count > DIAG_DETAIL {
            diagnostics.push(
                Diagnostic::new(
                    "long-state",
                    format!(
                        "{} more long-state diagnostics not shown",
                        long_count - DIAG_DETAIL
                    ),
                )
                .count(long_count as u64 - DIAG_DETAIL as u64),
            );
        }

        // Engine diagnostics, then overflow counts, then the readers' ones.
        let mut all = std::mem::take(&mut self.diags.detail);
        let mut kinds: Vec<_> = self.diags.counts.iter().map(|(k, v)| (*k, *v)).collect();
        kinds.sort();
        for (kind, n) in kinds {
            if n as usize > DIAG_DETAIL {
                all.push(
                    Diagnostic::new(
                        kind,
                        format!(
                            "{} more {kind} diagnostics not shown ({n} in all)",
                            n as usize - DIAG_DETAIL
                        ),
                    )
                    .count(n - DIAG_DETAIL as u64),
                );
            }
        }
        all.extend(diagnostics);
        all.append(&mut self.extra);

        let cgraph = self.cgraph(strings);
        let path_segments = if self.opts.keep_path {
            segments.reverse();
            Some(
                segments
                    .into_iter()
                    .map(|(from, to, key, inter, t0, t1)| {
                        let c = &self.cnodes[to as usize];
                        let s = &self.sms[c.sm as usize];
                        let state = if key == NONE32 {
                            String::new()
                        } else {
                            strings.resolve(self.keys[key as usize].state).to_string()
                        };
                        let from_sm = &self.sms[self.cnodes[from as usize].sm as usize];
                        PathSegment {
                            sys: strings.resolve(s.sys).to_string(),
                            sm: strings.resolve(s.name).to_string(),
                            state,
                            from_sm: strings.resolve(from_sm.name).to_string(),
                            inter,
                            start_ns: t0,
                            end_ns: t1,
                        }
                    })
                    .collect(),
            )
        } else {
            None
        };

        let windows = self.opts.window_ns.filter(|&d| d > 0).map(|d| {
            windows
                .into_iter()
                .map(|(k, per)| {
                    let path_ns: u64 = per.values().sum();
                    let mut states: Vec<WindowState> = per
                        .into_iter()
                        .filter(|&(key, ns)| key != NONE32 && ns > 0)
                        .map(|(key, ns)| {
                            let k = &self.keys[key as usize];
                            let s = &self.sms[k.sm as usize];
                            WindowState {
                                sys: strings.resolve(s.sys).to_string(),
                                sm: strings.resolve(s.name).to_string(),
                                state: strings.resolve(k.state).to_string(),
                                critical_ns: ns,
                                share: ns as f64 / path_ns.max(1) as f64,
                            }
                        })
                        .collect();
                    states.sort_by(|a, b| {
                        b.critical_ns
                            .cmp(&a.critical_ns)
                            .then_with(|| (&a.sm, &a.state).cmp(&(&b.sm, &b.state)))
                    });
                    WindowRow {
                        start_ns: k * d,
                        end_ns: (k + 1) * d,
                        path_ns,
                        states,
                    }
                })
                .collect()
        });

        Ok(Analysis {
            windows,
            critical_path: path,
            states,
            diagnostics: all,
            stats: Stats {
                records: self.records,
                nodes: self.next_node,
                state_machines: self.sms.iter().filter(|s| s.nodes > 0).count() as u64,
                node_log_bytes: self.log.disk_bytes(),
            },
            cgraph,
            path: path_segments,
            annotation_costs: Vec::new(),
            overhead_correction: None,
        })
    }

    fn cgraph(&self, strings: &Interner) -> CGraph {
        let name = |m: u32| -> String {
            match m {
                M_START => "start".into(),
                M_END => "end".into(),
                M_SEND => "send".into(),
                M_ORIGIN => "origin".into(),
                s => strings.resolve(Sym(s)).to_string(),
            }
        };
        let nodes = self
            .cnodes
            .iter()
            .enumerate()
            .filter(|(_, c)| c.from != M_ORIGIN)
            .map(|(i, c)| {
                let s = &self.sms[c.sm as usize];
                CNodeRow {
                    id: i as u32,
                    sys: strings.resolve(s.sys).to_string(),
                    sm: strings.resolve(s.name).to_string(),
                    from: name(c.from),
                    to: name(c.to),
                }
            })
            .collect();
        let edges = self
            .cedges
            .iter()
            .map(|e| CEdgeRow {
                from: e.from,
                to: e.to,
                state: if e.key == NONE32 {
                    String::new()
                } else {
                    strings.resolve(self.keys[e.key as usize].state).to_string()
                },
                inter: e.inter,
                visits: e.visits,
                total_ns: e.total,
                critical_ns: e.critical,
            })
            .collect();
        CGraph { nodes, edges }
    }

    fn find_to(&self, spec: &str, strings: &Interner) -> Result<Option<(NodeRef, u32)>, String> {
        // Try the whole spec as an SM name, then split at each ':' from the right.
        let mut cands: Vec<(&str, Option<&str>)> = vec![(spec, None)];
        for (i, _) in spec
            .match_indices(':')
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
        {
            cands.push((&spec[..i], Some(&spec[i + 1..])));
        }
        for (sm_name, state) in cands {
            let sms: Vec<u32> = (0..self.sms.len() as u32)
                .filter(|&i| {
                    let s = &self.sms[i as usize];
                    sm_matches(sm_name, strings.resolve(s.sys), strings.resolve(s.name))
                })
                .collect();
            if sms.is_empty() {
                continue;
            }
            if sms.len() > 1 {
                return Err(format!(
                    "--to {spec}: {sm_name} names state machines in {} systems; write SYS/SM",
                    sms.len()
                ));
            }
            let sm = sms[0];
            match state {
                None => {
                    let s = &self.sms[sm as usize];
                    let n = s.last.or(s.last_trans);
                    return Ok(n.map(|n| (n, sm)));
                }
                Some(st) => {
                    if let Some(sym) = strings.get(st) {
                        if let Some(&k) = self.key_index.get(&(sm, sym)) {
                            return Ok(self.keys[k as usize].last_trans.map(|n| (n, sm)));
                        }
                    }
                    let states: Vec<&str> = self
                        .keys
                        .iter()
                        .filter(|k| k.sm == sm)
                        .map(|k| strings.resolve(k.state))
                        .collect();
                    return Err(format!(
                        "--to {spec}: {sm_name} never enters state '{st}'{}",
                        nearest(st, &states)
                    ));
                }
            }
        }
        Err(format!(
            "--to {spec}: no state machine of that name in the trace{}",
            self.nearest_sms(spec, strings)
        ))
    }

    fn nearest_sms(&self, want: &str, strings: &Interner) -> String {
        let names: Vec<&str> = self.sms.iter().map(|s| strings.resolve(s.name)).collect();
        nearest(want, &names)
    }

    fn disconnected(&self, dest: Option<u32>, strings: &Interner) -> Diagnostic {
        let from = self.opts.from.clone().unwrap_or_default();
        let Some(dest) = dest else {
            return Diagnostic::new(
                "disconnected",
                format!("no node is reachable from the first node of {from}: the trace has no path starting there"),
            );
        };
        // Walk inter-SM edges backwards from the destination SM.
        let mut incoming: FxHashMap<u32, Vec<u32>> = FxHashMap::default();
        for &(a, b) in &self.sm_links {
            incoming.entry(b).or_default().push(a);
        }
        let mut seen = FxHashSet::default();
        let mut todo = vec![dest];
        seen.insert(dest);
        let mut roots = Vec::new();
        while let Some(x) = todo.pop() {
            match incoming.get(&x) {
                Some(v) if !v.is_empty() => {
                    for &a in v {
                        if seen.insert(a) {
                            todo.push(a);
                        }
                    }
                }
                _ => roots.push(x),
            }
        }
        let label = |i: u32| {
            let s = &self.sms[i as usize];
            sm_label(strings, s.sys, s.name)
        };
        let mut root_names: Vec<String> = roots.into_iter().map(label).collect();
        root_names.sort();
        let d = &self.sms[dest as usize];
        Diagnostic::new(
            "disconnected",
            format!(
                "{} is not reachable from {from}. Walking inter-SM edges back from {} reaches {} SM(s); {} {} no incoming inter-SM edge: a dependence into {} is probably missing (or a resource is so under-provisioned that a producer always waits on its consumer)",
                sm_label(strings, d.sys, d.name),
                sm_label(strings, d.sys, d.name),
                seen.len(),
                root_names.join(", "),
                if root_names.len() == 1 { "has" } else { "have" },
                if root_names.len() == 1 { "it" } else { "them" },
            ),
        )
        .on(strings, d.sys, d.name)
    }
}

/// Does `spec` (`SM` or `SYS/SM`) name the SM `name` of system `sys`?
fn sm_matches(spec: &str, sys: &str, name: &str) -> bool {
    if spec == name {
        return true;
    }
    spec.len() == sys.len() + 1 + name.len()
        && spec.starts_with(sys)
        && spec.as_bytes()[sys.len()] == b'/'
        && spec.ends_with(name)
}

fn sm_label(strings: &Interner, sys: Sym, name: Sym) -> String {
    if sys == Sym::LOCAL {
        strings.resolve(name).to_string()
    } else {
        format!("{}/{}", strings.resolve(sys), strings.resolve(name))
    }
}

fn link_label(strings: &Interner, id: LinkId) -> String {
    match id {
        LinkId::Num(n) => n.to_string(),
        LinkId::Str(s) => format!("\"{}\"", strings.resolve(s)),
    }
}

/// ", nearest: a, b, c" for the names closest to `want`, or "".
pub fn nearest(want: &str, names: &[&str]) -> String {
    let mut scored: Vec<(usize, &str)> =
        names.iter().map(|n| (edit_distance(want, n), *n)).collect();
    scored.sort();
    scored.dedup_by(|a, b| a.1 == b.1);
    let best: Vec<&str> = scored.iter().take(3).map(|x| x.1).collect();
    if best.is_empty() {
        String::new()
    } else {
        format!("; nearest: {}", best.join(", "))
    }
}

fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for i in 1..=a.len() {
        let mut cur = vec![i; b.len() + 1];
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            cur[j] = (prev[j] + 1).min(cur[j - 1] + 1).min(prev[j - 1] + cost);
        }
        prev = cur;
    }
    prev[b.len()]
}
