//! Matching the names users type against the trace's: `SM` or `SYS/SM`
//! specs, the labels diagnostics print, and the nearest names suggested when
//! a name matches nothing (by edit distance).
//!
//! A thread's SM is named `COMM:TID`, and the id changes from run to run: a
//! spec may name it by `COMM` alone (which must then name one SM: see
//! [`Matched`]), or by `COMM:*` for every thread of that name.

use critpath_trace::lanes::lane_of;
use critpath_trace::{Interner, LinkId, Sym};

/// Does `spec` (`SM` or `SYS/SM`) name the SM `name` of system `sys`?
pub(crate) fn sm_matches(spec: &str, sys: &str, name: &str) -> bool {
    if spec == name {
        return true;
    }
    spec.len() == sys.len() + 1 + name.len()
        && spec.starts_with(sys)
        && spec.as_bytes()[sys.len()] == b'/'
        && spec.ends_with(name)
}

/// Does `spec` name state `state` of SM `name` in system `sys`? Accepted:
/// `SM:STATE`, `SM: STATE` (as tables and verdicts print it), and either
/// with a `SYS/` prefix. Names may hold ':' themselves, so the SM's name is
/// matched as a prefix rather than split off at the first ':'.
pub(crate) fn state_matches(spec: &str, sys: &str, name: &str, state: &str) -> bool {
    let spec = spec.trim();
    let rest = match spec.strip_prefix(sys).and_then(|r| r.strip_prefix('/')) {
        Some(r) if r.starts_with(name) => r,
        _ => spec,
    };
    rest.strip_prefix(name)
        .and_then(|r| r.strip_prefix(':'))
        .is_some_and(|r| r.trim_start() == state || r == state)
}

/// How a spec named an SM.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum How {
    /// By its full name.
    Exact,
    /// By a thread's name without its id (`COMM` for `COMM:TID`).
    WithoutId,
    /// By `COMM:*`: every thread of that name.
    Every,
    /// A lane `SM#N` of the SM named in full (see [`lane_state_named`]).
    Lane,
}

/// `COMM` of a thread's SM name `COMM:TID` (the id all digits).
pub(crate) fn without_id(name: &str) -> Option<&str> {
    let (comm, id) = name.rsplit_once(':')?;
    let digits = !id.is_empty() && id.bytes().all(|b| b.is_ascii_digit());
    (digits && !comm.is_empty()).then_some(comm)
}

/// How `spec` (`SM` or `SYS/SM`) names the SM `name` of system `sys`, if
/// it does.
pub(crate) fn sm_named(spec: &str, sys: &str, name: &str) -> Option<How> {
    if sm_matches(spec, sys, name) {
        return Some(How::Exact);
    }
    let comm = without_id(name)?;
    if sm_matches(spec, sys, comm) {
        return Some(How::WithoutId);
    }
    sm_matches(spec, sys, &format!("{comm}:*")).then_some(How::Every)
}

/// How `spec` (`SM:STATE`, see [`state_matches`]) names state `state` of
/// the SM `name` of system `sys`, if it does.
pub(crate) fn state_named(spec: &str, sys: &str, name: &str, state: &str) -> Option<How> {
    if state_matches(spec, sys, name, state) {
        return Some(How::Exact);
    }
    let comm = without_id(name)?;
    if state_matches(spec, sys, comm, state) {
        return Some(How::WithoutId);
    }
    state_matches(spec, sys, &format!("{comm}:*"), state).then_some(How::Every)
}

/// How `spec` (`SM:STATE`) names state `state` of SM `name` when `name` is
/// a lane `SM#N` (the importers' overlapping tracks of one service or
/// thread) and the spec names the state of `SM` in full: by
/// [`How::Lane`], so that a speed-up of a service's span name speeds up
/// that span on every lane of the service.
pub(crate) fn lane_state_named(spec: &str, sys: &str, name: &str, state: &str) -> Option<How> {
    let base = lane_of(name)?;
    state_matches(spec, sys, base, state).then_some(How::Lane)
}

