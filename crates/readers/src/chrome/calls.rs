//! Calls between threads that flow events show (docs/event-model.md,
//! "Calls linked by flows"): a flow leaves slice P of thread A and arrives
//! at slice C of thread B; when P is still open, with nothing nested in it
//! begun, when C ends, A was waiting for C: its time from the flow's start
//! to C's end is a wait that C's end releases (a waited `recv`), as a
//! span's parent waits for its child. A flow whose sender goes on working,
//! or whose slice ends first, is a hand-off and stays a plain link.
//!
//! The slices are known only as the tracks are nested after the sort, so
//! each flow's two ends are questions answered in one sweep of each track:
//! the sender's innermost open slice at the flow's start and when it next
//! does something else (a slice nested in it begins, or it ends); the
//! receiver's slice (the one enclosing the flow's end with `bp: "e"`, else
//! the next to begin) and its end.

use super::blocking::Wait;
use super::waits::Link;
use critpath_trace::Sym;
use std::collections::HashMap;

/// One flow from a slice of track `from` at `sent` to track `to` at
/// `arrived`.
#[derive(Clone, Copy, Debug)]
struct Flow {
    from: u32,
    sent: u64,
    to: u32,
    arrived: u64,
    enclosing: bool,
}

/// What a track's sweep found for the sender of a flow.
#[derive(Clone, Copy, Debug)]
struct Sender {
    /// The innermost slice open at the flow's start: its name and end.
    name: Sym,
    end: u64,
    /// When the sender next does something else: a slice nested in that
    /// one begins, or it ends.
    busy_from: Option<u64>,
}

/// A question about track `track` at time `t`: a flow's sender (`send`) or
/// its receiver.
#[derive(Clone, Copy)]
struct Query {
    track: u32,
    t: u64,
    send: bool,
    flow: u32,
}

/// The flows of a trace and, as its tracks are nested, their ends.
#[derive(Default)]
pub(super) struct Calls {
    /// Sends not yet received, by link key.
    pending: HashMap<String, (u32, u64)>,
    flows: Vec<Flow>,
    senders: Vec<Option<Sender>>,
    receivers: Vec<Option<u64>>,
    queries: Vec<Query>,
    next: usize,
    track: Option<u32>,
    /// The slices open on the track being swept: (start, end, name).
    stack: Vec<(u64, u64, Sym)>,
    /// Senders waiting to learn when they next do something: (depth of
    /// their slice, flow).
    watches: Vec<(usize, u32)>,
    /// Receivers whose next slice has not begun yet.
    waiting: Vec<u32>,
    /// Questions at the time the last slice began, asked once every slice
    /// beginning then is open.
    deferred: Vec<Query>,
    /// The end of the last slice closed on the track being swept.
    popped: Option<u64>,
}

impl Calls {
    /// A flow point: a send of link `key` on `track` at `t`, or its
    /// receipt (`enclosing`: bound to the slice around it, `bp: "e"`).
    pub fn point(&mut self, track: u32, t: u64, send: bool, key: &str, enclosing: bool) {
        if send {
            self.pending.insert(key.to_string(), (track, t));
        } else if let Some((from, sent)) = self.pending.remove(key) {
            if from != track && sent <= t {
                self.flows.push(Flow {
                    from,
                    sent,
                    to: track,
                    arrived: t,
                    enclosing,
                });
            }
        }
    }

    /// Orders the questions for the sweep, before the first slice is seen.
    pub fn start(&mut self) {
        self.pending = HashMap::new();
        let n = self.flows.len();
        (self.senders, self.receivers) = (vec![None; n], vec![None; n]);
        for (i, f) in self.flows.iter().enumerate() {
            let (flow, t) = (i as u32, f.sent);
            let q = Query {
                track: f.from,
                t,
                send: true,
                flow,
            };
            let r = Query {
                track: f.to,
                t: f.arrived,
                send: false,
                flow,
            };
            self.queries.extend([q, r]);
        }
        self.queries
            .sort_unstable_by_key(|q| (q.track, q.t, q.flow));
    }

    /// The next slice of track `track`, in nesting order.
    pub fn see(&mut self, track: u32, start: u64, end: u64, name: Sym) {
        if self.queries.is_empty() {
            return;
        }
        if self.track != Some(track) {
            self.end_track();
            self.track = Some(track);
            while self.queries.get(self.next).is_some_and(|q| q.track < track) {
                self.next += 1;
            }
        }
        // Questions about times before this slice begins: every slice
        // around them is open.
        for q in std::mem::take(&mut self.deferred) {
            if q.t < start {
                self.ask(q);
            } else {
                self.deferred.push(q);
            }
        }
        while let Some(q) = self.take_query(|t| t < start) {
            self.ask(q);
        }
        self.pop_until(start);
        let end = self.stack.last().map_or(end, |p| end.min(p.1));
        let depth = self.stack.len();
        for (d, flow) in std::mem::take(&mut self.watches) {
            if d + 1 == depth {
                self.busy(flow, start);
            } else {
                self.watches.push((d, flow));
            }
        }
        self.stack.push((start, end, name));
        for flow in std::mem::take(&mut self.waiting) {
            self.receivers[flow as usize] = Some(end);
        }
        // A flow arriving as this slice begins reaches it (the outermost
        // of those beginning then); one around its time waits until every
        // slice beginning then is open.
        while let Some(q) = self.take_query(|t| t == start) {
            match self.flows[q.flow as usize].enclosing || q.send {
                true => self.deferred.push(q),
                false => self.receivers[q.flow as usize] = Some(end),
            }
        }
    }

