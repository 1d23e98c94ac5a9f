//! The texts of the latest transient link ids (see [`crate::strings`]):
//! two generations of [`ID_RING`] ids each, every generation's texts back
//! to back in one buffer. A new id appends to the current generation;
//! when that is full the other, older one is emptied and takes its place,
//! so the latest [`ID_RING`] ids always have their text and steady state
//! allocates nothing. A table that mirrors another (the engine's thread
//! mirrors its reader's) takes the texts made since it last looked in one
//! copy ([`Transients::copy_since`], [`Transients::put`]), not id by id.

use crate::strings::ID_RING;

/// Sequence numbers are 31 bits and wrap.
const SEQ: u32 = (1 << 31) - 1;

#[derive(Clone, Debug, Default)]
pub(crate) struct Transients {
    gens: [Gen; 2],
    /// The generation new ids go to.
    cur: usize,
    /// The sequence number of the next id.
    next: u32,
}

/// One generation: ids `first`, `first + 1`, … with their texts.
#[derive(Clone, Debug, Default)]
struct Gen {
    first: u32,
    text: String,
    /// Each id's end in `text`.
    ends: Vec<usize>,
}

impl Gen {
    fn get(&self, seq: u32) -> Option<&str> {
        let (text, ends, start) = self.since(seq)?;
        Some(&text[..ends[0] - start])
    }

    fn restart(&mut self, first: u32) {
        self.first = first;
        self.text.clear();
        self.ends.clear();
    }

    /// Appends the ids of `text` ending at `ends`, offsets counted from
    /// `start` (where `text` began in the caller's buffer).
    fn extend(&mut self, text: &str, ends: &[usize], start: usize) {
        let base = self.text.len();
        self.text.push_str(text);
        self.ends.extend(ends.iter().map(|e| base + e - start));
    }

    /// The ids from `seq` on, when this generation holds `seq`: their
    /// texts, their ends, and where the first began (ends count from it).
    fn since(&self, seq: u32) -> Option<(&str, &[usize], usize)> {
        let i = (seq.wrapping_sub(self.first) & SEQ) as usize;
        if i >= self.ends.len() {
            return None;
        }
        let start = if i == 0 { 0 } else { self.ends[i - 1] };
        Some((&self.text[start..], &self.ends[i..], start))
    }
}

/// The texts of ids `first`, `first + 1`, … made by one table since
/// another last mirrored it, carried between threads.
#[derive(Clone, Debug, Default)]
pub struct TransientTexts {
    first: u32,
    text: String,
    ends: Vec<usize>,
}

impl Transients {
    /// The sequence number of the next id.
    pub fn next(&self) -> u32 {
        self.next
    }

    /// Gives the next id the text `text`; returns its sequence number.
    #[inline]
    pub fn push(&mut self, text: &str) -> u32 {
        let seq = self.next;
        self.room(1);
        let g = &mut self.gens[self.cur];
        g.text.push_str(text);
        g.ends.push(g.text.len());
        self.next = (seq + 1) & SEQ;
        seq
    }

    /// Appends ids with the texts of `text` ending at `ends` (offsets
    /// into `text`), filling as many generations as they take.
    fn append(&mut self, text: &str, mut ends: &[usize]) {
        let mut start = 0;
        while let Some(room) = self.room(ends.len()) {
            let (piece, rest) = ends.split_at(room);
            let end = piece[room - 1];
            self.gens[self.cur].extend(&text[start..end], piece, start);
            self.next = (self.next + room as u32) & SEQ;
            (start, ends) = (end, rest);
        }
    }

    /// How many of `want` new ids the current generation takes, once a
    /// full one has handed over to the other (`None` for none wanted).
    #[inline]
    fn room(&mut self, want: usize) -> Option<usize> {
        if want == 0 {
            return None;
        }
        if self.gens[self.cur].ends.len() >= ID_RING as usize {
            self.cur ^= 1;
            self.gens[self.cur].restart(self.next);
        }
        Some(want.min(ID_RING as usize - self.gens[self.cur].ends.len()))
    }

    /// The text of id `seq` while it is one of the latest [`ID_RING`].
    pub fn get(&self, seq: u32) -> Option<&str> {
        let age = self.next.wrapping_sub(seq) & SEQ;
        if age == 0 || age > ID_RING {
            return None;
        }
        let [a, b] = [&self.gens[self.cur], &self.gens[self.cur ^ 1]];
        a.get(seq).or_else(|| b.get(seq))
    }

    /// Puts into `out` the texts of the ids from `from` on that this table
    /// still holds (at most the latest [`ID_RING`]; none from before it
    /// last started afresh), for [`Transients::put`] on another table.
    pub fn copy_since(&self, from: u32, out: &mut TransientTexts) {
        out.text.clear();
        out.ends.clear();
        let old = &self.gens[self.cur ^ 1];
        let held_from = if old.ends.is_empty() {
            self.gens[self.cur].first
        } else {
            old.first
        };
        let age = |seq: u32| self.next.wrapping_sub(seq) & SEQ;
        let ring_from = self.next.wrapping_sub(ID_RING) & SEQ;
        out.first = [from, held_from, ring_from]
            .into_iter()
            .min_by_key(|&seq| age(seq))
            .unwrap_or(from);
        for g in [old, &self.gens[self.cur]] {
            let seq = (out.first + out.ends.len() as u32) & SEQ;
            if let Some((text, ends, start)) = g.since(seq) {
                let at = out.text.len();
                out.text.push_str(text);
                out.ends.extend(ends.iter().map(|e| e - start + at));
            }
        }
    }

