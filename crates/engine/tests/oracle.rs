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
    /// A `held` point: the piece so far was held by (SM, state).
    Held(String, String),
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

/// Resolves records to (t, sm, action) the simple way.
fn resolve(records: &[Record], s: &Interner) -> Vec<(u64, String, Act)> {
    let mut stacks: HashMap<String, Vec<String>> = HashMap::new();
    let mut cpus: HashMap<String, String> = HashMap::new();
    let mut calls: HashMap<String, Vec<(String, Option<String>)>> = HashMap::new();
    let mut cur: HashMap<String, Option<String>> = HashMap::new();
    let mut out = Vec::new();
    let name = |x: Sym| s.resolve(x).to_string();
    for r in records {
        let who = |w: Who,
                   stacks: &HashMap<String, Vec<String>>,
                   cpus: &HashMap<String, String>|
         -> Option<String> {
            match w {
                Who::Sm(x) => Some(name(x)),
                Who::Thread(th) => stacks.get(&name(th)).and_then(|v| v.last().cloned()),
                Who::Cpu(c) => cpus
                    .get(&name(c))
                    .and_then(|th| stacks.get(th))
                    .and_then(|v| v.last().cloned()),
            }
        };
        let mut push =
            |sm: String,
             act: Act,
             cur: &mut HashMap<String, Option<String>>,
             calls: &mut HashMap<String, Vec<(String, Option<String>)>>| {
                if let Act::Trans { state, .. } = &act {
                    cur.insert(sm.clone(), state.clone());
                    if state.is_none() {
                        calls.remove(&sm);
                    }
                }
                out.push((r.t, sm, act));
            };
        match r.ev {
            Event::State { who: w, state } => {
                if let Some(sm) = who(w, &stacks, &cpus) {
                    push(
                        sm,
                        Act::Trans {
                            state: Some(name(state)),
                            wait: Wait::No,
                            recv: None,
                        },
                        &mut cur,
                        &mut calls,
                    );
                }
            }
            Event::Wait {
                who: w,
                state,
                on,
                on_state,
                ..
            } => {
                if let Some(sm) = who(w, &stacks, &cpus) {
                    let wait = match on {
                        None => Wait::Open,
                        Some(b) => Wait::On(name(b), on_state.map(name)),
                    };
                    push(
                        sm,
                        Act::Trans {
                            state: Some(name(state)),
                            wait,
                            recv: None,
                        },
                        &mut cur,
                        &mut calls,
                    );
                }
            }
            Event::Recv {
                who: w,
                id,
                state,
                waited,
            } => {
                if let Some(sm) = who(w, &stacks, &cpus) {
                    let LinkId::Num(id) = id else {
                        panic!("numeric ids only")
                    };
                    push(
                        sm,
                        Act::Trans {
                            state: Some(name(state)),
                            wait: Wait::No,
                            recv: Some((id, waited)),
                        },
                        &mut cur,
                        &mut calls,
                    );
                }
            }
            Event::End { who: w } => {
                if let Some(sm) = who(w, &stacks, &cpus) {
                    push(
                        sm,
                        Act::Trans {
                            state: None,
                            wait: Wait::No,
                            recv: None,
                        },
                        &mut cur,
                        &mut calls,
                    );
                }
            }
            Event::Send { who: w, id } => {
                if let Some(sm) = who(w, &stacks, &cpus) {
                    let LinkId::Num(id) = id else {
                        panic!("numeric ids only")
                    };
                    out.push((r.t, sm, Act::Send(id)));
                }
            }
            Event::Held {
                who: w,
                on,
                on_state,
            } => {
                if let Some(sm) = who(w, &stacks, &cpus) {
                    out.push((r.t, sm, Act::Held(name(on), name(on_state))));
                }
            }
            Event::Call { who: w, func } => {
                if let Some(sm) = who(w, &stacks, &cpus) {
                    let caller = cur.get(&sm).cloned().flatten();
                    calls
                        .entry(sm.clone())
                        .or_default()
                        .push((name(func), caller));
                    push(
                        sm,
                        Act::Trans {
                            state: Some(name(func)),
                            wait: Wait::No,
                            recv: None,
                        },
                        &mut cur,
                        &mut calls,
                    );
                }
            }
            Event::Ret { who: w, func } => {
                if let Some(sm) = who(w, &stacks, &cpus) {
                    let st = calls.entry(sm.clone()).or_default();
                    if let Some(i) = st.iter().rposition(|(f, _)| *f == name(func)) {
                        let caller = st[i].1.clone();
                        st.truncate(i);
                        if let Some(c) = caller {
                            push(
                                sm,
                                Act::Trans {
                                    state: Some(c),
                                    wait: Wait::No,
                                    recv: None,
                                },
                                &mut cur,
                                &mut calls,
                            );
                        }
                    }
                }
            }
            Event::Push { thread, sm } => stacks.entry(name(thread)).or_default().push(name(sm)),
            Event::Pop { thread, sm } => {
                let st = stacks.entry(name(thread)).or_default();
                if let Some(i) = st.iter().rposition(|x| *x == name(sm)) {
                    st.truncate(i);
                }
            }
            Event::Switch { cpu, thread } => {
                cpus.insert(name(cpu), name(thread));
            }
        }
    }
    out
}

