//! Links from the call that started a thread or a process to the new
//! thread's first slice, in a trace without flow events (docs/event-model.md,
//! "Inferred links"): the mirror of a join, whose waker is the joined
//! thread's end.
//!
//! While the tracks' slices are nested, [`Spawns`] notes the calls that
//! start a thread or a process (`Thread.start`, `posix.fork`, ...; the
//! innermost of a nest: the `_thread.start_new_thread` in `Thread.start`).
//! [`infer`] then gives each new thread or process the call that started
//! it: the latest such call, not yet given to another, that began before
//! the new track's first slice, on another thread of its own process for
//! a thread, in another process for a process (the first thread of a
//! process to begin is its main thread). That call sends a link at its end,
//! or at the new track's first slice if that came first, which the first
//! slice receives. The first process's main thread was started by nothing
//! in the trace; nor is a thread whose start the trace does not show given
//! one, but for a process whose end woke a process join in another process:
//! only a parent waits for its child, so the joining thread, hiding the call
//! that started it (viztracer traces no `subprocess.Popen.__init__`),
//! started it before the join began.

use super::blocking::{Spawn, Wait};
use super::waits::{pid_of, Blocked, Extent, Link};
use std::collections::{HashMap, HashSet};

/// How far back a search for a thread's start goes, in calls, at most.
const SEARCH: usize = 256;

/// A call that starts a thread or a process.
#[derive(Clone, Copy, Debug)]
struct Call {
    track: u32,
    start: u64,
    end: u64,
    kind: Spawn,
    /// A call of the kind is nested in it: it is not the innermost.
    inner: bool,
}

/// The calls that start threads and processes, as the tracks are nested.
#[derive(Default)]
pub(super) struct Spawns {
    track: Option<u32>,
    /// The calls open on the track being scanned, by index in `calls`.
    open: Vec<usize>,
    calls: Vec<Call>,
}

impl Spawns {
    /// The next slice of track `track`, in nesting order (its end within
    /// its parent's), and what it starts.
    pub fn see(&mut self, track: u32, start: u64, end: u64, kind: Option<Spawn>) {
        if self.track != Some(track) {
            self.open.clear();
            self.track = Some(track);
        }
        while (self.open.last()).is_some_and(|&i| self.calls[i].end <= start) {
            self.open.pop();
        }
        let Some(kind) = kind else {
            return;
        };
        if let Some(&i) = self.open.last() {
            self.calls[i].inner = true;
        }
        self.open.push(self.calls.len());
        self.calls.push(Call {
            track,
            start,
            end,
            kind,
            inner: false,
        });
    }
}

/// A seen track: its first slice's start, its number and its process.
type Track<'a> = (u64, u32, &'a str);

/// The start link of each thread and process the trace shows started
/// (`Wait::Start`): `extents` give the tracks' first slices, `pid` their
/// processes (`None`: an async track, never started), `waits` and `joins`
/// the blocking calls and the links inferred for them.
pub(super) fn infer(
    spawns: &Spawns,
    extents: &[Extent],
    pid: &[Option<&str>],
    waits: &[Blocked],
    joins: &[Link],
) -> Vec<Link> {
    let mut tracks: Vec<Track> = (extents.iter().enumerate())
        .filter(|(_, x)| x.seen)
        .filter_map(|(n, x)| Some((x.first, n as u32, (*pid.get(n)?)?)))
        .collect();
    tracks.sort_unstable();
    let Some(&(_, _, first_pid)) = tracks.first() else {
        return Vec::new();
    };
    let mut mains: HashSet<&str> = HashSet::new();
    let mut calls: Vec<&Call> = spawns.calls.iter().filter(|c| !c.inner).collect();
    calls.sort_unstable_by_key(|c| (c.start, c.track));
    let mut used = vec![false; calls.len()];
    let joined = parent_joins(pid, waits, joins);
    let mut links = Vec::new();
    for &(first, track, p) in &tracks {
        // The first thread of a process to begin is its main thread.
        let thread = !mains.insert(p);
        if !thread && p == first_pid {
            continue;
        }
        let fits = |c: &Call| {
            c.track != track && c.kind.starts(thread) && (pid_of(pid, c.track) == Some(p)) == thread
        };
        let upto = calls.partition_point(|c| c.start <= first);
        let found = (0..upto)
            .rev()
            .take(SEARCH)
            .find(|&i| !used[i] && fits(calls[i]));
        let link = match found {
            Some(i) => {
                used[i] = true;
                let c = calls[i];
                Some((c.track, c.end.min(first)))
            }
            // Started, as far as the trace tells, as its parent joined it.
            None if !thread => (joined.get(p)).map(|&(began, by)| (by, began.min(first))),
            None => None,
        };
        if let Some((waker, sent)) = link {
            links.push(Link {
                waker,
                sent,
                waiter: track,
                received: first,
                kind: Wait::Start,
            });
        }
    }
    links
}

