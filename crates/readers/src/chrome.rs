//! Chrome / Perfetto trace JSON (the Trace Event Format) as critpath records.
//!
//! Each thread `(pid, tid)` is an SM, named after its `thread_name` metadata
//! (`NAME:TID`) or `pid:tid`; each async track (`b`/`e` events) is an SM
//! named `CAT:ID`. Complete (`X`) and begin/end (`B`/`E`) slices become
//! implicit software states with `call`/`ret`, so nesting returns to the
//! enclosing slice and the gaps between slices are a state of their own,
//! `idle`. Flow events (`s`, `t`, `f`, and `bind_id` with
//! `flow_out`/`flow_in`) become `send`/`recv` links. Times (`ts`, `dur`) are
//! microseconds and become integer nanoseconds.
//!
//! The document is read as a stream, split into events by a byte scanner
//! (`crate::jsonsplit`) and each event parsed alone from memory (a multi-GB
//! trace needs memory for its slices, not for its JSON); the records are
//! sorted in memory at the end. An event that cannot be used (no `ts`, an `X` without
//! `dur`, a flow without `id`, ...) is reported with its index, line and
//! field, and skipped. An array without its closing `]` (the trace of a
//! process that crashed) is read up to its last whole event.

use crate::json::{shown, strip_position, Imported, Problems};
use crate::jsonsplit::{self, Ending, Part, SplitError};
use crate::tracks::{Slice, Tracks};
use critpath_trace::{Event, Location, ReadError, Who};
use serde_json::{Map, Value};
use std::collections::{BTreeMap, HashMap};

use std::io::{BufRead, BufReader, Read};

/// What the messages call this format.
const KIND: &str = "Chrome/Perfetto trace JSON";

/// At one time: sends first (a point in the slice that may end then), then
/// receives (so the wait for a flow is charged to the state before the slice
/// it starts, often `idle`), then each track's calls and returns in their
/// own order.
#[derive(PartialEq, Eq, PartialOrd, Ord, Clone, Copy)]
enum Phase {
    Send = 0,
    Recv = 1,
    Track = 2,
}

/// A track before thread names are known: a thread or an async track.
#[derive(Clone, PartialEq, Eq, Hash)]
enum TrackKey {
    Thread(String, String),
    Async(String),
}

/// A flow end point: time, track, send (else receive), link, file order.
type Flow = (u64, TrackKey, bool, String, usize);

/// Everything gathered while streaming the events.
struct Collector {
    /// Bytes of the document read, to the end of the last event.
    bytes: u64,
    problems: Problems,
    /// `traceEvents` for the object form, empty for a bare array.
    path: &'static str,
    bare_array: bool,
    saw_events: bool,
    event_line: u64,
    events: usize,
    names: HashMap<(String, String), String>,
    slices: HashMap<TrackKey, Vec<Slice>>,
    open: HashMap<TrackKey, Vec<(u64, String, usize)>>,
    flows: Vec<Flow>,
}

fn id_text(v: Option<&Value>) -> Option<String> {
    match v? {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

fn str_of<'a>(e: &'a Map<String, Value>, key: &str) -> Option<&'a str> {
    e.get(key).and_then(Value::as_str)
}

/// Microseconds as integer nanoseconds; `None` unless a non-negative number
/// in range.
fn us(v: &Value) -> Option<u64> {
    let f = v.as_f64()?;
    let ns = (f * 1000.0).round();
    (f.is_finite() && f >= 0.0 && ns <= i64::MAX as f64).then_some(ns as u64)
}

impl Collector {
    fn new(name: &str, bare_array: bool) -> Self {
        Collector {
            bytes: 0,
            problems: Problems::new(name, KIND),
            path: if bare_array { "" } else { "traceEvents" },
            bare_array,
            saw_events: bare_array,
            event_line: 1,
            events: 0,
            names: HashMap::new(),
            slices: HashMap::new(),
            open: HashMap::new(),
            flows: Vec::new(),
        }
    }

