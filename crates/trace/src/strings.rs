//! String interning: every name in a trace (systems, state machines, states,
//! threads, CPUs) becomes a small integer [`Sym`], so the engine compares and
//! hashes integers, never strings.
//!
//! String link ids are different: a trace can hold as many of them as it has
//! messages, and each matters only until its `recv`. A streaming reader gives
//! them *transient* symbols ([`Interner::transient_link`]): their text is
//! kept for the last [`ID_RING`] ids (two generations of one buffer each,
//! `transients.rs`), long enough for the engine to name one in a
//! diagnostic, and the link is matched by a 64-bit hash of the text carried
//! in the [`LinkId`] itself. Memory stays flat however many ids the trace
//! holds.

use crate::event::LinkId;
use crate::transients::{TransientTexts, Transients};
use hashbrown::HashTable;
use rustc_hash::FxBuildHasher;
use std::hash::{BuildHasher, Hasher};

/// How many of the latest transient ids keep their text.
pub const ID_RING: u32 = 1 << 16;
/// The bit that marks a transient symbol.
const TRANSIENT: u32 = 1 << 31;

/// An interned string. `Sym::LOCAL` is always `"local"`, the default system.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct Sym(pub u32);

impl Sym {
    /// The default system name, `"local"`.
    pub const LOCAL: Sym = Sym(0);
    pub fn index(self) -> usize {
        self.0 as usize
    }

    /// A transient symbol (a string link id's) is not an index into the
    /// permanent table: code that keeps tables by symbol must skip it.
    pub fn is_transient(self) -> bool {
        self.0 & TRANSIENT != 0
    }
}

/// The key by which the engine matches a string link id: a 64-bit hash of
/// its text (two ids pending at once collide with odds of about 2^-64 per
/// pair).
pub fn link_key(text: &str) -> u64 {
    let mut h = rustc_hash::FxHasher::default();
    h.write(text.as_bytes());
    h.write_u8(0xff);
    // A final mix so that ids differing in their last bytes spread.
    let mut x = h.finish();
    x ^= x >> 33;
    x = x.wrapping_mul(0xff51_afd7_ed55_8ccd);
    x ^= x >> 33;
    x = x.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    x ^ (x >> 33)
}

/// `bytes` as text, if they are UTF-8: ASCII, as names and ids mostly
/// are, without the call of a full check (a short id's check cost more
/// than its copy).
#[inline]
pub fn utf8(bytes: &[u8]) -> Option<&str> {
    if bytes.is_ascii() {
        // SAFETY: ASCII is UTF-8.
        Some(unsafe { std::str::from_utf8_unchecked(bytes) })
    } else {
        std::str::from_utf8(bytes).ok()
    }
}

/// A string table. Symbols are dense indices in order of first appearance;
/// index 0 is `"local"`.
///
/// The permanent strings sit back to back in one buffer, and the index
/// holds only symbols (the hash of a text finds its symbol, whose place in
/// the buffer is compared): interning a new name costs no allocation of its
/// own, which counts when each of 100,000 requests of a span file builds a
/// table of a few dozen names.
#[derive(Clone, Debug)]
pub struct Interner {
    /// Every permanent string's text, back to back (a renamed symbol's old
    /// text stays, unreferenced).
    text: String,
    /// Each permanent symbol's place in `text`: start and end.
    places: Vec<(usize, usize)>,
    /// The symbol of each text (the first made, when [`Interner::push`]
    /// made several of one text), by the text's hash.
    index: HashTable<Sym>,
    /// The text of the latest transient ids.
    ids: Transients,
}

impl Default for Interner {
    fn default() -> Self {
        Self::new()
    }
}

/// The hash the index files a text under.
fn text_hash(s: &str) -> u64 {
    FxBuildHasher.hash_one(s)
}

impl Interner {
    pub fn new() -> Self {
        // Room for the names of a small trace (a request of a span file)
        // without growing.
        let mut me = Interner {
            text: String::with_capacity(512),
            places: Vec::with_capacity(32),
            index: HashTable::with_capacity(32),
            ids: Transients::default(),
        };
        me.intern("local");
        me
    }

