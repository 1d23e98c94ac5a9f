//! Property tests: the streaming engine against a brute-force oracle that
//! builds the whole dependence graph in memory (searching all earlier nodes
//! for each dependence instead of keeping streaming tables) and finds the
//! longest path by dynamic programming over every edge.

use critpath_engine::{Engine, Options};

use critpath_trace::{Event, Interner, LinkId, Pos, Record, Sym, Who};
use proptest::prelude::*;
use std::collections::{BTreeMap, HashMap, HashSet};

#[derive(Clone, Debug)]
enum Act {
    Trans {
        state: Option<String>,
        wait: Wait,
        /// The link id and whether the state it ends waited for it.
        recv: Option<(u64, bool)>,
    },
    Send(u64),
    /// A `held` point: the piece so far was held by (SM, state); whether
    /// the holder's run ended (then the waiter's work does not scale it).
    Held(String, String, bool),
}

#[derive(Clone, Debug, PartialEq)]
enum Wait {
    No,
    Open,
    On(String, Option<String>),
}

#[derive(Clone, Debug)]
struct Node {
    sm: String,
    t: u64,
    /// Some(state) for a transition into a state, None for end; sends are
    /// not transitions.
    into: Option<Option<String>>,
    send: Option<u64>,
    first: bool,
}

struct Edge {
    from: usize,
    w: u64,
    key: (String, String),
    inter: bool,
    /// The inter-SM edge of a waited recv.
    held: bool,
    /// A `held` piece: the waiting (SM, state) whose time it is.
    held_for: Option<(String, String)>,
}

#[derive(Debug, PartialEq)]
struct Result_ {
    length: u64,
    edges: u64,
    start: Option<(String, u64)>,
    end: Option<(String, u64)>,
    states: BTreeMap<(String, String), (u64, u64, u64)>,
    /// (sm, state, sender) -> path time blamed on the sender.
    blame: BTreeMap<(String, String, String), u64>,
}

/// The simple resolver's state, all by name: each thread's stack of SMs, the
/// thread on each CPU, each SM's call stack of (function, caller's state)
/// and current state, and the (t, sm, action) resolved so far.
struct Resolver<'a> {
    s: &'a Interner,
    stacks: HashMap<String, Vec<String>>,
    cpus: HashMap<String, String>,
    calls: HashMap<String, Vec<(String, Option<String>)>>,
    cur: HashMap<String, Option<String>>,
    out: Vec<(u64, String, Act)>,
}

/// Resolves records to (t, sm, action) the simple way.
fn resolve(records: &[Record], s: &Interner) -> Vec<(u64, String, Act)> {
    let mut r = Resolver {
        s,
        stacks: HashMap::new(),
        cpus: HashMap::new(),
        calls: HashMap::new(),
        cur: HashMap::new(),
        out: Vec::new(),
    };
    for rec in records {
        r.record(rec);
    }
    r.out
}

/// A transition into `state` (None for end).
fn trans(state: Option<String>, wait: Wait, recv: Option<(u64, bool)>) -> Act {
    Act::Trans { state, wait, recv }
}

/// The number of a numeric link id.
fn num(id: LinkId) -> u64 {
    let LinkId::Num(id) = id else {
        panic!("numeric ids only")
    };
    id
}