    /// Takes the ids another table made, as [`Transients::copy_since`]
    /// gave them: this table then resolves them as that one did (ids that
    /// do not follow this table's latest as [`Transients::follow`] says).
    pub fn put(&mut self, t: &TransientTexts) {
        if !t.ends.is_empty() {
            self.follow(t.first);
            self.append(&t.text, &t.ends);
        }
    }

    /// Gives id `seq` the text `text`: ids must come in the order they
    /// were made (one that skips ahead or goes back as
    /// [`Transients::follow`] says).
    pub fn put_one(&mut self, seq: u32, text: &str) {
        self.follow(seq);
        self.push(text);
    }

    /// Makes `seq` the next id: the ids skipped up to it, if they are
    /// among the latest [`ID_RING`], get no text (no one asks for it: their
    /// records never came, as when a replay gives only the records that
    /// were fed); past that, or back, the table starts afresh at `seq`.
    fn follow(&mut self, seq: u32) {
        let skipped = seq.wrapping_sub(self.next) & SEQ;
        if skipped == 0 {
            return;
        }
        if skipped <= ID_RING {
            for _ in 0..skipped {
                self.push("");
            }
            return;
        }
        for g in &mut self.gens {
            g.restart(seq);
        }
        self.next = seq;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(i: u32) -> String {
        format!("m-{i}-{}", "x".repeat((i % 7) as usize))
    }

    /// A table that mirrors another through `copy_since` and `put`, in
    /// steps of every size (past a generation, past the whole ring),
    /// resolves every id as the other does after each step.
    #[test]
    fn a_mirror_resolves_every_id_as_its_source() {
        let (mut src, mut dst, mut carried) = (
            Transients::default(),
            Transients::default(),
            TransientTexts::default(),
        );
        let mut sent = 0;
        let mut made = 0u32;
        for step in [
            0,
            1,
            5,
            1000,
            ID_RING - 3,
            2,
            ID_RING + 9,
            3 * ID_RING,
            17,
            ID_RING,
        ] {
            for _ in 0..step {
                assert_eq!(src.push(&text(made)), made);
                made += 1;
            }
            src.copy_since(sent, &mut carried);
            sent = src.next();
            dst.put(&carried);
            assert_eq!(dst.next(), src.next());
            let oldest = made.saturating_sub(ID_RING + 2);
            for seq in oldest..made + 2 {
                assert_eq!(
                    dst.get(seq),
                    src.get(seq),
                    "id {seq} after a step of {step}"
                );
            }
            assert_eq!(
                src.get(made.wrapping_sub(1)).map(str::to_string),
                (made > 0).then(|| text(made - 1))
            );
        }
        // The latest ID_RING ids have their text, no older one.
        assert_eq!(
            src.get(made - ID_RING).map(str::to_string),
            Some(text(made - ID_RING))
        );
        assert_eq!(src.get(made - ID_RING - 1), None);
    }

    /// A table given ids one at a time, some skipping ahead (a replay of
    /// the records that had ids), mirrored: the mirror resolves every id
    /// as its source, the ids since the source last started afresh too.
    #[test]
    fn a_mirror_of_a_table_with_gaps_resolves_as_it() {
        let (mut src, mut dst, mut carried) = (
            Transients::default(),
            Transients::default(),
            TransientTexts::default(),
        );
        let mut sent = 0;
        let mut seq = 0u32;
        for round in 0..40u32 {
            for _ in 0..(round * 97 % 3000) {
                src.put_one(seq, &text(seq));
                seq += 1;
            }
            seq += if round % 5 == 4 {
                ID_RING + 7
            } else {
                round % 3 * 50
            };
            src.copy_since(sent, &mut carried);
            sent = src.next();
            dst.put(&carried);
            for s in seq.saturating_sub(ID_RING + 200)..seq + 2 {
                assert_eq!(dst.get(s), src.get(s), "id {s} in round {round}");
            }
        }
    }

    /// Ids given one at a time follow on; one that skips a few keeps the
    /// ids before, one that skips past the ring or goes back starts the
    /// table afresh, and sequence numbers wrap at 31 bits.
    #[test]
    fn ids_put_one_at_a_time_follow_skip_and_wrap() {
        let mut t = Transients::default();
        t.put_one(0, "a");
        t.put_one(1, "b");
        assert_eq!((t.get(0), t.get(1), t.get(2)), (Some("a"), Some("b"), None));
        t.put_one(9, "c");
        assert_eq!((t.get(1), t.get(9), t.next()), (Some("b"), Some("c"), 10));
        t.put_one(10 + ID_RING, "far");
        assert_eq!((t.get(9), t.get(10 + ID_RING)), (None, Some("far")));
        t.put_one(3, "back");
        assert_eq!(
            (t.get(10 + ID_RING), t.get(3), t.next()),
            (None, Some("back"), 4)
        );
        t.put_one(SEQ, "last");
        t.put_one(0, "wrapped");
        assert_eq!(
            (t.get(SEQ), t.get(0), t.next()),
            (Some("last"), Some("wrapped"), 1)
        );
    }
}