    fn problem(&mut self, order: usize, msg: impl AsRef<str>) {
        let what = if self.path.is_empty() {
            format!("event [{order}]")
        } else {
            format!("{}[{order}]", self.path)
        };
        let line = self.event_line;
        self.problems.add(line, &what, msg);
    }

    /// A time field (`ts`, `dur`) of an event of phase `ph`, reported when
    /// missing or not a number of microseconds.
    fn time(&mut self, e: &Map<String, Value>, key: &str, ph: &str, order: usize) -> Option<u64> {
        match e.get(key) {
            None => {
                self.problem(
                    order,
                    format!("`{ph}` event is missing field `{key}` (microseconds)"),
                );
                None
            }
            Some(v) => {
                let t = us(v);
                if t.is_none() {
                    self.problem(order, format!("field `{key}` = {} is not a time (a non-negative number of microseconds)", shown(v)));
                }
                t
            }
        }
    }

    fn thread(e: &Map<String, Value>) -> TrackKey {
        let p = id_text(e.get("pid")).unwrap_or_else(|| "0".into());
        let t = id_text(e.get("tid")).unwrap_or_else(|| "0".into());
        TrackKey::Thread(p, t)
    }

    /// One element of the events array.
    fn event(&mut self, v: Value) {
        let order = self.events;
        self.events += 1;
        let Value::Object(e) = v else {
            self.problem(
                order,
                format!("expected an event (a JSON object), found {}", shown(&v)),
            );
            return;
        };
        let ph = match e.get("ph") {
            Some(Value::String(s)) => s.as_str(),
            None => return self.problem(order, "missing field `ph` (the event's phase)"),
            Some(v) => {
                let msg = format!("field `ph` = {} is not a phase (a string)", shown(v));
                return self.problem(order, msg);
            }
        };
        match ph {
            "X" => self.complete(&e, order),
            "B" | "E" | "b" | "e" => self.begin_end(ph, &e, order),
            "s" | "t" | "f" => self.flow(ph, &e, order),
            "M" => self.metadata(&e),
            // Instants, counters, object events: no state.
            _ => {}
        }
    }

    fn metadata(&mut self, e: &Map<String, Value>) {
        if str_of(e, "name") != Some("thread_name") {
            return;
        }
        let name = e
            .get("args")
            .and_then(|a| a.get("name"))
            .and_then(Value::as_str);
        if let (Some(p), Some(t), Some(n)) = (id_text(e.get("pid")), id_text(e.get("tid")), name) {
            self.names.insert((p, t.clone()), format!("{n}:{t}"));
        }
    }

    /// A complete slice (`X`), and the flows bound to it.
    fn complete(&mut self, e: &Map<String, Value>, order: usize) {
        let ts = self.time(e, "ts", "X", order);
        let dur = self.time(e, "dur", "X", order);
        let (Some(ts), Some(dur)) = (ts, dur) else {
            return;
        };
        let end = ts.saturating_add(dur);
        let tr = Self::thread(e);
        let name = str_of(e, "name").unwrap_or("?").to_string();
        self.slices.entry(tr.clone()).or_default().push(Slice {
            start: ts,
            end,
            name,
            order,
        });
        if let Some(b) = id_text(e.get("bind_id")) {
            if e.get("flow_out") == Some(&Value::Bool(true)) {
                self.flows
                    .push((end, tr.clone(), true, format!("bind:{b}"), order));
            }
            if e.get("flow_in") == Some(&Value::Bool(true)) {
                self.flows.push((ts, tr, false, format!("bind:{b}"), order));
            }
        }
    }

