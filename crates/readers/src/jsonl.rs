//! JSONL, the hand-writable interchange format (docs/formats.md): one
//! record per line, its fields as the event model says (docs/event-model.md),
//! `#` comments. The reader names the line and
//! the field of every problem and skips bad lines; the writer emits one
//! canonical line per record.

use crate::meta::{self, Carried};
use critpath_trace::{
    Event, Interner, Limits, LinkId, Location, Pos, ReadError, Record, RecordSource, Scope,
    Summary, Sym, Who,
};
use serde::de::{self, Deserializer, Visitor};
use serde::Deserialize;
use std::borrow::Cow;
use std::fmt;
use std::io::{self, BufRead, Write};

mod fast;
mod lenient;

/// The fields a record may have, as written (docs/formats.md).
pub const FIELDS: [&str; 14] = [
    "t", "ev", "sm", "sys", "state", "on", "on_sys", "on_state", "fn", "id", "thread", "cpu",
    "waited", "ended",
];

use lenient::BadField;

/// A field that may be written as a number or a string (`id`, `thread`, `cpu`).
#[derive(Debug, PartialEq)]
enum NumOrStr<'a> {
    Num(u64),
    Str(Cow<'a, str>),
}

impl<'de: 'a, 'a> Deserialize<'de> for NumOrStr<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = NumOrStr<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a non-negative integer or a string")
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
                Ok(NumOrStr::Num(v))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
                u64::try_from(v)
                    .map(NumOrStr::Num)
                    .map_err(|_| E::custom("expected a non-negative integer or a string"))
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(NumOrStr::Str(Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(NumOrStr::Str(Cow::Owned(v.to_string())))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
                Ok(NumOrStr::Str(Cow::Owned(v)))
            }
        }
        d.deserialize_any(V)
    }
}

#[derive(Deserialize, Default, Debug, PartialEq)]
struct Line<'a> {
    t: Option<u64>,
    #[serde(borrow)]
    ev: Option<Cow<'a, str>>,
    #[serde(borrow)]
    sm: Option<Cow<'a, str>>,
    #[serde(borrow)]
    sys: Option<Cow<'a, str>>,
    #[serde(borrow)]
    state: Option<Cow<'a, str>>,
    #[serde(borrow)]
    on: Option<Cow<'a, str>>,
    #[serde(borrow)]
    on_sys: Option<Cow<'a, str>>,
    #[serde(borrow)]
    on_state: Option<Cow<'a, str>>,
    #[serde(borrow, rename = "fn")]
    func: Option<Cow<'a, str>>,
    #[serde(borrow)]
    id: Option<NumOrStr<'a>>,
    #[serde(borrow)]
    thread: Option<NumOrStr<'a>>,
    #[serde(borrow)]
    cpu: Option<NumOrStr<'a>>,
    /// `recv` only: the state it ends waited for the link.
    waited: Option<bool>,
    /// `held` only: the holder's run ended while the SM waited.
    ended: Option<bool>,
}

/// Reads a JSONL trace.
pub struct JsonlReader<R: BufRead> {
    input: R,
    name: String,
    buf: Vec<u8>,
    line: u64,
    bytes: u64,
    last_t: Option<(u64, u64)>,
    strings: Interner,
    limits: Limits,
    /// What a converted trace carries (see [`meta`]): its scope, from a
    /// line before the first record, and its source's summary and
    /// inferred links, from a line after the last.
    carried: Carried,
    /// The head was read up to the first record for the scope (see
    /// [`RecordSource::scope`]), and what the first read gave, held for
    /// the next.
    head_read: bool,
    held: Option<Result<Option<(Record, Pos)>, ReadError>>,
    /// The scope was given: a scope line read after it is an error.
    scope_given: bool,
}

impl<R: BufRead> JsonlReader<R> {
    /// `name` is the file name used in error messages.
    pub fn new(input: R, name: &str) -> Self {
        JsonlReader {
            input,
            name: name.to_string(),
            buf: Vec::with_capacity(256),
            line: 0,
            bytes: 0,
            last_t: None,
            strings: Interner::new(),
            limits: Limits::DEFAULT,
            carried: Carried::default(),
            head_read: false,
            held: None,
            scope_given: false,
        }
    }

