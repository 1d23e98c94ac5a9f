//! String interning: every name in a trace (systems, state machines, states,
//! threads, CPUs, string link ids) becomes a small integer [`Sym`], so the
//! engine compares and hashes integers, never strings.

use rustc_hash::FxHashMap;

/// An interned string. `Sym::LOCAL` is always `"local"`, the default system.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct Sym(pub u32);

impl Sym {
    /// The default system name, `"local"`.
    pub const LOCAL: Sym = Sym(0);
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// A string table. Symbols are dense indices in order of first appearance;
/// index 0 is `"local"`.
#[derive(Clone, Debug)]
pub struct Interner {
    strings: Vec<Box<str>>,
    index: FxHashMap<Box<str>, Sym>,
}

impl Default for Interner {
    fn default() -> Self {
        Self::new()
    }
}

impl Interner {
    pub fn new() -> Self {
        let mut me = Interner {
            strings: Vec::new(),
            index: FxHashMap::default(),
        };
        me.intern("local");
        me
    }

    /// Returns the symbol of `s`, adding it when new.
    pub fn intern(&mut self, s: &str) -> Sym {
        if let Some(&sym) = self.index.get(s) {
            return sym;
        }
        let sym = Sym(self.strings.len() as u32);
        let boxed: Box<str> = s.into();
        self.strings.push(boxed.clone());
        self.index.insert(boxed, sym);
        sym
    }

    /// Appends `s` as the next symbol even if it is already present (used by
    /// readers whose file defines strings by position). Returns its symbol.
    pub fn push(&mut self, s: &str) -> Sym {
        let sym = Sym(self.strings.len() as u32);
        let boxed: Box<str> = s.into();
        self.strings.push(boxed.clone());
        self.index.entry(boxed).or_insert(sym);
        sym
    }

    pub fn get(&self, s: &str) -> Option<Sym> {
        self.index.get(s).copied()
    }

    pub fn resolve(&self, sym: Sym) -> &str {
        self.strings.get(sym.index()).map(|s| &**s).unwrap_or("?")
    }

    pub fn len(&self) -> usize {
        self.strings.len()
    }

    pub fn is_empty(&self) -> bool {
        self.strings.is_empty()
    }

    pub fn iter(&self) -> impl Iterator<Item = (Sym, &str)> {
        self.strings
            .iter()
            .enumerate()
            .map(|(i, s)| (Sym(i as u32), &**s))
    }
}