    /// Threads' `B`/`E` and async tracks' `b`/`e`: begin and end pairs.
    fn begin_end(&mut self, ph: &str, e: &Map<String, Value>, order: usize) {
        let Some(ts) = self.time(e, "ts", ph, order) else {
            return;
        };
        let tr = if ph == "B" || ph == "E" {
            Self::thread(e)
        } else {
            let cat = str_of(e, "cat").unwrap_or("async");
            let id = id_text(e.get("id"))
                .or_else(|| id_text(e.get("id2").and_then(|v| v.get("local"))))
                .unwrap_or_default();
            TrackKey::Async(format!("{cat}:{id}"))
        };
        let name = str_of(e, "name").unwrap_or("?").to_string();
        if ph == "B" || ph == "b" {
            self.open.entry(tr).or_default().push((ts, name, order));
        } else if let Some((start, n, o)) = self.open.get_mut(&tr).and_then(|s| s.pop()) {
            self.slices.entry(tr).or_default().push(Slice {
                start,
                end: ts.max(start),
                name: n,
                order: o,
            });
        } else {
            let begin = if ph == "E" { "B" } else { "b" };
            self.problem(
                order,
                format!("`{ph}` event ends no open `{begin}` slice on its track"),
            );
        }
    }

    /// Flow events: `s` sends, `f` receives, `t` both.
    fn flow(&mut self, ph: &str, e: &Map<String, Value>, order: usize) {
        let Some(ts) = self.time(e, "ts", ph, order) else {
            return;
        };
        let Some(id) = id_text(e.get("id")) else {
            let msg = format!("`{ph}` (flow) event is missing field `id` (a number or a string)");
            return self.problem(order, msg);
        };
        let link = format!("flow:{}:{id}", str_of(e, "cat").unwrap_or(""));
        let tr = Self::thread(e);
        if ph != "s" {
            self.flows
                .push((ts, tr.clone(), false, link.clone(), order));
        }
        if ph != "f" {
            self.flows.push((ts, tr, true, link, order));
        }
    }

    /// What the parse stopped on, if anything: an array cut between events
    /// is the format's own way to end; a cut or corrupt document with
    /// events read is reported and what was read is kept.
    /// One piece of the document: an event, parsed alone (other members of
    /// the top-level object are not used).
    fn part(&mut self, p: Part) {
        let Part::Element(bytes, at, line) = p else {
            return;
        };
        self.saw_events = true;
        self.event_line = line;
        self.bytes = at + bytes.len() as u64;
        match serde_json::from_slice::<Value>(bytes) {
            Ok(v) => self.event(v),
            Err(e) => {
                let order = self.events;
                self.events += 1;
                let what = strip_position(&e.to_string());
                self.problem(order, format!("not a JSON value ({what})"));
            }
        }
    }

    /// How the document ended: a bare array may end without its `]`;
    /// anything else cut or corrupt is reported, fatal before any event.
    fn after_split(&mut self, res: Result<Ending, SplitError>) -> Result<(), ReadError> {
        // An array was found, even an empty one.
        self.saw_events |= matches!(res, Ok(Ending::Closed | Ending::Unterminated { .. }));
        let (line, eof, what) = match res {
            Ok(Ending::Closed | Ending::Missing) => return Ok(()),
            Ok(Ending::Unterminated { partial, line, .. }) => {
                if self.bare_array && !partial {
                    return Ok(());
                }
                let what = if partial {
                    "the input ends inside an event"
                } else {
                    "the input ends before the array's `]`"
                };
                (line, true, what.to_string())
            }
            Err(e) => (e.line, false, e.message),
        };
        if self.events == 0 {
            return Err(self
                .problems
                .fatal(Some(line), format!("expected {KIND}: {what}")));
        }
        let read = format!("the {} events before it are read", self.events);
        let err = self.problems.broken(line, eof, &what, &read);
        self.problems.list.push(err);
        Ok(())
    }

    fn track_name(&self, k: &TrackKey) -> String {
        match k {
            TrackKey::Async(s) => s.clone(),
            TrackKey::Thread(p, t) => self
                .names
                .get(&(p.clone(), t.clone()))
                .cloned()
                .unwrap_or_else(|| format!("{p}:{t}")),
        }
    }

