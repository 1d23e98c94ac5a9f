//! The order of the sends and receives that happen at one time, for the
//! importers whose links carry no order of their own (Chrome flows): each
//! SM's in the order it made them and each receive after its send, so a
//! thread that receives a flow and passes it on at the same moment passes
//! on what it received. Where nothing needs it, the sort's order (sends,
//! then receives, then the order made) stands.

use crate::recsort::{Keyed, SortedRecords};
use critpath_trace::{Event, LinkId, ReadError, Sym, Who};
use rustc_hash::FxHashMap;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

/// Records at one time ordered together at most: past it, the next ones
/// start a run of their own, so a send handed out in the first run stays
/// before a receive of its SM that falls in the next (the sort's order).
const RUN_CAP: usize = 1 << 16;

/// The link records of a [`SortedRecords`], reordered at each time.
pub(crate) struct Ties {
    /// The sort's classes of the records ordered here.
    classes: [u8; 2],
    ready: VecDeque<Keyed>,
    /// The run being ordered.
    run: Vec<Keyed>,
    scratch: Scratch,
    /// The record read past the last run, not handed out yet.
    peeked: Option<Keyed>,
}

impl Ties {
    pub(crate) fn new(classes: [u8; 2]) -> Self {
        Ties {
            classes,
            ready: VecDeque::new(),
            run: Vec::new(),
            scratch: Scratch::default(),
            peeked: None,
        }
    }

    /// The next record of `sorted`, the ones of a run at one time in the
    /// order found by [`Scratch::order`].
    pub(crate) fn next(&mut self, sorted: &mut SortedRecords) -> Result<Option<Keyed>, ReadError> {
        if let Some(k) = self.ready.pop_front() {
            return Ok(Some(k));
        }
        let first = match self.peeked.take() {
            Some(k) => k,
            None => match sorted.next_keyed()? {
                Some(k) => k,
                None => return Ok(None),
            },
        };
        if !self.classes.contains(&first.phase) {
            return Ok(Some(first));
        }
        let run = &mut self.run;
        run.push(first);
        while run.len() < RUN_CAP {
            match sorted.next_keyed()? {
                Some(k) if k.rec.t == first.rec.t && self.classes.contains(&k.phase) => run.push(k),
                other => {
                    self.peeked = other;
                    break;
                }
            }
        }
        if run.len() == 1 {
            return Ok(run.pop());
        }
        self.scratch.order(run, &mut self.ready);
        Ok(self.ready.pop_front())
    }
}

/// The SM a send or receive is about, and its link if it is one: whether
/// it sends, and the key it is matched by (the numbered link's prefix, the
/// kind of id, the number or the text's key).
fn sm_and_link(k: &Keyed) -> (Option<Sym>, Option<(bool, LinkKey)>) {
    let key = |id| match id {
        LinkId::Num(n) => (k.prefix, 0, n),
        LinkId::Str { key, .. } => (k.prefix, 1, key),
    };
    match k.rec.ev {
        Event::Send { who, id } => (sm_of(who), Some((true, key(id)))),
        Event::Recv { who, id, .. } => (sm_of(who), Some((false, key(id)))),
        _ => (None, None),
    }
}

type LinkKey = (u32, u8, u64);

fn sm_of(who: Who) -> Option<Sym> {
    match who {
        Who::Sm(s) => Some(s),
        _ => None,
    }
}

/// Does the sort's order keep each SM's records in the order made? (It
/// puts every send before every receive, so receives follow their sends.)
fn in_order(run: &[Keyed]) -> bool {
    let sm = |k: &Keyed| sm_and_link(k).0;
    if run.len() <= 16 {
        return (1..run.len()).all(|i| {
            let (me, seq) = (sm(&run[i]), run[i].seq);
            me.is_none() || run[..i].iter().all(|e| sm(e) != me || e.seq < seq)
        });
    }
    let mut last: FxHashMap<Sym, u64> = FxHashMap::default();
    run.iter().all(|k| match sm(k) {
        Some(me) => last.insert(me, k.seq).is_none_or(|seq| seq < k.seq),
        None => true,
    })
}