    /// The reader with these limits on line and name length (else
    /// [`Limits::DEFAULT`]).
    pub fn with_limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// The first name of line `l` longer than the limit: its field and
    /// length.
    fn long_name(&self, l: &Line) -> Option<(&'static str, usize)> {
        let max = self.limits.max_name_bytes;
        let text = |v: &Option<NumOrStr>| match v {
            Some(NumOrStr::Str(s)) => s.len(),
            _ => 0,
        };
        let cow = |v: &Option<Cow<str>>| v.as_ref().map_or(0, |s| s.len());
        [
            ("ev", cow(&l.ev)),
            ("sm", cow(&l.sm)),
            ("sys", cow(&l.sys)),
            ("state", cow(&l.state)),
            ("on", cow(&l.on)),
            ("on_sys", cow(&l.on_sys)),
            ("on_state", cow(&l.on_state)),
            ("fn", cow(&l.func)),
            ("id", text(&l.id)),
            ("thread", text(&l.thread)),
            ("cpu", text(&l.cpu)),
        ]
        .into_iter()
        .find(|&(_, n)| n > max)
    }

    fn err(&self, msg: impl Into<String>) -> ReadError {
        ReadError::new(&self.name, Location::Line(self.line), msg, false)
    }

    fn intern_ns(&mut self, v: NumOrStr) -> Sym {
        match v {
            NumOrStr::Num(n) => self.strings.intern(&n.to_string()),
            NumOrStr::Str(s) => self.strings.intern(&s),
        }
    }