impl Resolver<'_> {
    /// The string of symbol `x`.
    fn name(&self, x: Sym) -> String {
        self.s.resolve(x).to_string()
    }

    /// The SM `w` names now: the top of a thread's stack, or of the stack
    /// of the thread on a CPU.
    fn who(&self, w: Who) -> Option<String> {
        let top = |th: &String| self.stacks.get(th).and_then(|v| v.last().cloned());
        match w {
            Who::Sm(x) => Some(self.name(x)),
            Who::Thread(th) => top(&self.name(th)),
            Who::Cpu(c) => self.cpus.get(&self.name(c)).and_then(top),
        }
    }

    /// Adds `sm`'s action at `t`; a transition sets its current state, and
    /// its end drops its call stack.
    fn push(&mut self, t: u64, sm: String, act: Act) {
        if let Act::Trans { state, .. } = &act {
            self.cur.insert(sm.clone(), state.clone());
            if state.is_none() {
                self.calls.remove(&sm);
            }
        }
        self.out.push((t, sm, act));
    }

    /// Handles one record.
    fn record(&mut self, r: &Record) {
        match r.ev {
            Event::Push { thread, sm } => {
                let sm = self.name(sm);
                self.stacks.entry(self.name(thread)).or_default().push(sm);
            }
            Event::Pop { thread, sm } => {
                let sm = self.name(sm);
                let st = self.stacks.entry(self.name(thread)).or_default();
                if let Some(i) = st.iter().rposition(|x| *x == sm) {
                    st.truncate(i);
                }
            }
            Event::Switch { cpu, thread } => {
                self.cpus.insert(self.name(cpu), self.name(thread));
            }
            Event::State { who, .. }
            | Event::Wait { who, .. }
            | Event::Recv { who, .. }
            | Event::End { who }
            | Event::Send { who, .. }
            | Event::Held { who, .. }
            | Event::Call { who, .. }
            | Event::Ret { who, .. } => {
                if let Some(sm) = self.who(who) {
                    self.act(r.t, sm, r.ev);
                }
            }
        }
    }

    /// Handles an SM's record `ev` at `t`, resolved to `sm`.
    fn act(&mut self, t: u64, sm: String, ev: Event) {
        let act = match ev {
            Event::State { state, .. } => trans(Some(self.name(state)), Wait::No, None),
            Event::Wait {
                state,
                on,
                on_state,
                ..
            } => {
                let wait = match on {
                    None => Wait::Open,
                    Some(b) => Wait::On(self.name(b), on_state.map(|x| self.name(x))),
                };
                trans(Some(self.name(state)), wait, None)
            }
            Event::Recv {
                id, state, waited, ..
            } => trans(Some(self.name(state)), Wait::No, Some((num(id), waited))),
            Event::End { .. } => trans(None, Wait::No, None),
            Event::Send { id, .. } => Act::Send(num(id)),
            Event::Held {
                on,
                on_state,
                ended,
                ..
            } => Act::Held(self.name(on), self.name(on_state), ended),
            Event::Call { func, .. } => {
                let (func, caller) = (self.name(func), self.cur.get(&sm).cloned().flatten());
                let st = self.calls.entry(sm.clone()).or_default();
                st.push((func.clone(), caller));
                trans(Some(func), Wait::No, None)
            }
            Event::Ret { func, .. } => match self.ret(&sm, func) {
                Some(caller) => trans(Some(caller), Wait::No, None),
                None => return,
            },
            Event::Push { .. } | Event::Pop { .. } | Event::Switch { .. } => {
                unreachable!("not an SM's record")
            }
        };
        self.push(t, sm, act);
    }

    /// Pops `sm`'s call stack down to below its innermost call of `func`;
    /// the state of that call's caller, if it had one.
    fn ret(&mut self, sm: &str, func: Sym) -> Option<String> {
        let func = self.name(func);
        let st = self.calls.entry(sm.to_string()).or_default();
        let i = st.iter().rposition(|(f, _)| *f == func)?;
        let caller = st[i].1.clone();
        st.truncate(i);
        caller
    }
}

fn oracle(records: &[Record], s: &Interner, from: Option<&str>) -> Result_ {
    oracle_with(records, s, from, &Whatif::default())
}

/// The whole dependence graph: nodes, each node's in-edges, per-state
/// (visits, total), and the `--from` SM's first node.
type Graph = (
    Vec<Node>,
    Vec<Vec<Edge>>,
    BTreeMap<(String, String), (u64, u64, u64)>,
    Option<usize>,
);

/// What-if speedups: factors by (SM, state), and states that scale with
/// another state of their SM, (state, with).
#[derive(Default)]
struct Whatif {
    factors: HashMap<(String, String), f64>,
    follows: Vec<(String, String)>,
}

impl Whatif {
    /// The factor of the state `key` scales with (1.0 when none).
    fn follow(&self, (sm, st): &(String, String)) -> f64 {
        let with = self.follows.iter().find(|(f, _)| f == st);
        with.and_then(|(_, w)| self.factors.get(&(sm.clone(), w.clone())))
            .copied()
            .unwrap_or(1.0)
    }

    /// The factor of state `key`: its own, else the one it scales with.
    fn factor(&self, key: &(String, String)) -> f64 {
        match self.factors.get(key) {
            Some(f) => *f,
            None => self.follow(key),
        }
    }
}

/// `w` made `f` times faster, rounded.
fn faster(w: u64, f: f64) -> u64 {
    match f == 1.0 {
        true => w,
        false => (w as f64 / f).round() as u64,
    }
}

/// The oracle with what-if speedups: intra-SM edges of a sped-up state
/// weigh their time divided by the factor, rounded; a state that scales
/// with another takes its factor when it has none, and a piece of it
/// charged to a holder is divided by both the holder's factor and that.
fn oracle_with(records: &[Record], s: &Interner, from: Option<&str>, speed: &Whatif) -> Result_ {
    let (nodes, ins, visits, from_first) = graph(records, s, from, speed);
    longest(nodes, ins, visits, from_first, from)
}

/// A live SM: (state, entered, piece start, wait, last node).
type Live = (String, u64, u64, Wait, usize);

/// The dependence graph being built: nodes and their in-edges, the live
/// SMs, the sends already received, and per-state (visits, total).
struct Builder<'a> {
    speed: &'a Whatif,
    nodes: Vec<Node>,
    ins: Vec<Vec<Edge>>,
    live: HashMap<String, Live>,
    consumed: HashSet<usize>,
    visits: BTreeMap<(String, String), (u64, u64, u64)>,
    /// Per live SM, the latest end of a `held` piece charged to its visit.
    held_until: HashMap<String, u64>,
}