/// What ordering a run needs, kept from run to run.
#[derive(Default)]
struct Scratch {
    /// (SM, order made, index) of the run's records of an SM.
    by_sm: Vec<(Sym, u64, u32)>,
    /// (link, index) of the run's sends.
    sends: Vec<(LinkKey, u32)>,
    /// (before, after): the pairs of indexes that must keep their order.
    edges: Vec<(u32, u32)>,
    /// Where each index's pairs start in `edges`, and their end.
    first: Vec<u32>,
    before: Vec<u32>,
    done: Vec<bool>,
    placed: Vec<u32>,
    heap: BinaryHeap<Reverse<u32>>,
}

impl Scratch {
    /// A run of records at one time, in the sort's order, put in the first
    /// order (by the sort's) in which each SM's records keep the order they
    /// were made in and each receive follows its sends. Where the two rules
    /// form a cycle (a malformed trace), the earliest record by the sort's
    /// order goes next.
    fn order(&mut self, run: &mut Vec<Keyed>, out: &mut VecDeque<Keyed>) {
        if in_order(run) {
            out.extend(run.drain(..));
            return;
        }
        self.constraints(run);
        let n = run.len();
        let heap = &mut self.heap;
        heap.clear();
        heap.extend(
            (0..n as u32)
                .filter(|&i| self.before[i as usize] == 0)
                .map(Reverse),
        );
        let (done, placed) = (&mut self.done, &mut self.placed);
        done.clear();
        done.resize(n, false);
        placed.clear();
        let mut lowest = 0;
        while placed.len() < n {
            let i = match heap.pop() {
                Some(Reverse(i)) if done[i as usize] => continue,
                Some(Reverse(i)) => i as usize,
                None => {
                    while done[lowest] {
                        lowest += 1;
                    }
                    lowest
                }
            };
            done[i] = true;
            placed.push(i as u32);
            let (from, to) = (self.first[i] as usize, self.first[i + 1] as usize);
            for &(_, j) in &self.edges[from..to] {
                let b = &mut self.before[j as usize];
                *b = b.saturating_sub(1);
                if *b == 0 && !done[j as usize] {
                    heap.push(Reverse(j));
                }
            }
        }
        out.extend(placed.iter().map(|&i| run[i as usize]));
        run.clear();
    }