    /// The line's fields into `l` (empty at first), or what is wrong with
    /// its JSON: by the fast path when the line has the common shape (unless
    /// `fast` is false, as tests ask), else by serde_json; a line serde_json
    /// will not read as a record is read again field by field
    /// ([`lenient`]), which gives the fields of the wrong type.
    fn decode<'a>(
        &self,
        text: &'a [u8],
        l: &mut Line<'a>,
        fast: bool,
    ) -> Result<Vec<BadField>, ReadError> {
        if fast && fast::line_into(text, l).is_some() {
            return Ok(Vec::new());
        }
        match serde_json::from_slice(text) {
            // serde_json skips an unknown field's value without the
            // recursion limit it keeps everywhere else: a line nested past
            // it is refused whichever field holds the nesting.
            Ok(_) if too_deep(text) => Err(self.nested(nesting(text))),
            Ok(line) => {
                *l = line;
                Ok(Vec::new())
            }
            Err(_) => {
                let (line, bad) = lenient::line(text).map_err(|msg| self.err(msg))?;
                *l = line;
                Ok(bad)
            }
        }
    }

    /// The error of a line whose values nest `deep` levels.
    fn nested(&self, deep: usize) -> ReadError {
        self.err(format!(
            "values nested {deep} levels deep: this is no JSONL record (a record nests at most a few levels), nor any trace format critpath reads"
        ))
    }

    /// The record of line `text`, or `None` for the scope or summary line
    /// of a converted trace (taken: see [`meta`]).
    fn parse(&mut self, text: &[u8], fast: bool) -> Result<Option<Record>, ReadError> {
        let mut l = Line::default();
        let bad = self.decode(text, &mut l, fast)?;
        if let Some((field, n)) = self.long_name(&l) {
            return Err(self.err(format!(
                "field `{field}` is a name of {n} bytes, longer than the limit of {} bytes",
                self.limits.max_name_bytes
            )));
        }
        let ev_cow = l.ev.take();
        if let Some(b) = bad.iter().find(|b| b.field == "ev") {
            return Err(self.err(b.message.clone()));
        }
        let ev = ev_cow.as_deref().ok_or_else(|| match nesting(text) {
            deep if deep > MAX_NESTING => self.nested(deep),
            _ => self.err(format!(
                "missing field `ev` (one of {})",
                Event::NAMES.join(", ")
            )),
        })?;
        if meta::is_meta(ev) {
            return self.take_meta(text).map(|()| None);
        }
        // A field of the wrong type matters only if this kind uses it.
        let present = |f: &str| {
            bad.iter().any(|b| b.field == f)
                || match f {
                    "sm" => l.sm.is_some(),
                    "thread" => l.thread.is_some(),
                    _ => l.cpu.is_some(),
                }
        };
        if let Some(b) = bad.iter().find(|b| lenient::uses(ev, b.field, present)) {
            return Err(self.err(b.message.clone()));
        }
        let t = l.t.ok_or_else(|| {
            self.err(format!(
                "`{ev}` record is missing field `t` (integer nanoseconds)"
            ))
        })?;
        if t > i64::MAX as u64 {
            return Err(self.err(format!(
                "field `t` = {t} is out of range (at most {})",
                i64::MAX
            )));
        }
        let sys = match &l.sys {
            Some(s) => self.strings.intern(s),
            None => Sym::LOCAL,
        };
        let event = self.event(ev, &mut l)?;
        if let Some((prev, line)) = self.last_t {
            if t < prev {
                return Err(self.err(format!(
                    "time goes backwards: t={t} after t={prev} on line {line} (records must be in time order)"
                )));
            }
        }
        self.last_t = Some((t, self.line));
        Ok(Some(Record { t, sys, ev: event }))
    }

    /// A field the record of kind `ev` needs, interned.
    fn need(&mut self, v: Option<Cow<str>>, ev: &str, field: &str) -> Result<Sym, ReadError> {
        match v {
            Some(s) => Ok(self.strings.intern(&s)),
            None => Err(self.err(format!("`{ev}` record is missing field `{field}`"))),
        }
    }

    /// The subject of a record: `sm`, else `thread`, else `cpu`.
    fn who(&mut self, l: &mut Line, ev: &str) -> Result<Who, ReadError> {
        if let Some(sm) = l.sm.take() {
            Ok(Who::Sm(self.strings.intern(&sm)))
        } else if let Some(th) = l.thread.take() {
            Ok(Who::Thread(self.intern_ns(th)))
        } else if let Some(cpu) = l.cpu.take() {
            Ok(Who::Cpu(self.intern_ns(cpu)))
        } else {
            Err(self.err(format!(
                "`{ev}` record needs field `sm` (or `thread`, or `cpu`)"
            )))
        }
    }

    /// The event a line of kind `ev` describes.
    fn event(&mut self, ev: &str, l: &mut Line) -> Result<Event, ReadError> {
        Ok(match ev {
            "state" => {
                let who = self.who(l, ev)?;
                let state = self.need(l.state.take(), ev, "state")?;
                Event::State { who, state }
            }
            "wait" => self.wait(l)?,
            "recv" | "send" => self.link(ev, l)?,
            "held" => Event::Held {
                who: self.who(l, ev)?,
                on: self.need(l.on.take(), ev, "on")?,
                on_state: self.need(l.on_state.take(), ev, "on_state")?,
                ended: l.ended.unwrap_or(false),
            },
            "end" => Event::End {
                who: self.who(l, ev)?,
            },
            "call" | "ret" => {
                let who = self.who(l, ev)?;
                let func = self.need(l.func.take(), ev, "fn")?;
                if ev == "call" {
                    Event::Call { who, func }
                } else {
                    Event::Ret { who, func }
                }
            }
            "push" | "pop" => self.push_pop(ev, l)?,
            "switch" => self.switch(l)?,
            other => {
                return Err(self.err(format!(
                    "unknown ev {}; expected one of {}",
                    quoted(other),
                    Event::NAMES.join(", ")
                )))
            }
        })
    }

    fn wait(&mut self, l: &mut Line) -> Result<Event, ReadError> {
        let who = self.who(l, "wait")?;
        let state = self.need(l.state.take(), "wait", "state")?;
        if l.on.is_none() && (l.on_state.is_some() || l.on_sys.is_some()) {
            return Err(
                self.err("`wait` record has `on_state`/`on_sys` but no `on` (the SM waited on)")
            );
        }
        let on = l.on.take().map(|s| self.strings.intern(&s));
        let on_sys = l.on_sys.take().map(|s| self.strings.intern(&s));
        let on_state = l.on_state.take().map(|s| self.strings.intern(&s));
        Ok(Event::Wait {
            who,
            state,
            on,
            on_sys,
            on_state,
        })
    }

    /// `send` and `recv`: a subject and a link id.
    fn link(&mut self, ev: &str, l: &mut Line) -> Result<Event, ReadError> {
        let who = self.who(l, ev)?;
        let id = match l.id.take() {
            Some(NumOrStr::Num(n)) => LinkId::Num(n),
            Some(NumOrStr::Str(s)) => self.strings.transient_link(&s),
            None => {
                return Err(self.err(format!(
                    "`{ev}` record is missing field `id` (a number or a string)"
                )))
            }
        };
        if ev == "send" {
            return Ok(Event::Send { who, id });
        }
        let state = self.need(l.state.take(), ev, "state")?;
        let waited = l.waited.unwrap_or(false);
        Ok(Event::Recv {
            who,
            id,
            state,
            waited,
        })
    }

    fn push_pop(&mut self, ev: &str, l: &mut Line) -> Result<Event, ReadError> {
        let th = l
            .thread
            .take()
            .ok_or_else(|| self.err(format!("`{ev}` record is missing field `thread`")))?;
        let thread = self.intern_ns(th);
        let sm = self.need(l.sm.take(), ev, "sm")?;
        Ok(if ev == "push" {
            Event::Push { thread, sm }
        } else {
            Event::Pop { thread, sm }
        })
    }

    fn switch(&mut self, l: &mut Line) -> Result<Event, ReadError> {
        let cpu = l
            .cpu
            .take()
            .ok_or_else(|| self.err("`switch` record is missing field `cpu`"))?;
        let cpu = self.intern_ns(cpu);
        let th = l
            .thread
            .take()
            .ok_or_else(|| self.err("`switch` record is missing field `thread`"))?;
        let thread = self.intern_ns(th);
        Ok(Event::Switch { cpu, thread })
    }
}

