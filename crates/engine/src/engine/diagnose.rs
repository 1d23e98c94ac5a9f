//! The engine's diagnostics, in prose: records that do not fit their SM's
//! stack, receives without a send, waits that advanced early, states that
//! are long with no wait, and a destination the start does not reach. At
//! most [`DIAG_DETAIL`] of a kind are kept one by one; the rest are counted.
//! They are put in words at the end, when SM names are final.

use super::names::{link_label, sm_label};
use super::walk::Walked;
use super::{Engine, WaitOn, NONE32};
use critpath_trace::{Diagnostic, DiagnosticKind, Interner, LinkId, Pos, Sym};
use rustc_hash::{FxHashMap, FxHashSet};

/// Detailed diagnostics kept per kind; the rest are counted.
pub(super) const DIAG_DETAIL: usize = 10;

/// A diagnostic as the engine meets it, put in words at the end: SM names
/// are final only then (a source may rename SMs at its end, see
/// `RecordSource::prepare`). What may be gone by then (a transient link
/// id's text) is put in words at once.
type Late = Box<dyn FnOnce(&Interner) -> Diagnostic + Send>;

/// The engine's diagnostics so far, and those handed to it from outside.
#[derive(Default)]
pub(super) struct DiagSink {
    detail: Vec<Late>,
    counts: FxHashMap<DiagnosticKind, u64>,
    /// Diagnostics that do not come from the engine (a reader's errors...).
    pub extra: Vec<Diagnostic>,
}

/// How `path-gap` ends when the path was not walked edge by edge, and how
/// it names the states its gaps lie in when it was.
pub(crate) const GAP_UNNAMED: &str = "`analyze --path` shows where";
pub(crate) const GAP_NAMED: &str = "most in ";

impl DiagSink {
    /// Counts one of `kind`; true while it should still be shown in detail.
    pub fn want(&mut self, kind: DiagnosticKind) -> bool {
        let c = self.counts.entry(kind).or_insert(0);
        *c += 1;
        *c as usize <= DIAG_DETAIL
    }

    /// Keeps a diagnostic, to be put in words with the final names.
    pub fn push(&mut self, d: impl FnOnce(&Interner) -> Diagnostic + Send + 'static) {
        self.detail.push(Box::new(d));
    }

    /// The detailed diagnostics (in words, with `strings`' names), then one
    /// count per kind with more than were shown (by kind name), then
    /// `findings` and the outside ones.
    pub fn take_all(&mut self, findings: Vec<Diagnostic>, strings: &Interner) -> Vec<Diagnostic> {
        let mut all: Vec<Diagnostic> = self.detail.drain(..).map(|d| d(strings)).collect();
        let mut kinds: Vec<_> = self
            .counts
            .iter()
            .map(|(k, v)| (k.as_str(), *k, *v))
            .collect();
        kinds.sort();
        for (name, kind, n) in kinds {
            if n as usize > DIAG_DETAIL {
                let more = n as usize - DIAG_DETAIL;
                all.push(
                    Diagnostic::new(
                        kind,
                        format!("{more} more {name} diagnostics not shown ({n} in all)"),
                    )
                    .count(n - DIAG_DETAIL as u64),
                );
            }
        }
        all.extend(findings);
        all.append(&mut self.extra);
        all
    }
}

/// A record about a CPU no thread was switched onto.
pub(super) fn cpu_unswitched(strings: &Interner, cpu: Sym, t: u64, pos: Pos) -> Diagnostic {
    Diagnostic::new(
        DiagnosticKind::StackMismatch,
        format!(
            "record for CPU {} at t={t} ({pos}) but no thread was switched onto that CPU; record ignored",
            strings.resolve(cpu)
        ),
    )
    .at(t, pos)
}

/// A record about a thread whose SM stack is empty.
pub(super) fn empty_stack(strings: &Interner, thread: Sym, t: u64, pos: Pos) -> Diagnostic {
    Diagnostic::new(
        DiagnosticKind::StackMismatch,
        format!(
            "record for thread {} at t={t} ({pos}) but its SM stack is empty (missing push?); record ignored",
            strings.resolve(thread)
        ),
    )
    .at(t, pos)
}

