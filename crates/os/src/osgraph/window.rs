//! The builder's output and its reorder window: records are held back
//! for a while (trace time) so that transitions inferred later can be
//! placed at their true time, and released in time order.

use super::holders::oldest_live;
use super::{Builder, St, Syscall, INTERNAL_LINK, MAX_HELD, PIECES_HELD, SLACK_NS, WINDOW_NS};
use critpath_trace::{Event, LinkId, Record, Sym, Who};
use std::collections::vec_deque::Drain;
use std::collections::VecDeque;

impl Builder {
    /// Emits the record `ev` makes of SM `sm` at `t` into the window, and
    /// says where it went: its place counted from the first record the
    /// builder ever emitted, which a later record placed before it can
    /// only raise (None: dropped, see `quiet`).
    pub(super) fn emit(&mut self, t: u64, sm: Sym, ev: impl FnOnce(Who) -> Event) -> Option<u64> {
        let mut t = t;
        if t < self.released {
            t = self.released;
            self.counts.late += 1;
        }
        let ev = ev(Who::Sm(sm));
        // A thread in an annotated wait stays in it whatever the scheduler
        // does: the annotation says what it waits for.
        if !self.quiet.is_empty()
            && self.quiet.contains(&sm)
            && matches!(
                ev,
                Event::State { .. } | Event::Wait { .. } | Event::Recv { .. } | Event::Held { .. }
            )
        {
            return None;
        }
        // A CPU's holder changing state: its waiters' time so far is
        // charged to the state it leaves (docs/os-graph.md).
        if !self.hold_sms.is_empty() {
            self.holder_moves(t, sm, &ev);
        }
        let rec = Record {
            t,
            sys: self.sys,
            ev,
        };
        // Nearly always in order: appended, else inserted from the back.
        if self.out.back().is_none_or(|last| last.t <= t) {
            self.out.push_back(rec);
            return Some(self.drained + self.out.len() as u64 - 1);
        }
        let mut i = self.out.len() - 1;
        while i > 0 && self.out[i - 1].t > t {
            i -= 1;
        }
        self.out.insert(i, rec);
        Some(self.drained + i as u64)
    }

    pub(super) fn state(&mut self, t: u64, sm: Sym, state: Sym) {
        self.emit(t, sm, |who| Event::State { who, state });
    }

    pub(super) fn wait(&mut self, t: u64, sm: Sym, state: Sym) {
        self.emit(t, sm, |who| Event::Wait {
            who,
            state,
            on: None,
            on_sys: None,
            on_state: None,
        });
    }

    pub(super) fn send(&mut self, t: u64, sm: Sym, link: u64) {
        self.emit(t, sm, |who| Event::Send {
            who,
            id: LinkId::Num(link),
        });
    }

    pub(super) fn recv(&mut self, t: u64, sm: Sym, link: u64, state: Sym) {
        self.recv_as(t, sm, link, state, false);
    }

    /// A `recv` that says whether the state it ends `waited` for the link
    /// (then that state's own time is not on the path: a CPU's holder).
    pub(super) fn recv_as(&mut self, t: u64, sm: Sym, link: u64, state: Sym, waited: bool) {
        self.emit(t, sm, |who| Event::Recv {
            who,
            id: LinkId::Num(link),
            state,
            waited,
        });
    }

    pub(super) fn end(&mut self, t: u64, sm: Sym) {
        self.emit(t, sm, |who| Event::End { who });
    }

    /// A new link id. The builder's own links have the top bit set, so
    /// they never meet the ids annotations send and receive.
    pub(super) fn link(&mut self) -> u64 {
        self.next_link += 1;
        INTERNAL_LINK | self.next_link
    }

    /// Where the reorder window begins. Only inferred transitions are
    /// placed back in time: a timer wakeup to no earlier than the expiry
    /// of the timer a blocked thread armed, and the lost switch-in of a
    /// thread woken for an idle CPU to no earlier than its wakeup or that
    /// CPU's last event; so the window reaches back to the earliest of
    /// these within `WINDOW_NS`, else only `SLACK_NS`. Pending
    /// syscall segments (only when syscalls were recorded) hold back
    /// everything after their start. Kept until the next event is fed:
    /// draining changes none of it.
    fn horizon(&mut self) -> u64 {
        if let Some(h) = self.horizon {
            return h;
        }
        let mut wakeups = self.now.saturating_sub(SLACK_NS);
        let mut segments = u64::MAX;
        // Pieces of waits a holder's run may still mark `ended`, while
        // fewer than PIECES_HELD records are held.
        let floor = match self.out.len() < PIECES_HELD {
            true => self.pieces_floor(),
            false => u64::MAX,
        };
        for th in self.threads.values() {
            if let Some(p) = oldest_live(&self.threads, &th.pieces, floor) {
                wakeups = wakeups.min(p);
            }
            if let Some(Syscall { seg: Some(s), .. }) = th.sys {
                segments = segments.min(s);
            }
            match th.st {
                St::Blocked => {
                    for (_, hard) in th.armed.iter().filter_map(|p| self.arms.get(&p)?.expires) {
                        if hard >= th.since {
                            wakeups = wakeups.min(hard);
                        }
                    }
                }
                St::Runnable => {
                    let idle = th
                        .ready
                        .and_then(|c| self.cpus.get(c as usize))
                        .filter(|c| c.idle());
                    if let Some(c) = idle {
                        wakeups = wakeups.min(th.since.max(c.last_event));
                    }
                }
                _ => {}
            }
        }
        let horizon = wakeups
            .max(self.now.saturating_sub(WINDOW_NS))
            .min(segments);
        self.horizon = Some(horizon);
        horizon
    }

