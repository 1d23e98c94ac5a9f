//! The names of a Chrome trace's threads, from its `process_name` and
//! `thread_name` metadata (docs/formats.md):
//!
//! - a trace of one process names each thread by its thread name alone
//!   (`consumer`), or `NAME [tid T]` when several threads share it;
//! - a trace of several processes names a process's main thread (its tid is
//!   its pid, it is called `MainThread`, or it is the process's only thread)
//!   after the process, `PROCESS [pid P]`, and its other threads
//!   `PROCESS [pid P]/THREAD`; a process without a name is `pid P`, and its
//!   main thread takes the thread's name (`THREAD [pid P]`);
//! - a thread the metadata does not name, in a process it does not name
//!   either, is `PID:TID`.
//!
//! So processes that share a tid (viztracer's `multiprocessing` children,
//! recorded with their parent's tid) stay apart.

use super::TrackKey;
use std::collections::HashMap;

/// The names the metadata gives.
#[derive(Default)]
pub(super) struct Names {
    /// By (pid, tid).
    pub threads: HashMap<(String, String), String>,
    /// By pid.
    pub processes: HashMap<String, String>,
}

impl Names {
    /// Each track's name, before tracks whose names would be the same are
    /// told apart. Async tracks are named `CAT:ID` already.
    pub fn track_names(&self, keys: &[TrackKey]) -> Vec<String> {
        // Threads per pid, and per (pid, thread name).
        let mut per_pid: HashMap<&str, usize> = HashMap::new();
        let mut per_name: HashMap<(&str, &str), usize> = HashMap::new();
        for k in keys {
            if let TrackKey::Thread(p, t) = k {
                *per_pid.entry(p).or_default() += 1;
                if let Some(n) = self.threads.get(&(p.clone(), t.clone())) {
                    *per_name.entry((p, n)).or_default() += 1;
                }
            }
        }
        let several = per_pid.len() > 1;
        keys.iter()
            .map(|k| match k {
                TrackKey::Async(s) => s.clone(),
                TrackKey::Thread(p, t) => {
                    let thread = self.threads.get(&(p.clone(), t.clone()));
                    let shared = thread.is_some_and(|n| per_name[&(p.as_str(), n.as_str())] > 1);
                    if several {
                        let only = per_pid[p.as_str()] == 1;
                        self.in_process(p, t, thread, only)
                    } else {
                        match thread {
                            Some(n) if shared => format!("{n} [tid {t}]"),
                            Some(n) => n.clone(),
                            None => format!("{p}:{t}"),
                        }
                    }
                }
            })
            .collect()
    }

    /// A thread's name in a trace of several processes; `only` when it is
    /// its process's only thread.
    fn in_process(&self, p: &str, t: &str, thread: Option<&String>, only: bool) -> String {
        let process = self.processes.get(p);
        let main = t == p || only || thread.is_some_and(|n| n == "MainThread");
        match (process, thread) {
            (None, None) => format!("{p}:{t}"),
            (Some(pn), _) if main => format!("{pn} [pid {p}]"),
            (None, Some(tn)) if main => format!("{tn} [pid {p}]"),
            (Some(pn), Some(tn)) => format!("{pn} [pid {p}]/{tn}"),
            (Some(pn), None) => format!("{pn} [pid {p}]/tid {t}"),
            (None, Some(tn)) => format!("pid {p}/{tn}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn th(p: &str, t: &str) -> TrackKey {
        TrackKey::Thread(p.into(), t.into())
    }

    #[test]
    fn one_process_uses_thread_names_and_tids_only_for_namesakes() {
        let mut n = Names::default();
        for (t, name) in [
            ("1", "MainThread"),
            ("2", "consumer"),
            ("3", "w"),
            ("4", "w"),
        ] {
            n.threads.insert(("1".into(), t.into()), name.into());
        }
        n.processes.insert("1".into(), "MainProcess".into());
        let keys = [
            th("1", "1"),
            th("1", "2"),
            th("1", "3"),
            th("1", "4"),
            th("1", "5"),
        ];
        assert_eq!(
            n.track_names(&keys),
            ["MainThread", "consumer", "w [tid 3]", "w [tid 4]", "1:5"]
        );
    }

    #[test]
    fn processes_sharing_a_tid_are_named_after_their_process() {
        let mut n = Names::default();
        for (p, t, name) in [
            ("10", "10", "MainThread"),
            ("11", "10", "MainThread"),
            ("11", "12", "QueueFeederThread"),
            ("12", "10", "MainThread"),
            ("13", "7", "w"),
        ] {
            n.threads.insert((p.into(), t.into()), name.into());
        }
        n.processes.insert("10".into(), "MainProcess".into());
        n.processes.insert("11".into(), "consumer".into());
        n.processes.insert("12".into(), "worker-2".into());
        let keys = [
            th("10", "10"),
            th("11", "10"),
            th("11", "12"),
            th("12", "10"),
            th("13", "7"),
            th("14", "1"),
        ];
        assert_eq!(
            n.track_names(&keys),
            [
                "MainProcess [pid 10]",
                "consumer [pid 11]",
                "consumer [pid 11]/QueueFeederThread",
                "worker-2 [pid 12]",
                "w [pid 13]",
                "14:1",
            ]
        );
    }
}