/// A pop of an SM that is not on top of the thread's stack.
pub(super) struct PopMismatch {
    pub thread: Sym,
    pub name: Sym,
    /// The SM on top of the stack, if any.
    pub top: Option<Sym>,
    /// Was the SM found lower in the stack (and popped with those above)?
    pub popped: bool,
}

impl PopMismatch {
    pub fn diagnostic(&self, strings: &Interner, t: u64, pos: Pos) -> Diagnostic {
        let what = match self.top {
            Some(top) => format!("the top is {}", strings.resolve(top)),
            None => "the stack is empty".to_string(),
        };
        let fix = if self.popped {
            "popped it and the SMs above it"
        } else {
            "record ignored"
        };
        Diagnostic::new(
            DiagnosticKind::StackMismatch,
            format!(
                "thread {}: pop {} at t={t} ({pos}) but {what}; {fix}",
                strings.resolve(self.thread),
                strings.resolve(self.name)
            ),
        )
        .at(t, pos)
    }
}

/// Why a `ret` does not match the SM's calls.
pub(super) enum RetMismatch {
    /// It returns from an outer call: `depth` inner calls never returned.
    SkipsInner { depth: usize },
    /// The call was made before the SM had any state.
    BeforeAnyState,
    /// No open call of that function: `inner` is the innermost one.
    NoSuchCall { inner: Option<Sym> },
}

impl Engine<'_> {
    /// Reports a `ret` of SM `sm` from `func` that does not match its calls.
    pub(super) fn ret_mismatch(
        &mut self,
        sm: u32,
        func: Sym,
        why: RetMismatch,
        (t, pos): (u64, Pos),
    ) {
        if !self.diags.want(DiagnosticKind::StackMismatch) {
            return;
        }
        let s = &self.m.sms[sm as usize];
        let (sys, name) = (s.sys, s.name);
        self.diags.push(move |strings| {
            let (label, func) = (sm_label(strings, sys, name), strings.resolve(func));
            let message = match why {
                RetMismatch::SkipsInner { depth } => format!(
                    "{label}: ret from {func} at t={t} ({pos}) skips {depth} inner call(s) that never returned"
                ),
                RetMismatch::BeforeAnyState => format!(
                    "{label}: ret from {func} at t={t} ({pos}) but the call was made before any state; no state to return to"
                ),
                RetMismatch::NoSuchCall { inner } => {
                    let inner = inner
                        .map(|f| format!("the innermost call is {}", strings.resolve(f)))
                        .unwrap_or_else(|| "there is no call to return from".to_string());
                    format!("{label}: ret from {func} at t={t} ({pos}) but {inner}; record ignored")
                }
            };
            Diagnostic::new(DiagnosticKind::StackMismatch, message)
                .on(strings, sys, name)
                .at(t, pos)
        });
    }

    /// Reports a `recv` of SM `sm` whose id has no pending send.
    pub(super) fn recv_without_send(
        &mut self,
        sm: u32,
        id: LinkId,
        (t, pos): (u64, Pos),
        strings: &Interner,
    ) {
        self.link_finding(DiagnosticKind::RecvWithoutSend, sm, id, (t, pos), strings, move |sm, id| format!(
            "{sm}: recv of id {id} at t={t} ({pos}) has no pending send (none was sent before it, or an earlier recv took it: a send is received once); the dependence is missing (record a send before each recv)"
        ));
    }

    /// Reports a send of `id` by SM `sm` while the send of that id at
    /// `earlier` was still pending: the earlier one is dropped unreceived.
    #[cold]
    pub(super) fn send_reused(
        &mut self,
        sm: u32,
        id: LinkId,
        earlier: u64,
        (t, pos): (u64, Pos),
        strings: &Interner,
    ) {
        self.link_finding(DiagnosticKind::SendIdReused, sm, id, (t, pos), strings, move |sm, id| format!(
            "{sm}: send of id {id} at t={t} ({pos}) while the send of that id at t={earlier} was not yet received: the earlier send was dropped, and a recv of the id depends on this one (give each message an id of its own)"
        ));
    }

    /// A finding of `kind` about link `id` of SM `sm` at `(t, pos)`, if
    /// findings of the kind are still wanted: `say` makes its message of
    /// the SM's label and the id's (taken now: a transient id's text may be
    /// gone by the end).
    pub(super) fn link_finding(
        &mut self,
        kind: DiagnosticKind,
        sm: u32,
        id: LinkId,
        (t, pos): (u64, Pos),
        strings: &Interner,
        say: impl FnOnce(&str, &str) -> String + Send + 'static,
    ) {
        if !self.diags.want(kind) {
            return;
        }
        let s = &self.m.sms[sm as usize];
        let (sys, name) = (s.sys, s.name);
        let id = link_label(strings, id);
        self.diags.push(move |strings| {
            Diagnostic::new(kind, say(&sm_label(strings, sys, name), &id))
                .on(strings, sys, name)
                .at(t, pos)
        });
    }

    /// Reports that SM `sm` left its waiting state `key` too early: it
    /// waited as `wait` says, and `seen` is the awaited transition found.
    pub(super) fn early(
        &mut self,
        sm: u32,
        key: u32,
        (wait, seen, entered): (WaitOn, Option<u64>, u64),
        (t, pos): (u64, Pos),
    ) {
        if !self.diags.want(DiagnosticKind::WaitAdvancedEarly) {
            return;
        }
        let s = &self.m.sms[sm as usize];
        let (sys, name, state) = (s.sys, s.name, self.m.keys[key as usize].state);
        self.diags.push(move |strings| {
            let why = why_early(wait, seen, entered, strings);
            let state = strings.resolve(state);
            Diagnostic::new(
                DiagnosticKind::WaitAdvancedEarly,
                format!(
                    "{}: left waiting state '{state}' at t={t} ({pos}) too early: {why}; the dependence is probably wrong or incomplete",
                    sm_label(strings, sys, name),
                ),
            )
            .on(strings, sys, name)
            .state(state)
            .at(t, pos)
        });
    }
}