    /// The text of permanent symbol number `i`.
    fn text_of(&self, i: usize) -> &str {
        let (start, end) = self.places[i];
        &self.text[start..end]
    }

    /// The symbol the index holds for `s` (of hash `hash`).
    fn find(&self, hash: u64, s: &str) -> Option<Sym> {
        let (text, places) = (&self.text, &self.places);
        let is = |sym: &Sym| {
            let (start, end) = places[sym.index()];
            &text[start..end] == s
        };
        self.index.find(hash, is).copied()
    }

    /// Appends `s`'s text as the next symbol, unindexed.
    fn append(&mut self, s: &str) -> Sym {
        let sym = Sym(self.places.len() as u32);
        let start = self.text.len();
        self.text.push_str(s);
        self.places.push((start, self.text.len()));
        sym
    }

    /// Files `sym` under `hash` in the index.
    fn index_as(&mut self, hash: u64, sym: Sym) {
        let (text, places) = (&self.text, &self.places);
        let rehash = |s: &Sym| {
            let (start, end) = places[s.index()];
            text_hash(&text[start..end])
        };
        self.index.insert_unique(hash, sym, rehash);
    }

    /// Returns the symbol of `s`, adding it when new.
    pub fn intern(&mut self, s: &str) -> Sym {
        let hash = text_hash(s);
        if let Some(sym) = self.find(hash, s) {
            return sym;
        }
        let sym = self.append(s);
        self.index_as(hash, sym);
        sym
    }

    /// Appends `s` as the next symbol even if it is already present (used by
    /// readers whose file defines strings by position). Returns its symbol.
    pub fn push(&mut self, s: &str) -> Sym {
        let hash = text_hash(s);
        let sym = self.append(s);
        if self.find(hash, s).is_none() {
            self.index_as(hash, sym);
        }
        sym
    }

    /// Gives permanent symbol `sym` the text `text` (a source that names
    /// an SM before it knows its final name renames it at its end). False,
    /// and nothing changed, when another symbol already has that text.
    pub fn rename(&mut self, sym: Sym, text: &str) -> bool {
        if sym.index() >= self.places.len() {
            return false;
        }
        if self.text_of(sym.index()) == text {
            return true;
        }
        let hash = text_hash(text);
        if self.find(hash, text).is_some() {
            return false;
        }
        let had = text_hash(self.text_of(sym.index()));
        if let Ok(entry) = self.index.find_entry(had, |s| *s == sym) {
            entry.remove();
        }
        let start = self.text.len();
        self.text.push_str(text);
        self.places[sym.index()] = (start, self.text.len());
        self.index_as(hash, sym);
        true
    }

    pub fn get(&self, s: &str) -> Option<Sym> {
        self.find(text_hash(s), s)
    }

    pub fn resolve(&self, sym: Sym) -> &str {
        if sym.is_transient() {
            return self.resolve_transient(sym.0 & !TRANSIENT);
        }
        if sym.index() < self.places.len() {
            self.text_of(sym.index())
        } else {
            "?"
        }
    }

    /// The text of transient id number `seq`, while the ring still holds it.
    fn resolve_transient(&self, seq: u32) -> &str {
        self.ids.get(seq).unwrap_or("?")
    }

    /// A string link id that stays out of the permanent table (see the
    /// module's documentation): for readers that stream.
    pub fn transient_link(&mut self, text: &str) -> LinkId {
        let sym = self.transient(text);
        LinkId::Str {
            sym,
            key: link_key(text),
        }
    }

    /// The sequence number the next transient symbol gets (31 bits,
    /// wrapping): a table that mirrors this one asks for the texts made
    /// since the number it last had ([`Interner::transients_since`]).
    pub fn transients_made(&self) -> u32 {
        self.ids.next()
    }

    /// A transient symbol for `text`: its text is kept for the next
    /// [`ID_RING`] transient symbols.
    pub fn transient(&mut self, text: &str) -> Sym {
        Sym(TRANSIENT | self.ids.push(text))
    }

