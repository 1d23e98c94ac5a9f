//! What the JSON importers (Chrome / Perfetto, OTLP / Jaeger) share: reading
//! a document as a stream while knowing the line each value starts on, the
//! list of problems met on the way (each naming the file, the event, its
//! line and the field), and the record source they build, which reports
//! those problems beside the records as the JSONL reader does.

use crate::tracks::TrackSource;
use critpath_trace::{
    Diagnostic, Interner, Location, Pos, ReadError, Record, RecordSource, Summary,
};
use serde_json::Value;
use std::cell::Cell;
use std::collections::VecDeque;
use std::io::{self, Read};
use std::rc::Rc;

/// A reader that counts the newlines read through it, so a streaming
/// parser can say on which line a value starts. It buffers its input: a
/// parser that reads a byte at a time (serde_json's `from_reader`) takes
/// each from the buffer, and only the bytes handed out are counted.
pub struct LineCounter<R> {
    inner: R,
    buf: Box<[u8]>,
    at: usize,
    len: usize,
    lines: Rc<Cell<u64>>,
    bytes: Rc<Cell<u64>>,
}

/// The position shared with the parser's visitors.
#[derive(Clone, Default)]
pub struct Position {
    lines: Rc<Cell<u64>>,
    bytes: Rc<Cell<u64>>,
}

impl Position {
    /// The 1-based line the parser is on.
    pub fn line(&self) -> u64 {
        self.lines.get() + 1
    }
    /// Bytes read so far.
    pub fn bytes(&self) -> u64 {
        self.bytes.get()
    }
    /// `n` more bytes read (by a reader that does not stream them).
    pub fn advance(&self, n: u64) {
        self.bytes.set(self.bytes.get() + n);
    }
}

impl<R: Read> LineCounter<R> {
    pub fn new(inner: R) -> (Self, Position) {
        let pos = Position::default();
        let me = LineCounter {
            inner,
            buf: vec![0; 1 << 16].into_boxed_slice(),
            at: 0,
            len: 0,
            lines: pos.lines.clone(),
            bytes: pos.bytes.clone(),
        };
        (me, pos)
    }
}

impl<R: Read> Read for LineCounter<R> {
    #[inline]
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        if self.at == self.len {
            if out.len() >= self.buf.len() {
                let n = self.inner.read(out)?;
                self.count(&out[..n]);
                return Ok(n);
            }
            self.len = self.inner.read(&mut self.buf)?;
            self.at = 0;
            if self.len == 0 {
                return Ok(0);
            }
        }
        if let [one] = out {
            // The parser's usual call: no copy routine for one byte.
            let b = self.buf[self.at];
            *one = b;
            self.at += 1;
            self.count(&[b]);
            return Ok(1);
        }
        let n = out.len().min(self.len - self.at);
        out[..n].copy_from_slice(&self.buf[self.at..self.at + n]);
        self.at += n;
        self.count(&out[..n]);
        Ok(n)
    }
}

impl<R> LineCounter<R> {
    #[inline]
    fn count(&self, served: &[u8]) {
        let nl = match served {
            [b] => (*b == b'\n') as u64,
            _ => served.iter().filter(|&&b| b == b'\n').count() as u64,
        };
        self.lines.set(self.lines.get() + nl);
        self.bytes.set(self.bytes.get() + served.len() as u64);
    }
}

/// Problems kept one by one; past that only counted, so a trace of
/// millions of bad events is read in bounded memory.
pub const PROBLEMS_LISTED: usize = 1000;

/// Problems met while importing: each one a skipped event or field.
#[derive(Clone)]
pub struct Problems {
    name: String,
    /// What the file is, for messages ("Chrome/Perfetto trace JSON").
    kind: &'static str,
    pub list: Vec<ReadError>,
    /// Problems past [`PROBLEMS_LISTED`], counted only.
    pub more: u64,
}

