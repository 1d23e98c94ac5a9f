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
//! trace needs memory for its slices, not for its JSON). Slices are sorted
//! by track and the records by time with an external sort
//! ([`crate::extsort`]), so memory stays bounded however long the trace:
//! what grows is one entry per track, per distinct slice name, per
//! distinct non-numeric flow id or flow hop, and per flow with steps (`t`)
//! until its end (`f`). An event that cannot be used (no `ts`, an `X` without
//! `dur`, a flow without `id`, ...) is reported with its index, line and
//! field, and skipped. An array without its closing `]` (the trace of a
//! process that crashed) is read up to its last whole event.

use crate::extsort::{self, disk_error, ExtSort, Fields, Sorted, Spill};
use crate::json::{shown, strip_position, Imported, Problems};
use crate::jsonsplit::{self, Ending, Part, SplitError};
use crate::tracks::{Slice, Tracks};
use critpath_trace::{CutNames, Event, Limits, LinkId, Location, ReadError, Sym, Who};
use event::{Fast, View};
use serde_json::{Map, Value};
use std::cmp::Reverse;
use std::collections::{HashMap, HashSet};

use std::io::{BufRead, BufReader, Read};

mod blocking;
mod calls;
mod event;
mod linking;
mod names;
mod spawns;
mod waits;

/// What the messages call this format.
const KIND: &str = "Chrome/Perfetto trace JSON";

/// At one time: sends and receives first (a send is a point in the slice
/// that may end then; a receive's wait is charged to the state before the
/// slice it starts, often `idle`), in a causal order
/// ([`Tracks::order_links`]: a thread that receives a flow and passes it on
/// at that time sends after it received), then each track's calls and
/// returns in their own order.
#[derive(PartialEq, Eq, PartialOrd, Ord, Clone, Copy)]
enum Phase {
    Send = 0,
    Recv = 1,
    Track = 2,
}

impl From<Phase> for u8 {
    fn from(p: Phase) -> u8 {
        p as u8
    }
}

/// A track before thread names are known: a thread or an async track.
#[derive(Clone, PartialEq, Eq, Hash)]
enum TrackKey {
    Thread(String, String),
    Async(String),
}

/// A slice waiting in the external sort: its track's number, then the
/// order slices nest in ([`Slice::nesting_key`]).
#[derive(PartialEq, Eq, PartialOrd, Ord, Clone, Copy)]
struct Nested {
    track: u32,
    start: u64,
    end: Reverse<u64>,
    order: u64,
    name: u32,
}

impl Spill for Nested {
    fn put(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.track.to_le_bytes());
        out.extend_from_slice(&self.start.to_le_bytes());
        out.extend_from_slice(&self.end.0.to_le_bytes());
        out.extend_from_slice(&self.order.to_le_bytes());
        out.extend_from_slice(&self.name.to_le_bytes());
    }
    fn take(b: &[u8]) -> Self {
        let mut f = Fields::new(b);
        Nested {
            track: f.u32(),
            start: f.u64(),
            end: Reverse(f.u64()),
            order: f.u64(),
            name: f.u32(),
        }
    }
}

impl Nested {
    fn slice(&self) -> Slice {
        Slice {
            start: self.start,
            end: self.end.0,
            name: Sym(self.name),
            order: self.order,
        }
    }
}

/// Slices kept in memory before the sort spills (32 bytes each).
const SLICE_BUDGET: usize = 1 << 20;