/// A string from the input, quoted with its control characters escaped so
/// a message never carries raw bytes to the terminal.
fn quoted(s: &str) -> String {
    let cut: String = s.chars().take(60).collect();
    format!("\"{}\"", cut.escape_debug())
}

impl<R: BufRead> JsonlReader<R> {
    /// Reads the next line into `buf`: false at the end. A line past the
    /// length limit is an error (it is skipped).
    fn read_next_line(&mut self) -> Result<bool, ReadError> {
        self.buf.clear();
        let max = self.limits.max_line_bytes;
        let read = read_line(&mut self.input, &mut self.buf, max).map_err(|e| {
            ReadError::new(
                &self.name,
                Location::Line(self.line + 1),
                format!("read error: {e}"),
                true,
            )
        })?;
        let (n, whole) = read;
        if n == 0 {
            return Ok(false);
        }
        let at = self.bytes;
        self.line += 1;
        self.bytes += n;
        if !whole {
            self.buf.clear();
            let msg = format!(
                "the line at byte {at} is {n} bytes long, longer than the limit of {max} bytes; skipped"
            );
            return Err(self.err(msg).saying_outcome());
        }
        Ok(true)
    }

    /// The text of a line read into `buf`: trimmed, without a byte-order
    /// mark on the first line; empty for a comment.
    fn text_of<'b>(&self, buf: &'b [u8]) -> &'b [u8] {
        let mut text = trim(buf);
        if self.line == 1 {
            // A UTF-8 byte-order mark is not part of the record.
            text = text.strip_prefix(b"\xef\xbb\xbf").unwrap_or(text);
        }
        match text.first() {
            Some(b'#') => &[],
            _ => text,
        }
    }

    /// Takes the scope or summary line `text`: a scope only before the
    /// first record (one after it, or a bad one, is an error, and ignored).
    fn take_meta(&mut self, text: &[u8]) -> Result<(), ReadError> {
        let late = self.last_t.is_some() || self.scope_given;
        let why = "a scope line after the first record or a bad line (a trace's scope comes before its records)";
        (self.carried)
            .take(text, || late.then(|| why.to_string()))
            .map_err(|m| self.err(format!("{m}; ignored")).saying_outcome())
    }
}