fn graph(records: &[Record], s: &Interner, from: Option<&str>, speed: &Whatif) -> Graph {
    let mut g = Builder {
        speed,
        nodes: Vec::new(),
        ins: Vec::new(),
        live: HashMap::new(),
        consumed: HashSet::new(),
        visits: BTreeMap::new(),
        held_until: HashMap::new(),
    };
    let mut seen_sm: HashSet<String> = HashSet::new();
    let mut from_first: Option<usize> = None;
    for (t, sm, act) in resolve(records, s) {
        // A `held` point of an SM in no state is not a node.
        if matches!(act, Act::Held(..)) && !g.live.contains_key(&sm) {
            continue;
        }
        let first_ever = seen_sm.insert(sm.clone());
        if first_ever && from == Some(sm.as_str()) {
            from_first = Some(g.nodes.len());
        }
        match act {
            Act::Send(id) => g.send(t, sm, id),
            Act::Held(holder, hstate, ended) => g.held(t, sm, (holder, hstate), ended),
            Act::Trans { state, wait, recv } => g.trans(t, sm, state, wait, recv),
        }
    }
    // A visit open at the end counts the time `held` pieces charged to it
    // past its last node.
    for (sm, (st, _, piece, ..)) in &g.live {
        let until = g.held_until.get(sm).copied().unwrap_or(0);
        if until > *piece {
            g.visits.entry((sm.clone(), st.clone())).or_default().1 += until - piece;
        }
    }
    (g.nodes, g.ins, g.visits, from_first)
}

impl Builder<'_> {
    /// `w` of state `key`, divided by its speedup.
    fn scale(&self, key: &(String, String), w: u64) -> u64 {
        faster(w, self.speed.factor(key))
    }

    /// Adds a node with its in-edges.
    fn add(&mut self, node: Node, edges: Vec<Edge>) {
        self.nodes.push(node);
        self.ins.push(edges);
    }

    /// Ends the piece of `sm`'s state so far at `t`, where its next node
    /// is, if it is alive: its state, the piece's time (added to the
    /// state's total) and the node the piece began at.
    fn piece(&mut self, t: u64, sm: &str) -> Option<(String, u64, usize)> {
        let n = self.nodes.len();
        let (st, _, piece, _, last) = self.live.get_mut(sm)?;
        let (occ, from) = (t - *piece, *last);
        *piece = t;
        *last = n;
        self.visits
            .entry((sm.to_string(), st.clone()))
            .or_default()
            .1 += occ;
        Some((st.clone(), occ, from))
    }

    /// A send of `sm` at `t`: a point node that ends the piece of its state
    /// so far, if it has one.
    fn send(&mut self, t: u64, sm: String, id: u64) {
        let (first, edges) = match self.piece(t, &sm) {
            Some((st, occ, from)) => {
                let key = (sm.clone(), st);
                let edge = Edge {
                    from,
                    w: self.scale(&key, occ),
                    key,
                    inter: false,
                    held: false,
                    held_for: None,
                };
                (false, vec![edge])
            }
            None => (true, Vec::new()),
        };
        let node = Node {
            sm,
            t,
            into: None,
            send: Some(id),
            first,
        };
        self.add(node, edges);
    }

    /// A `held` point of live `sm` at `t`: the piece of its state so far is
    /// charged to `holder` (SM, state).
    fn held(&mut self, t: u64, sm: String, holder: (String, String), ended: bool) {
        let (st, occ, from) = self.piece(t, &sm).expect("alive");
        // The piece's time the holder did not spend in the state charged
        // counts in that state's total.
        let beyond = match self.live.get(&holder.0) {
            Some((hst, entered, ..)) if *hst == holder.1 => {
                let until = self.held_until.entry(holder.0.clone()).or_default();
                *until = (*until).max(t);
                entered.saturating_sub(t - occ).min(occ)
            }
            _ => occ,
        };
        self.visits.entry(holder.clone()).or_default().1 += beyond;
        let own = if ended {
            1.0
        } else {
            self.speed.factor(&(sm.clone(), st.clone()))
        };
        let f = self.speed.factor(&holder) * own;
        let edge = Edge {
            from,
            w: faster(occ, f),
            key: holder,
            inter: false,
            held: false,
            held_for: Some((sm.clone(), st)),
        };
        let node = Node {
            sm,
            t,
            into: None,
            send: None,
            first: false,
        };
        self.add(node, vec![edge]);
    }

    /// A transition of `sm` at `t` into `state` (None for end): the last
    /// piece of the visit it ends, and an inter-SM edge.
    fn trans(
        &mut self,
        t: u64,
        sm: String,
        state: Option<String>,
        wait: Wait,
        recv: Option<(u64, bool)>,
    ) {
        let n = self.nodes.len();
        let prev = self.live.remove(&sm);
        self.held_until.remove(&sm);
        let (inter, zero, held) = self.inter(t, prev.as_ref(), recv);
        let mut edges = Vec::new();
        if let Some((st, _, piece, _, last)) = &prev {
            // The last piece of the visit (sends added the earlier ones).
            let occ = t - piece;
            let key = (sm.clone(), st.clone());
            edges.push(Edge {
                from: *last,
                w: if zero { 0 } else { self.scale(&key, occ) },
                key,
                inter: false,
                held: false,
                held_for: None,
            });
            self.visits.entry((sm.clone(), st.clone())).or_default().1 += occ;
        }
        if let Some((i, w)) = inter {
            let key = match &prev {
                Some((st, ..)) => (sm.clone(), st.clone()),
                None => (sm.clone(), state.clone().unwrap_or_default()),
            };
            // A first node's wait is time spent in the state it enters.
            if prev.is_none() {
                self.visits.entry(key.clone()).or_default().1 += w;
            }
            // A link sent before the state it ends began: its time before
            // the state counts in the state's total too.
            if let Some((_, entered, ..)) = &prev {
                let sent = self.nodes[i].t;
                if sent < *entered {
                    self.visits.entry(key.clone()).or_default().1 += entered - sent;
                }
            }
            edges.push(Edge {
                from: i,
                w,
                key,
                inter: true,
                held,
                held_for: None,
            });
        }
        if let Some(st) = &state {
            self.visits.entry((sm.clone(), st.clone())).or_default().0 += 1;
            self.live.insert(sm.clone(), (st.clone(), t, t, wait, n));
        }
        let node = Node {
            sm,
            t,
            into: Some(state),
            send: None,
            first: prev.is_none(),
        };
        self.add(node, edges);
    }

    /// The inter-SM candidate of a transition at `t` from `prev`, found by
    /// searching the whole graph so far: (source node, weight), whether the
    /// state it ends costs nothing itself, and whether it is a waited recv.
    fn inter(
        &mut self,
        t: u64,
        prev: Option<&Live>,
        recv: Option<(u64, bool)>,
    ) -> (Option<(usize, u64)>, bool, bool) {
        let n = self.nodes.len();
        if let Some((id, waited)) = recv {
            let snd = (0..n)
                .rev()
                .find(|&i| self.nodes[i].send == Some(id) && !self.consumed.contains(&i));
            if let Some(i) = snd {
                // A send supersedes earlier unreceived sends of its id.
                self.consumed
                    .extend((0..=i).filter(|&j| self.nodes[j].send == Some(id)));
                // A waiting state, or a recv that says its state
                // waited for the link, costs nothing itself.
                let zero = waited || matches!(prev, Some((_, _, _, w, _)) if *w != Wait::No);
                return (Some((i, t - self.nodes[i].t)), zero, waited);
            }
        } else if let Some((_, entered, _, Wait::On(b, z), _)) = prev {
            let m = (0..n).rev().find(|&i| {
                self.nodes[i].sm == *b
                    && match (&self.nodes[i].into, z) {
                        (Some(_), None) => true,
                        (Some(Some(st)), Some(z)) => st == z,
                        _ => false,
                    }
            });
            if let Some(i) = m {
                if self.nodes[i].t >= *entered && self.nodes[i].t <= t {
                    return (Some((i, t - self.nodes[i].t)), true, false);
                }
            }
        }
        (None, false, false)
    }
}