    /// The next question about the track being swept, if its time passes
    /// `when`.
    fn take_query(&mut self, when: impl Fn(u64) -> bool) -> Option<Query> {
        let q = *self.queries.get(self.next)?;
        (Some(q.track) == self.track && when(q.t)).then(|| {
            self.next += 1;
            q
        })
    }

    /// Answers a question once every slice beginning by its time is open.
    fn ask(&mut self, q: Query) {
        if !q.send && !self.flows[q.flow as usize].enclosing {
            // The next slice to begin, after the flow's end.
            self.waiting.push(q.flow);
            return;
        }
        self.pop_until(q.t);
        let Some(&(start, end, name)) = self.stack.last() else {
            return;
        };
        if !q.send {
            self.receivers[q.flow as usize] = Some(end);
        } else if !(start == q.t && self.popped == Some(q.t)) {
            // (A flow leaving as one slice ends and the next begins left
            // the one that ended: a hand-off.)
            self.senders[q.flow as usize] = Some(Sender {
                name,
                end,
                busy_from: None,
            });
            self.watches.push((self.stack.len() - 1, q.flow));
        }
    }

    /// Closes the slices that end by `t`; the senders in them are busy (or
    /// done) from their ends.
    fn pop_until(&mut self, t: u64) {
        while let Some(&(_, end, _)) = self.stack.last().filter(|o| o.1 <= t) {
            self.stack.pop();
            self.popped = Some(end);
            let depth = self.stack.len();
            for (d, flow) in std::mem::take(&mut self.watches) {
                if d >= depth {
                    self.busy(flow, end);
                } else {
                    self.watches.push((d, flow));
                }
            }
        }
    }

    fn busy(&mut self, flow: u32, t: u64) {
        if let Some(s) = &mut self.senders[flow as usize] {
            s.busy_from.get_or_insert(t);
        }
    }

    /// Answers what is left of the track being swept.
    fn end_track(&mut self) {
        if self.track.is_none() {
            return;
        }
        for q in std::mem::take(&mut self.deferred) {
            self.ask(q);
        }
        while let Some(q) = self.take_query(|_| true) {
            self.ask(q);
        }
        self.pop_until(u64::MAX);
        self.waiting.clear();
        self.popped = None;
    }

    /// The calls found: for each, the receiver's track sends at its slice's
    /// end and the sender receives it there, waited, back in the state of
    /// its slice (the `Sym`).
    pub fn finish(&mut self) -> Vec<(Link, Sym)> {
        self.end_track();
        let mut out = Vec::new();
        for (i, f) in self.flows.iter().enumerate() {
            let (Some(s), Some(answered)) = (self.senders[i], self.receivers[i]) else {
                continue;
            };
            let free_until = s.end.min(s.busy_from.unwrap_or(s.end));
            if f.sent < answered && answered <= free_until {
                let link = Link {
                    waker: f.to,
                    sent: answered,
                    waiter: f.from,
                    received: answered,
                    kind: Wait::Call,
                };
                out.push((link, s.name));
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Calls found when `flows` ((from, sent, to, arrived)) go between
    /// `tracks`, each a list of (start, end) slices in nesting order.
    fn found(tracks: &[&[(u64, u64)]], flows: &[(u32, u64, u32, u64)]) -> Vec<(u32, u64, u32)> {
        let mut c = Calls::default();
        for (i, &(a, s, b, f)) in flows.iter().enumerate() {
            c.point(a, s, true, &i.to_string(), false);
            c.point(b, f, false, &i.to_string(), false);
        }
        c.start();
        for (n, slices) in tracks.iter().enumerate() {
            for (k, &(a, b)) in slices.iter().enumerate() {
                c.see(n as u32, a, b, Sym(k as u32));
            }
        }
        (c.finish().iter())
            .map(|(l, name)| (l.waiter, l.received, name.0))
            .collect()
    }

    #[test]
    fn a_sender_idle_in_its_slice_waits_for_the_slice_its_flow_reached() {
        // A: request 0-100, call 10-95 (the flow leaves at 12); B: handler
        // 20-90 (the flow arrives at 15, before it begins).
        let calls = found(&[&[(0, 100), (10, 95)], &[(20, 90)]], &[(0, 12, 1, 15)]);
        assert_eq!(calls, [(0, 90, 1)], "A waits in `call` until 90");
    }

    #[test]
    fn a_sender_that_goes_on_working_or_ends_first_hands_off() {
        // A begins nested work at 30, before the handler ends at 90.
        let busy = found(&[&[(0, 100), (30, 40)], &[(20, 90)]], &[(0, 12, 1, 15)]);
        assert!(busy.is_empty(), "{busy:?}");
        // A's slice ends at 50: it posted the work and went on.
        let posted = found(&[&[(0, 50)], &[(20, 90)]], &[(0, 12, 1, 15)]);
        assert!(posted.is_empty(), "{posted:?}");
        // A flow within one thread is no call.
        let same = found(&[&[(0, 100), (20, 90)]], &[(0, 12, 0, 15)]);
        assert!(same.is_empty(), "{same:?}");
    }

    #[test]
    fn fan_out_waits_for_each_and_the_last_answer_releases_it() {
        let calls = found(
            &[&[(0, 100)], &[(10, 60)], &[(10, 80)]],
            &[(0, 5, 1, 10), (0, 5, 2, 10)],
        );
        assert_eq!(calls, [(0, 60, 0), (0, 80, 0)]);
    }
}