impl<R: BufRead> RecordSource for JsonlReader<R> {
    fn next_record(&mut self) -> Result<Option<(Record, Pos)>, ReadError> {
        if let Some(first) = self.held.take() {
            return first;
        }
        loop {
            if !self.read_next_line()? {
                return Ok(None);
            }
            let buf = std::mem::take(&mut self.buf);
            let text = self.text_of(&buf);
            let rec = (!text.is_empty()).then(|| self.parse(text, true));
            self.buf = buf;
            match rec {
                None | Some(Ok(None)) => continue,
                Some(Ok(Some(r))) => return Ok(Some((r, Pos::line(self.line)))),
                Some(Err(e)) => return Err(e),
            }
        }
    }

    fn summary(&mut self) -> Summary {
        std::mem::take(&mut self.carried.summary)
    }

    fn inferred_links(&mut self) -> Vec<(String, u64)> {
        std::mem::take(&mut self.carried.inferred)
    }

    /// The scope of a converted recording (none for other traces).
    fn scope(&mut self) -> Scope {
        // Lines up to the first record are read for it, and that record
        // held for the next read.
        if !std::mem::replace(&mut self.head_read, true) && self.line == 0 {
            let first = self.next_record();
            self.held = Some(first);
        }
        // A scope line past what was read now would come too late.
        self.scope_given = true;
        self.carried.scope.clone()
    }

    fn strings(&self) -> &Interner {
        &self.strings
    }

    fn bytes_read(&self) -> u64 {
        self.bytes
    }
}

/// Nesting past this is no record (serde_json's own limit).
const MAX_NESTING: usize = 128;

/// Is `text`, a line serde_json read as a record, nested as deep as
/// serde_json's recursion limit (which it does not keep in the values of
/// unknown fields it skips), where reading it as JSON fails?
fn too_deep(text: &[u8]) -> bool {
    nesting(text) >= MAX_NESTING
}

