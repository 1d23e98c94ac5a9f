//! The units of work the SDKs annotated while the command ran, and the one
//! the counters are normalized by.

use std::collections::BTreeMap;
use std::path::Path;

/// Units of work the SDKs annotated: per SM name its lives ended (`SM`),
/// and per state its entries (`SM:STATE`).
pub fn units(annot: &Path) -> BTreeMap<String, u64> {
    use critpath_readers::annot::{Annot, AnnotReader};
    let mut out = BTreeMap::new();
    let Ok(mut r) = AnnotReader::open(annot) else {
        return out;
    };
    // Per thread (and task), the SMs begun.
    let mut stacks: std::collections::HashMap<(u32, u32, u64), Vec<String>> = Default::default();
    while let Some(a) = r.next_annotation() {
        let stack = stacks.entry((a.pid, a.tid, a.task)).or_default();
        match a.what {
            Annot::BeginSm(name) => stack.push(name.to_string()),
            Annot::EndSm(name) => {
                *out.entry(name.to_string()).or_default() += 1;
                if let Some(i) = stack.iter().rposition(|s| s == name) {
                    stack.truncate(i);
                }
            }
            // Every transition into a state is an entry (a new item
            // entering `work` is one even when the last item was in it).
            Annot::State(state) | Annot::Recv { state, .. } | Annot::Wait { state, .. } => {
                if let Some(sm) = stack.last() {
                    *out.entry(format!("{sm}:{state}")).or_default() += 1;
                }
            }
            Annot::Send(_) => {}
            // The thread ended with SMs still begun: no unit of work ends
            // (only `end_sm` says one is done).
            Annot::Exit => stack.clear(),
        }
    }
    out
}

/// The unit of work: the one asked for (with a note when it never ended),
/// else the SM with the most lives, if it has more than one.
pub fn choose(
    units: &BTreeMap<String, u64>,
    asked: Option<&str>,
    notes: &mut Vec<String>,
) -> Option<String> {
    let seen = || units.keys().cloned().collect::<Vec<_>>();
    let unit = match asked {
        Some(u) => {
            if !units.contains_key(u) {
                notes.push(format!(
                    "no annotated unit named {u} ended (units seen: {})",
                    if units.is_empty() {
                        "none; annotate the program with the critpath SDK".to_string()
                    } else {
                        seen().join(", ")
                    }
                ));
            }
            Some(u.to_string())
        }
        None => units
            .iter()
            .filter(|(name, n)| !name.contains(':') && **n > 1)
            .max_by_key(|(name, n)| (**n, std::cmp::Reverse((*name).clone())))
            .map(|(n, _)| n.clone()),
    };
    if unit.is_none() && !units.is_empty() {
        notes.push(format!(
            "no annotated SM ended more than once: name the unit of work with --unit SM or --unit SM:STATE (seen: {})",
            seen().into_iter().take(12).collect::<Vec<_>>().join(", ")
        ));
    }
    unit
}