/// Longest path by DP in node order (a topological order).
fn longest(
    nodes: Vec<Node>,
    ins: Vec<Vec<Edge>>,
    visits: BTreeMap<(String, String), (u64, u64, u64)>,
    from_first: Option<usize>,
    from: Option<&str>,
) -> Result_ {
    const NEG: i64 = i64::MIN;
    let mut l = vec![NEG; nodes.len()];
    let mut pred: Vec<Option<usize>> = vec![None; nodes.len()];
    for n in 0..nodes.len() {
        let can_start = match from {
            None => nodes[n].first,
            Some(_) => from_first == Some(n),
        };
        let mut best = if can_start { 0 } else { NEG };
        let mut best_e = None;
        // Intra first, then inter: an inter edge wins ties.
        let mut order: Vec<usize> = (0..ins[n].len()).collect();
        order.sort_by_key(|&e| ins[n][e].inter);
        for e in order {
            let edge = &ins[n][e];
            if l[edge.from] == NEG {
                continue;
            }
            let c = l[edge.from] + edge.w as i64;
            if c > best || (c == best && (edge.inter || best_e.is_none())) {
                best = c;
                best_e = Some(e);
            }
        }
        l[n] = best;
        pred[n] = best_e;
    }
    let end = (0..nodes.len())
        .filter(|&n| l[n] != NEG)
        .max_by(|&a, &b| l[a].cmp(&l[b]).then(a.cmp(&b)));
    let mut res = Result_ {
        length: 0,
        edges: 0,
        start: None,
        end: None,
        states: visits,
        blame: BTreeMap::new(),
    };
    if let Some(e) = end {
        res.length = l[e] as u64;
        res.end = Some((nodes[e].sm.clone(), nodes[e].t));
        let mut n = e;
        // Blame being gathered: (waiting state, sender, time on the sender).
        let mut open: Option<((String, String), String, u64)> = None;
        let close = |open: &mut Option<((String, String), String, u64)>,
                     blame: &mut BTreeMap<(String, String, String), u64>| {
            if let Some(((sm, st), sender, acc)) = open.take() {
                if acc > 0 {
                    *blame.entry((sm, st, sender)).or_default() += acc;
                }
            }
        };
        while let Some(ei) = pred[n] {
            let edge = &ins[n][ei];
            let (a, b) = (&nodes[edge.from].sm, &nodes[n].sm);
            if let Some((sm, st)) = &edge.held_for {
                close(&mut open, &mut res.blame);
                if edge.w > 0 && edge.key.0 != *sm {
                    let k = (sm.clone(), st.clone(), edge.key.0.clone());
                    *res.blame.entry(k).or_default() += edge.w;
                }
                res.states.entry(edge.key.clone()).or_default().2 += edge.w;
                res.edges += 1;
                n = edge.from;
                continue;
            }
            match &mut open {
                Some((_, sender, acc)) if !edge.held && a == sender && b == sender => {
                    *acc += edge.w
                }
                _ => {
                    close(&mut open, &mut res.blame);
                    if edge.held && a != b {
                        open = Some((edge.key.clone(), a.clone(), 0));
                    }
                }
            }
            res.states.entry(edge.key.clone()).or_default().2 += edge.w;
            res.edges += 1;
            n = edge.from;
        }
        close(&mut open, &mut res.blame);
        res.start = Some((nodes[n].sm.clone(), nodes[n].t));
    }
    res.states.retain(|_, v| v.0 > 0 || v.2 > 0);
    res
}

