//! Links between the threads of a trace without flow events, inferred from
//! its blocking calls (docs/event-model.md, "Inferred links").
//!
//! While each track's slices are nested, [`Scan`] notes its blocking calls
//! (the innermost recognised one of a nest: the `_thread.lock.acquire` in
//! `Condition.wait` in `Queue.get`, each taking the kind of the outermost,
//! here a queue get), its releases (puts, gets, unlocks, writes), and where
//! it starts, ends and how busy it is. [`infer`] then gives each blocking
//! call the other track whose end or release of the right kind came closest
//! before the call returned, within the call: that track sends, at that
//! time, a link the call receives at its return as a waited `recv`.

use super::blocking::{wakers, Class, Release, Wait};
use std::collections::HashMap;

/// How far back a search for a waker goes past releases of the waiting
/// track itself, at most.
const SEARCH: usize = 256;

/// A slice open on the track being scanned.
struct Open {
    start: u64,
    end: u64,
    wait: Option<Wait>,
    /// The kind of the outermost blocking call around it, or its own.
    outer: Option<Wait>,
    /// A blocking call inside it was seen: it is not the innermost.
    inner: bool,
}

/// A blocking call that took time.
#[derive(Clone, Copy, Debug)]
pub(super) struct Blocked {
    pub track: u32,
    pub start: u64,
    pub end: u64,
    pub kind: Wait,
}

/// Where a track starts and ends, and the time of its top-level slices
/// outside blocking calls.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Extent {
    pub seen: bool,
    pub first: u64,
    pub last: u64,
    pub busy: u64,
}

/// What the nesting of the tracks' slices showed.
#[derive(Default)]
pub(super) struct Scan {
    /// The meaning of each recognised slice name, by its symbol.
    pub classes: HashMap<u32, Class>,
    track: Option<u32>,
    stack: Vec<Open>,
    pub waits: Vec<Blocked>,
    releases: HashMap<Release, Vec<(u64, u32)>>,
    pub extents: Vec<Extent>,
}

impl Scan {
    /// The next slice of track `track`, in nesting order.
    pub fn see(&mut self, track: u32, start: u64, end: u64, name: u32) {
        if self.track != Some(track) {
            self.flush();
            self.track = Some(track);
        }
        while self.stack.last().is_some_and(|o| o.end <= start) {
            let o = self.stack.pop().expect("an open slice");
            self.close(track, o);
        }
        let end = self.stack.last().map_or(end, |p| end.min(p.end));
        let n = track as usize;
        if self.extents.len() <= n {
            self.extents.resize(n + 1, Extent::default());
        }
        let x = &mut self.extents[n];
        if !x.seen {
            (x.seen, x.first) = (true, start);
        }
        x.last = x.last.max(end);
        if self.stack.is_empty() {
            x.busy += end - start;
        }
        let class = self.classes.get(&name).copied().unwrap_or_default();
        if let Some(r) = class.release {
            self.releases.entry(r).or_default().push((end, track));
        }
        if class.wait.is_some() {
            if let Some(p) = self.stack.iter_mut().rev().find(|o| o.wait.is_some()) {
                p.inner = true;
            }
        }
        let outer = self.stack.last().and_then(|p| p.outer).or(class.wait);
        self.stack.push(Open {
            start,
            end,
            wait: class.wait,
            outer,
            inner: false,
        });
    }

    fn close(&mut self, track: u32, o: Open) {
        let (Some(_), Some(kind)) = (o.wait, o.outer) else {
            return;
        };
        if !o.inner && o.end > o.start {
            self.waits.push(Blocked {
                track,
                start: o.start,
                end: o.end,
                kind,
            });
            // Time blocked is not work.
            let x = &mut self.extents[track as usize];
            x.busy = x.busy.saturating_sub(o.end - o.start);
        }
    }

    /// Closes the slices still open on the track being scanned.
    pub fn flush(&mut self) {
        if let Some(track) = self.track {
            while let Some(o) = self.stack.pop() {
                self.close(track, o);
            }
        }
    }
}

/// An inferred link: `waker` sends at `sent`, the blocking call of `waiter`
/// receives at `received`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Link {
    pub waker: u32,
    pub sent: u64,
    pub waiter: u32,
    pub received: u64,
    pub kind: Wait,
}

/// The latest `(time, track)` of `list` (sorted by time) within
/// `[from, to]` whose track is not `not` and passes `ok`.
fn latest(
    list: &[(u64, u32)],
    (from, to): (u64, u64),
    not: u32,
    ok: impl Fn(u32) -> bool,
) -> Option<(u64, u32)> {
    let upto = list.partition_point(|&(t, _)| t <= to);
    list[..upto]
        .iter()
        .rev()
        .take_while(|&&(t, _)| t >= from)
        .take(SEARCH)
        .find(|&&(_, tr)| tr != not && ok(tr))
        .copied()
}