/// Everything gathered while streaming the events. Slices go to an
/// external sort by track; flows become records at once, on a placeholder
/// SM per track that is renamed when the thread names are known.
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
    names: names::Names,
    /// Reading stopped at the limit of distinct names.
    over_names: bool,
    /// Distinct flow ids that are not numbers, named in the string table
    /// beside the slices and tracks: not states, so not in their limit.
    flow_names: u64,
    /// Slice, thread and process names cut to the limit of a name.
    cut: CutNames,
    /// Each track's number and placeholder SM.
    tracks: HashMap<TrackKey, (u32, Sym)>,
    keys: Vec<TrackKey>,
    slices: ExtSort<Nested>,
    open: HashMap<u32, Vec<(u64, Sym, u64)>>,
    flows: u64,
    /// The steps (`t`) of each flow seen so far, by `flow:CAT:ID`, for the
    /// flows that have steps and have not ended (`f`).
    steps: HashMap<String, u32>,
    /// The latest time seen, where slices still open at the end close.
    last: u64,
    records: Tracks<Phase>,
    /// Blocking calls and releases, seen as the tracks are nested.
    scan: waits::Scan,
    /// Flows between threads, to find the calls among them.
    calls: calls::Calls,
    /// Tracks with flow events.
    linked: HashSet<u32>,
    /// Where flows arrived: (track, time).
    arrived: Vec<(u32, u64)>,
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
            names: names::Names::default(),
            over_names: false,
            flow_names: 0,
            cut: CutNames::default(),
            tracks: HashMap::new(),
            keys: Vec::new(),
            slices: ExtSort::new(extsort::sort_budget(SLICE_BUDGET)),
            open: HashMap::new(),
            flows: 0,
            steps: HashMap::new(),
            last: 0,
            records: {
                let mut tracks = Tracks::new();
                tracks.order_links(Phase::Send, Phase::Recv);
                tracks
            },
            scan: waits::Scan::default(),
            calls: calls::Calls::default(),
            linked: HashSet::new(),
            arrived: Vec::new(),
        }
    }

    /// A track's number and placeholder SM, made at its first event.
    fn track(&mut self, k: TrackKey) -> (u32, Sym) {
        if let Some(&t) = self.tracks.get(&k) {
            return t;
        }
        let n = self.keys.len() as u32;
        let sm = self.records.strings.intern(&format!("\u{1}track:{n}"));
        self.keys.push(k.clone());
        self.tracks.insert(k, (n, sm));
        (n, sm)
    }

    fn slice(&mut self, track: u32, start: u64, end: u64, name: Sym, order: u64) {
        self.last = self.last.max(end);
        let n = Nested {
            track,
            start,
            end: Reverse(end),
            order,
            name: name.0,
        };
        self.slices.push(n);
    }

    /// A flow end point: a send is a point in the sender's current state;
    /// a receive re-enters the receiver's current state. The link is named
    /// `prefix` + `id`; a numeric id is named only when the record is
    /// handed out, so flow ids never pile up in memory.
    fn flow_point(&mut self, t: u64, track: TrackKey, send: bool, prefix: &str, id: &str) {
        self.last = self.last.max(t);
        self.flows += 1;
        let (n, sm) = self.track(track);
        self.linked.insert(n);
        let who = Who::Sm(sm);
        let strings = &mut self.records.strings;
        let (link, numbered) = match id.parse::<u64>() {
            Ok(n) if n.to_string() == id => (LinkId::Num(n), Some(strings.intern(prefix))),
            _ => {
                let before = strings.len();
                let link = strings.intern_link(&format!("{prefix}{id}"));
                self.flow_names += (strings.len() - before) as u64;
                (link, None)
            }
        };
        let (phase, ev) = if send {
            (Phase::Send, Event::Send { who, id: link })
        } else {
            self.arrived.push((n, t));
            let state = self.records.idle;
            let recv = Event::Recv {
                who,
                id: link,
                state,
                waited: false,
            };
            (Phase::Recv, recv)
        };
        match numbered {
            Some(prefix) => self.records.push_numbered_link(t, phase, ev, prefix),
            None => self.records.push(t, phase, ev),
        }
    }

    /// An event that cannot be used: reported and skipped.
    fn problem(&mut self, order: usize, msg: impl AsRef<str>) {
        let what = self.what(order);
        let line = self.event_line;
        self.problems.add(line, &what, msg);
    }

    /// How the messages name event `order`.
    fn what(&self, order: usize) -> String {
        if self.path.is_empty() {
            format!("event [{order}]")
        } else {
            format!("{}[{order}]", self.path)
        }
    }

    /// A time field (`ts`, `dur`) of an event of phase `ph`, reported when
    /// missing or not a number of microseconds.
    fn time(&mut self, e: &impl View, key: &str, ph: &str, order: usize) -> Option<u64> {
        match e.time(key) {
            None => {
                self.problem(
                    order,
                    format!("`{ph}` event is missing field `{key}` (microseconds)"),
                );
                None
            }
            Some(Ok(t)) => Some(t),
            Some(Err(why)) => {
                self.problem(order, format!("field `{key}` = {why}"));
                None
            }
        }
    }

    fn thread(e: &impl View) -> TrackKey {
        let p = e.id("pid").unwrap_or_else(|| "0".into());
        let t = e.id("tid").unwrap_or_else(|| "0".into());
        TrackKey::Thread(p, t)
    }

    /// One event read by its typed parse ([`Fast`]).
    fn fast(&mut self, e: &Fast) {
        let order = self.events;
        self.events += 1;
        self.phase(e.ph(), e, order);
    }

    /// An event's phase: what it is made into.
    fn phase(&mut self, ph: &str, e: &impl View, order: usize) {
        match ph {
            "X" => self.complete(e, order),
            "B" | "E" | "b" | "e" => self.begin_end(ph, e, order),
            "s" | "t" | "f" => self.flow(ph, e, order),
            // Instants, counters, object events: no state. (Metadata is
            // read as a `Value`.)
            _ => {}
        }
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
            "M" => self.metadata(&e),
            _ => self.phase(ph, &e, order),
        }
    }

    fn metadata(&mut self, e: &Map<String, Value>) {
        let name = e
            .get("args")
            .and_then(|a| a.get("name"))
            .and_then(Value::as_str);
        let (Some(p), Some(n)) = (e.id("pid"), name) else {
            return;
        };
        let mut n = n.to_string();
        self.cut.cut(&mut n);
        match (e.text("name"), e.id("tid")) {
            (Some("thread_name"), Some(t)) => {
                self.names.threads.insert((p, t), n);
            }
            (Some("process_name"), _) => {
                self.names.processes.insert(p, n);
            }
            _ => {}
        }
    }

    /// The `name` of a slice event, `?` when it has none; a name that is
    /// not a string is reported (the slice is kept, named `?`).
    fn name_of<'e>(&mut self, e: &'e impl View, order: usize) -> &'e str {
        if let Some(shown) = e.not_text("name") {
            let what = self.what(order);
            let msg = format!("field `name` = {shown} is not a string; the slice is named `?`");
            self.problems.note(self.event_line, &what, msg);
        }
        e.text("name").unwrap_or("?")
    }

    /// A slice's name as a symbol; a blocking call or a release is noted.
    fn slice_name(&mut self, name: &str) -> Sym {
        let max = Limits::DEFAULT.max_name_bytes;
        if name.len() > max {
            let mut cut = name.to_string();
            self.cut.cut(&mut cut);
            return self.slice_name(&cut);
        }
        let sym = self.records.strings.intern(name);
        (self.scan.classes)
            .entry(sym.0)
            .or_insert_with(|| blocking::classify(name));
        sym
    }

    /// A complete slice (`X`), and the flows bound to it.
    fn complete(&mut self, e: &impl View, order: usize) {
        let ts = self.time(e, "ts", "X", order);
        let dur = self.time(e, "dur", "X", order);
        let (Some(ts), Some(dur)) = (ts, dur) else {
            return;
        };
        let Some(end) = ts.checked_add(dur).filter(|&t| t <= i64::MAX as u64) else {
            self.problem(
                order,
                format!(
                    "`X` event ends past the latest time ({} ns): ts {ts} ns + dur {dur} ns",
                    i64::MAX
                ),
            );
            return;
        };
        let tr = Self::thread(e);
        let name = self.name_of(e, order);
        let name = self.slice_name(name);
        let track = self.track(tr.clone()).0;
        self.slice(track, ts, end, name, order as u64);
        if let Some(b) = e.id("bind_id") {
            if e.flag("flow_out") {
                self.flow_point(end, tr.clone(), true, "bind:", &b);
            }
            if e.flag("flow_in") {
                self.flow_point(ts, tr, false, "bind:", &b);
            }
        }
    }

    /// Threads' `B`/`E` and async tracks' `b`/`e`: begin and end pairs.
    fn begin_end(&mut self, ph: &str, e: &impl View, order: usize) {
        let Some(ts) = self.time(e, "ts", ph, order) else {
            return;
        };
        let tr = if ph == "B" || ph == "E" {
            Self::thread(e)
        } else {
            let cat = e.text("cat").unwrap_or("async");
            let id = e.async_id().unwrap_or_default();
            TrackKey::Async(format!("{cat}:{id}"))
        };
        let track = self.track(tr).0;
        if ph == "B" || ph == "b" {
            let name = self.name_of(e, order);
            let name = self.slice_name(name);
            self.last = self.last.max(ts);
            let order = order as u64;
            self.open.entry(track).or_default().push((ts, name, order));
        } else if let Some(&(start, ..)) = self.open.get(&track).and_then(|s| s.last()) {
            if ts < start {
                let msg = format!(
                    "`{ph}` event at ts {ts} ns is earlier than the begin it would end (ts {start} ns)"
                );
                return self.problem(order, msg);
            }
            if let Some((start, n, o)) = self.open.get_mut(&track).and_then(|s| s.pop()) {
                self.slice(track, start, ts, n, o);
            }
        } else {
            let begin = if ph == "E" { "B" } else { "b" };
            self.problem(
                order,
                format!("`{ph}` event ends no open `{begin}` slice on its track"),
            );
        }
    }

    /// Flow events: `s` sends, `f` receives, `t` both.
    fn flow(&mut self, ph: &str, e: &impl View, order: usize) {
        let Some(ts) = self.time(e, "ts", ph, order) else {
            return;
        };
        let Some(id) = e.id("id") else {
            let msg = format!("`{ph}` (flow) event is missing field `id` (a number or a string)");
            return self.problem(order, msg);
        };
        let prefix = format!("flow:{}:", e.text("cat").unwrap_or(""));
        let tr = Self::thread(e);
        // Each hop of a flow is a link of its own: the `s` sends hop 0, each
        // `t` receives the hop before it and sends the next, the `f`
        // receives the last; so a step never receives what it sent itself.
        let key = format!("{prefix}{id}");
        let hop = match ph {
            "s" => 0,
            "t" => self.steps.get(&key).copied().unwrap_or(0),
            _ => self.steps.remove(&key).unwrap_or(0),
        };
        let hop_id = |n: u32| match n {
            0 => id.clone(),
            n => format!("{id}#{n}"),
        };
        let track = self.track(tr.clone()).0;
        if ph != "s" {
            let hop_key = format!("{prefix}{}", hop_id(hop));
            let enclosing = e.text("bp") == Some("e");
            self.calls.point(track, ts, false, &hop_key, enclosing);
            self.flow_point(ts, tr.clone(), false, &prefix, &hop_id(hop));
        }
        if ph == "t" {
            self.steps.insert(key, hop + 1);
        }
        if ph != "f" {
            let sent = hop_id(hop + u32::from(ph == "t"));
            self.calls
                .point(track, ts, true, &format!("{prefix}{sent}"), false);
            self.flow_point(ts, tr, true, &prefix, &sent);
        }
    }

    /// One piece of the document: an event, parsed alone (other members of
    /// the top-level object are not used). An error (past the limit of
    /// distinct names) stops the split.
    fn part(&mut self, p: Part) -> Result<(), String> {
        let Part::Element(bytes, at, line) = p else {
            return Ok(());
        };
        self.saw_events = true;
        self.event_line = line;
        self.bytes = at + bytes.len() as u64;
        if let Some(e) = Fast::parse(bytes) {
            self.fast(&e);
            return self.within_names();
        }
        match serde_json::from_slice::<Value>(bytes) {
            Ok(v) => self.event(v),
            Err(e) => {
                let order = self.events;
                self.events += 1;
                let what = strip_position(&e.to_string());
                self.problem(order, format!("not a JSON value ({what})"));
            }
        }
        self.within_names()
    }

    /// Past [`Limits::max_states`] distinct names (every slice name is a
    /// state; tracks are state machines), reading stops: the names are
    /// kept until the end, and the engine would refuse the trace anyway.
    fn within_names(&mut self) -> Result<(), String> {
        let max = Limits::DEFAULT.max_states;
        let names = self.records.strings.len() as u64 - self.flow_names;
        if names <= max || self.over_names {
            return Ok(());
        }
        self.over_names = true;
        Err(format!(
            "more than {max} distinct names (of slices and tracks), the limit of distinct states and state machines: {}",
            Limits::STATES_ADVICE
        ))
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
        if self.events == 0 && !self.over_names {
            return Err(self
                .problems
                .fatal(Some(line), format!("expected {KIND}: {what}")));
        }
        let read = format!("the {} events before it are read", self.events);
        // The limit of names is no damage: its message stands as it is.
        let err = match self.over_names {
            true => self.problems.at_line(line, format!("{what}; {read}")),
            false => self.problems.broken(line, eof, &what, &read),
        };
        self.problems.list.push(err);
        Ok(())
    }

    /// Slices still open at the end close at the last time seen.
    fn close_open(&mut self) {
        for (track, stack) in std::mem::take(&mut self.open) {
            for (start, n, o) in stack {
                self.slice(track, start, self.last.max(start), n, o);
            }
        }
    }

    /// Each track's final SM and its rank in name order (names from
    /// [`names`]). Tracks whose names would be the same are told apart as
    /// `NAME#2`, `NAME#3`, ... (the first such name free).
    fn final_names(&mut self) -> (HashMap<Sym, Sym>, Vec<u32>) {
        let mut taken: HashSet<String> = HashSet::with_capacity(self.keys.len());
        let mut named: Vec<(String, u32)> = Vec::with_capacity(self.keys.len());
        for (n, base) in self.names.track_names(&self.keys).into_iter().enumerate() {
            let mut name = base.clone();
            let mut i = 1;
            while taken.contains(&name) {
                i += 1;
                name = format!("{base}#{i}");
            }
            taken.insert(name.clone());
            named.push((name, n as u32));
        }
        named.sort();
        let mut rename = HashMap::with_capacity(named.len());
        let mut rank = vec![0; named.len()];
        for (r, (name, n)) in named.iter().enumerate() {
            let sm = self.records.strings.intern(name);
            rename.insert(self.tracks[&self.keys[*n as usize]].1, sm);
            rank[*n as usize] = r as u32;
        }
        (rename, rank)
    }

    /// The records in time order, with the problems met.
    fn finish(mut self, name: &str) -> Result<Imported, ReadError> {
        if !self.saw_events {
            return Err(self.problems.fatal(
                None,
                "expected a `traceEvents` array (Chrome/Perfetto trace JSON)",
            ));
        }
        self.close_open();
        if let Some(msg) = self.cut.message() {
            self.problems.note_at(Location::File, "names", msg);
        }
        let fail = |e| disk_error(name, "sort the trace's slices in", e);
        if self.slices.is_empty() && self.flows == 0 {
            let mut msg =
                "this Chrome/Perfetto trace holds no slices (X, B/E or b/e events) to analyze"
                    .to_string();
            if let Some(first) = self.problems.list.first() {
                msg += &format!(
                    " ({} events skipped; the first: {first})",
                    self.problems.count()
                );
            }
            return Err(self.problems.fatal(None, msg));
        }
        let (rename, rank) = self.final_names();
        let slices = std::mem::replace(&mut self.slices, ExtSort::new(1));
        let mut sorted = slices.finish().map_err(fail)?;
        let mut err = None;
        let mut peeked = next_slice(&mut sorted, &mut err);
        self.calls.start();
        while let Some(track) = peeked.map(|n| n.track) {
            // On the placeholder SM, renamed with the flows' records.
            let (_, sm) = self.tracks[&self.keys[track as usize]];
            // Ties between tracks at one time in name order, as they were
            // when every track was held in memory.
            self.records.set_group(rank[track as usize]);
            let slices = TrackSlices {
                sorted: &mut sorted,
                peeked: &mut peeked,
                track,
                err: &mut err,
                scan: &mut self.scan,
                calls: &mut self.calls,
            };
            self.records.nest(sm, slices, Phase::Track, Phase::Track);
        }
        if let Some(e) = err.take() {
            return Err(fail(e));
        }
        let (findings, inferred) = self.link_threads(&rename);
        let source = self.records.finish(name, rename)?;
        Ok(Imported::new(source, self.problems, self.bytes).with_findings(findings, inferred))
    }
}