/// How deep the JSON values of `text` nest (brackets outside strings).
fn nesting(text: &[u8]) -> usize {
    let (mut depth, mut most, mut in_str, mut esc) = (0usize, 0, false, false);
    for &b in text {
        match (in_str, esc, b) {
            (true, true, _) => esc = false,
            (true, false, b'\\') => esc = true,
            (true, false, b'"') => in_str = false,
            (false, _, b'"') => in_str = true,
            (false, _, b'{' | b'[') => {
                depth += 1;
                most = most.max(depth);
            }
            (false, _, b'}' | b']') => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    most
}

/// Reads a line (its newline included) into `buf`, keeping at most `max`
/// bytes of it and its newline: the bytes the line took in the input, and
/// whether it was kept whole (a longer line is read to its end, not kept).
fn read_line<R: BufRead>(input: &mut R, buf: &mut Vec<u8>, max: usize) -> io::Result<(u64, bool)> {
    let (mut n, mut whole) = (0u64, true);
    loop {
        let chunk = match input.fill_buf() {
            Ok(c) => c,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if chunk.is_empty() {
            return Ok((n, whole));
        }
        let (take, end) = match memchr::memchr(b'\n', chunk) {
            Some(i) => (i + 1, true),
            None => (chunk.len(), false),
        };
        if whole && buf.len() + take <= max.saturating_add(1) {
            buf.extend_from_slice(&chunk[..take]);
        } else {
            whole = false;
        }
        input.consume(take);
        n += take as u64;
        if end {
            return Ok((n, whole));
        }
    }
}

fn trim(mut b: &[u8]) -> &[u8] {
    while let [first, rest @ ..] = b {
        if first.is_ascii_whitespace() {
            b = rest;
        } else {
            break;
        }
    }
    while let [rest @ .., last] = b {
        if last.is_ascii_whitespace() {
            b = rest;
        } else {
            break;
        }
    }
    b
}

/// Writes records as JSONL, one canonical line each.
pub struct JsonlWriter<W: Write> {
    out: W,
    line: String,
}

impl<W: Write> JsonlWriter<W> {
    pub fn new(out: W) -> Self {
        JsonlWriter {
            out,
            line: String::with_capacity(256),
        }
    }

    /// Writes the scope of the records to come (a recording's: see
    /// [`meta`]), before the first; nothing for none.
    pub fn scope(&mut self, scope: &Scope) -> io::Result<()> {
        self.meta_line(meta::scope_text(scope))
    }

    /// Writes the summary of the source the records came from and the
    /// links it inferred, after the last record; nothing for none.
    pub fn summary(&mut self, s: &Summary, inferred: &[(String, u64)]) -> io::Result<()> {
        for text in meta::summary_texts(s, inferred) {
            self.meta_line(Some(text))?;
        }
        Ok(())
    }

    fn meta_line(&mut self, text: Option<String>) -> io::Result<()> {
        match text {
            Some(text) => writeln!(self.out, "{text}"),
            None => Ok(()),
        }
    }

    pub fn write(&mut self, r: &Record, strings: &Interner) -> io::Result<()> {
        use std::fmt::Write as _;
        let l = &mut self.line;
        l.clear();
        let _ = write!(l, "{{\"t\":{}", r.t);
        if r.sys != Sym::LOCAL {
            l.push_str(",\"sys\":");
            quote(l, strings.resolve(r.sys));
        }
        let who = |l: &mut String, w: Who| match w {
            Who::Sm(s) => {
                l.push_str(",\"sm\":");
                quote(l, strings.resolve(s));
            }
            Who::Thread(s) => {
                l.push_str(",\"thread\":");
                num_or_str(l, strings.resolve(s));
            }
            Who::Cpu(s) => {
                l.push_str(",\"cpu\":");
                num_or_str(l, strings.resolve(s));
            }
        };
        let field = |l: &mut String, name: &str, s: Sym| {
            let _ = write!(l, ",\"{name}\":");
            quote(l, strings.resolve(s));
        };
        let link = |l: &mut String, id: LinkId| match id {
            LinkId::Num(n) => {
                let _ = write!(l, ",\"id\":{n}");
            }
            LinkId::Str { sym, .. } => field(l, "id", sym),
        };
        let _ = write!(l, ",\"ev\":\"{}\"", r.ev.name());
        match r.ev {
            Event::State { who: w, state } => {
                who(l, w);
                field(l, "state", state);
            }
            Event::Wait {
                who: w,
                state,
                on,
                on_sys,
                on_state,
            } => {
                who(l, w);
                field(l, "state", state);
                if let Some(on) = on {
                    field(l, "on", on);
                }
                if let Some(s) = on_sys {
                    field(l, "on_sys", s);
                }
                if let Some(s) = on_state {
                    field(l, "on_state", s);
                }
            }
            Event::Send { who: w, id } => {
                who(l, w);
                link(l, id);
            }
            Event::Recv {
                who: w,
                id,
                state,
                waited,
            } => {
                who(l, w);
                link(l, id);
                field(l, "state", state);
                if waited {
                    l.push_str(",\"waited\":true");
                }
            }
            Event::Held {
                who: w,
                on,
                on_state,
                ended,
            } => {
                who(l, w);
                field(l, "on", on);
                field(l, "on_state", on_state);
                if ended {
                    l.push_str(",\"ended\":true");
                }
            }
            Event::End { who: w } => who(l, w),
            Event::Call { who: w, func } | Event::Ret { who: w, func } => {
                who(l, w);
                field(l, "fn", func);
            }
            Event::Push { thread, sm } | Event::Pop { thread, sm } => {
                l.push_str(",\"thread\":");
                num_or_str(l, strings.resolve(thread));
                field(l, "sm", sm);
            }
            Event::Switch { cpu, thread } => {
                l.push_str(",\"cpu\":");
                num_or_str(l, strings.resolve(cpu));
                l.push_str(",\"thread\":");
                num_or_str(l, strings.resolve(thread));
            }
        }
        l.push_str("}\n");
        self.out.write_all(l.as_bytes())
    }

    pub fn finish(mut self) -> io::Result<W> {
        self.out.flush()?;
        Ok(self.out)
    }
}

fn quote(l: &mut String, s: &str) {
    l.push_str(&serde_json::to_string(s).expect("strings serialize"));
}

/// Thread and CPU names that are plain numbers are written as numbers.
fn num_or_str(l: &mut String, s: &str) {
    if !s.is_empty()
        && s.len() < 20
        && s.bytes().all(|b| b.is_ascii_digit())
        && (s == "0" || !s.starts_with('0'))
    {
        l.push_str(s);
    } else {
        quote(l, s);
    }
}