fn engine(records: &[Record], s: &Interner, from: Option<&str>) -> Result_ {
    engine_with(records, s, from, (false, false))
}

/// [`engine`], with the walk back split over two threads however short
/// it is (`split`), and with no combined graph asked for (`no_cgraph`:
/// its inter-SM edges are kept per sending SM).
fn engine_with(
    records: &[Record],
    s: &Interner,
    from: Option<&str>,
    (split, no_cgraph): (bool, bool),
) -> Result_ {
    let mut e = Engine::new(Options {
        from: from.map(String::from),
        no_cgraph,
        ..Default::default()
    });
    if split {
        e.split_walks_early();
    }
    for r in records {
        e.feed(r, Pos::NONE, s);
    }
    let a = match e.finish(s) {
        Ok(a) => a,
        // --from naming an SM the trace never mentions: nothing is reachable.
        Err(err) if from.is_some() && err.to_string().contains("no state machine") => {
            return Result_ {
                length: 0,
                edges: 0,
                start: None,
                end: None,
                states: BTreeMap::new(),
                blame: BTreeMap::new(),
            };
        }
        Err(err) => panic!("engine failed: {err}"),
    };
    let p = &a.critical_path;
    Result_ {
        length: p.length_ns,
        edges: p.edges,
        start: p.found.then(|| (p.start.sm.clone(), p.start.t)),
        end: p.found.then(|| (p.end.sm.clone(), p.end.t)),
        states: a
            .states
            .iter()
            .map(|r| {
                (
                    (r.sm.clone(), r.state.clone()),
                    (r.visits, r.total_ns, r.critical_ns),
                )
            })
            .collect(),
        blame: a
            .states
            .iter()
            .flat_map(|r| {
                r.blame
                    .iter()
                    .map(|b| ((r.sm.clone(), r.state.clone(), b.sm.clone()), b.ns))
            })
            .collect(),
    }
}

/// One random op: (kind, sm, state, other sm, id, dt, flag).
type Op = (u8, u8, u8, u8, u8, u8, bool);

fn build(ops: &[Op], with_stacks: bool) -> (Vec<Record>, Interner) {
    let mut s = Interner::new();
    let sms: Vec<Sym> = (0..4).map(|i| s.intern(&format!("sm{i}"))).collect();
    let states: Vec<Sym> = (0..4).map(|i| s.intern(&format!("s{i}"))).collect();
    let threads: Vec<Sym> = (0..2).map(|i| s.intern(&format!("th{i}"))).collect();
    let cpus: Vec<Sym> = (0..2).map(|i| s.intern(&format!("cpu{i}"))).collect();
    let mut t = 0u64;
    let mut out = Vec::new();
    for &(kind, sm, st, other, id, dt, flag) in ops {
        t += u64::from(dt % 4);
        let who = if with_stacks && flag {
            if sm % 2 == 0 {
                Who::Thread(threads[(sm / 2) as usize % 2])
            } else {
                Who::Cpu(cpus[(sm / 2) as usize % 2])
            }
        } else {
            Who::Sm(sms[sm as usize % 4])
        };
        let state = states[st as usize % 4];
        let id_byte = id;
        let id = LinkId::Num(u64::from(id % 4));
        let ev = match kind % 13 {
            0 | 1 => Event::State { who, state },
            2 => Event::Wait {
                who,
                state,
                on: Some(sms[other as usize % 4]),
                on_sys: None,
                on_state: Some(states[id_of(&id) as usize % 4]),
            },
            3 => Event::Wait {
                who,
                state,
                on: Some(sms[other as usize % 4]),
                on_sys: None,
                on_state: None,
            },
            4 => Event::Wait {
                who,
                state,
                on: None,
                on_sys: None,
                on_state: None,
            },
            5 => Event::Send { who, id },
            6 => Event::Recv {
                who,
                id,
                state,
                waited: id_byte & 0x10 != 0,
            },
            7 => Event::End { who },
            8 => Event::Call {
                who,
                func: states[st as usize % 4],
            },
            9 => Event::Ret {
                who,
                func: states[st as usize % 4],
            },
            10 if with_stacks => {
                let thread = threads[other as usize % 2];
                if flag {
                    Event::Push {
                        thread,
                        sm: sms[sm as usize % 4],
                    }
                } else {
                    Event::Pop {
                        thread,
                        sm: sms[sm as usize % 4],
                    }
                }
            }
            11 if with_stacks => Event::Switch {
                cpu: cpus[other as usize % 2],
                thread: threads[sm as usize % 2],
            },
            12 => Event::Held {
                who,
                on: sms[other as usize % 4],
                on_state: states[id_of(&id) as usize % 4],
                ended: dt & 4 != 0,
            },
            _ => Event::State { who, state },
        };
        out.push(Record {
            t,
            sys: Sym::LOCAL,
            ev,
        });
    }
    (out, s)
}