impl Problems {
    pub fn new(name: &str, kind: &'static str) -> Self {
        Problems {
            name: name.to_string(),
            kind,
            list: Vec::new(),
            more: 0,
        }
    }

    /// The file's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Every problem met, listed or not.
    pub fn count(&self) -> u64 {
        self.list.len() as u64 + self.more
    }

    /// A value that could not be used at `what` (a JSON path such as
    /// `traceEvents[3]`), starting on `line`; it is skipped.
    pub fn add(&mut self, line: u64, what: &str, msg: impl AsRef<str>) {
        self.note(line, what, format!("{}; skipped", msg.as_ref()));
    }

    /// A part of a value that could not be used (the rest is).
    pub fn note(&mut self, line: u64, what: &str, msg: impl AsRef<str>) {
        self.note_at(Location::Line(line), what, msg);
    }

    /// A problem met elsewhere (another file's), kept as it is.
    pub fn push(&mut self, e: ReadError) {
        if self.list.len() >= PROBLEMS_LISTED {
            self.more += 1;
        } else {
            self.list.push(e);
        }
    }

    /// Every problem of `other` after these (listed while there is room,
    /// else counted), `other` left empty.
    pub fn append(&mut self, other: &mut Problems) {
        self.more += std::mem::take(&mut other.more);
        for p in other.list.drain(..) {
            self.push(p);
        }
    }

    /// [`Problems::note`] at any location (a byte offset in a binary file).
    /// The message says what became of the value (skipped, kept cut ...).
    pub fn note_at(&mut self, at: Location, what: &str, msg: impl AsRef<str>) {
        if self.list.len() >= PROBLEMS_LISTED {
            self.more += 1;
            return;
        }
        let msg = format!("{what}: {}", msg.as_ref());
        let e = ReadError::new(&self.name, at, msg, false);
        self.list.push(e.saying_outcome());
    }

    /// A problem with the document's syntax at `line` (it is cut short, or
    /// corrupt); `read` says how much was read before it.
    pub fn syntax(&mut self, line: u64, err: &serde_json::Error, read: &str) -> ReadError {
        let what = strip_position(&err.to_string());
        self.broken(line, err.is_eof(), &what, read)
    }

    /// [`Problems::syntax`] from a description: the document ends early
    /// (`eof`) or is corrupt, `what` says how.
    pub fn broken(&self, line: u64, eof: bool, what: &str, read: &str) -> ReadError {
        let msg = if eof {
            format!("the {} ends early ({what}); {read}", self.kind)
        } else {
            format!("corrupt {} ({what}); {read}", self.kind)
        };
        self.at_line(line, msg)
    }

    /// A problem at `line` after which nothing more is read, with what was.
    pub fn at_line(&self, line: u64, msg: String) -> ReadError {
        ReadError::new(&self.name, Location::Line(line), msg, false)
    }

    /// A whole-file error (nothing could be imported).
    pub fn fatal(&self, line: Option<u64>, msg: impl Into<String>) -> ReadError {
        let loc = line.map_or(Location::File, Location::Line);
        ReadError::new(&self.name, loc, msg, true)
    }
}

/// serde_json says "... at line L column C"; the line is given apart.
pub fn strip_position(msg: &str) -> String {
    match msg.rfind(" at line ") {
        Some(i) => msg[..i].to_string(),
        None => msg.to_string(),
    }
}

/// A JSON value shown in a message: short, printable.
pub fn shown(v: &Value) -> String {
    let s = v.to_string();
    if s.chars().count() > 40 {
        let cut: String = s.chars().take(37).collect();
        format!("{cut}...")
    } else {
        s
    }
}

/// Records imported whole, and the problems met importing them: the
/// problems come first (each a skipped part, never fatal), then the records.
pub struct Imported {
    problems: VecDeque<ReadError>,
    /// Problems counted but not listed, each handed out as `unlisted`.
    more: u64,
    unlisted: ReadError,
    records: TrackSource,
    bytes: u64,
    /// What the reader found about the input as a whole.
    findings: Vec<Diagnostic>,
    /// Receives whose links were inferred, as (SM, time).
    inferred: Vec<(String, u64)>,
    /// The times are since the Unix epoch ([`Summary::wall_clock`]).
    wall_clock: bool,
}

