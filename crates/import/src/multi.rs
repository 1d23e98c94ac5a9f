//! Several traces of different hosts as one: each file is one clock. Clocks
//! are aligned from the `send`/`recv` pairs that cross between files (the
//! smallest one-way delay each way, NTP-style, assuming the fastest message
//! takes as long in both directions), then the files are merged in time
//! order into one stream with one string table. Records of the default
//! system `local` take the file's name (its stem) as their system.

use crate::{open, AnySource};
use critpath_trace::{Event, Interner, LinkId, Pos, ReadError, Record, RecordSource, Scope, Sym};
use serde::Serialize;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// How one file's clock was aligned.
#[derive(Clone, Debug, Serialize)]
pub struct ClockOffset {
    pub file: String,
    /// The system its `local` records were given.
    pub sys: String,
    /// The file's clock minus the reference clock (the first file's), ns.
    pub offset_ns: i64,
    /// Messages seen each way between this file and the one it was aligned to.
    pub links_out: u64,
    pub links_in: u64,
    /// `both-ways`, `one-way`, `reference`, `unlinked` or `no-records`.
    pub method: String,
}

/// The method of a file that gave no record to align (it was cut before
/// its first): its clock is left as it is.
pub const NO_RECORDS: &str = "no-records";

/// The result of aligning several files.
#[derive(Clone, Debug, Serialize)]
pub struct Alignment {
    pub offsets: Vec<ClockOffset>,
    /// Each file's first time.
    #[serde(skip)]
    pub first_t: Vec<u64>,
    /// Files no link reaches from the reference (by index).
    #[serde(skip)]
    pub unlinked: Vec<usize>,
}

impl Alignment {
    /// One `clock-offset` diagnostic per file aligned to the first, saying
    /// by how much and from what (every front end adds them to a merged
    /// analysis).
    pub fn diagnostics(&self) -> Vec<critpath_trace::Diagnostic> {
        self.offsets
            .iter()
            .filter(|o| o.method != "reference" && o.method != NO_RECORDS)
            .map(|o| critpath_trace::Diagnostic::new(critpath_trace::DiagnosticKind::ClockOffset,
                format!(
                    "{} (system {}): clock offset {} ns from the first trace, from {} send/recv pairs out and {} in ({})",
                    o.file, o.sys, o.offset_ns, o.links_out, o.links_in, o.method
                ),
            ))
            .collect()
    }

    /// When some of `paths` (the files aligned) share no link with the
    /// first: why that leaves them unaligned, in words, and `then`, what
    /// the caller does about it.
    pub fn unlinked_message(&self, paths: &[PathBuf], then: &str) -> Option<String> {
        if self.unlinked.is_empty() {
            return None;
        }
        let names: Vec<String> = self
            .unlinked
            .iter()
            .map(|&i| crate::input::display_name(&paths[i]))
            .collect();
        Some(format!(
            "no send/recv link joins {} to {}: their clocks cannot be aligned and no dependence crosses between them{then}",
            names.join(", "),
            crate::input::display_name(&paths[0])
        ))
    }
}

/// The system a trace's records are merged as: its file's name without
/// the extension (`stdin` for standard input).
fn stem(p: &Path) -> String {
    if p == Path::new("-") {
        return "stdin".into();
    }
    p.file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or("trace")
        .to_string()
}

/// A link id made comparable across files (string ids by their text).
#[derive(Clone, PartialEq, Eq, Hash)]
enum Key {
    Num(u64),
    Str(String),
}

fn key(id: LinkId, s: &Interner) -> Key {
    match id {
        LinkId::Num(n) => Key::Num(n),
        LinkId::Str { sym, .. } => Key::Str(s.resolve(sym).to_string()),
    }
}

fn link_of(ev: &Event) -> Option<(bool, LinkId)> {
    match *ev {
        Event::Send { id, .. } => Some((true, id)),
        Event::Recv { id, .. } => Some((false, id)),
        _ => None,
    }
}

/// What aligning the clocks needs of every file, read once: the latest
/// send time of each id (and its file), every receive, each file's first
/// time, and which files hold no record.
struct Links {
    sends: HashMap<Key, (usize, u64)>,
    recvs: Vec<(Key, usize, u64)>,
    first_t: Vec<u64>,
    empty: Vec<bool>,
}

fn read_links(paths: &[PathBuf]) -> Result<Links, ReadError> {
    let mut l = Links {
        sends: HashMap::new(),
        recvs: Vec::new(),
        first_t: vec![0u64; paths.len()],
        empty: vec![true; paths.len()],
    };
    for (f, p) in paths.iter().enumerate() {
        let mut src = open(p)?;
        let mut batch = Vec::new();
        loop {
            let r = src.next_batch(&mut batch, 4096);
            for (rec, _) in &batch {
                if l.empty[f] {
                    l.first_t[f] = rec.t;
                    l.empty[f] = false;
                }
                if let Some((is_send, id)) = link_of(&rec.ev) {
                    let k = key(id, src.strings());
                    if is_send {
                        l.sends.insert(k, (f, rec.t));
                    } else {
                        l.recvs.push((k, f, rec.t));
                    }
                }
            }
            // A cut file ends here (the merge reports where): its records
            // so far still count, and the other files are read.
            match r {
                Ok(()) if batch.is_empty() => break,
                Ok(()) => {}
                Err(e) if e.fatal => break,
                Err(_) => {}
            }
        }
    }
    Ok(l)
}