/// Why a wait that advanced early was early, in words.
fn why_early(wait: WaitOn, seen: Option<u64>, entered: u64, strings: &Interner) -> String {
    let WaitOn::On { sm: on, state, .. } = wait else {
        return "it is an open wait that only a recv can end, and the SM moved on without one"
            .into();
    };
    let what = if state == NONE32 {
        format!("{} to make a transition", strings.resolve(on))
    } else {
        format!(
            "{} to enter {}",
            strings.resolve(on),
            strings.resolve(Sym(state))
        )
    };
    let seen = match seen {
        Some(t) => {
            format!("its latest such transition was at t={t}, before the wait began at t={entered}")
        }
        None => "none had happened yet".into(),
    };
    format!("it waited for {what} and {seen}")
}

impl Engine<'_> {
    /// `long-state`: a visit that took most of its SM's observed life and
    /// ten times its other visits' mean, in a state that is no wait.
    pub(super) fn long_states(&self, strings: &Interner) -> Vec<Diagnostic> {
        // Per SM: state visits and their summed time.
        let mut sm_visits = vec![(0u64, 0u64); self.m.sms.len()];
        for k in &self.m.keys {
            sm_visits[k.sm as usize].0 += k.timed_visits;
            sm_visits[k.sm as usize].1 += k.total;
        }
        let share = self.opts.long_state_share.unwrap_or(0.5);
        let mut long = Vec::new();
        for k in &self.m.keys {
            let s = &self.m.sms[k.sm as usize];
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
                && others >= 1
                && life > 0
                && k.max_visit as f64 >= share * life as f64
                && k.max_visit as f64 >= 10.0 * other_mean
            {
                long.push((k.max_visit, k));
            }
        }
        long.sort_by_key(|x| std::cmp::Reverse(x.0));
        let long_count = long.len();
        let mut out = Vec::new();
        for (v, k) in long.into_iter().take(DIAG_DETAIL) {
            let s = &self.m.sms[k.sm as usize];
            let life = s.last_t - s.first_t;
            let state = strings.resolve(k.state);
            out.push(
                Diagnostic::new(
                    DiagnosticKind::LongState,
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
            out.push(
                Diagnostic::new(
                    DiagnosticKind::LongState,
                    format!(
                        "{} more long-state diagnostics not shown",
                        long_count - DIAG_DETAIL
                    ),
                )
                .count(long_count as u64 - DIAG_DETAIL as u64),
            );
        }
        out
    }

    /// `path-gap`: the path is shorter than the time between its ends by
    /// more than a twentieth: waits on it weigh nothing because the chain
    /// that ended them is shorter than the wait. Names the states (when
    /// the walk went edge by edge). Not with what-if speed-ups, which
    /// shorten edges on purpose.
    pub(super) fn path_gap(&self, w: &Walked, strings: &Interner) -> Option<Diagnostic> {
        let p = &w.path;
        let span = p.end.t.saturating_sub(p.start.t);
        let gap = span.saturating_sub(p.length_ns);
        if !p.found || !self.opts.speedups.is_empty() || gap == 0 || gap * 20 < span {
            return None;
        }
        let mut gaps: Vec<(u32, u64)> = w.gaps.iter().map(|(&k, &g)| (k, g)).collect();
        gaps.sort_by_key(|&(k, g)| (std::cmp::Reverse(g), k));
        let named: Vec<String> = gaps
            .iter()
            .filter(|&&(k, _)| k != NONE32)
            .take(3)
            .map(|&(k, g)| {
                let key = &self.m.keys[k as usize];
                let s = &self.m.sms[key.sm as usize];
                let state = strings.resolve(key.state);
                format!("{} '{state}' ({g} ns)", sm_label(strings, s.sys, s.name))
            })
            .collect();
        let where_ = if named.is_empty() {
            GAP_UNNAMED.to_string()
        } else {
            format!("{GAP_NAMED}{}", named.join(", "))
        };
        let message = format!(
            "the critical path is {} ns long but runs {span} ns from its start to its end: {gap} ns ({:.0}%) lie in waits that the chain ending them does not cover, so no state is charged for them; a dependence is probably missing (the work of a device, a thread or a host the trace does not show); {where_}",
            p.length_ns,
            100.0 * gap as f64 / span as f64
        );
        Some(Diagnostic::new(DiagnosticKind::PathGap, message))
    }

    /// `disconnected`: the destination (SM `dest`, or none at all) is not
    /// reachable from the start SM; names the SMs with no incoming inter-SM
    /// edge that the destination's dependences lead back to.
    pub(super) fn disconnected(&self, dest: Option<u32>, strings: &Interner) -> Diagnostic {
        let from = self.opts.from.clone().unwrap_or_default();
        let Some(dest) = dest else {
            return Diagnostic::new(
                DiagnosticKind::Disconnected,
                format!("no node is reachable from the first node of {from}: the trace has no path starting there"),
            );
        };
        let (seen, roots) = self.sources_of(dest);
        let label = |i: u32| {
            let s = &self.m.sms[i as usize];
            sm_label(strings, s.sys, s.name)
        };
        let mut root_names: Vec<String> = roots.into_iter().map(label).collect();
        root_names.sort();
        let d = &self.m.sms[dest as usize];
        if root_names.is_empty() {
            let dest = sm_label(strings, d.sys, d.name);
            let msg = format!(
                "{dest} is not reachable from {from}. Walking inter-SM edges back from {dest} reaches {seen} SM(s), every one with an incoming inter-SM edge (they depend on one another), and {from} is not among them: a dependence from {from} into one of them is probably missing"
            );
            return Diagnostic::new(DiagnosticKind::Disconnected, msg).on(strings, d.sys, d.name);
        }
        Diagnostic::new(
            DiagnosticKind::Disconnected,
            format!(
                "{} is not reachable from {from}. Walking inter-SM edges back from {} reaches {} SM(s); {} {} no incoming inter-SM edge: a dependence into {} is probably missing (or a resource is so under-provisioned that a producer always waits on its consumer)",
                sm_label(strings, d.sys, d.name),
                sm_label(strings, d.sys, d.name),
                seen,
                root_names.join(", "),
                if root_names.len() == 1 { "has" } else { "have" },
                if root_names.len() == 1 { "it" } else { "them" },
            ),
        )
        .on(strings, d.sys, d.name)
    }

    /// Walks inter-SM edges backwards from SM `dest`: how many SMs it
    /// reaches, and those with no incoming inter-SM edge.
    fn sources_of(&self, dest: u32) -> (usize, Vec<u32>) {
        let mut incoming: FxHashMap<u32, Vec<u32>> = FxHashMap::default();
        for &(a, b) in &self.g.sm_links {
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
        (seen.len(), roots)
    }
}