/// The next slice of the sort; an error reading it back is kept in `err`.
fn next_slice(sorted: &mut Sorted<Nested>, err: &mut Option<std::io::Error>) -> Option<Nested> {
    sorted.next_item().unwrap_or_else(|e| {
        err.get_or_insert(e);
        None
    })
}

/// One track's slices as they come out of the sort, in nesting order: the
/// track is nested as it is read, in memory for its deepest nesting only.
struct TrackSlices<'a> {
    sorted: &'a mut Sorted<Nested>,
    peeked: &'a mut Option<Nested>,
    track: u32,
    err: &'a mut Option<std::io::Error>,
    scan: &'a mut waits::Scan,
    calls: &'a mut calls::Calls,
}

impl Iterator for TrackSlices<'_> {
    type Item = Slice;
    fn next(&mut self) -> Option<Slice> {
        let n = self.peeked.filter(|n| n.track == self.track)?;
        *self.peeked = next_slice(self.sorted, self.err);
        self.scan.see(self.track, n.start, n.end.0, n.name);
        self.calls.see(self.track, n.start, n.end.0, Sym(n.name));
        Some(n.slice())
    }
}

/// Reads a Chrome / Perfetto JSON trace into records in time order: the
/// document is split into events (`crate::jsonsplit`, on a thread of its
/// own), each parsed alone.
pub fn read<R: Read + Send>(input: R, name: &str) -> Result<Imported, ReadError> {
    let mut input = BufReader::with_capacity(1 << 16, input);
    let bare_array = starts_with_array(&mut input)
        .map_err(|e| ReadError::new(name, Location::File, format!("cannot read: {e}"), true))?;
    let mut c = Collector::new(name, bare_array);
    let res = jsonsplit::split_ahead(input, "traceEvents", |p| c.part(p));
    c.after_split(res)?;
    c.finish(name)
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