/// For each process whose end woke a process join in another process: the
/// thread that joined it and when that join began (the earliest such join),
/// the latest the joining process can have started it, as far as the trace
/// tells when no call shows its start.
fn parent_joins<'a>(
    pid: &[Option<&'a str>],
    waits: &[Blocked],
    joins: &[Link],
) -> HashMap<&'a str, (u64, u32)> {
    // The process joins of each track, in time order (the innermost
    // blocking calls of a track do not overlap).
    let mut began: HashMap<u32, Vec<(u64, u64)>> = HashMap::new();
    for w in waits.iter().filter(|w| w.kind == Wait::ProcessJoin) {
        began.entry(w.track).or_default().push((w.start, w.end));
    }
    for windows in began.values_mut() {
        windows.sort_unstable();
    }
    let mut out: HashMap<&str, (u64, u32)> = HashMap::new();
    for l in joins.iter().filter(|l| l.kind == Wait::ProcessJoin) {
        let (Some(child), Some(parent)) = (pid_of(pid, l.waker), pid_of(pid, l.waiter)) else {
            continue;
        };
        let Some(windows) = began.get(&l.waiter).filter(|_| child != parent) else {
            continue;
        };
        let i = windows.partition_point(|&(a, _)| a <= l.received);
        let Some(&(start, end)) = i.checked_sub(1).and_then(|i| windows.get(i)) else {
            continue;
        };
        if l.received <= end {
            let e = out.entry(child).or_insert((start, l.waiter));
            *e = (*e).min((start, l.waiter));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::blocking::classify;
    use super::super::waits::{self, Scan};
    use super::*;

    /// A track's slices: (start, end, name) in nesting order.
    type Slices<'a> = &'a [(u64, u64, &'a str)];

    /// The start links of `tracks`, each (pid, slices), with the joins
    /// inferred for them, as (waker, sent, waiter, received).
    fn starts(tracks: &[(&str, Slices)]) -> Vec<(u32, u64, u32, u64)> {
        let mut s = Scan::default();
        let mut names: Vec<&str> = Vec::new();
        for (n, (_, slices)) in tracks.iter().enumerate() {
            for &(a, b, name) in slices.iter() {
                let id = names.iter().position(|x| *x == name).unwrap_or_else(|| {
                    names.push(name);
                    s.classes.insert(names.len() as u32 - 1, classify(name));
                    names.len() - 1
                });
                s.see(n as u32, a, b, id as u32);
            }
        }
        let pid: Vec<Option<&str>> = tracks.iter().map(|t| Some(t.0)).collect();
        let joins = waits::infer(&mut s, &pid, &[]);
        let links = infer(&s.spawns, &s.extents, &pid, &s.waits, &joins);
        assert!(links.iter().all(|l| l.kind == Wait::Start));
        (links.iter())
            .map(|l| (l.waker, l.sent, l.waiter, l.received))
            .collect()
    }

    #[test]
    fn a_thread_starts_at_the_innermost_start_call_before_it() {
        // `Thread.start` 10-60 runs `start_new_thread` 11-20; the thread
        // begins at 25: the link leaves as `start_new_thread` returns.
        let main: &[(u64, u64, &str)] = &[
            (0, 200, "main"),
            (10, 60, "Thread.start (threading.py:945)"),
            (11, 20, "_thread.start_new_thread"),
            (70, 190, "Thread.join"),
        ];
        let worker: &[(u64, u64, &str)] = &[(25, 150, "Thread.run")];
        assert_eq!(starts(&[("1", main), ("1", worker)]), [(0, 20, 1, 25)]);
        // A thread that begins before its start call returns is sent its
        // link as it begins.
        let early: &[(u64, u64, &str)] = &[(15, 150, "Thread.run")];
        assert_eq!(starts(&[("1", main), ("1", early)]), [(0, 15, 1, 15)]);
    }

    #[test]
    fn each_start_call_starts_one_thread_the_latest_before_it() {
        let main: &[(u64, u64, &str)] = &[
            (10, 12, "pthread_create"),
            (20, 22, "pthread_create"),
            (30, 32, "clone"),
        ];
        let a: &[(u64, u64, &str)] = &[(25, 50, "a")];
        let b: &[(u64, u64, &str)] = &[(26, 50, "b")];
        let c: &[(u64, u64, &str)] = &[(27, 50, "c")];
        let got = starts(&[("1", main), ("1", a), ("1", b), ("1", c)]);
        // a takes the one at 20, b the one at 10; c none (the clone came
        // after it began).
        assert_eq!(got, [(0, 22, 1, 25), (0, 12, 2, 26)]);
    }

    #[test]
    fn a_process_is_started_by_a_call_in_another_process() {
        let parent: &[(u64, u64, &str)] = &[
            (0, 300, "main"),
            (10, 50, "BaseProcess.start"),
            (20, 30, "posix.fork"),
            (60, 290, "BaseProcess.join"),
            (61, 289, "posix.waitpid"),
        ];
        // The child's main thread (a tid equal to its parent's, as
        // viztracer writes a fork) and a thread it starts itself.
        let child: &[(u64, u64, &str)] = &[
            (40, 280, "main"),
            (50, 60, "Thread.start"),
            (51, 52, "_thread.start_new_thread"),
        ];
        let worker: &[(u64, u64, &str)] = &[(55, 270, "run")];
        let got = starts(&[("1", parent), ("2", child), ("2", worker)]);
        assert_eq!(got, [(0, 30, 1, 40), (1, 52, 2, 55)]);
        // A thread start in another process starts no process, nor a fork
        // a thread.
        let parent: &[(u64, u64, &str)] = &[(0, 300, "main"), (20, 30, "Thread.start")];
        let threads: &[(u64, u64, &str)] = &[(0, 300, "main"), (20, 30, "posix.fork")];
        let got = starts(&[("1", threads), ("1", &child[..1])]);
        assert!(got.is_empty(), "{got:?}");
        assert!(starts(&[("1", parent), ("2", &child[..1])]).is_empty());
    }

    #[test]
    fn a_process_that_no_call_shows_started_is_started_by_its_join() {
        // viztracer hides `Popen.__init__`: the parent's `Popen.wait` from
        // 100 is woken by the child's end at 250; the child began at 170.
        // The join is the blocking call, `posix.waitpid`, begun at 101.
        let parent: &[(u64, u64, &str)] = &[
            (0, 300, "main"),
            (100, 290, "Popen.wait"),
            (101, 289, "posix.waitpid"),
        ];
        let child: &[(u64, u64, &str)] = &[(170, 250, "builtins.exec")];
        assert_eq!(starts(&[("1", parent), ("2", child)]), [(0, 101, 1, 170)]);
        // A child that began before the join did: linked at its start.
        let early: &[(u64, u64, &str)] = &[(50, 250, "builtins.exec")];
        assert_eq!(starts(&[("1", parent), ("2", early)]), [(0, 50, 1, 50)]);
        // A thread whose start the trace does not show gets no link, nor a
        // process that nothing joined.
        let other: &[(u64, u64, &str)] = &[(20, 80, "work")];
        assert!(starts(&[("1", parent), ("1", other)]).is_empty());
        assert!(starts(&[("1", parent), ("3", other)]).is_empty());
    }
}