/// The SMs one spec matched, for telling at the end whether a name given
/// without a thread id named one SM: it is ambiguous when it matched
/// several SMs that way, or one that way and another by its full name.
#[derive(Clone, Debug, Default)]
pub(crate) struct Matched {
    pub(crate) any: bool,
    exact: Vec<u32>,
    without_id: Vec<u32>,
}

impl Matched {
    pub(crate) fn add(&mut self, sm: u32, how: How) {
        self.any = true;
        let list = match how {
            How::Exact => &mut self.exact,
            How::WithoutId => &mut self.without_id,
            _ => return,
        };
        if !list.contains(&sm) {
            list.push(sm);
        }
    }

    /// The SMs matched without their id, when they make the spec ambiguous.
    pub(crate) fn ambiguous(&self) -> Option<&[u32]> {
        let n = self.without_id.len();
        (n > 1 || (n == 1 && !self.exact.is_empty())).then_some(&self.without_id[..])
    }

    /// The SMs of several systems matched by their full name (a spec
    /// without `SYS/`), when there are more than one.
    pub(crate) fn in_several_systems(&self) -> Option<&[u32]> {
        (self.exact.len() > 1).then_some(&self.exact[..])
    }
}

/// "a, b, c" of SM labels, the first ten and a count of the rest.
pub(crate) fn sm_list(labels: impl Iterator<Item = String>) -> String {
    let all: Vec<String> = labels.collect();
    let mut s = all.iter().take(10).cloned().collect::<Vec<_>>().join(", ");
    if all.len() > 10 {
        s.push_str(&format!(" and {} more", all.len() - 10));
    }
    s
}

/// How a speed-up `spec` without a state (`SM`, `SYS/SM`, a thread's name
/// without its id, or `COMM:*`) names state `state` of SM `name`, if it
/// does. It names every state of the SM and of its lanes (`SM#2`, `SM#3`,
/// ...: the importers' overlapping tracks of one service or thread), except
/// `idle`, the importers' name for the gaps between slices, which is no work
/// to speed up.
pub(crate) fn whole_sm_named(spec: &str, sys: &str, name: &str, state: &str) -> Option<How> {
    if state == "idle" {
        return None;
    }
    let spec = spec.trim();
    sm_named(spec, sys, name).or_else(|| sm_named(spec, sys, lane_of(name)?))
}

/// `SM`, or `SYS/SM` outside the local system.
pub(crate) fn sm_label(strings: &Interner, sys: Sym, name: Sym) -> String {
    if sys == Sym::LOCAL {
        strings.resolve(name).to_string()
    } else {
        format!("{}/{}", strings.resolve(sys), strings.resolve(name))
    }
}

/// A link id as diagnostics print it: a number, or a quoted string.
pub(crate) fn link_label(strings: &Interner, id: LinkId) -> String {
    match id {
        LinkId::Num(n) => n.to_string(),
        LinkId::Str { sym, .. } => format!("\"{}\"", strings.resolve(sym)),
    }
}

/// "; nearest: a, b, c" for the names closest to `want`, or "".
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