    /// Slices by track name; slices still open at the end close at the last
    /// time seen.
    fn named_slices(&mut self) -> BTreeMap<String, Vec<Slice>> {
        let last = (self.slices.values().flatten().map(|s| s.end))
            .chain(self.flows.iter().map(|f| f.0))
            .max()
            .unwrap_or(0);
        let mut out: BTreeMap<String, Vec<Slice>> = BTreeMap::new();
        for (k, list) in std::mem::take(&mut self.slices) {
            out.entry(self.track_name(&k)).or_default().extend(list);
        }
        for (k, stack) in std::mem::take(&mut self.open) {
            let name = self.track_name(&k);
            for (start, n, o) in stack {
                out.entry(name.clone()).or_default().push(Slice {
                    start,
                    end: last.max(start),
                    name: n,
                    order: o,
                });
            }
        }
        out
    }

    /// The records in time order, with the problems met.
    fn finish(mut self) -> Result<Imported, ReadError> {
        if !self.saw_events {
            return Err(self.problems.fatal(
                None,
                "expected a `traceEvents` array (Chrome/Perfetto trace JSON)",
            ));
        }
        let slices = self.named_slices();
        if slices.is_empty() && self.flows.is_empty() {
            let mut msg =
                "this Chrome/Perfetto trace holds no slices (X, B/E or b/e events) to analyze"
                    .to_string();
            if let Some(first) = self.problems.list.first() {
                msg += &format!(
                    " ({} events skipped; the first: {first})",
                    self.problems.list.len()
                );
            }
            return Err(self.problems.fatal(None, msg));
        }
        let mut tr: Tracks<Phase> = Tracks::new();
        for (name, mut list) in slices {
            let sm = tr.strings.intern(&name);
            tr.track(sm, &mut list, Phase::Track, Phase::Track);
        }
        // Flows: a send is a point in the sender's current state; a receive
        // re-enters the receiver's current state.
        let mut flows = std::mem::take(&mut self.flows);
        flows.sort_by(|a, b| a.0.cmp(&b.0).then(a.4.cmp(&b.4)));
        for (t, key, send, link, _) in flows {
            let who = Who::Sm(tr.strings.intern(&self.track_name(&key)));
            let id = tr.strings.intern_link(&link);
            if send {
                tr.push(t, Phase::Send, Event::Send { who, id });
            } else {
                let state = tr.idle;
                tr.push(
                    t,
                    Phase::Recv,
                    Event::Recv {
                        who,
                        id,
                        state,
                        waited: false,
                    },
                );
            }
        }
        Ok(Imported::new(tr.finish(), self.problems.list, self.bytes))
    }
}

/// Reads a Chrome / Perfetto JSON trace into records in time order: the
/// document is split into events (`crate::jsonsplit`), each parsed alone.
pub fn read<R: Read>(input: R, name: &str) -> Result<Imported, ReadError> {
    let mut input = BufReader::with_capacity(1 << 16, input);
    let bare_array = starts_with_array(&mut input)
        .map_err(|e| ReadError::new(name, Location::File, format!("cannot read: {e}"), true))?;
    let mut c = Collector::new(name, bare_array);
    let res = jsonsplit::split(input, "traceEvents", |p| {
        c.part(p);
        Ok(())
    });
    c.after_split(res)?;
    c.finish()
}

/// Is the document a bare array (its first byte after white space `[`)?
/// The white space is consumed.
fn starts_with_array(r: &mut impl BufRead) -> std::io::Result<bool> {
    loop {
        let buf = r.fill_buf()?;
        if buf.is_empty() {
            return Ok(false);
        }
        let ws = buf.iter().take_while(|b| b.is_ascii_whitespace()).count();
        if ws < buf.len() {
            let first = buf[ws];
            r.consume(ws);
            return Ok(first == b'[');
        }
        let n = buf.len();
        r.consume(n);
    }
}
