//! Splitting a JSON trace document into its top-level values without
//! parsing them: the members of a trace object and the elements of its
//! event array are each handed over as bytes, which the caller parses from
//! memory (serde_json's slice reader: several times faster than its
//! byte-at-a-time reader, and strings without escapes are borrowed). Only
//! one value is held at a time, so a multi-GB document is read in the
//! memory of its largest event.
//!
//! The document is either an object whose `key` member is the event array
//! (`{"traceEvents": [...], ...}`) or a bare array of events. An array
//! without its closing `]` (the Trace Event Format allows it: the trace of
//! a process that crashed) ends at its last whole element, and the split
//! says so.
//!
//! Damage inside the array costs the events it touches, not the rest: an
//! event object that lost its closing `}` ends where, at its own level, a
//! `,` is followed by a value instead of a member name (the next event);
//! junk between events (a stray `}`, a lost comma) is handed over as one
//! element up to the next `,{"`. The caller's parse of a damaged element
//! fails, so it is counted (an event that merely lost its comma is read).

use std::io::{self, Read};

mod nest;
use nest::{Nest, BLOCK};

/// Bytes read from the input at a time.
const CHUNK: usize = 1 << 20;
/// The longest value held at once: a longer one means a corrupt document
/// (an unclosed string or bracket), not an event.
const MAX_VALUE: usize = 256 << 20;

/// How the event array ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ending {
    /// With its closing `]` (and, for an object, the object's `}`).
    Closed,
    /// At the end of the input, without its `]`; `at` is the offset where
    /// the last whole element ended; `partial` says whether a cut element
    /// followed it (it is not read), starting on line `line`.
    Unterminated { at: u64, partial: bool, line: u64 },
    /// The document holds no such array (an object without the key).
    Missing,
}

/// A document that is not the JSON it should be: where (byte offset and
/// 1-based line) and what was expected.
#[derive(Debug)]
pub struct SplitError {
    pub offset: u64,
    pub line: u64,
    pub message: String,
}

impl SplitError {
    fn at(offset: u64, message: impl Into<String>) -> Self {
        SplitError {
            offset,
            line: 0,
            message: message.into(),
        }
    }
}

/// What the caller is given: a member of the top-level object (its key and
/// value), or an element of the event array (with its byte offset and the
/// 1-based line it starts on).
pub enum Part<'a> {
    Member(&'a str, &'a [u8]),
    Element(&'a [u8], u64, u64),
}

/// The newlines in `s`, counted in byte-wide lanes (a chunk of 255 bytes
/// cannot overflow one).
fn newlines(s: &[u8]) -> u64 {
    s.chunks(255)
        .map(|c| c.iter().map(|&b| u8::from(b == b'\n')).sum::<u8>() as u64)
        .sum()
}

struct Scanner<R> {
    r: R,
    buf: Vec<u8>,
    pos: usize,
    len: usize,
    /// Offset in the input of `buf[0]`.
    base: u64,
    eof: bool,
    /// Newlines before `buf[mark]`: lines are counted lazily, forwards.
    lines: u64,
    mark: usize,
}

impl<R: Read> Scanner<R> {
    fn offset(&self) -> u64 {
        self.base + self.pos as u64
    }

    /// The 1-based line of `buf[at]` (`at` at or after the last asked).
    fn line_at(&mut self, at: usize) -> u64 {
        if at > self.mark {
            self.lines += newlines(&self.buf[self.mark..at]);
            self.mark = at;
        }
        self.lines + 1
    }

    /// [`SplitError::at`] the current position, with its line.
    fn error(&mut self, message: impl Into<String>) -> SplitError {
        let line = self.line_at(self.pos);
        SplitError {
            line,
            ..SplitError::at(self.offset(), message)
        }
    }

    fn io_err(&mut self, e: io::Error) -> SplitError {
        self.error(format!("cannot read: {e}"))
    }