fn id_of(id: &LinkId) -> u64 {
    match id {
        LinkId::Num(n) => *n,
        LinkId::Str { key, .. } => *key,
    }
}

fn ops() -> impl Strategy<Value = Vec<Op>> {
    prop::collection::vec(
        (
            any::<u8>(),
            0u8..4,
            0u8..4,
            0u8..4,
            any::<u8>(),
            any::<u8>(),
            any::<bool>(),
        ),
        0..80,
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(3000))]

    #[test]
    fn engine_matches_oracle(ops in ops()) {
        let (recs, s) = build(&ops, false);
        prop_assert_eq!(engine(&recs, &s, None), oracle(&recs, &s, None));
    }

    #[test]
    fn split_walk_matches_oracle(ops in ops()) {
        let (recs, s) = build(&ops, true);
        prop_assert_eq!(engine_with(&recs, &s, None, (true, false)), oracle(&recs, &s, None));
    }

    #[test]
    fn engine_without_cgraph_matches_oracle(ops in ops(), stacks in any::<bool>(), split in any::<bool>()) {
        let (recs, s) = build(&ops, stacks);
        prop_assert_eq!(engine_with(&recs, &s, None, (split, true)), oracle(&recs, &s, None));
    }

    #[test]
    fn engine_matches_oracle_with_stacks(ops in ops()) {
        let (recs, s) = build(&ops, true);
        prop_assert_eq!(engine(&recs, &s, None), oracle(&recs, &s, None));
    }

    #[test]
    fn engine_matches_oracle_from(ops in ops(), from in 0u8..4) {
        let (recs, s) = build(&ops, false);
        let from = format!("sm{from}");
        let (mut e, mut o) = (engine(&recs, &s, Some(&from)), oracle(&recs, &s, Some(&from)));
        if e.start.is_none() {
            // Nothing reachable: the tables of visits still agree.
            e.states.clear();
            o.states.clear();
        }
        prop_assert_eq!(e, o);
    }

    #[test]
    fn whatif_matches_oracle(ops in ops(), sm in 0u8..4, st in 0u8..4, factor in prop::sample::select(vec![0.5, 1.5, 2.0, 3.0, 1e9, f64::INFINITY]), follows in any::<bool>(), own in prop::option::of(0u8..4), no_cgraph in any::<bool>()) {
        let (recs, s) = build(&ops, false);
        // Maybe state s1 scales with s0; maybe some SM's s1 is sped up
        // itself (its own factor wins over the one it scales with).
        let mut targets = vec![(format!("sm{sm}"), format!("s{st}"), factor)];
        targets.extend(own.map(|k| (format!("sm{k}"), "s1".to_string(), 3.0)));
        let mut speed = Whatif::default();
        let mut speedups = Vec::new();
        for (sm, st, factor) in targets {
            speed.factors.insert((sm.clone(), st.clone()), factor);
            speedups.push(critpath_engine::Speedup { target: format!("{sm}:{st}"), factor, exact: false });
        }
        let scales_with = match follows {
            true => vec![critpath_trace::ScalesWith { state: "s1".into(), with: "s0".into() }],
            false => Vec::new(),
        };
        speed.follows = scales_with.iter().map(|r| (r.state.to_string(), r.with.to_string())).collect();
        let opts = Options { speedups, scales_with, no_cgraph, ..Default::default() };
        let mut e = Engine::new(opts);
        for r in &recs { e.feed(r, Pos::NONE, &s); }
        match e.finish(&s) {
            Ok(a) => {
                let o = oracle_with(&recs, &s, None, &speed);
                prop_assert_eq!(a.critical_path.length_ns, o.length);
                prop_assert_eq!(a.critical_path.edges, o.edges);
                for r in &a.states {
                    prop_assert_eq!(r.critical_ns, o.states[&(r.sm.clone(), r.state.clone())].2);
                }
            }
            // The state never occurs: whatif says so.
            Err(err) => prop_assert!(err.to_string().contains("no such state"), "{}", err),
        }
    }

    /// A what-if answered from the first pass's kept graph (a re-walk)
    /// predicts what a pass of its own under the speed-ups finds.
    #[test]
    fn rewalk_matches_whatif_pass(ops in ops(), sm in 0u8..4, st in 0u8..4, factor in prop::sample::select(vec![0.5, 1.5, 2.0, 3.0, 1e9, f64::INFINITY]), follows in any::<bool>(), (from, to) in (prop::option::of(0u8..4), prop::option::of(0u8..4)), stacks in any::<bool>()) {
        let (recs, s) = build(&ops, stacks);
        let speedups = vec![critpath_engine::Speedup { target: format!("sm{sm}:s{st}"), factor, exact: false }];
        let scales_with = match follows {
            true => vec![critpath_trace::ScalesWith { state: "s1".into(), with: "s0".into() }],
            false => Vec::new(),
        };
        let (from, to) = (from.map(|k| format!("sm{k}")), to.map(|k| format!("sm{k}")));
        let pass = |speedups: Vec<critpath_engine::Speedup>, rewalk: bool| {
            let opts = Options { speedups, scales_with: scales_with.clone(), from: from.clone(), to: to.clone(), rewalk, ..Default::default() };
            let mut e = Engine::new(opts);
            for r in &recs { e.feed(r, Pos::NONE, &s); }
            e.finish(&s)
        };
        let Ok(first) = pass(Vec::new(), true) else {
            // --from or --to names an SM the trace lacks: no pass has a path.
            return Ok(());
        };
        let predicted = first.rewalk.as_ref().expect("a kept graph").predict(&speedups);
        match pass(speedups, false) {
            Ok(b) => {
                let want = critpath_engine::Prediction { length_ns: b.critical_path.length_ns, scaled_edges: b.stats.scaled_edges };
                prop_assert_eq!(predicted, Some(want));
            }
            // The state never occurs: nothing to predict.
            Err(err) => {
                prop_assert!(err.to_string().contains("no such state"), "{}", err);
                prop_assert_eq!(predicted, None);
            }
        }
    }

    #[test]
    fn slack_matches_oracle(ops in ops(), to in prop::option::of(0u8..4)) {
        let (recs, s) = build(&ops, true);
        let to = to.map(|k| format!("sm{k}"));
        let mut e = Engine::new(Options { slack: true, to: to.clone(), ..Default::default() });
        for r in &recs { e.feed(r, Pos::NONE, &s); }
        let Ok(a) = e.finish(&s) else {
            // --to names an SM the trace lacks.
            return Ok(());
        };
        let want = oracle_slack(&recs, &s, to.as_deref());
        for r in &a.states {
            prop_assert_eq!(r.slack_ns, want.get(&(r.sm.clone(), r.state.clone())).copied(), "{}:{}", r.sm, r.state);
            if r.critical_ns > 0 {
                prop_assert_eq!(r.slack_ns, Some(0));
            }
        }
    }

    #[test]
    fn windows_partition_the_path(ops in ops(), window in 1u64..40) {
        let (recs, s) = build(&ops, true);
        let mut e = Engine::new(Options { window_ns: Some(window), ..Default::default() });
        for r in &recs { e.feed(r, Pos::NONE, &s); }
        let a = e.finish(&s).unwrap();
        let ws = a.windows.clone().unwrap();
        let total: u64 = ws.iter().map(|w| w.path_ns).sum();
        prop_assert_eq!(total, a.critical_path.length_ns);
        let mut per: BTreeMap<(String, String), u64> = BTreeMap::new();
        for w in &ws {
            prop_assert_eq!(w.end_ns - w.start_ns, window);
            prop_assert_eq!(w.states.iter().map(|x| x.critical_ns).sum::<u64>(), w.path_ns);
            for x in &w.states {
                prop_assert!(x.critical_ns <= window);
                *per.entry((x.sm.clone(), x.state.clone())).or_default() += x.critical_ns;
            }
        }
        for r in a.states.iter().filter(|r| r.critical_ns > 0) {
            prop_assert_eq!(per.get(&(r.sm.clone(), r.state.clone())).copied().unwrap_or(0), r.critical_ns);
        }
    }

    #[test]
    fn criticalities_sum_to_one(ops in ops()) {
        let (recs, s) = build(&ops, true);
        let mut e = Engine::new(Options::default());
        for r in &recs { e.feed(r, Pos::NONE, &s); }
        let a = e.finish(&s).unwrap();
        let crit: u64 = a.states.iter().map(|r| r.critical_ns).sum();
        prop_assert_eq!(crit, a.critical_path.length_ns);
        if a.critical_path.length_ns > 0 {
            let sum: f64 = a.states.iter().map(|r| r.criticality).sum();
            prop_assert!((sum - 1.0).abs() < 1e-9);
        }
        prop_assert!(critpath_engine::check::violations(&a).is_empty(), "{:?}", critpath_engine::check::violations(&a));
    }

    /// Once every visit is closed (each SM ends), no state is more critical
    /// than it is long, even one whose path time is all on links (a recv of
    /// a message sent before the state began, a held piece charged to a
    /// holder that was elsewhere).
    #[test]
    fn no_state_is_more_critical_than_long(ops in ops(), stacks in any::<bool>(), end_all in any::<bool>()) {
        // With every visit closed at the end, or some left open (a holder
        // that never left its state before the trace ended).
        let (mut recs, mut s) = build(&ops, stacks);
        let t = recs.last().map_or(0, |r| r.t);
        for i in (0..4).filter(|_| end_all) {
            let who = Who::Sm(s.intern(&format!("sm{i}")));
            recs.push(Record { t, sys: Sym::LOCAL, ev: Event::End { who } });
        }
        let mut e = Engine::new(Options::default());
        for r in &recs { e.feed(r, Pos::NONE, &s); }
        let a = e.finish(&s).unwrap();
        for r in &a.states {
            prop_assert!(r.critical_ns <= r.total_ns, "{}: {}: {} critical > {} total", r.sm, r.state, r.critical_ns, r.total_ns);
        }
    }
}

