//! Every environment variable critpath reads, in one place: the programs
//! that run critpath (the command line, the Python package) read the
//! environment at their edge, hand [`settings_from`] its lookup, and pass
//! the [`Settings`] down; no library reads the environment itself. The
//! table is docs/settings.md's.

use critpath_trace::Settings;

/// An environment variable critpath reads: its name and what it does.
pub struct Var {
    pub name: &'static str,
    pub doc: &'static str,
}

/// The environment variables that make [`Settings`].
pub const VARS: &[Var] = &[
    Var {
        name: "CRITPATH_THREADS",
        doc: "1: run readers and the engine on the caller's thread only, and a span file's requests one after the other (the results are the same)",
    },
    Var {
        name: "CRITPATH_PENDING_SENDS",
        doc: "how many sends may wait for their receive at once (default 1048576; `_` may group digits)",
    },
    Var {
        name: "CRITPATH_SORT_ITEMS",
        doc: "items every external sort keeps in memory before it spills to disk (default: each sort's own)",
    },
    Var {
        name: "CRITPATH_CPU_HOLDERS",
        doc: "0: a thread's wait for a CPU is its own `runnable` time, not charged to the CPU's holders",
    },
];

/// The settings `lookup` (an environment variable's value by name, which
/// the program reads) gives over `base` (flags, or the defaults).
pub fn settings_from(base: Settings, lookup: impl Fn(&str) -> Option<String>) -> Settings {
    let mut s = base;
    if lookup("CRITPATH_THREADS").is_some_and(|v| v.trim() == "1") {
        s.threads = false;
    }
    if let Some(n) = lookup("CRITPATH_PENDING_SENDS")
        .and_then(|v| v.trim().replace('_', "").parse::<usize>().ok())
    {
        s.pending_sends = Some(n);
    }
    if let Some(n) = lookup("CRITPATH_SORT_ITEMS")
        .and_then(|v| v.parse::<usize>().ok())
        .filter(|&n| n > 0)
    {
        s.sort_items = Some(n);
    }
    if lookup("CRITPATH_CPU_HOLDERS").is_some_and(|v| v == "0") {
        s.cpu_holders = false;
    }
    s
}

/// Makes `settings` those of the process's analyses from now on.
pub fn install(settings: &Settings) {
    settings.install();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_variable_sets_its_setting_and_nothing_else() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |n: &str| {
                pairs
                    .iter()
                    .find(|(k, _)| *k == n)
                    .map(|(_, v)| v.to_string())
            }
        };
        let d = Settings::default();
        assert_eq!(settings_from(d.clone(), env(&[])), d);
        let s = settings_from(d.clone(), env(&[("CRITPATH_THREADS", " 1 ")]));
        assert!(!s.threads);
        let s = settings_from(d.clone(), env(&[("CRITPATH_PENDING_SENDS", "1_000")]));
        assert_eq!(s.pending_sends, Some(1000));
        let s = settings_from(d.clone(), env(&[("CRITPATH_SORT_ITEMS", "0")]));
        assert_eq!(s.sort_items, None);
        let s = settings_from(d.clone(), env(&[("CRITPATH_CPU_HOLDERS", "0")]));
        assert!(!s.cpu_holders);
        // Every variable the table lists is one the parser reads.
        for v in VARS {
            let src = include_str!("env.rs");
            assert!(src.matches(&format!("lookup(\"{}\")", v.name)).count() == 1);
        }
    }
}