impl Imported {
    pub fn new(records: TrackSource, problems: Problems, bytes: u64) -> Self {
        let unlisted = ReadError::new(
            &problems.name,
            Location::File,
            format!(
                "one more unusable part of the {} (past the first {PROBLEMS_LISTED}, not listed); skipped",
                problems.kind
            ),
            false,
        )
        .saying_outcome();
        Imported {
            problems: problems.list.into(),
            more: problems.more,
            unlisted,
            records,
            bytes,
            findings: Vec::new(),
            inferred: Vec::new(),
            wall_clock: false,
        }
    }

    /// Says that the records' times are nanoseconds since the Unix epoch.
    pub fn at_unix_epoch(mut self) -> Self {
        self.wall_clock = true;
        self
    }

    /// The records with what the reader found about the input as a whole
    /// (handed out by `summary`) and the receives whose links it inferred
    /// (SM, time).
    pub fn with_findings(
        mut self,
        findings: Vec<Diagnostic>,
        inferred: Vec<(String, u64)>,
    ) -> Self {
        self.findings = findings;
        self.inferred = inferred;
        self
    }

    /// The problems not yet handed out.
    pub fn problems(&self) -> impl Iterator<Item = &ReadError> {
        self.problems.iter()
    }
}

impl RecordSource for Imported {
    fn next_record(&mut self) -> Result<Option<(Record, Pos)>, ReadError> {
        if let Some(e) = self.problems.pop_front() {
            return Err(e);
        }
        if self.more > 0 {
            self.more -= 1;
            return Err(self.unlisted.clone());
        }
        self.records.next_record()
    }
    fn strings(&self) -> &Interner {
        self.records.strings()
    }
    fn bytes_read(&self) -> u64 {
        self.bytes
    }
    fn summary(&mut self) -> Summary {
        let mut s = self.records.summary();
        s.diagnostics.append(&mut self.findings);
        s.wall_clock |= self.wall_clock;
        s
    }
    fn inferred_links(&mut self) -> Vec<(String, u64)> {
        std::mem::take(&mut self.inferred)
    }
    fn scope(&mut self) -> critpath_trace::Scope {
        self.records.scope()
    }
}

#[cfg(test)]
mod tests {
    use super::LineCounter;
    use std::io::Read;

    /// Reads of one byte, of a few and of more than the buffer hand out
    /// the input as it is, count only the bytes handed out, and end with 0
    /// however often they are asked again.
    #[test]
    fn a_line_counter_counts_what_it_hands_out() {
        let input: Vec<u8> = (0..200_000u32)
            .map(|i| {
                if i % 7 == 0 {
                    b'\n'
                } else {
                    b'a' + (i % 26) as u8
                }
            })
            .collect();
        for sizes in [&[1usize][..], &[3, 1, 5000], &[1 << 17, 1, 9]] {
            let (mut r, pos) = LineCounter::new(&input[..]);
            let mut got = Vec::new();
            let (mut i, mut lines) = (0, 0);
            loop {
                let mut buf = vec![0u8; sizes[i % sizes.len()]];
                i += 1;
                let n = r.read(&mut buf).unwrap();
                if n == 0 {
                    break;
                }
                got.extend_from_slice(&buf[..n]);
                lines += buf[..n].iter().filter(|&&b| b == b'\n').count() as u64;
                assert_eq!((pos.bytes(), pos.line()), (got.len() as u64, lines + 1));
            }
            assert_eq!(got, input, "reads of {sizes:?}");
            assert_eq!(r.read(&mut [0u8]).unwrap(), 0);
            assert_eq!(r.read(&mut [0u8; 4]).unwrap(), 0);
        }
    }
}