/// Brute-force slack: for every edge, the longest path through it (longest
/// to its source + weight + longest from its target), against the longest
/// path of all; a state's slack is the least over the edges charged to it.
/// Toward SM `to`'s last node, only paths that end there count.
fn oracle_slack(
    records: &[Record],
    s: &Interner,
    to: Option<&str>,
) -> BTreeMap<(String, String), u64> {
    let (nodes, ins, _, _) = graph(records, s, None, &Whatif::default());
    let n = nodes.len();
    let mut l = vec![0i64; n];
    for i in 0..n {
        for e in &ins[i] {
            l[i] = l[i].max(l[e.from] + e.w as i64);
        }
    }
    // The longest path from each node to an end (None: none reaches it).
    let (lmax, mut r) = match to {
        None => (l.iter().copied().max().unwrap_or(0), vec![Some(0i64); n]),
        Some(sm) => {
            let mut r = vec![None; n];
            let Some(d) = nodes.iter().rposition(|x| x.sm == sm) else {
                return BTreeMap::new();
            };
            r[d] = Some(0);
            (l[d], r)
        }
    };
    for i in (0..n).rev() {
        let Some(ri) = r[i] else { continue };
        for e in &ins[i] {
            r[e.from] = r[e.from].max(Some(e.w as i64 + ri));
        }
    }
    let mut out: BTreeMap<(String, String), u64> = BTreeMap::new();
    for i in 0..n {
        let Some(ri) = r[i] else { continue };
        for e in &ins[i] {
            let slack = (lmax - (l[e.from] + e.w as i64 + ri)) as u64;
            let v = out.entry(e.key.clone()).or_insert(slack);
            *v = (*v).min(slack);
        }
    }
    out
}