    /// The pairs that must keep their order: each record of an SM and the
    /// next one it made; each send and the receives of its link. Sorted by
    /// the first of the pair, with `first` and `before` to match.
    fn constraints(&mut self, run: &[Keyed]) {
        let (by_sm, sends, edges) = (&mut self.by_sm, &mut self.sends, &mut self.edges);
        by_sm.clear();
        sends.clear();
        edges.clear();
        for (i, k) in run.iter().enumerate() {
            let (sm, link) = sm_and_link(k);
            if let Some(sm) = sm {
                by_sm.push((sm, k.seq, i as u32));
            }
            if let Some((true, key)) = link {
                sends.push((key, i as u32));
            }
        }
        by_sm.sort_unstable();
        sends.sort_unstable();
        let chain = by_sm.windows(2).filter(|w| w[0].0 == w[1].0);
        edges.extend(chain.map(|w| (w[0].2, w[1].2)));
        for (i, k) in run.iter().enumerate() {
            let Some((false, key)) = sm_and_link(k).1 else {
                continue;
            };
            let from = sends.partition_point(|s| s.0 < key);
            let senders = sends[from..].iter().take_while(|s| s.0 == key);
            edges.extend(senders.map(|s| (s.1, i as u32)));
        }
        edges.sort_unstable();
        let n = run.len();
        self.first.clear();
        self.before.clear();
        self.before.resize(n, 0);
        let mut at = 0;
        for i in 0..=n as u32 {
            self.first.push(at as u32);
            while at < edges.len() && edges[at].0 == i {
                self.before[edges[at].1 as usize] += 1;
                at += 1;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::recsort::RecordSort;
    use critpath_trace::Record;

    const SEND: u8 = 0;
    const RECV: u8 = 1;
    const TRACK: u8 = 2;

    fn send(sm: u32, id: u64) -> (u8, Event) {
        let who = Who::Sm(Sym(sm));
        (
            SEND,
            Event::Send {
                who,
                id: LinkId::Num(id),
            },
        )
    }

    fn recv(sm: u32, id: u64) -> (u8, Event) {
        let (who, id) = (Who::Sm(Sym(sm)), LinkId::Num(id));
        (
            RECV,
            Event::Recv {
                who,
                id,
                state: Sym(0),
                waited: false,
            },
        )
    }

    /// The records pushed in this order, as [`Ties`] hands them out.
    fn handed_out(pushed: &[(u64, (u8, Event))]) -> Vec<Record> {
        let mut sort = RecordSort::with_budget(3);
        for &(t, (class, ev)) in pushed {
            sort.push(t, class, ev);
        }
        let mut sorted = sort.finish("t").unwrap();
        let mut ties = Ties::new([SEND, RECV]);
        std::iter::from_fn(|| ties.next(&mut sorted).unwrap().map(|k| k.rec)).collect()
    }

    fn events(recs: &[Record]) -> Vec<Event> {
        recs.iter().map(|r| r.ev).collect()
    }

    #[test]
    fn a_flow_passed_on_at_the_time_it_arrives_is_received_first() {
        // b receives 1 from a, then sends 2 to c, all at t=10.
        let (a, b, c) = (1, 2, 3);
        let out = handed_out(&[
            (10, send(a, 1)),
            (10, recv(b, 1)),
            (10, send(b, 2)),
            (10, recv(c, 2)),
        ]);
        let want = [send(a, 1), recv(b, 1), send(b, 2), recv(c, 2)].map(|p| p.1);
        assert_eq!(events(&out), want);
    }

    #[test]
    fn a_chain_written_backwards_still_runs_from_its_first_sender() {
        // The file lists the last hop first: c's receive of 2, b's send of
        // 2 after b's receive of 1, a's send of 1.
        let (a, b, c) = (1, 2, 3);
        let out = handed_out(&[
            (5, recv(c, 2)),
            (5, recv(b, 1)),
            (5, send(b, 2)),
            (5, send(a, 1)),
        ]);
        let want = [send(a, 1), recv(b, 1), send(b, 2), recv(c, 2)].map(|p| p.1);
        assert_eq!(events(&out), want);
    }

    #[test]
    fn where_nothing_needs_it_the_sorts_order_stands() {
        // Each thread sends before it receives: sends first, then
        // receives, then the calls; other times untouched.
        let (a, b, c) = (1, 2, 3);
        let call = (
            TRACK,
            Event::Call {
                who: Who::Sm(Sym(a)),
                func: Sym(9),
            },
        );
        let pushed = [
            (10, call),
            (10, recv(c, 2)),
            (10, send(a, 1)),
            (10, send(b, 2)),
            (10, recv(b, 1)),
            (20, recv(b, 3)),
        ];
        let out = handed_out(&pushed);
        let want = [
            send(a, 1),
            send(b, 2),
            recv(c, 2),
            recv(b, 1),
            call,
            recv(b, 3),
        ];
        assert_eq!(events(&out), want.map(|p| p.1));
        assert_eq!(
            out.iter().map(|r| r.t).collect::<Vec<_>>(),
            [10, 10, 10, 10, 10, 20]
        );
    }

    #[test]
    fn a_cycle_of_ties_goes_in_the_sorts_order_where_it_must() {
        // a receives 1 then sends 2; b receives 2 then sends 1: no order
        // keeps both threads' order and both links. Every record comes out.
        let (a, b) = (1, 2);
        let out = handed_out(&[
            (0, recv(a, 1)),
            (0, send(a, 2)),
            (0, recv(b, 2)),
            (0, send(b, 1)),
        ]);
        let want = [send(a, 2), recv(b, 2), send(b, 1), recv(a, 1)].map(|p| p.1);
        assert_eq!(events(&out), want);
    }

    #[test]
    fn runs_longer_than_the_cap_are_ordered_in_parts_and_nothing_is_lost() {
        // Relays at one time: sm i receives link i, then sends link i+1.
        let n = RUN_CAP as u64 / 2 + 10;
        let mut pushed = vec![(7, send(0, 0))];
        for i in 0..n {
            pushed.push((7, recv(i as u32 + 1, i)));
            pushed.push((7, send(i as u32 + 1, i + 1)));
        }
        let out = handed_out(&pushed);
        let key = |ev: &Event| format!("{ev:?}");
        let mut got: Vec<String> = out.iter().map(|r| key(&r.ev)).collect();
        let mut want: Vec<String> = pushed.iter().map(|p| key(&p.1 .1)).collect();
        got.sort_unstable();
        want.sort_unstable();
        assert!(got == want, "records lost or made up");
        // The sort hands out every send first: the first run holds every
        // send and the first receives, ordered; the last relays' receives
        // fall past the cap, after their sends.
        let at = |ev: Event| out.iter().position(|r| r.ev == ev).unwrap();
        let last = n as u32;
        assert!(
            at(recv(1, 0).1) < at(send(1, 1).1),
            "the first run was not ordered"
        );
        assert!(at(send(last, n).1) < at(recv(last, n - 1).1));
    }

    /// A record of a story: SM, whether it sends, link, and a number that
    /// tells apart two receives of one link by one SM.
    type Told = (u32, bool, u64, u32);

    /// A run at one time made from a causal story: `steps` in the order
    /// they happen (an SM, a send of a new link or a receive of one sent
    /// before), written to the file in an order that keeps each SM's own
    /// (`picks` choose which SM's next record comes next).
    fn story(steps: &[(u32, bool, usize)], picks: &[usize]) -> Vec<Told> {
        let mut sent = 0u64;
        let mut by_sm: Vec<Vec<Told>> = vec![Vec::new(); 4];
        for (n, &(sm, is_send, pick)) in steps.iter().enumerate() {
            if is_send || sent == 0 {
                by_sm[sm as usize].push((sm, true, sent, 0));
                sent += 1;
            } else {
                by_sm[sm as usize].push((sm, false, pick as u64 % sent, n as u32));
            }
        }
        let mut file = Vec::new();
        let mut picks = picks.iter().cycle();
        while by_sm.iter().any(|q| !q.is_empty()) {
            let open: Vec<usize> = (0..4).filter(|&i| !by_sm[i].is_empty()).collect();
            let q = open[picks.next().copied().unwrap_or(0) % open.len()];
            file.push(by_sm[q].remove(0));
        }
        file
    }

    /// Does `order` keep each SM's file order and put each receive after
    /// its send?
    fn causal(order: &[Told], file: &[Told]) -> bool {
        let at = |r: &Told| file.iter().position(|f| f == r).unwrap();
        let later = |i: usize| &order[i + 1..];
        let per_sm = (order.iter().enumerate())
            .all(|(i, a)| later(i).iter().all(|b| a.0 != b.0 || at(a) < at(b)));
        let sent_first = (order.iter().enumerate())
            .all(|(i, r)| r.1 || !later(i).iter().any(|s| s.1 && s.2 == r.2));
        per_sm && sent_first
    }

    proptest::proptest! {
        #[test]
        fn a_run_that_has_a_causal_order_comes_out_in_one(
            steps in proptest::collection::vec((0u32..4, proptest::bool::ANY, 0usize..8), 1..24),
            picks in proptest::collection::vec(0usize..4, 1..24),
        ) {
            let file = story(&steps, &picks);
            let pushed: Vec<(u64, (u8, Event))> = file
                .iter()
                .map(|&(sm, is_send, id, n)| match is_send {
                    true => (3, send(sm, id)),
                    false => {
                        let (who, id, state) = (Who::Sm(Sym(sm)), LinkId::Num(id), Sym(n));
                        (3, (RECV, Event::Recv { who, id, state, waited: false }))
                    }
                })
                .collect();
            let out: Vec<Told> = handed_out(&pushed)
                .iter()
                .map(|r| match r.ev {
                    Event::Send { who: Who::Sm(sm), id: LinkId::Num(id) } => (sm.0, true, id, 0),
                    Event::Recv { who: Who::Sm(sm), id: LinkId::Num(id), state, .. } => {
                        (sm.0, false, id, state.0)
                    }
                    _ => unreachable!(),
                })
                .collect();
            let mut a = out.clone();
            let mut b = file.clone();
            a.sort_unstable();
            b.sort_unstable();
            proptest::prop_assert_eq!(a, b);
            proptest::prop_assert!(causal(&out, &file), "{:?} from {:?}", out, file);
            // Where the sort's order (sends, then receives, each in file
            // order) is causal already, it is the one handed out.
            let sorted: Vec<_> = (file.iter().filter(|r| r.1))
                .chain(file.iter().filter(|r| !r.1))
                .copied()
                .collect();
            if causal(&sorted, &file) {
                proptest::prop_assert_eq!(out, sorted);
            }
        }
    }
}
