//! The records of an engine pass, kept so that a second pass (a what-if,
//! the next paths, the verdict's what-if) replays them instead of opening
//! and parsing the input again. [`Recorder`] wraps the source of the first
//! pass; [`Replay`] is a [`RecordSource`] over what it kept: the same
//! records, positions and reader errors in the same order, the transient
//! link ids' texts, the string table, scope and summary.

use critpath_trace::{
    Event, Interner, LinkId, Pos, ReadError, Record, RecordSource, Scope, Summary, Sym,
};

/// What a pass read, as it read it.
#[derive(Default)]
struct Log {
    records: Vec<(Record, Pos)>,
    /// Reader errors, each after this many records.
    errors: Vec<(usize, ReadError)>,
    /// Transient link ids: the record's index, its symbol and text.
    transients: Vec<(usize, Sym, Box<str>)>,
}

impl Log {
    fn push(&mut self, records: &[(Record, Pos)], strings: &Interner) {
        for (r, pos) in records {
            if let Event::Send { id, .. } | Event::Recv { id, .. } = r.ev {
                if let LinkId::Str { sym, .. } = id {
                    if sym.is_transient() {
                        let text = strings.resolve(sym).into();
                        self.transients.push((self.records.len(), sym, text));
                    }
                }
            }
            self.records.push((*r, *pos));
        }
    }
}

/// A source that keeps what it reads, up to `cap` records (past them it
/// keeps nothing: a replay is then impossible).
pub struct Recorder<'a, S: RecordSource + ?Sized> {
    src: &'a mut S,
    log: Option<Log>,
    cap: usize,
    scope: Scope,
    summary: Option<Summary>,
    inferred: Vec<(String, u64)>,
}

impl<'a, S: RecordSource + ?Sized> Recorder<'a, S> {
    pub fn new(src: &'a mut S, cap: usize) -> Self {
        Recorder {
            src,
            log: (cap > 0).then(Log::default),
            cap,
            scope: Scope::default(),
            summary: None,
            inferred: Vec::new(),
        }
    }

    fn keep(&mut self, records: &[(Record, Pos)], err: Option<&ReadError>) {
        if let Some(log) = &mut self.log {
            log.push(records, self.src.strings());
            if let Some(e) = err {
                log.errors.push((log.records.len(), e.clone()));
            }
            if log.records.len() > self.cap {
                self.log = None;
            }
        }
    }

    /// The replay of what was read, if all of it was kept. A source that
    /// renamed SMs at its end renamed them in its string table, which the
    /// replay takes: its records name every SM by its final name from the
    /// first, so its scope is the renamed one and it renames nothing.
    pub fn into_replay(self) -> Option<Replay> {
        let mut summary = self.summary?;
        let scope = self.scope.renamed(&summary.renamed);
        summary.renamed.clear();
        Some(Replay {
            log: self.log?,
            strings: self.src.strings().clone(),
            scope,
            summary,
            inferred: self.inferred,
            at: 0,
            errors_at: 0,
            transients_at: 0,
        })
    }
}

impl<S: RecordSource + ?Sized> RecordSource for Recorder<'_, S> {
    fn next_record(&mut self) -> Result<Option<(Record, Pos)>, ReadError> {
        let r = self.src.next_record();
        match &r {
            Ok(Some(rec)) => self.keep(std::slice::from_ref(rec), None),
            Ok(None) => {}
            Err(e) => self.keep(&[], Some(e)),
        }
        r
    }
    fn next_batch(&mut self, out: &mut Vec<(Record, Pos)>, max: usize) -> Result<(), ReadError> {
        let r = self.src.next_batch(out, max);
        self.keep(out, r.as_ref().err());
        r
    }
    fn strings(&self) -> &Interner {
        self.src.strings()
    }
    fn bytes_read(&self) -> u64 {
        self.src.bytes_read()
    }
    fn summary(&mut self) -> Summary {
        let s = self.src.summary();
        self.summary = Some(s.clone());
        s
    }
    fn inferred_links(&mut self) -> Vec<(String, u64)> {
        self.inferred = self.src.inferred_links();
        self.inferred.clone()
    }
    fn scope(&mut self) -> Scope {
        self.scope = self.src.scope();
        self.scope.clone()
    }
    fn prepare(&mut self, late_names: bool) {
        // A pass starts (again, after a restart): keep only its records.
        if self.log.is_some() {
            self.log = Some(Log::default());
        }
        self.src.prepare(late_names)
    }
    fn restart(&mut self) -> bool {
        self.src.restart()
    }
}

/// The records a [`Recorder`] kept, read again from their start by each
/// pass ([`Replay::rewind`]).
pub struct Replay {
    log: Log,
    strings: Interner,
    scope: Scope,
    summary: Summary,
    /// The receives whose links the source inferred (SM, time).
    inferred: Vec<(String, u64)>,
    at: usize,
    errors_at: usize,
    transients_at: usize,
}

impl Replay {
    /// Back to the first record, for another pass.
    pub fn rewind(&mut self) {
        (self.at, self.errors_at, self.transients_at) = (0, 0, 0);
    }

    /// How many records it holds.
    pub fn len(&self) -> usize {
        self.log.records.len()
    }

    pub fn is_empty(&self) -> bool {
        self.log.records.is_empty()
    }

    /// The error due before record `at`, if any, taken.
    fn error_due(&mut self) -> Option<ReadError> {
        let (at, e) = self.log.errors.get(self.errors_at)?;
        (*at == self.at).then(|| {
            self.errors_at += 1;
            e.clone()
        })
    }

    /// Gives record `at`'s transient link id its text.
    fn put_transients(&mut self) {
        while let Some((i, sym, text)) = self.log.transients.get(self.transients_at) {
            if *i != self.at {
                break;
            }
            self.strings.put_transient(*sym, text);
            self.transients_at += 1;
        }
    }
}

impl RecordSource for Replay {
    fn next_record(&mut self) -> Result<Option<(Record, Pos)>, ReadError> {
        if let Some(e) = self.error_due() {
            return Err(e);
        }
        let Some(&r) = self.log.records.get(self.at) else {
            return Ok(None);
        };
        self.put_transients();
        self.at += 1;
        Ok(Some(r))
    }
    fn next_batch(&mut self, out: &mut Vec<(Record, Pos)>, max: usize) -> Result<(), ReadError> {
        out.clear();
        while out.len() < max {
            if let Some(e) = self.error_due() {
                return Err(e);
            }
            let Some(&r) = self.log.records.get(self.at) else {
                break;
            };
            self.put_transients();
            self.at += 1;
            out.push(r);
        }
        Ok(())
    }
    fn strings(&self) -> &Interner {
        &self.strings
    }
    fn summary(&mut self) -> Summary {
        self.summary.clone()
    }
    fn inferred_links(&mut self) -> Vec<(String, u64)> {
        self.inferred.clone()
    }
    fn scope(&mut self) -> Scope {
        self.scope.clone()
    }
}
