//! The pending sends, bounded (docs/path-rules.md, "Pending sends").
//!
//! A `send` waits here until its `recv` takes it. A trace whose sends are
//! never received (a lost recv, a fire-and-forget message) would otherwise
//! grow memory without bound, so the sends are kept in two generations of at
//! most half the bound each: when the young one is full, the old one is
//! dropped (its sends counted as dropped), the young one becomes the old one,
//! and a new young one starts. A `recv` looks in the young generation, then in
//! the old one. The ids of the latest dropped sends (between half the bound
//! and the bound of them) are kept, without their nodes, so that a later
//! `recv` of one is reported as `pending-send-dropped`, not as
//! `recv-without-send`. Each operation is O(1) amortised; a trace that never
//! has half the bound pending at once does exactly one hash operation per
//! send and per recv, as without a bound.

use super::{Engine, NodeRef};
use critpath_trace::{Diagnostic, DiagnosticKind, Interner, LinkId, Pos};
use rustc_hash::{FxHashMap, FxHashSet};

/// The bound on pending sends when `CRITPATH_PENDING_SENDS` does not set one.
pub const DEFAULT_PENDING_SENDS: usize = 1 << 20;

/// Pending sends by numeric id (index 0) and by string id's key (index 1).
type Gen = [FxHashMap<u64, NodeRef>; 2];

/// What a `recv` found for its id.
pub(super) enum Taken {
    /// The pending send it matches.
    Send(NodeRef),
    /// Its send was dropped for the bound.
    Dropped,
    /// No send of that id is pending.
    Missing,
}

/// The pending sends, at most `2 * half` of them.
pub(super) struct Pending {
    young: Gen,
    old: Gen,
    /// Ids of the latest sends dropped, at most `2 * half` of them.
    dropped: [FxHashSet<u64>; 2],
    half: usize,
    /// Set at the first turn of generations: until then only `young` holds
    /// anything, and sends and recvs look nowhere else.
    turned: bool,
    /// Sends dropped for the bound so far.
    pub evicted: u64,
}

/// `(map index, key)` of a link id.
#[inline]
fn slot(id: &LinkId) -> (usize, u64) {
    match *id {
        LinkId::Num(k) => (0, k),
        LinkId::Str { key, .. } => (1, key),
    }
}

fn len(g: &Gen) -> usize {
    g[0].len() + g[1].len()
}

impl Pending {
    /// Pending sends bounded by `limit` (at least 2).
    pub fn new(limit: usize) -> Self {
        Pending {
            young: Gen::default(),
            old: Gen::default(),
            dropped: Default::default(),
            half: limit.div_ceil(2).max(1),
            turned: false,
            evicted: 0,
        }
    }

    /// The bound: how many sends may be pending at once.
    pub fn limit(&self) -> usize {
        2 * self.half
    }

    /// A send of `id`, pending until received. A later send of the same id
    /// replaces an earlier one still pending, which it returns.
    #[inline]
    pub fn insert(&mut self, id: LinkId, n: NodeRef) -> Option<NodeRef> {
        let (i, k) = slot(&id);
        let mut older = None;
        if self.turned || len(&self.young) >= self.half {
            older = self.insert_aged(i, k);
        }
        self.young[i].insert(k, n).or(older)
    }

    /// Before a send of key `k` once the young generation is full or has
    /// turned: turns it if needed, and forgets older sends of `k` (the one
    /// still pending, returned).
    #[cold]
    fn insert_aged(&mut self, i: usize, k: u64) -> Option<NodeRef> {
        if len(&self.young) >= self.half && !self.young[i].contains_key(&k) {
            self.rotate();
        }
        if !self.dropped[i].is_empty() {
            self.dropped[i].remove(&k);
        }
        match self.old[i].is_empty() {
            true => None,
            false => self.old[i].remove(&k),
        }
    }

    /// Drops the old generation, keeping its ids; the young one becomes old.
    #[cold]
    fn rotate(&mut self) {
        self.turned = true;
        let n = len(&self.old);
        self.evicted += n as u64;
        if self.dropped[0].len() + self.dropped[1].len() + n > 2 * self.half {
            self.dropped.iter_mut().for_each(|d| d.clear());
        }
        for (d, g) in self.dropped.iter_mut().zip(&mut self.old) {
            d.extend(g.drain().map(|(k, _)| k));
        }
        std::mem::swap(&mut self.old, &mut self.young);
    }

