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
//! time, a link the call receives as a waited `recv` where it was woken:
//! at the first slice nested in it that begins after the waker's release,
//! else at its return.

use super::blocking::{wakers, Class, Release, Wait};
use super::spawns::Spawns;
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
    /// For a blocking call, the starts of the slices directly in it that
    /// begin after it and after the one before them ended (where its own
    /// state is left for a nested call).
    nested: Vec<u64>,
    /// The end of the last slice directly in it.
    nested_end: u64,
}

/// A blocking call that took time.
#[derive(Clone, Copy, Debug)]
pub(super) struct Blocked {
    pub track: u32,
    pub start: u64,
    pub end: u64,
    pub kind: Wait,
    /// Where the starts of the slices nested in it lie in [`Scan::nested`].
    pub nested: (usize, usize),
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
    /// The starts of the slices nested in the blocking calls, by call.
    nested: Vec<u64>,
    releases: HashMap<Release, Vec<Released>>,
    pub extents: Vec<Extent>,
    /// The calls that start threads and processes.
    pub spawns: Spawns,
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
        if let Some(p) = self.stack.last_mut().filter(|p| p.wait.is_some()) {
            if start > p.nested_end {
                p.nested.push(start);
            }
            p.nested_end = end;
        }
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
        self.spawns.see(track, start, end, class.spawn);
        if let Some(r) = class.release {
            // A release that is no blocking call releases from its start.
            let from = if class.wait.is_none() { start } else { end };
            self.releases.entry(r).or_default().push((end, track, from));
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
            nested: Vec::new(),
            nested_end: start,
        });
    }

    fn close(&mut self, track: u32, o: Open) {
        let (Some(_), Some(kind)) = (o.wait, o.outer) else {
            return;
        };
        if !o.inner && o.end > o.start {
            let first = self.nested.len();
            self.nested.extend(o.nested);
            self.waits.push(Blocked {
                track,
                start: o.start,
                end: o.end,
                kind,
                nested: (first, self.nested.len()),
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

/// A release or a track's end: when it ended, its track, and the time from
/// which it counts as released.
type Released = (u64, u32, u64);

/// The latest `(time, track)` of `list` (sorted by time) within
/// `[from, to]` whose track is not `not` and passes `ok`.
fn latest(
    list: &[Released],
    (from, to): (u64, u64),
    not: u32,
    ok: impl Fn(u32) -> bool,
) -> Option<(u64, u32)> {
    let upto = list.partition_point(|&(t, ..)| t <= to);
    list[..upto]
        .iter()
        .rev()
        .take_while(|&&(t, ..)| t >= from)
        .take(SEARCH)
        .find(|&&(_, tr, _)| tr != not && ok(tr))
        .map(|&(t, tr, _)| (t, tr))
}

/// A release of `list` (sorted by end) under way when a call that blocked
/// over `[from, to]` returned: begun within it, ended after it, on a track
/// other than `not`; the latest begun, as released at `to`. `reach` is the
/// longest time a release of `list` is under way.
fn under_way(
    list: &[Released],
    (from, to): (u64, u64),
    not: u32,
    reach: u64,
) -> Option<(u64, u32)> {
    let after = list.partition_point(|&(t, ..)| t <= to);
    list[after..]
        .iter()
        .take_while(|&&(t, ..)| t - to <= reach)
        .take(SEARCH)
        .filter(|&&(_, tr, f)| tr != not && (from..=to).contains(&f))
        .max_by_key(|&&(_, tr, f)| (f, std::cmp::Reverse(tr)))
        .map(|&(_, tr, _)| (to, tr))
}

/// Where the blocking call `w`, woken by a release at `sent`, was woken:
/// the first slice nested in it that begins at or after `sent` (what it
/// does once woken is its own work), else its return.
fn woken(scan: &Scan, w: &Blocked, sent: u64) -> u64 {
    let nested = &scan.nested[w.nested.0..w.nested.1];
    let i = nested.partition_point(|&s| s < sent);
    nested.get(i).copied().unwrap_or(w.end)
}

/// The process of track `t`, when the trace names one.
pub(super) fn pid_of<'a>(pid: &[Option<&'a str>], t: u32) -> Option<&'a str> {
    pid.get(t as usize).copied().flatten()
}

/// Each blocking call's waker, where one is found; `pid` gives each track's
/// process (`None` for an async track). A call that a flow answered, one
/// of `answered` (sorted `(track, time)`: where flows and the answers of
/// calls arrived) falling after its start and by its end, is given none.
pub(super) fn infer(scan: &mut Scan, pid: &[Option<&str>], answered: &[(u32, u64)]) -> Vec<Link> {
    scan.flush();
    let mut reach = HashMap::new();
    for (r, list) in scan.releases.iter_mut() {
        list.sort_unstable();
        let longest = list.iter().map(|&(t, _, f)| t - f).max().unwrap_or(0);
        reach.insert(*r, longest);
    }
    let mut ends: Vec<Released> = (scan.extents.iter().enumerate())
        .filter(|(_, x)| x.seen)
        .map(|(n, x)| (x.last, n as u32, x.last))
        .collect();
    ends.sort_unstable();
    let mut links = Vec::new();
    let by_flow = |w: &&Blocked| {
        let i = answered.partition_point(|&a| a <= (w.track, w.start));
        answered.get(i).is_some_and(|&a| a <= (w.track, w.end))
    };
    for w in scan.waits.iter().filter(|w| !by_flow(w)) {
        let window = (w.start, w.end);
        let own = pid_of(pid, w.track);
        // A thread's end in its own process for a join; a process's end in
        // another for a process join.
        let end_ok = |t: u32| match w.kind {
            Wait::Join => pid_of(pid, t) == own,
            Wait::ProcessJoin => pid_of(pid, t) != own,
            _ => true,
        };
        let found = wakers(w.kind)
            .iter()
            .find_map(|&(classes, with_ends)| {
                let released = (classes.iter())
                    .filter_map(|r| Some((scan.releases.get(r)?, *reach.get(r)?)))
                    .filter_map(|(list, reach)| {
                        under_way(list, window, w.track, reach)
                            .or_else(|| latest(list, window, w.track, |_| true))
                    });
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
                received: woken(scan, w, sent),
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
        let links = infer(&mut s, &[Some("1"); 3], &[]);
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
        let links = infer(&mut s, &[Some("1"); 2], &[]);
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
        let links = infer(&mut s, &[Some("1"); 3], &[]);
        assert_eq!((links[0].waker, links[0].sent), (2, 30));
    }

    #[test]
    fn a_lock_wait_takes_a_release_before_a_closer_threads_end() {
        // The holder releases at 401; another thread ends at 405; the
        // acquire returns at 410.
        let mut s = scan(&[
            &[(300, 410, "_thread.lock.acquire")],
            &[(390, 401, "_thread.lock.release"), (402, 500, "more")],
            &[(350, 405, "noise")],
        ]);
        let links = infer(&mut s, &[Some("1"); 3], &[]);
        assert_eq!((links[0].waker, links[0].sent), (1, 401));
        // With no release, the thread's end still wakes it.
        let mut s = scan(&[
            &[(300, 410, "_thread.lock.acquire")],
            &[(350, 405, "noise")],
        ]);
        let links = infer(&mut s, &[Some("1"); 2], &[]);
        assert_eq!((links[0].waker, links[0].sent), (1, 405));
    }

    #[test]
    fn a_call_that_nothing_released_has_no_waker() {
        let mut s = scan(&[
            &[(0, 50, "_thread.lock.acquire")],
            &[(60, 70, "_thread.lock.release")],
        ]);
        assert!(infer(&mut s, &[Some("1"); 2], &[]).is_empty());
    }

    #[test]
    fn a_call_is_woken_at_its_first_nested_call_after_the_release() {
        // `_stop` runs in the join once the worker ended: the join's wait
        // ends where it begins, not at the join's return.
        let mut s = scan(&[
            &[
                (10, 200, "Thread._wait_for_tstate_lock"),
                (150, 160, "Thread._stop"),
                (195, 198, "Thread._stop"),
            ],
            &[(5, 140, "work")],
        ]);
        let links = infer(&mut s, &[Some("1"); 2], &[]);
        assert_eq!((links[0].sent, links[0].received), (140, 150));
        // A nested call before the release, and one that begins as the one
        // before it ends (the call's own state is not left there), are
        // passed over.
        let mut s = scan(&[
            &[
                (0, 100, "Condition.wait"),
                (1, 2, "Condition._release_save"),
                (70, 80, "Condition._acquire_restore"),
                (80, 90, "Condition._is_owned"),
            ],
            &[(0, 75, "work"), (75, 76, "Condition.notify")],
        ]);
        let links = infer(&mut s, &[Some("1"); 2], &[]);
        assert_eq!((links[0].sent, links[0].received), (76, 100));
    }

    #[test]
    fn a_write_under_way_when_a_select_returns_woke_it() {
        // The writer's write began before the select returned and ended
        // after: it, not an older release, woke the select, at its return.
        let mut s = scan(&[
            &[(10, 100, "select.select")],
            &[(0, 15, "_thread.lock.__exit__")],
            &[(0, 99, "compute"), (99, 110, "posix.write")],
        ]);
        let links = infer(&mut s, &[Some("1"); 3], &[]);
        assert_eq!((links[0].waker, links[0].sent), (2, 100));
        // A release that is also a blocking call (a queue's get) releases
        // only as it returns.
        let mut s = scan(&[
            &[(10, 100, "_thread.lock.acquire")],
            &[(0, 15, "_thread.lock.release")],
            &[(0, 50, "compute"), (50, 110, "Queue.get")],
        ]);
        let links = infer(&mut s, &[Some("1"); 3], &[]);
        assert_eq!((links[0].waker, links[0].sent), (1, 15));
    }

    #[test]
    fn a_call_a_flow_arrived_in_has_no_inferred_waker() {
        let tracks: &[&[(u64, u64, &str)]] = &[
            &[(10, 100, "select.select")],
            &[(0, 95, "compute"), (95, 96, "posix.write")],
        ];
        let mut s = scan(tracks);
        assert!(infer(&mut s, &[Some("1"); 2], &[(0, 90)]).is_empty());
        // A flow arriving as the call begins, or on another track, does not
        // answer it.
        for arrived in [[(0, 10), (1, 50)], [(0, 101), (2, 50)]] {
            let mut s = scan(tracks);
            assert_eq!(infer(&mut s, &[Some("1"); 2], &arrived).len(), 1);
        }
    }
}