/// Levenshtein distance between `a` and `b`, by characters.
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_match_bare_and_qualified_names() {
        assert!(sm_matches("db", "local", "db"));
        assert!(sm_matches("hostA/db", "hostA", "db"));
        assert!(!sm_matches("hostB/db", "hostA", "db"));
        assert!(!sm_matches("d", "local", "db"));
    }

    #[test]
    fn an_sm_alone_names_its_states_and_lanes_but_idle() {
        assert!(whole_sm_named("db", "local", "db", "SELECT orders").is_some());
        assert!(whole_sm_named("db", "local", "db#2", "SELECT orders").is_some());
        assert!(whole_sm_named("h/db", "h", "db#12", "q").is_some());
        assert!(whole_sm_named("db", "local", "db", "idle").is_none());
        assert!(whole_sm_named("db", "local", "dbx", "q").is_none());
        assert!(whole_sm_named("db", "local", "db#x", "q").is_none());
        assert!(whole_sm_named("db:q", "local", "db", "q").is_none());
        assert!(whole_sm_named("g/db", "h", "db", "q").is_none());
    }

    #[test]
    fn a_state_spec_names_the_state_on_the_sms_lanes() {
        let n = |spec, name| lane_state_named(spec, "h", name, "w2");
        assert_eq!(n("worker:w2", "worker#2"), Some(How::Lane));
        assert_eq!(n("h/worker: w2", "worker#13"), Some(How::Lane));
        assert_eq!(n("worker:w2", "worker"), None);
        assert_eq!(n("worker:w1", "worker#2"), None);
        assert_eq!(n("work:w2", "worker#2"), None);
        assert_eq!(n("worker:w2", "worker#x"), None);
        assert_eq!(n("worker#2:w2", "worker#2"), None);
    }

    #[test]
    fn state_specs_match_as_printed() {
        assert!(state_matches(
            "nic.tx:DMA packet",
            "local",
            "nic.tx",
            "DMA packet"
        ));
        assert!(state_matches(
            "nic.tx: DMA packet",
            "local",
            "nic.tx",
            "DMA packet"
        ));
        assert!(state_matches("h/db: io", "h", "db", "io"));
        assert!(state_matches(
            "irq:3:blocked:io",
            "local",
            "irq:3",
            "blocked:io"
        ));
        assert!(!state_matches(
            "nic.tx:DMA",
            "local",
            "nic.tx",
            "DMA packet"
        ));
        assert!(!state_matches("g/db:io", "h", "db", "io"));
    }

    #[test]
    fn threads_are_named_without_their_id_or_all_at_once() {
        assert_eq!(without_id("stageB:5475"), Some("stageB"));
        assert_eq!(without_id("irq:3:x"), None);
        assert_eq!(without_id(":12"), None);
        let n = |spec| state_named(spec, "h", "stageB:5475", "running");
        assert_eq!(n("stageB:5475:running"), Some(How::Exact));
        assert_eq!(n("stageB:running"), Some(How::WithoutId));
        assert_eq!(n("h/stageB: running"), Some(How::WithoutId));
        assert_eq!(n("stageB:*:running"), Some(How::Every));
        assert_eq!(n("stageA:running"), None);
        assert_eq!(n("stageB:runnable"), None);
        assert_eq!(sm_named("stageB", "h", "stageB:5475"), Some(How::WithoutId));
        assert_eq!(sm_named("stageB:*", "h", "stageB:1"), Some(How::Every));
        assert_eq!(sm_named("db", "local", "db"), Some(How::Exact));
    }

    #[test]
    fn a_name_without_id_is_ambiguous_when_it_names_two_sms() {
        let mut m = Matched::default();
        m.add(3, How::WithoutId);
        m.add(3, How::WithoutId);
        assert!(m.ambiguous().is_none());
        m.add(4, How::WithoutId);
        assert_eq!(m.ambiguous(), Some(&[3, 4][..]));
        let mut m = Matched::default();
        m.add(3, How::Every);
        m.add(4, How::Every);
        assert!(m.ambiguous().is_none());
        m.add(5, How::Exact);
        m.add(6, How::WithoutId);
        assert_eq!(m.ambiguous(), Some(&[6][..]));
        assert!(m.in_several_systems().is_none());
        m.add(5, How::Exact);
        assert!(m.in_several_systems().is_none());
        m.add(7, How::Exact);
        assert_eq!(m.in_several_systems(), Some(&[5, 7][..]));
    }

    #[test]
    fn nearest_names_come_first() {
        assert_eq!(
            nearest("wrk", &["worker", "work", "net"]),
            "; nearest: work, net, worker"
        );
        assert_eq!(nearest("x", &[]), "");
    }
}