    /// Takes the pending send a `recv` of `id` matches.
    #[inline]
    pub fn take(&mut self, id: &LinkId) -> Taken {
        let (i, k) = slot(id);
        match self.young[i].remove(&k) {
            Some(n) => Taken::Send(n),
            None if !self.turned => Taken::Missing,
            None => self.take_older(i, k),
        }
    }

    #[cold]
    fn take_older(&mut self, i: usize, k: u64) -> Taken {
        if let Some(n) = self.old[i].remove(&k) {
            Taken::Send(n)
        } else if self.dropped[i].remove(&k) {
            Taken::Dropped
        } else {
            Taken::Missing
        }
    }
}

impl Engine<'_> {
    /// Sets the bound on pending sends (by default the options', else
    /// [`DEFAULT_PENDING_SENDS`]); call it before feeding records.
    pub fn set_pending_limit(&mut self, limit: usize) {
        self.pending = Pending::new(limit);
    }

    /// Reports a `recv` of `id` whose send was dropped for the bound.
    pub(super) fn recv_of_dropped(
        &mut self,
        sm: u32,
        id: LinkId,
        at: (u64, Pos),
        strings: &Interner,
    ) {
        let (t, pos, limit) = (at.0, at.1, self.pending.limit());
        self.link_finding(DiagnosticKind::PendingSendDropped, sm, id, at, strings, move |sm, id| format!(
            "{sm}: recv of id {id} at t={t} ({pos}): its send was dropped unreceived for the bound of {limit} pending sends (CRITPATH_PENDING_SENDS); the dependence is missing"
        ));
    }

    /// How many sends were dropped for the bound, if any.
    pub(super) fn pending_dropped(&self) -> Option<Diagnostic> {
        let n = self.pending.evicted;
        (n > 0).then(|| {
            Diagnostic::new(
                DiagnosticKind::PendingSendDropped,
                format!(
                    "{n} sends were dropped unreceived: more than {} sends were pending at once (the bound, CRITPATH_PENDING_SENDS); the oldest went first",
                    self.pending.limit()
                ),
            )
            .count(n)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(id: u64) -> NodeRef {
        NodeRef {
            id,
            l: 0,
            t: id,
            cnode: 0,
            origin: 0,
        }
    }

    fn sent(t: Taken) -> Option<u64> {
        match t {
            Taken::Send(n) => Some(n.id),
            _ => None,
        }
    }

    #[test]
    fn never_more_than_the_bound_and_the_newest_kept() {
        let mut p = Pending::new(10);
        for k in 0..1000 {
            p.insert(LinkId::Num(k), node(k));
            assert!(len(&p.young) + len(&p.old) <= 10);
        }
        assert!(p.evicted >= 990 - 10);
        // The newest half of the bound is always still pending.
        for k in 995..1000 {
            assert_eq!(sent(p.take(&LinkId::Num(k))), Some(k));
        }
        assert!(matches!(p.take(&LinkId::Num(3)), Taken::Missing));
    }

    #[test]
    fn a_recent_drop_is_told_apart_once() {
        let mut p = Pending::new(4);
        for k in 0..6 {
            p.insert(LinkId::Num(k), node(k));
        }
        // 0 and 1 were dropped when 4 arrived.
        assert_eq!(p.evicted, 2);
        assert!(matches!(p.take(&LinkId::Num(0)), Taken::Dropped));
        assert!(matches!(p.take(&LinkId::Num(0)), Taken::Missing));
        assert_eq!(sent(p.take(&LinkId::Num(2))), Some(2));
        // Sending a dropped id again makes it pending again (no send of
        // it was pending: none is replaced).
        assert!(p.insert(LinkId::Num(1), node(7)).is_none());
        assert_eq!(sent(p.take(&LinkId::Num(1))), Some(7));
    }

    #[test]
    fn received_sends_do_not_count_against_the_bound() {
        let mut p = Pending::new(4);
        for k in 0..10_000 {
            p.insert(LinkId::Num(k), node(k));
            assert_eq!(sent(p.take(&LinkId::Num(k))), Some(k));
        }
        assert_eq!(p.evicted, 0);
    }

    #[test]
    fn a_resend_replaces_across_generations() {
        let mut p = Pending::new(4);
        p.insert(LinkId::Num(1), node(1));
        p.insert(LinkId::Num(2), node(2));
        p.insert(LinkId::Num(3), node(3)); // 1, 2 now old
        let replaced = p.insert(LinkId::Num(1), node(9));
        assert_eq!(replaced.map(|n| n.id), Some(1), "the old send is said");
        assert_eq!(sent(p.take(&LinkId::Num(1))), Some(9));
        assert!(matches!(p.take(&LinkId::Num(1)), Taken::Missing));
    }
}