/// Each blocking call's waker, where one is found; `pid` gives each track's
/// process (`None` for an async track).
pub(super) fn infer(scan: &mut Scan, pid: &[Option<&str>]) -> Vec<Link> {
    scan.flush();
    for list in scan.releases.values_mut() {
        list.sort_unstable();
    }
    let mut ends: Vec<(u64, u32)> = (scan.extents.iter().enumerate())
        .filter(|(_, x)| x.seen)
        .map(|(n, x)| (x.last, n as u32))
        .collect();
    ends.sort_unstable();
    let pid_of = |t: u32| pid.get(t as usize).copied().flatten();
    let mut links = Vec::new();
    for w in &scan.waits {
        let window = (w.start, w.end);
        let own = pid_of(w.track);
        // A thread's end in its own process for a join; a process's end in
        // another for a process join.
        let end_ok = |t: u32| match w.kind {
            Wait::Join => pid_of(t) == own,
            Wait::ProcessJoin => pid_of(t) != own,
            _ => true,
        };
        let found = wakers(w.kind)
            .iter()
            .find_map(|&(classes, with_ends)| {
                let released = (classes.iter())
                    .filter_map(|r| scan.releases.get(r))
                    .filter_map(|list| latest(list, window, w.track, |_| true));
                let ended = with_ends
                    .then(|| latest(&ends, window, w.track, end_ok))
                    .flatten();
                released
                    .chain(ended)
                    .max_by_key(|&(t, tr)| (t, std::cmp::Reverse(tr)))
            })
            .or_else(|| latest(&ends, window, w.track, |_| true));
        if let Some((sent, waker)) = found {
            links.push(Link {
                waker,
                sent,
                waiter: w.track,
                received: w.end,
                kind: w.kind,
            });
        }
    }
    links
}

#[cfg(test)]
mod tests {
    use super::super::blocking::classify;
    use super::*;

    /// A scan of `tracks`, each a list of (start, end, name) in nesting
    /// order; names are numbered in order of first use.
    fn scan(tracks: &[&[(u64, u64, &str)]]) -> Scan {
        let mut s = Scan::default();
        let mut names: Vec<&str> = Vec::new();
        for (n, slices) in tracks.iter().enumerate() {
            for &(a, b, name) in slices.iter() {
                let id = match names.iter().position(|x| *x == name) {
                    Some(i) => i,
                    None => {
                        names.push(name);
                        s.classes.insert(names.len() as u32 - 1, classify(name));
                        names.len() - 1
                    }
                };
                s.see(n as u32, a, b, id as u32);
            }
        }
        s
    }

    #[test]
    fn a_join_waits_for_the_joined_threads_end() {
        let mut s = scan(&[
            &[
                (0, 100, "main"),
                (10, 95, "Thread.join"),
                (11, 94, "_thread.lock.acquire"),
            ],
            &[(5, 60, "work")],
            &[(5, 90, "work")],
        ]);
        assert_eq!(s.waits.len(), 1, "only the innermost blocking call");
        let links = infer(&mut s, &[Some("1"), Some("1"), Some("1")]);
        assert_eq!(
            links,
            [Link {
                waker: 2,
                sent: 90,
                waiter: 0,
                received: 94,
                kind: Wait::Join
            }]
        );
        assert_eq!(s.extents[0].busy, 100 - 83);
    }

    #[test]
    fn a_queue_get_waits_for_the_last_put_on_another_thread() {
        let mut s = scan(&[
            &[
                (0, 50, "Queue.get"),
                (2, 48, "Condition.wait"),
                (3, 47, "_thread.lock.acquire"),
            ],
            &[
                (10, 12, "Queue.put"),
                (20, 22, "_thread.lock.release"),
                (30, 40, "Queue.put"),
            ],
        ]);
        let links = infer(&mut s, &[Some("1"), Some("1")]);
        assert_eq!(links.len(), 1);
        assert_eq!((links[0].waker, links[0].sent), (1, 40));
        assert_eq!(links[0].kind, Wait::QueueGet);
    }

    #[test]
    fn a_lock_wait_takes_the_closest_release_of_any_kind() {
        let mut s = scan(&[
            &[(0, 50, "Condition.wait"), (1, 49, "_thread.lock.acquire")],
            &[(10, 20, "_thread.lock.release"), (20, 100, "more")],
            &[(25, 30, "Queue.put"), (40, 100, "more")],
        ]);
        let links = infer(&mut s, &[Some("1"), Some("1"), Some("1")]);
        assert_eq!((links[0].waker, links[0].sent), (2, 30));
    }

    #[test]
    fn a_call_that_nothing_released_has_no_waker() {
        let mut s = scan(&[
            &[(0, 50, "_thread.lock.acquire")],
            &[(60, 70, "_thread.lock.release")],
        ]);
        assert!(infer(&mut s, &[Some("1"), Some("1")]).is_empty());
    }
}