/// A state ended by a waited `recv` costs nothing itself: the path goes
/// through the sender, and the sender's time since the path entered it is
/// blamed on it in the waiting state's row.
#[test]
fn a_waited_recv_blames_the_sender_for_the_wait() {
    let mut s = Interner::new();
    let (h, w) = (s.intern("h"), s.intern("w"));
    let (run, ready) = (s.intern("run"), s.intern("runnable"));
    let rec = |t, ev| Record {
        t,
        sys: Sym::LOCAL,
        ev,
    };
    let recs = vec![
        rec(
            0,
            Event::State {
                who: Who::Sm(h),
                state: run,
            },
        ),
        rec(
            0,
            Event::State {
                who: Who::Sm(w),
                state: run,
            },
        ),
        rec(
            2,
            Event::State {
                who: Who::Sm(w),
                state: ready,
            },
        ),
        rec(
            10,
            Event::Send {
                who: Who::Sm(h),
                id: LinkId::Num(1),
            },
        ),
        rec(10, Event::End { who: Who::Sm(h) }),
        rec(
            10,
            Event::Recv {
                who: Who::Sm(w),
                id: LinkId::Num(1),
                state: run,
                waited: true,
            },
        ),
        rec(12, Event::End { who: Who::Sm(w) }),
    ];
    let mut e = Engine::new(Options::default());
    for r in &recs {
        e.feed(r, Pos::NONE, &s);
    }
    let a = e.finish(&s).unwrap();
    assert_eq!(a.critical_path.length_ns, 12);
    assert_eq!(oracle(&recs, &s, None).length, 12);
    let row = |sm: &str, st: &str| {
        a.states
            .iter()
            .find(|r| r.sm == sm && r.state == st)
            .unwrap_or_else(|| panic!("{sm}:{st}"))
    };
    assert_eq!(row("w", "runnable").critical_ns, 0);
    let blame: Vec<(&str, u64)> = row("w", "runnable")
        .blame
        .iter()
        .map(|b| (b.sm.as_str(), b.ns))
        .collect();
    assert_eq!(blame, [("h", 10)]);
    assert!(row("h", "run").blame.is_empty());
    // Unwaited, the same recv charges the wait to the waiting state.
    let mut plain = recs.clone();
    if let Event::Recv { waited, .. } = &mut plain[5].ev {
        *waited = false;
    }
    let mut e = Engine::new(Options::default());
    for r in &plain {
        e.feed(r, Pos::NONE, &s);
    }
    let a = e.finish(&s).unwrap();
    assert!(a.states.iter().all(|r| r.blame.is_empty()));
    assert_eq!(a.critical_path.length_ns, 12);
}