fn oracle(records: &[Record], s: &Interner, from: Option<&str>) -> Result_ {
    oracle_with(records, s, from, &HashMap::new())
}

/// The oracle with what-if speedups: intra-SM edges of a sped-up state
/// weigh their time divided by the factor, rounded.
/// The whole dependence graph: nodes, each node's in-edges, per-state
/// (visits, total), and the `--from` SM's first node.
type Graph = (
    Vec<Node>,
    Vec<Vec<Edge>>,
    BTreeMap<(String, String), (u64, u64, u64)>,
    Option<usize>,
);

fn oracle_with(
    records: &[Record],
    s: &Interner,
    from: Option<&str>,
    speed: &HashMap<(String, String), f64>,
) -> Result_ {
    let (nodes, ins, visits, from_first) = graph(records, s, from, speed);
    longest(nodes, ins, visits, from_first, from)
}

fn graph(
    records: &[Record],
    s: &Interner,
    from: Option<&str>,
    speed: &HashMap<(String, String), f64>,
) -> Graph {
    let scale = |key: &(String, String), w: u64| -> u64 {
        match speed.get(key) {
            Some(f) => (w as f64 / f).round() as u64,
            None => w,
        }
    };
    let acts = resolve(records, s);
    let mut nodes: Vec<Node> = Vec::new();
    let mut ins: Vec<Vec<Edge>> = Vec::new();
    // Per SM: (state, entered, piece start, wait, last node) while alive.
    let mut live: HashMap<String, (String, u64, u64, Wait, usize)> = HashMap::new();
    let mut consumed: HashSet<usize> = HashSet::new();
    let mut visits: BTreeMap<(String, String), (u64, u64, u64)> = BTreeMap::new();
    let mut seen_sm: HashSet<String> = HashSet::new();
    let mut from_first: Option<usize> = None;
    for (t, sm, act) in acts {
        // A `held` point of an SM in no state is not a node.
        if matches!(act, Act::Held(..)) && !live.contains_key(&sm) {
            continue;
        }
        let n = nodes.len();
        let mut edges = Vec::new();
        let first_ever = seen_sm.insert(sm.clone());
        if first_ever && from == Some(sm.as_str()) {
            from_first = Some(n);
        }
        match act {
            Act::Send(id) => {
                let first = match live.get_mut(&sm) {
                    Some((st, _, piece, _, last)) => {
                        let key = (sm.clone(), st.clone());
                        edges.push(Edge {
                            from: *last,
                            w: scale(&key, t - *piece),
                            key,
                            inter: false,
                            held: false,
                            held_for: None,
                        });
                        visits.entry((sm.clone(), st.clone())).or_default().1 += t - *piece;
                        *piece = t;
                        *last = n;
                        false
                    }
                    None => true,
                };
                nodes.push(Node {
                    sm: sm.clone(),
                    t,
                    into: None,
                    send: Some(id),
                    first,
                });
            }
            Act::Held(holder, hstate) => {
                let (st, _, piece, _, last) = live.get_mut(&sm).expect("alive");
                let key = (holder, hstate);
                edges.push(Edge {
                    from: *last,
                    w: scale(&key, t - *piece),
                    key,
                    inter: false,
                    held: false,
                    held_for: Some((sm.clone(), st.clone())),
                });
                visits.entry((sm.clone(), st.clone())).or_default().1 += t - *piece;
                *piece = t;
                *last = n;
                nodes.push(Node {
                    sm: sm.clone(),
                    t,
                    into: None,
                    send: None,
                    first: false,
                });
            }
            Act::Trans { state, wait, recv } => {
                let prev = live.remove(&sm);
                // Inter-SM candidate, found by searching the whole graph so far.
                let mut inter: Option<(usize, u64)> = None;
                let mut zero = false;
                let mut held = false;
                if let Some((id, waited)) = recv {
                    let snd = (0..n)
                        .rev()
                        .find(|&i| nodes[i].send == Some(id) && !consumed.contains(&i));
                    if let Some(i) = snd {
                        // A send supersedes earlier unreceived sends of its id.
                        consumed.extend((0..=i).filter(|&j| nodes[j].send == Some(id)));
                        inter = Some((i, t - nodes[i].t));
                        held = waited;
                        // A waiting state, or a recv that says its state
                        // waited for the link, costs nothing itself.
                        zero = waited || matches!(&prev, Some((_, _, _, w, _)) if *w != Wait::No);
                    }
                } else if let Some((_, entered, _, Wait::On(b, z), _)) = &prev {
                    let m = (0..n).rev().find(|&i| {
                        nodes[i].sm == *b
                            && match (&nodes[i].into, z) {
                                (Some(_), None) => true,
                                (Some(Some(st)), Some(z)) => st == z,
                                _ => false,
                            }
                    });
                    if let Some(i) = m {
                        if nodes[i].t >= *entered && nodes[i].t <= t {
                            inter = Some((i, t - nodes[i].t));
                            zero = true;
                        }
                    }
                }
                let first = prev.is_none();
                if let Some((st, _, piece, _, last)) = &prev {
                    // The last piece of the visit (sends added the earlier ones).
                    let occ = t - piece;
                    let key = (sm.clone(), st.clone());
                    edges.push(Edge {
                        from: *last,
                        w: if zero { 0 } else { scale(&key, occ) },
                        key,
                        inter: false,
                        held: false,
                        held_for: None,
                    });
                    visits.entry((sm.clone(), st.clone())).or_default().1 += occ;
                }
                if let Some((i, w)) = inter {
                    let key = match &prev {
                        Some((st, ..)) => (sm.clone(), st.clone()),
                        None => (sm.clone(), state.clone().unwrap_or_default()),
                    };
                    // A first node's wait is time spent in the state it enters.
                    if prev.is_none() {
                        visits.entry(key.clone()).or_default().1 += w;
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
                    visits.entry((sm.clone(), st.clone())).or_default().0 += 1;
                    live.insert(sm.clone(), (st.clone(), t, t, wait, n));
                }
                nodes.push(Node {
                    sm: sm.clone(),
                    t,
                    into: Some(state),
                    send: None,
                    first,
                });
            }
        }
        ins.push(edges);
    }
    (nodes, ins, visits, from_first)
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
    engine_with(records, s, from, false)
}

/// [`engine`], with the walk back split over two threads however short
/// it is (`split`).
fn engine_with(records: &[Record], s: &Interner, from: Option<&str>, split: bool) -> Result_ {
    let mut e = Engine::new(Options {
        from: from.map(String::from),
        ..Default::default()
    });
    if split {
        e.split_walks_early();
    }
    for r in records {
        e.feed(r, Pos::None, s);
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
        prop_assert_eq!(engine_with(&recs, &s, None, true), oracle(&recs, &s, None));
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
    fn whatif_matches_oracle(ops in ops(), sm in 0u8..4, st in 0u8..4, factor in prop::sample::select(vec![0.5, 1.5, 2.0, 3.0, 1e9, f64::INFINITY])) {
        let (recs, s) = build(&ops, false);
        let (sm, st) = (format!("sm{sm}"), format!("s{st}"));
        let mut speed = HashMap::new();
        speed.insert((sm.clone(), st.clone()), factor);
        let opts = Options { speedups: vec![critpath_engine::Speedup { target: format!("{sm}:{st}"), factor }], ..Default::default() };
        let mut e = Engine::new(opts);
        for r in &recs { e.feed(r, Pos::None, &s); }
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

    #[test]
    fn slack_matches_oracle(ops in ops()) {
        let (recs, s) = build(&ops, true);
        let mut e = Engine::new(Options { slack: true, ..Default::default() });
        for r in &recs { e.feed(r, Pos::None, &s); }
        let a = e.finish(&s).unwrap();
        let want = oracle_slack(&recs, &s);
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
        for r in &recs { e.feed(r, Pos::None, &s); }
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
        for r in &recs { e.feed(r, Pos::None, &s); }
        let a = e.finish(&s).unwrap();
        let crit: u64 = a.states.iter().map(|r| r.critical_ns).sum();
        prop_assert_eq!(crit, a.critical_path.length_ns);
        if a.critical_path.length_ns > 0 {
            let sum: f64 = a.states.iter().map(|r| r.criticality).sum();
            prop_assert!((sum - 1.0).abs() < 1e-9);
        }
        prop_assert!(critpath_engine::check::violations(&a).is_empty(), "{:?}", critpath_engine::check::violations(&a));
    }
}

/// Brute-force slack: for every edge, the longest path through it (longest
/// to its source + weight + longest from its target), against the longest
/// path of all; a state's slack is the least over the edges charged to it.
fn oracle_slack(records: &[Record], s: &Interner) -> BTreeMap<(String, String), u64> {
    let (nodes, ins, _, _) = graph(records, s, None, &HashMap::new());
    let n = nodes.len();
    let mut l = vec![0i64; n];
    for i in 0..n {
        for e in &ins[i] {
            l[i] = l[i].max(l[e.from] + e.w as i64);
        }
    }
    let lmax = l.iter().copied().max().unwrap_or(0);
    let mut r = vec![0i64; n];
    for i in (0..n).rev() {
        for e in &ins[i] {
            r[e.from] = r[e.from].max(e.w as i64 + r[i]);
        }
    }
    let mut out: BTreeMap<(String, String), u64> = BTreeMap::new();
    for i in 0..n {
        for e in &ins[i] {
            let slack = (lmax - (l[e.from] + e.w as i64 + r[i])) as u64;
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
        e.feed(r, Pos::None, &s);
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
        e.feed(r, Pos::None, &s);
    }
    let a = e.finish(&s).unwrap();
    assert!(a.states.iter().all(|r| r.blame.is_empty()));
    assert_eq!(a.critical_path.length_ns, 12);
}
