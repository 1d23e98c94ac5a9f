//! Matching the names users type against the trace's: `SM` or `SYS/SM`
//! specs, the labels diagnostics print, and the nearest names suggested when
//! a name matches nothing (by edit distance).

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

/// Does a speed-up `spec` without a state (`SM` or `SYS/SM`, no ':') name
/// state `state` of SM `name`? It names every state of the SM and of its
/// lanes (`SM#2`, `SM#3`, ...: the importers' overlapping tracks of one
/// service or thread), except `idle`, the importers' name for the gaps
/// between slices, which is no work to speed up.
pub(crate) fn whole_sm_matches(spec: &str, sys: &str, name: &str, state: &str) -> bool {
    let spec = spec.trim();
    if spec.contains(':') || state == "idle" {
        return false;
    }
    let base = match name.rsplit_once('#') {
        Some((base, n)) if !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) => base,
        _ => name,
    };
    sm_matches(spec, sys, name) || sm_matches(spec, sys, base)
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
        assert!(whole_sm_matches("db", "local", "db", "SELECT orders"));
        assert!(whole_sm_matches("db", "local", "db#2", "SELECT orders"));
        assert!(whole_sm_matches("h/db", "h", "db#12", "q"));
        assert!(!whole_sm_matches("db", "local", "db", "idle"));
        assert!(!whole_sm_matches("db", "local", "dbx", "q"));
        assert!(!whole_sm_matches("db", "local", "db#x", "q"));
        assert!(!whole_sm_matches("db:q", "local", "db", "q"));
        assert!(!whole_sm_matches("g/db", "h", "db", "q"));
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
    fn nearest_names_come_first() {
        assert_eq!(
            nearest("wrk", &["worker", "work", "net"]),
            "; nearest: work, net, worker"
        );
        assert_eq!(nearest("x", &[]), "");
    }
}