/// Reads every file once and works out each one's clock offset.
pub fn align(paths: &[PathBuf]) -> Result<Alignment, ReadError> {
    if let Some(al) = crate::kineto::alignment(paths)? {
        return Ok(al);
    }
    let n = paths.len();
    let Links {
        sends,
        recvs,
        first_t,
        empty,
    } = read_links(paths)?;
    // min delay[a][b] over messages a -> b (i128: clocks may differ a lot).
    let mut min = vec![vec![None::<i128>; n]; n];
    let mut count = vec![vec![0u64; n]; n];
    for (k, fr, tr) in &recvs {
        if let Some(&(fs, ts)) = sends.get(k) {
            if fs != *fr {
                let d = i128::from(*tr) - i128::from(ts);
                let m = &mut min[fs][*fr];
                *m = Some(m.map_or(d, |x: i128| x.min(d)));
                count[fs][*fr] += 1;
            }
        }
    }
    // Offsets by breadth-first search from the reference (file 0).
    let mut offset: Vec<Option<i128>> = vec![None; n];
    let mut via: Vec<(usize, &'static str)> = vec![(0, "reference"); n];
    offset[0] = Some(0);
    let mut queue = std::collections::VecDeque::from([0usize]);
    while let Some(a) = queue.pop_front() {
        for b in 0..n {
            if offset[b].is_some() || (min[a][b].is_none() && min[b][a].is_none()) {
                continue;
            }
            // theta = clock_b - clock_a.
            let (theta, method) = match (min[a][b], min[b][a]) {
                (Some(dab), Some(dba)) => ((dab - dba) / 2, "both-ways"),
                (Some(dab), None) => (dab.min(0), "one-way"),
                (None, Some(dba)) => ((-dba).max(0), "one-way"),
                (None, None) => unreachable!(),
            };
            offset[b] = Some(offset[a].expect("set") + theta);
            via[b] = (a, method);
            queue.push_back(b);
        }
    }
    let offsets = (0..n)
        .map(|f| {
            let (a, method) = via[f];
            ClockOffset {
                file: crate::input::display_name(&paths[f]),
                sys: stem(&paths[f]),
                offset_ns: offset[f].unwrap_or(0) as i64,
                links_out: if f == 0 { 0 } else { count[f][a] },
                links_in: if f == 0 { 0 } else { count[a][f] },
                method: match (offset[f], empty[f]) {
                    (Some(_), _) => method.into(),
                    (None, true) => NO_RECORDS.into(),
                    (None, false) => "unlinked".into(),
                },
            }
        })
        .collect();
    // A file that gave no record (cut before its first) has nothing to
    // link: it is merged with the others, its cut reported.
    let unlinked = (0..n)
        .filter(|&f| offset[f].is_none() && !empty[f])
        .collect();
    Ok(Alignment {
        offsets,
        first_t,
        unlinked,
    })
}

struct Input {
    src: AnySource,
    /// File symbol -> merged symbol.
    map: Vec<Sym>,
    sys: Sym,
    shift: i128,
    head: Option<(Record, Pos)>,
    batch: Vec<(Record, Pos)>,
    at: usize,
    /// The file was cut: nothing more is read after its last batch.
    cut: bool,
}

/// The files merged in time order, clocks shifted by their offsets.
pub struct MergedSource {
    inputs: Vec<Input>,
    strings: Interner,
    bytes: u64,
    /// Reader errors to report before going on (records skipped).
    deferred: Vec<ReadError>,
    /// Where files were cut, reported once every file is read to its end.
    cuts: Vec<ReadError>,
}

impl MergedSource {
    pub fn new(paths: &[PathBuf], alignment: &Alignment) -> Result<Self, ReadError> {
        let mut strings = Interner::new();
        let ranks = crate::kineto::open_ranks(paths)?;
        // Times go on the reference clock, shifted only as far as needed to
        // keep every time at or above 0.
        let lift = alignment
            .offsets
            .iter()
            .zip(&alignment.first_t)
            .map(|(o, &t)| i128::from(o.offset_ns) - i128::from(t))
            .max()
            .unwrap_or(0)
            .max(0);
        let mut inputs = Vec::new();
        // Kineto ranks come aligned and joined already: one input.
        let paths = if ranks.is_some() { &paths[..0] } else { paths };
        inputs.extend(ranks.map(|src| Input {
            src,
            map: Vec::new(),
            sys: Sym::LOCAL,
            shift: 0,
            head: None,
            batch: Vec::new(),
            at: 0,
            cut: false,
        }));
        for (f, p) in paths.iter().enumerate() {
            let sys = strings.intern(&alignment.offsets[f].sys);
            inputs.push(Input {
                src: open(p)?,
                map: Vec::new(),
                sys,
                shift: lift - i128::from(alignment.offsets[f].offset_ns),
                head: None,
                batch: Vec::new(),
                at: 0,
                cut: false,
            });
        }
        let mut me = MergedSource {
            inputs,
            strings,
            bytes: 0,
            deferred: Vec::new(),
            cuts: Vec::new(),
        };
        for i in 0..me.inputs.len() {
            me.refill(i);
        }
        Ok(me)
    }

    /// Loads the next record of input `i` into its head. A reader error is
    /// kept to be reported; a cut file simply ends while the others go on,
    /// its cut reported after their ends.
    fn refill(&mut self, i: usize) {
        loop {
            let inp = &mut self.inputs[i];
            if inp.at < inp.batch.len() {
                let (rec, pos) = inp.batch[inp.at];
                inp.at += 1;
                let mapped = map_record(&rec, inp, &mut self.strings);
                self.inputs[i].head = Some((mapped, pos));
                return;
            }
            inp.at = 0;
            if inp.cut {
                inp.batch.clear();
                inp.head = None;
                return;
            }
            let r = inp.src.next_batch(&mut inp.batch, 1024);
            let done = match r {
                Ok(()) => inp.batch.is_empty(),
                Err(e) if e.fatal => {
                    // One cut file ends (after the records of its last
                    // batch); the merge goes on with the others.
                    inp.cut = true;
                    self.cuts.push(e);
                    inp.batch.is_empty()
                }
                Err(e) => {
                    self.deferred.push(e);
                    false
                }
            };
            if done {
                self.inputs[i].head = None;
                return;
            }
        }
    }
}

impl MergedSource {
    /// Once every file is read: where each cut file was cut. The last one
    /// ends the reading, as a single file's cut does (`input-cut`); any
    /// before it say what became of their files.
    fn cut(&mut self) -> Result<Option<(Record, Pos)>, ReadError> {
        if self.cuts.is_empty() {
            return Ok(None);
        }
        let mut e = self.cuts.remove(0);
        if !self.cuts.is_empty() {
            e.fatal = false;
            e.message
                .push_str("; the analysis covers this file's records before this point");
            e = e.saying_outcome();
        }
        Err(e)
    }
}

fn map_record(rec: &Record, inp: &mut Input, strings: &mut Interner) -> Record {
    let file_strings = inp.src.strings();
    let map = &mut inp.map;
    let mut m = |s: Sym| -> Sym {
        if s.is_transient() {
            return strings.transient(file_strings.resolve(s));
        }
        let i = s.index();
        while map.len() <= i {
            let next = Sym(map.len() as u32);
            map.push(strings.intern(file_strings.resolve(next)));
        }
        map[i]
    };
    let mut ev = rec.ev.map_syms(&mut m);
    // The default system of a file is the file's own.
    if let Event::Wait {
        on_sys: Some(s), ..
    } = &mut ev
    {
        if *s == Sym::LOCAL {
            *s = inp.sys;
        }
    }
    let sys = if rec.sys == Sym::LOCAL {
        inp.sys
    } else {
        m(rec.sys)
    };
    let t = (i128::from(rec.t) + inp.shift).max(0) as u64;
    Record { t, sys, ev }
}

impl RecordSource for MergedSource {
    fn next_record(&mut self) -> Result<Option<(Record, Pos)>, ReadError> {
        if !self.deferred.is_empty() {
            return Err(self.deferred.remove(0));
        }
        // The earliest head; ties go to the earlier file.
        let mut best: Option<usize> = None;
        for (i, inp) in self.inputs.iter().enumerate() {
            if let Some((r, _)) = &inp.head {
                if best.is_none_or(|b| r.t < self.inputs[b].head.as_ref().expect("head").0.t) {
                    best = Some(i);
                }
            }
        }
        let Some(i) = best else {
            return self.cut();
        };
        let out = self.inputs[i].head.take();
        self.refill(i);
        self.bytes = self.inputs.iter().map(|x| x.src.bytes_read()).sum();
        Ok(out)
    }

    fn strings(&self) -> &Interner {
        &self.strings
    }

    fn bytes_read(&self) -> u64 {
        self.bytes
    }

    /// No start or destination (each file's own would be ambiguous), but
    /// what-ifs spread as each file's format says.
    fn scope(&mut self) -> Scope {
        let mut scope = Scope::default();
        for inp in &mut self.inputs {
            for rule in inp.src.scope().scales_with {
                if !scope.scales_with.contains(&rule) {
                    scope.scales_with.push(rule);
                }
            }
        }
        scope
    }
}