    /// Gives transient symbol `sym` the text `text` (to mirror another
    /// table's transient ids one at a time); symbols must come in the
    /// order they were made.
    pub fn put_transient(&mut self, sym: Sym, text: &str) {
        self.ids.put_one(sym.0 & !TRANSIENT, text);
    }

    /// The texts of the transient ids made from number `from` on (those
    /// the ring still holds), for another table's
    /// [`Interner::put_transients`]: in one copy, not id by id.
    pub fn transients_since(&self, from: u32, out: &mut TransientTexts) {
        self.ids.copy_since(from, out);
    }

    /// Takes the transient ids another table made, as
    /// [`Interner::transients_since`] gave them: this table then resolves
    /// them as that one did when it gave them.
    pub fn put_transients(&mut self, texts: &TransientTexts) {
        self.ids.put(texts);
    }

    /// A string link id interned for good: for sources that build all their
    /// records before the engine sees any.
    pub fn intern_link(&mut self, text: &str) -> LinkId {
        LinkId::Str {
            sym: self.intern(text),
            key: link_key(text),
        }
    }

    /// How many permanent strings the table holds (transient ids aside).
    pub fn len(&self) -> usize {
        self.places.len()
    }

    pub fn is_empty(&self) -> bool {
        self.places.is_empty()
    }

    /// The permanent strings from symbol number `from` on, in order: what
    /// a copy of the table made when it held `from` strings lacks.
    pub fn since(&self, from: usize) -> impl Iterator<Item = &str> {
        (from.min(self.places.len())..self.places.len()).map(|i| self.text_of(i))
    }

    pub fn iter(&self) -> impl Iterator<Item = (Sym, &str)> {
        (0..self.places.len()).map(|i| (Sym(i as u32), self.text_of(i)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_renamed_symbol_keeps_its_place_and_answers_to_its_new_name_only() {
        let mut s = Interner::new();
        let (a, b) = (s.intern("perf-exec:7"), s.intern("late:8"));
        assert!(s.rename(a, "early:7"));
        assert_eq!((s.resolve(a), s.get("early:7")), ("early:7", Some(a)));
        assert_eq!(s.get("perf-exec:7"), None);
        assert_eq!(s.intern("early:7"), a);
        // Another symbol's text is refused, and nothing changes.
        assert!(!s.rename(a, "late:8"));
        assert_eq!((s.resolve(a), s.resolve(b)), ("early:7", "late:8"));
        assert!(s.rename(b, "late:8"));
        assert_eq!(s.len(), 3);
    }

    #[test]
    fn transient_ids_resolve_while_in_the_ring_and_leave_the_table_alone() {
        let mut s = Interner::new();
        let first = s.transient_link("msg-0");
        let LinkId::Str { sym, key } = first else {
            panic!("a string id")
        };
        assert!(sym.is_transient());
        assert_eq!(s.resolve(sym), "msg-0");
        assert_eq!(key, link_key("msg-0"));
        assert_ne!(key, link_key("msg-1"));
        for i in 1..=ID_RING {
            s.transient_link(&format!("msg-{i}"));
        }
        // The permanent table holds only "local"; the oldest id has left
        // the ring, the newest is still there.
        assert_eq!(s.len(), 1);
        assert_eq!(s.resolve(sym), "?");
        assert_eq!(
            s.resolve(Sym(TRANSIENT | ID_RING)),
            format!("msg-{ID_RING}")
        );
    }

    #[test]
    fn a_permanent_and_a_transient_id_of_one_text_match() {
        let mut s = Interner::new();
        let a = s.intern_link("req-7");
        let b = s.transient_link("req-7");
        match (a, b) {
            (LinkId::Str { sym: x, key: k }, LinkId::Str { sym: y, key: l }) => {
                assert!(!x.is_transient() && y.is_transient());
                assert_eq!(k, l);
                assert_eq!(s.resolve(x), s.resolve(y));
            }
            _ => panic!("string ids"),
        }
    }
}