    /// Reads more input, keeping `buf[keep..len]` (moved to the front);
    /// false at the end of the input.
    fn more(&mut self, keep: usize) -> Result<bool, SplitError> {
        if keep > 0 {
            self.line_at(keep);
            self.mark -= keep;
            self.buf.copy_within(keep..self.len, 0);
            self.len -= keep;
            self.pos -= keep;
            self.base += keep as u64;
        }
        if self.eof {
            return Ok(false);
        }
        if self.buf.len() - self.len < CHUNK {
            self.buf.resize(self.len + CHUNK, 0);
        }
        loop {
            match self.r.read(&mut self.buf[self.len..]) {
                Ok(0) => {
                    self.eof = true;
                    return Ok(false);
                }
                Ok(n) => {
                    self.len += n;
                    return Ok(true);
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(self.io_err(e)),
            }
        }
    }

    /// [`Self::more`] keeping `buf[*start..]`, for a scan at `i` that
    /// remembers a `comma`: all three move with the bytes (`start` to 0).
    fn refill(
        &mut self,
        start: &mut usize,
        i: &mut usize,
        comma: &mut Option<usize>,
    ) -> Result<bool, SplitError> {
        let keep = *start;
        let more = self.more(keep)?;
        *i -= keep;
        *comma = comma.map(|c| c - keep);
        *start = 0;
        Ok(more)
    }

    /// The next byte that is not white space, not consumed; `None` at the
    /// end of the input.
    fn peek(&mut self) -> Result<Option<u8>, SplitError> {
        loop {
            while self.pos < self.len {
                match self.buf[self.pos] {
                    b' ' | b'\n' | b'\r' | b'\t' => self.pos += 1,
                    b => return Ok(Some(b)),
                }
            }
            if !self.more(self.pos)? {
                return Ok(None);
            }
        }
    }

    /// Consumes `want` (after white space) or says what was found instead.
    fn expect(&mut self, want: u8, what: &str) -> Result<(), SplitError> {
        match self.peek()? {
            Some(b) if b == want => {
                self.pos += 1;
                Ok(())
            }
            Some(b) => Err(self.error(format!("expected {what}, found {:?}", b as char))),
            None => Err(self.error(format!("expected {what}, found the end of the input"))),
        }
    }

    /// Scans one value (after white space); its bytes are
    /// `buf[start..pos]`. `Ok(None)` when the input ends inside it.
    fn value(&mut self) -> Result<Option<usize>, SplitError> {
        if self.peek()?.is_none() {
            return Ok(None);
        }
        let mut start = self.pos;
        let mut s = Nest::default();
        let object = self.buf[start] == b'{';
        let mut i = start;
        loop {
            // Inside a string or a bracket, a block at a time while the
            // buffer holds one.
            while (s.in_str || s.depth > 0) && i + BLOCK <= self.len {
                match s.block(&self.buf, i, start, object) {
                    Ok(next) => i = next,
                    Err(end) => {
                        self.pos = end;
                        return Ok(Some(start));
                    }
                }
            }
            if i == self.len {
                if i - start > MAX_VALUE {
                    self.pos = start;
                    return Err(self.error(format!(
                        "a value longer than {} MiB (an unclosed string or bracket?)",
                        MAX_VALUE >> 20
                    )));
                }
                if !self.refill(&mut start, &mut i, &mut None)? {
                    // A number or literal at the very end of the input is
                    // whole; anything else was cut.
                    if s.depth == 0 && !s.in_str && i > start && self.buf[start] != b'"' {
                        break;
                    }
                    return Ok(None);
                }
                continue;
            }
            if s.depth == 0 && !s.in_str {
                // A number or a literal, or the value's first byte.
                match self.buf[i] {
                    b',' | b':' | b' ' | b'\n' | b'\r' | b'\t' | b'}' | b']' => break,
                    _ => {}
                }
            }
            if let Err(end) = s.byte(&self.buf, i, start, object) {
                i = end;
                break;
            }
            i += 1;
        }
        self.pos = i;
        Ok(Some(start))
    }

    /// Damage between events at `pos`: the place of the next event, a `,`
    /// then `{` then `"` (white space between). Returns where the skipped
    /// bytes start (they end at the `,`, where `pos` is left); `None` when
    /// the input ends (or the skipped bytes exceed a value's size) first.
    fn skip_to_event(&mut self) -> Result<Option<usize>, SplitError> {
        let mut start = self.pos;
        // The last `,` followed only by white space, and then `{`.
        let (mut i, mut comma, mut brace) = (start, None::<usize>, false);
        loop {
            if i == self.len {
                if i - start > MAX_VALUE {
                    return Ok(None);
                }
                if !self.refill(&mut start, &mut i, &mut comma)? {
                    return Ok(None);
                }
            }
            match (self.buf[i], comma) {
                (b' ' | b'\n' | b'\r' | b'\t', _) => {}
                (b'{', Some(_)) if !brace => brace = true,
                (b'"', Some(c)) if brace => {
                    self.pos = c;
                    return Ok(Some(start));
                }
                (b',', _) => (comma, brace) = (Some(i), false),
                _ => (comma, brace) = (None, false),
            }
            i += 1;
        }
    }
}

/// Splits the document read from `r` (see the module's documentation),
/// handing each top-level member other than `key` and each element of the
/// event array to `part` in document order. An error from `part` stops the
/// split and is returned as it is, at the part's offset.
pub fn split(
    r: impl Read,
    key: &str,
    mut part: impl FnMut(Part) -> Result<(), String>,
) -> Result<Ending, SplitError> {
    split_with(r, key, &mut |p, _| part(p))
}

/// Where an error of `part` about a part is reported: the byte offset and
/// line where its value starts.
type At = (u64, u64);

/// [`split`], each part handed over with where an error about it is.
fn split_with(
    r: impl Read,
    key: &str,
    part: &mut impl FnMut(Part, At) -> Result<(), String>,
) -> Result<Ending, SplitError> {
    let mut s = Scanner {
        r,
        buf: Vec::new(),
        pos: 0,
        len: 0,
        base: 0,
        eof: false,
        lines: 0,
        mark: 0,
    };
    let ending = match s.peek()? {
        Some(b'[') => {
            s.pos += 1;
            elements(&mut s, part)
        }
        Some(b'{') => {
            s.pos += 1;
            members(&mut s, key, part)
        }
        Some(b) => Err(s.error(format!(
            "expected a trace object or an array of events, found {:?}",
            b as char
        ))),
        None => Err(s.error("the input is empty")),
    }?;
    // A closed document is the whole input: what follows it is damage (or
    // a second document), said after every event was read; so is an input
    // that fails there (compressed data cut after the document).
    if ending == Ending::Closed {
        if let Some(b) = s.peek()? {
            return Err(s.error(format!(
                "more after the end of the document, starting with {:?}",
                b as char
            )));
        }
    }
    Ok(ending)
}

/// One part as the splitting thread hands it over: its bytes in a batch.
struct Item {
    member: Option<String>,
    bytes: (usize, usize),
    /// The element's offset and line ([`Part::Element`]'s).
    at: (u64, u64),
    value_at: At,
}

struct Batch<G> {
    bytes: Vec<u8>,
    items: Vec<Item>,
    /// What the glance saw of each item (`None` for a member), when the
    /// splitting thread glanced at this batch; else empty.
    glances: Vec<Option<G>>,
}

impl<G> Default for Batch<G> {
    fn default() -> Self {
        Batch {
            bytes: Vec::new(),
            items: Vec::new(),
            glances: Vec::new(),
        }
    }
}

enum Ahead<G> {
    Batch(Batch<G>),
    End(Result<Ending, SplitError>),
}

/// Bytes of parts the splitting thread gathers before handing them over.
const BATCH: usize = 1 << 20;

/// [`split`] with the splitting on a thread of its own, a few batches of
/// parts ahead of `part`, which runs on the caller's thread: the same
/// parts in the same order, the same errors, and two cores busy.
pub fn split_ahead(
    r: impl Read + Send,
    key: &str,
    mut part: impl FnMut(Part) -> Result<(), String>,
) -> Result<Ending, SplitError> {
    split_ahead_glancing(r, key, |_| (), |p, _| part(p))
}

/// [`split_ahead`] that also runs `glance` on elements of the array on the
/// splitting thread while the caller's thread is behind (the hand-over
/// found the channel full), and hands `part` what it saw with the element:
/// work taken off the caller's thread, as much as keeps both busy. `None`
/// with a member and an element not glanced at (`part` glances at it).
/// When the installed settings ask for one thread, all of it runs on the
/// caller's (nothing glanced at).
pub fn split_ahead_glancing<G: Send>(
    r: impl Read + Send,
    key: &str,
    glance: impl Fn(&[u8]) -> G + Send,
    part: impl FnMut(Part, Option<G>) -> Result<(), String>,
) -> Result<Ending, SplitError> {
    let threads = critpath_trace::Settings::current().threads;
    split_glancing(threads, r, key, glance, part)
}

/// [`split_ahead_glancing`], on a thread of its own when `threads`.
fn split_glancing<G: Send>(
    threads: bool,
    r: impl Read + Send,
    key: &str,
    glance: impl Fn(&[u8]) -> G + Send,
    mut part: impl FnMut(Part, Option<G>) -> Result<(), String>,
) -> Result<Ending, SplitError> {
    use std::sync::mpsc::TrySendError;
    if !threads {
        return split(r, key, |p| part(p, None));
    }
    let (tx, rx) = std::sync::mpsc::sync_channel::<Ahead<G>>(4);
    std::thread::scope(|scope| {
        scope.spawn(move || {
            let mut b = Batch::default();
            let mut glancing = false;
            let res = split_with(r, key, &mut |p, value_at| {
                let (member, v, at) = match p {
                    Part::Member(k, v) => (Some(k.to_string()), v, value_at),
                    Part::Element(v, at, line) => (None, v, (at, line)),
                };
                if glancing {
                    b.glances.push(member.is_none().then(|| glance(v)));
                }
                let start = b.bytes.len();
                b.bytes.extend_from_slice(v);
                let bytes = (start, b.bytes.len());
                b.items.push(Item {
                    member,
                    bytes,
                    at,
                    value_at,
                });
                if b.bytes.len() < BATCH {
                    return Ok(());
                }
                // A full channel: the caller is behind, and the next batch
                // is glanced at here. A closed one: the caller stopped, and
                // so does the split.
                let full = Ahead::Batch(std::mem::take(&mut b));
                glancing = match tx.try_send(full) {
                    Ok(()) => false,
                    Err(TrySendError::Full(full)) => {
                        tx.send(full).map_err(|_| String::new())?;
                        true
                    }
                    Err(TrySendError::Disconnected(_)) => return Err(String::new()),
                };
                Ok(())
            });
            if !b.items.is_empty() && tx.send(Ahead::Batch(b)).is_err() {
                return;
            }
            let _ = tx.send(Ahead::End(res));
        });
        take_parts(rx, &mut part)
    })
}

/// The caller's side of [`split_ahead_glancing`]: each part to `part`;
/// returning drops `rx`, which stops the splitting thread.
fn take_parts<G>(
    rx: std::sync::mpsc::Receiver<Ahead<G>>,
    part: &mut impl FnMut(Part, Option<G>) -> Result<(), String>,
) -> Result<Ending, SplitError> {
    loop {
        let b = match rx.recv() {
            Ok(Ahead::Batch(b)) => b,
            Ok(Ahead::End(res)) => return res,
            Err(_) => return Err(SplitError::at(0, "the thread splitting the input stopped")),
        };
        let mut glances = b.glances.into_iter();
        for it in b.items {
            let glance = glances.next().flatten();
            let v = &b.bytes[it.bytes.0..it.bytes.1];
            let p = match &it.member {
                Some(k) => Part::Member(k, v),
                None => Part::Element(v, it.at.0, it.at.1),
            };
            if let Err(message) = part(p, glance) {
                let (offset, line) = it.value_at;
                return Err(SplitError {
                    offset,
                    line,
                    message,
                });
            }
        }
    }
}

/// The members of the top-level object, after its `{`.
fn members<R: Read>(
    s: &mut Scanner<R>,
    key: &str,
    part: &mut impl FnMut(Part, At) -> Result<(), String>,
) -> Result<Ending, SplitError> {
    let mut ending = Ending::Missing;
    if s.peek()? == Some(b'}') {
        return Ok(ending);
    }
    loop {
        let Some(start) = s.value()? else {
            return Err(s.error("the input ends inside a member's name"));
        };
        let name: String = serde_json::from_slice(&s.buf[start..s.pos]).map_err(|e| {
            s.pos = start;
            s.error(format!("expected a member name: {e}"))
        })?;
        s.expect(b':', "':' after a member name")?;
        if name == key {
            s.expect(b'[', &format!("the {key} array"))?;
            ending = elements(s, part)?;
            if matches!(ending, Ending::Unterminated { .. }) {
                return Ok(ending);
            }
        } else {
            let Some(start) = s.value()? else {
                return Err(s.error(format!("the input ends inside {name:?}")));
            };
            let at = (s.base + start as u64, s.line_at(start));
            if let Err(m) = part(Part::Member(&name, &s.buf[start..s.pos]), at) {
                s.pos = start;
                return Err(s.error(m));
            }
        }
        match s.peek()? {
            Some(b',') => s.pos += 1,
            Some(b'}') => {
                s.pos += 1;
                return Ok(ending);
            }
            // An object cut after its event array still holds the events.
            None if ending != Ending::Missing => return Ok(ending),
            _ => s.expect(b'}', "',' or '}' after a member")?,
        }
    }
}

/// The elements of the event array, after its `[`.
fn elements<R: Read>(
    s: &mut Scanner<R>,
    part: &mut impl FnMut(Part, At) -> Result<(), String>,
) -> Result<Ending, SplitError> {
    let mut last_end = s.offset();
    if s.peek()? == Some(b']') {
        s.pos += 1;
        return Ok(Ending::Closed);
    }
    loop {
        let at = s.offset();
        let cut = |s: &mut Scanner<R>, at: u64, partial: bool| {
            let line = s.line_at(s.pos);
            Ok(Ending::Unterminated { at, partial, line })
        };
        let line = if s.peek()?.is_some() {
            s.line_at(s.pos)
        } else {
            return cut(s, last_end, false);
        };
        let Some(start) = s.value()? else {
            return cut(s, last_end, true);
        };
        let value_at = (s.base + start as u64, line);
        if let Err(m) = part(Part::Element(&s.buf[start..s.pos], at, line), value_at) {
            s.pos = start;
            return Err(s.error(m));
        }
        last_end = s.offset();
        match s.peek()? {
            Some(b',') => s.pos += 1,
            Some(b']') => {
                s.pos += 1;
                return Ok(Ending::Closed);
            }
            None => return cut(s, last_end, false),
            Some(_) => {
                let e = s.expect(b',', "',' or ']' after an event").unwrap_err();
                let (at, line) = (s.offset(), s.line_at(s.pos));
                let Some(start) = s.skip_to_event()? else {
                    return Err(e);
                };
                // The junk as an element: its parse fails, and is counted.
                let value_at = (s.base + start as u64, line);
                if let Err(m) = part(Part::Element(&s.buf[start..s.pos], at, line), value_at) {
                    s.pos = start;
                    return Err(s.error(m));
                }
                s.pos += 1;
            }
        }
        // A trailing comma before the end of a cut array.
        if s.peek()?.is_none() {
            return cut(s, last_end, false);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Splits `doc` read `chunk` bytes at a time; the parts as text.
    fn parts(doc: &str, chunk: usize) -> (Vec<String>, Result<Ending, String>) {
        struct Slow<'a>(&'a [u8], usize);
        impl Read for Slow<'_> {
            fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
                let n = self.1.min(out.len()).min(self.0.len());
                out[..n].copy_from_slice(&self.0[..n]);
                self.0 = &self.0[n..];
                Ok(n)
            }
        }
        let text = |p: Part| match p {
            Part::Member(k, v) => format!("{k}={}", String::from_utf8_lossy(v)),
            Part::Element(v, at, line) => {
                format!("@{at}/{line}:{}", String::from_utf8_lossy(v))
            }
        };
        let shown = |e: SplitError| format!("{} (line {}): {}", e.offset, e.line, e.message);
        let mut got = Vec::new();
        let end = split(Slow(doc.as_bytes(), chunk), "traceEvents", |p| {
            got.push(text(p));
            Ok(())
        })
        .map_err(shown);
        // The same on a thread ahead, and the same error from `part` at
        // every part.
        let mut ahead = Vec::new();
        let end_ahead = split_ahead(Slow(doc.as_bytes(), chunk), "traceEvents", |p| {
            ahead.push(text(p));
            Ok(())
        })
        .map_err(shown);
        assert_eq!((&ahead, &end_ahead), (&got, &end), "{doc}");
        for stop in 0..got.len() {
            let refuse = |n: &mut usize| {
                *n += 1;
                if *n > stop {
                    Err(format!("no {stop}"))
                } else {
                    Ok(())
                }
            };
            let (mut n, mut m) = (0, 0);
            let one = split(Slow(doc.as_bytes(), chunk), "traceEvents", |_| {
                refuse(&mut n)
            });
            let two = split_ahead(Slow(doc.as_bytes(), chunk), "traceEvents", |_| {
                refuse(&mut m)
            });
            assert_eq!(one.map_err(shown), two.map_err(shown), "{doc} {stop}");
        }
        (got, end)
    }