    /// Ends the stream: every pending segment is closed, and
    /// [`Self::drain_ready`] with `all` then releases everything held back.
    pub fn finish(&mut self) {
        self.horizon = None;
        let tids: Vec<u32> = self.threads.keys().copied().collect();
        for tid in tids {
            self.close_segment(tid, None);
        }
    }

    /// At most `max` of the oldest records whose place can no longer
    /// change (before the reorder window's horizon, or beyond the
    /// `MAX_HELD` most recent), in time order; with `all` (after
    /// [`Self::finish`]), of every record held.
    pub fn drain_ready(&mut self, max: usize, all: bool) -> Drain<'_, Record> {
        let k = self.ready(max, all);
        self.out.drain(..k)
    }

    /// [`Self::drain_ready`] appended to `out`, each record as `f` makes
    /// it: copied from the window's slices.
    pub fn drain_ready_into<T>(
        &mut self,
        max: usize,
        all: bool,
        out: &mut Vec<T>,
        mut f: impl FnMut(Record) -> T,
    ) {
        let k = self.ready(max, all);
        let (a, b) = self.out.as_slices();
        let (a, b) = if k <= a.len() {
            (&a[..k], &b[..0])
        } else {
            (a, &b[..k - a.len()])
        };
        // Slice by slice: a chain of the two copies record by record.
        out.reserve(k);
        out.extend(a.iter().copied().map(&mut f));
        out.extend(b.iter().copied().map(&mut f));
        self.out.drain(..k);
    }

    /// How many of the oldest records may leave (see
    /// [`Self::drain_ready`]); the time released moves to the last.
    fn ready(&mut self, max: usize, all: bool) -> usize {
        let k = if all {
            self.out.len()
        } else if self.out.is_empty() {
            0
        } else {
            // Held back: records at or past the horizon, as long as no
            // more than MAX_HELD are held.
            let h = self.horizon();
            let early = before_front(&self.out, h);
            early.max(self.out.len().saturating_sub(MAX_HELD))
        };
        let k = k.min(max);
        if k > 0 {
            self.released = self.released.max(self.out[k - 1].t);
        }
        // The caller drains them.
        self.drained += k as u64;
        k
    }
}

/// How many of the records `out` (in time order) come before `h`. They
/// are few and at the front (they leave as soon as they are there), so
/// the search gallops from the front rather than halving a window that may
/// be megabytes deep.
fn before_front(out: &VecDeque<Record>, h: u64) -> usize {
    let n = out.len();
    let mut bound = 1;
    while bound <= n && out[bound - 1].t < h {
        bound *= 2;
    }
    // All before `bound / 2` come before `h`; the answer is at most
    // `bound` (or `n`).
    let (mut lo, mut hi) = (bound / 2, bound.min(n));
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if out[mid].t < h {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    lo
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The gallop from the front counts what a binary search of the whole
    /// window counts, for every horizon and window length.
    #[test]
    fn the_gallop_from_the_front_counts_as_a_halving_does() {
        let rec = |t| Record {
            t,
            sys: Sym::default(),
            ev: Event::End {
                who: Who::Sm(Sym::default()),
            },
        };
        for n in 0..70u64 {
            // Times with repeats: 0, 0, 1, 1, 2, ...
            // Wrapped round its buffer, as a window is.
            let mut out = VecDeque::with_capacity(n as usize);
            out.extend((0..n / 3).map(rec));
            out.drain(..);
            out.extend((0..n).map(|i| rec(i / 2)));
            for h in 0..n / 2 + 2 {
                let want = out.partition_point(|r| r.t < h);
                assert_eq!(before_front(&out, h), want, "{n} records, horizon {h}");
            }
        }
    }
}
