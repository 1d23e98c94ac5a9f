//! Names of kernel functions by address (timer callbacks): those saved
//! next to a recording (`OUT.syms`, written by `critpath record`), else the
//! running kernel's symbol table, /proc/kallsyms (readable as root;
//! elsewhere addresses stay numbers).

use critpath_trace::{Interner, Sym};
use rustc_hash::FxHashMap;
use std::path::{Path, PathBuf};

/// Where `critpath record -o OUT` keeps the names of the kernel functions
/// the trace refers to: `OUT.syms`.
pub fn symbols_path(perf_data: &Path) -> PathBuf {
    crate::companion(perf_data, ".syms")
}

/// The names saved in a symbols file (`ADDR NAME` per line, hex address),
/// none when it cannot be read.
pub fn load_symbols(path: &Path) -> FxHashMap<u64, String> {
    let Ok(text) = std::fs::read_to_string(path) else {
        return FxHashMap::default();
    };
    parse_symbols(&text)
}

/// The `ADDR NAME` lines of a symbols file.
pub fn parse_symbols(text: &str) -> FxHashMap<u64, String> {
    text.lines()
        .filter_map(|l| {
            let (a, n) = l.split_once(' ')?;
            Some((u64::from_str_radix(a, 16).ok()?, n.to_string()))
        })
        .collect()
}

/// The running kernel's release (`uname -r`), if it can be read.
pub fn running_kernel() -> Option<String> {
    let r = std::fs::read_to_string("/proc/sys/kernel/osrelease").ok()?;
    Some(r.trim().to_string()).filter(|r| !r.is_empty())
}

/// Kernel function names by address, from /proc/kallsyms: the file's text
/// and its function symbols sorted by address.
pub struct Kallsyms {
    text: String,
    /// (address, start and end of the name in `text`).
    funcs: Vec<(u64, u32, u32)>,
}

impl Kallsyms {
    /// The running kernel's table (empty when unreadable).
    pub fn load() -> Kallsyms {
        Kallsyms::parse(std::fs::read_to_string("/proc/kallsyms").unwrap_or_default())
    }

    /// A table in /proc/kallsyms's format (`ADDR KIND NAME [MODULE]`):
    /// text symbols only, the first name of an address wins.
    pub fn parse(text: String) -> Kallsyms {
        let mut funcs = Vec::new();
        let mut at = 0usize;
        for line in text.split_inclusive('\n') {
            let start = at;
            at += line.len();
            let mut it = line.split_ascii_whitespace();
            let (Some(a), Some(kind), Some(name)) = (it.next(), it.next(), it.next()) else {
                continue;
            };
            if !matches!(kind, "t" | "T" | "w" | "W") {
                continue;
            }
            if let Ok(a) = u64::from_str_radix(a, 16) {
                if a != 0 {
                    let off = name.as_ptr() as usize - line.as_ptr() as usize + start;
                    funcs.push((a, off as u32, (off + name.len()) as u32));
                }
            }
        }
        funcs.sort_by_key(|f| f.0);
        funcs.dedup_by_key(|f| f.0);
        Kallsyms { text, funcs }
    }

    /// Loads the table on another thread (reading /proc/kallsyms is slow:
    /// the kernel formats it) while the trace is read.
    pub fn spawn() -> std::thread::JoinHandle<Kallsyms> {
        std::thread::spawn(Kallsyms::load)
    }

    pub fn name(&self, addr: u64) -> Option<&str> {
        let i = self.funcs.binary_search_by_key(&addr, |f| f.0).ok()?;
        let (_, a, b) = self.funcs[i];
        self.text.get(a as usize..b as usize)
    }
}

/// The names of the kernel functions a trace refers to, interned once:
/// the saved names first (they are the recording kernel's), else this
/// kernel's table, loaded on first need (or in the background).
pub struct FunctionNames {
    saved: FxHashMap<u64, String>,
    kallsyms: Option<Kallsyms>,
    /// The table being loaded in the background.
    loading: Option<std::thread::JoinHandle<Kallsyms>>,
    funcs: FxHashMap<u64, Sym>,
}

impl FunctionNames {
    /// With the names `saved` at recording time; `prefetch` starts loading
    /// /proc/kallsyms now when there are none (the trace has timers).
    pub fn new(saved: FxHashMap<u64, String>, prefetch: bool) -> Self {
        let loading = (prefetch && saved.is_empty()).then(Kallsyms::spawn);
        FunctionNames {
            saved,
            kallsyms: None,
            loading,
            funcs: FxHashMap::default(),
        }
    }

    /// Names only what was saved: the recording is of another kernel,
    /// whose functions lie at other addresses than this one's (this
    /// kernel's table stands empty).
    pub fn saved_only(mut self) -> Self {
        self.kallsyms = Some(Kallsyms::parse(String::new()));
        self.loading = None;
        self
    }

    /// The symbol of a kernel function address; `0x…` when it has no name.
    pub fn get(&mut self, strings: &mut Interner, addr: u64) -> Sym {
        if let Some(&s) = self.funcs.get(&addr) {
            return s;
        }
        let s = match self.saved.get(&addr) {
            Some(n) => strings.intern(n),
            None => {
                let n = self
                    .kallsyms()
                    .name(addr)
                    .map(str::to_string)
                    .unwrap_or_else(|| format!("{addr:#x}"));
                strings.intern(&n)
            }
        };
        self.funcs.insert(addr, s);
        s
    }

    fn kallsyms(&mut self) -> &Kallsyms {
        if self.kallsyms.is_none() {
            let loaded = match self.loading.take() {
                Some(h) => h.join().unwrap_or_else(|_| Kallsyms::load()),
                None => Kallsyms::load(),
            };
            self.kallsyms = Some(loaded);
        }
        self.kallsyms.as_ref().expect("loaded")
    }

    /// Every address named so far, with its symbol.
    pub fn named(&self) -> impl Iterator<Item = (u64, Sym)> + '_ {
        self.funcs.iter().map(|(&a, &s)| (a, s))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kallsyms_keeps_text_symbols_and_the_first_name_of_an_address() {
        let k = Kallsyms::parse(
            "ffff0010 T first\nffff0010 t alias\nffff0020 D data\n0000 T zero\nffff0030 W weak [mod]\n"
                .to_string(),
        );
        assert_eq!(k.name(0xffff0010), Some("first"));
        assert_eq!(k.name(0xffff0020), None);
        assert_eq!(k.name(0), None);
        assert_eq!(k.name(0xffff0030), Some("weak"));
    }

    #[test]
    fn saved_names_are_preferred_and_parsed_from_hex() {
        let saved = parse_symbols("ffff0010 hrtimer_wakeup\nnot-hex line\nzz nope\n");
        assert_eq!(saved.len(), 1);
        let mut names = FunctionNames::new(saved, false);
        let mut strings = Interner::new();
        let s = names.get(&mut strings, 0xffff0010);
        assert_eq!(strings.resolve(s), "hrtimer_wakeup");
        assert_eq!(names.named().count(), 1);
    }
}
