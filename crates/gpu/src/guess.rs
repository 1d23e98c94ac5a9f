//! One step of a trace read in one pass. Kineto writes a step's
//! `ProfilerStep#N` annotation before the ops inside it, and the ops in
//! the order they start, so the window of the asked instance is taken, as
//! the read goes, to be the `instance`-th (in time order) of the first
//! `instance + 1` annotations met that start with the asked prefix. Until
//! then the CPU ops a window may pass over are held unparsed (their bytes
//! copied), and decided when the window is known. Past [`HOLD_CAP`] bytes
//! the held ops are let go, betting that the window starts after the last
//! of them; the latest start let go is kept to check the bet.
//!
//! The read's own list of every annotation checks the guess at its end,
//! and a lost bet is known when the window is: `join::read_for` then reads
//! again with the right window. A trace written in another order costs
//! time, never a wrong answer; a compressed trace in Kineto's order is
//! decompressed once.

/// Bytes of ops held at most: about eight steps of a trace recorded with
/// shapes.
pub const HOLD_CAP: usize = 16 << 20;

/// An op held until the window is known.
struct Held {
    /// Its place among the trace's events (kept as if it were read).
    index: u64,
    /// Its byte offset in the document, for a message if it is unreadable.
    at: u64,
    /// Its start (ns).
    ts: u64,
    /// Its bytes in [`Pending::bytes`].
    range: (usize, usize),
}

/// A window still being looked for.
pub struct Pending {
    prefix: String,
    instance: usize,
    /// Bytes held at most.
    cap: usize,
    /// The latest start of the ops let go.
    let_go: Option<u64>,
    /// The windows of the matching annotations met so far, in file order.
    met: Vec<(u64, u64)>,
    held: Vec<Held>,
    bytes: Vec<u8>,
}

impl Pending {
    pub fn new(prefix: &str, instance: usize, cap: usize) -> Self {
        Pending {
            prefix: prefix.to_string(),
            instance,
            cap,
            let_go: None,
            met: Vec::new(),
            held: Vec::new(),
            bytes: Vec::new(),
        }
    }

    /// Does an annotation of this name count?
    pub fn matches(&self, name: &str) -> bool {
        name.starts_with(&self.prefix)
    }

    /// Holds an op (`v` its bytes: `ts` its start, `index` its place
    /// among the events, `at` its offset); past the cap, every op held is
    /// let go.
    pub fn hold(&mut self, (index, at, ts): (u64, u64, u64), v: &[u8]) {
        let start = self.bytes.len();
        self.bytes.extend_from_slice(v);
        self.held.push(Held {
            index,
            at,
            ts,
            range: (start, self.bytes.len()),
        });
        if self.bytes.len() > self.cap {
            let latest = self.held.iter().map(|h| h.ts).max();
            self.let_go = self.let_go.max(latest);
            self.held.clear();
            self.bytes.clear();
        }
    }

    /// Were ops let go that may lie in this window (the bet lost)?
    pub fn lost(&self, window: (u64, u64)) -> bool {
        self.let_go.is_some_and(|t| t >= window.0)
    }

    /// Notes a matching annotation's window; the guess once enough are met.
    /// Annotations that start at one time keep their file order, as the
    /// read's own list does.
    pub fn met(&mut self, window: (u64, u64)) -> Option<(u64, u64)> {
        self.met.push(window);
        if self.met.len() <= self.instance {
            return None;
        }
        let mut sorted = self.met.clone();
        sorted.sort_by_key(|w| w.0);
        Some(sorted[self.instance])
    }

    /// The held ops in file order: (index, offset, start, bytes).
    pub fn held(&self) -> impl Iterator<Item = (u64, u64, u64, &[u8])> {
        self.held
            .iter()
            .map(|h| (h.index, h.at, h.ts, &self.bytes[h.range.0..h.range.1]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_guess_is_the_instance_in_time_order_of_those_met() {
        let mut p = Pending::new("ProfilerStep", 1, HOLD_CAP);
        assert!(p.matches("ProfilerStep#7") && !p.matches("Optimizer"));
        assert_eq!(p.met((50, 60)), None);
        // Met second in the file, first in time: the instance 1 is (50, 60).
        assert_eq!(p.met((10, 20)), Some((50, 60)));
        let mut p = Pending::new("S", 0, HOLD_CAP);
        assert_eq!(p.met((5, 6)), Some((5, 6)));
    }

    #[test]
    fn held_ops_come_back_in_file_order_and_past_the_cap_are_let_go() {
        let mut p = Pending::new("S", 0, 12);
        p.hold((3, 100, 7), b"{\"a\":1}");
        p.hold((4, 120, 2), b"{}");
        let got: Vec<_> = p.held().collect();
        assert_eq!(
            got,
            vec![(3, 100, 7, &b"{\"a\":1}"[..]), (4, 120, 2, &b"{}"[..])]
        );
        assert!(!p.lost((0, 10)), "nothing let go yet");
        p.hold((5, 130, 5), b"{\"b\":2}");
        assert_eq!(p.held().count(), 0);
        // The latest start let go is 7: a window from 7 on may miss an op.
        assert!(p.lost((7, 20)) && !p.lost((8, 20)));
        p.hold((6, 140, 9), b"{}");
        assert_eq!(p.held().count(), 1);
    }
}