    /// With one thread asked for, the input is read and split on the
    /// caller's thread (with threads, on another), nothing is glanced at,
    /// and the parts are the same.
    #[test]
    fn one_thread_reads_and_splits_on_the_callers_thread() {
        use std::thread::ThreadId;
        struct Noting<'a>(&'a [u8], Vec<ThreadId>);
        impl Read for Noting<'_> {
            fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
                self.1.push(std::thread::current().id());
                let n = 7.min(out.len()).min(self.0.len());
                out[..n].copy_from_slice(&self.0[..n]);
                self.0 = &self.0[n..];
                Ok(n)
            }
        }
        let doc = r#"{"a": 1, "traceEvents": [{"x": 1}, {"y": [2, 3]}], "z": "w"}"#;
        let run = |threads: bool| {
            let mut r = Noting(doc.as_bytes(), Vec::new());
            let mut got = Vec::new();
            let glance = |_: &[u8]| ();
            let end = split_glancing(threads, &mut r, "traceEvents", glance, |p, g| {
                assert!(threads || g.is_none(), "nothing glanced at on one thread");
                got.push(match p {
                    Part::Member(k, v) => format!("{k}={}", String::from_utf8_lossy(v)),
                    Part::Element(v, at, _) => format!("@{at}:{}", String::from_utf8_lossy(v)),
                });
                Ok(())
            });
            let here = std::thread::current().id();
            let read_here = r.1.iter().all(|&t| t == here);
            assert!(!r.1.is_empty());
            (got, end.is_ok(), read_here)
        };
        let (one, two) = (run(false), run(true));
        assert_eq!(one.0, two.0);
        assert_eq!(one.0.len(), 4, "{:?}", one.0);
        assert!(one.1 && two.1);
        assert!(one.2, "one thread: read on the caller's");
        assert!(!two.2, "threads: read on the splitting thread");
    }

    /// While the caller is behind, the splitting thread glances at the
    /// elements it hands over, each glance that of its own element; the
    /// caller glances at the others (the first batch, at least).
    #[test]
    fn the_splitting_thread_glances_while_the_caller_is_behind() {
        // Eight batches of big elements, and a caller that takes 2 ms an
        // element (a batch in 0.2 s) where the split takes microseconds.
        let n = 640;
        let pad = "x".repeat(12_000);
        let events: Vec<String> = (0..n)
            .map(|i| format!(r#"{{"n": {i}, "pad": "{pad}"}}"#))
            .collect();
        let doc = format!(r#"{{"traceEvents": [{}], "z": 1}}"#, events.join(","));
        let (mut ahead, mut here) = (0, 0);
        let end = split_ahead_glancing(doc.as_bytes(), "traceEvents", <[u8]>::len, |p, g| {
            std::thread::sleep(std::time::Duration::from_millis(2));
            match (p, g) {
                (Part::Element(v, _, _), Some(len)) => {
                    assert_eq!(len, v.len());
                    ahead += 1;
                }
                (Part::Element(..), None) => here += 1,
                (Part::Member(..), g) => assert_eq!(g, None),
            }
            Ok(())
        });
        assert_eq!(end.ok(), Some(Ending::Closed));
        assert_eq!(ahead + here, n);
        assert!(ahead > 0 && here > 0, "{ahead} glanced ahead, {here} here");
    }

    #[test]
    fn objects_arrays_and_cut_documents_split_alike_at_any_chunk_size() {
        let doc = r#" {"a": {"x": [1, "]}"]}, "traceEvents": [ {"n": "a\"b"}, 12, "s", [1,[2]] ], "z": true }"#;
        for chunk in [1, 2, 3, 7, 1 << 20] {
            let (got, end) = parts(doc, chunk);
            assert_eq!(end, Ok(Ending::Closed), "chunk {chunk}");
            assert_eq!(
                got,
                [
                    r#"a={"x": [1, "]}"]}"#,
                    r#"@42/1:{"n": "a\"b"}"#,
                    "@57/1:12",
                    r#"@61/1:"s""#,
                    "@66/1:[1,[2]]",
                    "z=true"
                ],
                "chunk {chunk}"
            );
        }
        let (got, end) = parts(r#"[{"a":1}, 2, 3]"#, 2);
        assert_eq!((got.len(), end), (3, Ok(Ending::Closed)));
        // Lines: each element's first line, whatever the chunks.
        for chunk in [1, 5, 1 << 20] {
            let (got, _) = parts("[\n1,\n\n{\"a\":\n2},\n 3]", chunk);
            assert_eq!(
                got,
                ["@2/2:1", "@6/4:{\"a\":\n2}", "@17/6:3"],
                "chunk {chunk}"
            );
        }
        // Cut: after an element, after a comma, inside an element.
        for (doc, n, at, partial) in [
            (r#"[{"a":1}, {"b":2}"#, 2, 17, false),
            (r#"[{"a":1}, {"b":2},"#, 2, 17, false),
            (r#"[{"a":1}, {"b":"#, 1, 8, true),
            (r#"{"traceEvents": [{"a":1}, 7"#, 2, 27, false),
        ] {
            let (got, end) = parts(doc, 3);
            assert_eq!(got.len(), n, "{doc}: {got:?}");
            let line = 1;
            assert_eq!(end, Ok(Ending::Unterminated { at, partial, line }), "{doc}");
        }
        assert_eq!(parts(r#"{"x": 1}"#, 4).1, Ok(Ending::Missing));
        let (_, end) = parts("{\"traceEvents\": [1,\n 1 2]}", 4);
        let e = end.unwrap_err();
        assert!(
            e.contains("(line 2)") && e.contains("',' or ']' after an event"),
            "{e}"
        );
        assert!(parts("", 4).1.unwrap_err().contains("empty"));
        assert!(parts("nope", 4).1.unwrap_err().contains("trace object"));
    }

    /// The parts of `doc` (and how it ended) read `chunk` bytes at a time,
    /// without [`parts`]' checks of every stopping place.
    fn quick_parts(doc: &[u8], chunk: usize) -> String {
        let mut out = String::new();
        let mut r = doc.chunks(chunk).fold(Vec::new(), |mut v, c| {
            v.push(c.to_vec());
            v
        });
        r.reverse();
        struct Chunks(Vec<Vec<u8>>);
        impl Read for Chunks {
            fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
                let Some(c) = self.0.pop() else { return Ok(0) };
                let n = c.len().min(out.len());
                out[..n].copy_from_slice(&c[..n]);
                if n < c.len() {
                    self.0.push(c[n..].to_vec());
                }
                Ok(n)
            }
        }
        let end = split(Chunks(r), "traceEvents", |p| {
            match p {
                Part::Member(k, v) => out += &format!("{k}={}\n", String::from_utf8_lossy(v)),
                Part::Element(v, at, line) => {
                    out += &format!("@{at}/{line}:{}\n", String::from_utf8_lossy(v))
                }
            }
            Ok(())
        });
        match end {
            Ok(e) => out + &format!("{e:?}"),
            Err(e) => out + &format!("{} (line {}): {}", e.offset, e.line, e.message),
        }
    }

    proptest::proptest! {
        /// Values are scanned a block at a time once the buffer holds a
        /// block, else a byte at a time (a one-byte read never holds one):
        /// the two split any document, long strings, escapes, nesting and
        /// damage alike.
        #[test]
        fn blocks_and_bytes_split_alike(
            pieces in proptest::collection::vec(0usize..16, 0..400),
            chunk in 2usize..300,
        ) {
            const PIECES: [&str; 16] = [
                "{\"a\": ", "}", "[", "]", ", ", "\"x\\\"y\\\\\"", "\"long string of text, {[]}\"",
                "12.5", " \n\t", "{\"args\": {\"k\": [1, 2, [3]]}}, ", "\\", "\"", ",{\"", "true",
                ":", "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"aten::mm\", \"ts\": 1.5}, ",
            ];
            let body: String = pieces.iter().map(|&k| PIECES[k]).collect();
            for doc in [format!("{{\"traceEvents\": [{body}]}}"), format!("[{body}")] {
                let bytes = quick_parts(doc.as_bytes(), 1);
                proptest::prop_assert_eq!(&quick_parts(doc.as_bytes(), chunk), &bytes, "{}", doc);
                proptest::prop_assert_eq!(&quick_parts(doc.as_bytes(), 1 << 20), &bytes, "{}", doc);
            }
        }
    }

    #[test]
    fn damage_costs_the_events_it_touches() {
        let texts = |got: &[String]| -> Vec<String> {
            got.iter()
                .map(|g| g.split_once(':').unwrap().1.to_string())
                .collect()
        };
        for chunk in [1, 2, 5, 1 << 20] {
            // An event that lost its `}`: it ends at the next event.
            let (got, end) = parts(r#"[{"a":1}, {"b":{"x":2}, {"c":3}, {"d":4}]"#, chunk);
            assert_eq!(end, Ok(Ending::Closed), "chunk {chunk}");
            let want = [r#"{"a":1}"#, r#"{"b":{"x":2}"#, r#"{"c":3}"#, r#"{"d":4}"#];
            assert_eq!(texts(&got), want, "chunk {chunk}");
            // A `}` lost inside an array inside an event: the event ends at
            // the next event, not inside itself.
            let doc = r#"[{"args":[{"a":1, {"b":2}]}, {"c":3}, {"d":4}]"#;
            let (got, end) = parts(doc, chunk);
            assert_eq!(end, Ok(Ending::Closed), "chunk {chunk}");
            let want = [r#"{"args":[{"a":1, {"b":2}]}"#, r#"{"c":3}"#, r#"{"d":4}"#];
            assert_eq!(texts(&got), want, "chunk {chunk}");
            // A stray `}` between events: skipped as one element, at its
            // offset and line; a `,{` inside a string is no event.
            let (got, end) = parts("[{\"a\":1}},\"x,{y\",\n {\"c\":3}]", chunk);
            assert_eq!(end, Ok(Ending::Closed), "chunk {chunk}");
            let want = ["@1/1:{\"a\":1}", "@8/1:},\"x,{y\"", "@19/2:{\"c\":3}"];
            assert_eq!(got, want, "chunk {chunk}");
            // Arrays of objects inside events are no damage.
            let doc =
                r#"[{"a":[1,{"x":2}, {"y": [ {"z":1} ,{}]}]}, {"b":{"c":[{"d":1},{"e":2}]}}]"#;
            let (got, end) = parts(doc, chunk);
            assert_eq!((got.len(), end), (2, Ok(Ending::Closed)), "chunk {chunk}");
        }
    }
}
