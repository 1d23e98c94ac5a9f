//! A span file's spans grouped by request (trace id), as the external sort
//! hands them out: held in memory when they fit the sort's budget, else in
//! one temporary file read a request at a time.

use super::build::records;
use super::cycles::{any_cycle, break_cycles};
use super::outlive::{after_root, bounds, label, request_root};
use super::repeats::{any_repeat, drop_repeats};
use super::sanity::{check, FileSanity};
use super::shared::{any_shared, attach_to_servers};
use super::{Span, KIND};
use crate::extsort::{disk_error, put_str, write_item, Fields, Merge, Run, Sorted, Spill};
use crate::json::{Imported, Problems};
use critpath_trace::ReadError;
use std::collections::HashMap;
use std::fs::File;
use std::io::{self, BufWriter};
use std::ops::Range;
use std::sync::{Mutex, OnceLock};

/// What the messages of the spans' temporary file say is being done.
const STORE_WRITE: &str = "write the spans grouped by request in";
const STORE_READ: &str = "read the spans grouped by request from";

/// Trace ids kept to name in messages.
const IDS_NAMED: usize = 5;

impl Spill for Span {
    fn put(&self, out: &mut Vec<u8>) {
        put_str(out, &self.trace);
        out.extend_from_slice(&self.order.to_le_bytes());
        put_str(out, &self.id);
        out.push(u8::from(self.parent.is_some()));
        put_str(out, self.parent.as_deref().unwrap_or(""));
        out.extend_from_slice(&(self.follows.len() as u32).to_le_bytes());
        for f in &self.follows {
            put_str(out, f);
        }
        put_str(out, &self.service);
        put_str(out, &self.name);
        out.extend_from_slice(&self.start.to_le_bytes());
        out.extend_from_slice(&self.end.to_le_bytes());
        out.push(u8::from(self.client));
    }

    fn take(b: &[u8]) -> Self {
        let mut f = Fields::new(b);
        let (trace, order, id) = (f.str(), f.u64(), f.str());
        let has_parent = f.u8() != 0;
        let parent = Some(f.str()).filter(|_| has_parent);
        let follows = (0..f.u32()).map(|_| f.str()).collect();
        Span {
            trace,
            order,
            id,
            parent,
            follows,
            service: f.str(),
            name: f.str(),
            start: f.u64(),
            end: f.u64(),
            client: f.u8() != 0,
        }
    }
}

/// Where the grouped spans are.
enum Store {
    Memory(Vec<Span>),
    File(File),
}

/// A span file's spans, grouped by request (trace id); the records of one
/// request at a time are built from them.
///
/// Spans the sort kept on disk are read through once, by the first pass
/// over the requests ([`Requests::map`] hands them out as they come) or
/// by the first question that needs them all; they are written to one
/// temporary file on the way, for the passes after it.
pub struct Requests {
    /// The grouped spans and what was counted over them, once read
    /// through.
    settled: OnceLock<Settled>,
    /// The sort's merge on disk until it is read through.
    pending: Mutex<Option<Box<Merge<Span>>>>,
    /// The file's first trace id, and whether it holds another.
    first_trace: String,
    several: bool,
    /// How many spans.
    spans: u64,
    /// The services of spans that carry a placeholder (an OTLP resource
    /// named after its spans).
    late_services: HashMap<String, String>,
    problems: Problems,
    bytes: u64,
    /// The file's name, for messages.
    name: String,
}

/// The grouped spans, once read through, and what was counted on the way.
struct Settled {
    /// An error is one writing or reading the temporary file.
    store: Result<Store, ReadError>,
    tally: Tally,
}

/// What a pass that reads the spans through counts, request by request.
#[derive(Default)]
struct Tally {
    /// How many trace ids.
    count: usize,
    /// The first trace ids, sorted.
    first_ids: Vec<String>,
    /// Signs of trace context lost between services (boxed: kept out of
    /// the way of the rest).
    sanity: Box<FileSanity>,
}

impl Tally {
    /// Counts one request (trace id `trace`, spans `group`) and adds its
    /// signs of lost context to the file's.
    fn add(&mut self, trace: &str, group: &[Span], late: &HashMap<String, String>) {
        self.count += 1;
        if self.first_ids.len() < IDS_NAMED {
            self.first_ids.push(trace.to_string());
        }
        // As the request's analysis settles them, spans given again
        // dropped, the children of shared Zipkin ids moved to the server
        // span and cycles of parents broken (on a copy, when needed).
        let mut copy = None;
        if any_repeat(group) {
            let mut spans = group.to_vec();
            let (kept, repeats) = drop_repeats(&mut spans);
            self.sanity.repeats.add(repeats);
            spans.truncate(kept);
            copy = Some(spans);
        }
        if any_shared(copy.as_deref().unwrap_or(group)) {
            let spans = copy.get_or_insert_with(|| group.to_vec());
            attach_to_servers(spans, |s| service_name(s, late).to_string());
        }
        if any_cycle(copy.as_deref().unwrap_or(group)) {
            let spans = copy.get_or_insert_with(|| group.to_vec());
            let found = break_cycles(spans);
            self.sanity.cycles.add(trace, found);
        }
        let group = copy.as_deref().unwrap_or(group);
        let found = check(group, |s| service_name(s, late));
        // As the request's analysis settles them, its spans' services settled.
        let name = |s: &Span| label(service_name(s, late), &s.name);
        let (at, outlived, early) = bounds(group, name);
        self.sanity.outlived.add(trace, &outlived, "after");
        self.sanity.early.add(trace, &early, "before");
        if let Some(root) = request_root(group) {
            let after = after_root(group, &at, root, name);
            self.sanity.after_root.add(trace, &after, "after");
        }
        self.sanity.add(trace, found);
    }
}

/// What [`Requests::new`] is given besides the sorted spans.
pub(super) struct Read {
    pub late_services: HashMap<String, String>,
    pub problems: Problems,
    pub bytes: u64,
    /// The first trace id, whether another was seen, and how many spans.
    pub first_trace: String,
    pub several: bool,
    pub spans: u64,
}

impl Requests {
    /// The spans of `sorted` (by trace id): grouped at once if the sort
    /// kept them in memory, else when first asked for.
    pub(super) fn new(sorted: Sorted<Span>, read: Read, name: &str) -> Self {
        let (in_memory, pending) = match sorted {
            Sorted::Memory(spans) => (Some(spans.collect::<Vec<Span>>()), None),
            Sorted::Merge(merge) => (None, Some(Box::new(merge))),
        };
        let me = Requests {
            settled: OnceLock::new(),
            pending: Mutex::new(pending),
            first_trace: read.first_trace,
            several: read.several,
            spans: read.spans,
            late_services: read.late_services,
            problems: read.problems,
            bytes: read.bytes,
            name: name.to_string(),
        };
        if let Some(spans) = in_memory {
            let mut tally = Tally::default();
            for group in spans.chunk_by(|a, b| a.trace == b.trace) {
                tally.add(&group[0].trace, group, &me.late_services);
            }
            let store = Ok(Store::Memory(spans));
            let _ = me.settled.set(Settled { store, tally });
        }
        me
    }

    /// The requests read through (the spans the sort left on disk read
    /// now, if no pass has read them yet).
    fn settled(&self) -> &Settled {
        if let Some(s) = self.settled.get() {
            return s;
        }
        let mut pending = self.pending.lock().unwrap_or_else(|e| e.into_inner());
        // A pass may have read them through while this waited.
        if let Some(s) = self.settled.get() {
            return s;
        }
        let merge = pending.take().expect("spans pending until read through");
        // Nobody takes the requests: the first one stops the hand-out.
        let (settled, _) = self.read_through(*merge, |_, _| false);
        self.settled.get_or_init(|| settled)
    }

    /// Reads the merge through: each request counted, checked, written to
    /// the store's file and handed to `sink` (its spans' services
    /// settled) until `sink` says stop; the spans after that are still
    /// read and written. A problem with the disk ends it.
    fn read_through(
        &self,
        mut merge: Merge<Span>,
        mut sink: impl FnMut(String, &mut Vec<Span>) -> bool,
    ) -> (Settled, Option<ReadError>) {
        let io = |e: io::Error| disk_error(&self.name, STORE_WRITE, e);
        let mut tally = Tally::default();
        let mut handing_out = true;
        let mut go = || -> Result<File, ReadError> {
            let mut w = BufWriter::with_capacity(1 << 16, tempfile::tempfile().map_err(io)?);
            let (mut bytes, mut peeked) = (Vec::new(), merge.next_item().map_err(io)?);
            // One list for every request's spans, what the sink leaves
            // cleared.
            let mut group = Vec::new();
            while let Some(first) = peeked.take() {
                group.clear();
                group.push(first);
                while let Some(s) = merge.next_item().map_err(io)? {
                    if s.trace != group[0].trace {
                        peeked = Some(s);
                        break;
                    }
                    group.push(s);
                }
                for s in &group {
                    write_item(&mut w, s, &mut bytes).map_err(io)?;
                }
                tally.add(&group[0].trace, &group, &self.late_services);
                if handing_out {
                    group
                        .iter_mut()
                        .for_each(|s| settle_service(s, &self.late_services));
                    handing_out = sink(group[0].trace.clone(), &mut group);
                }
            }
            w.into_inner().map_err(|e| io(e.into_error()))
        };
        let store = go().map(Store::File);
        let err = store.as_ref().err().cloned();
        (Settled { store, tally }, err)
    }

    /// Signs of trace context lost between services, over the file's
    /// requests (`span-context` diagnostics).
    pub fn sanity(&self) -> &FileSanity {
        &self.settled().tally.sanity
    }

    /// How many trace ids the file holds (spans without one count as one
    /// request, of trace id `""`).
    pub fn len(&self) -> usize {
        self.settled().tally.count
    }

    /// Never true: a file without spans is an error.
    pub fn is_empty(&self) -> bool {
        self.spans == 0
    }

    /// Does the file hold more than one trace id? (Known without reading
    /// the requests through.)
    pub fn several(&self) -> bool {
        self.several
    }

    /// The file's first trace id (the id of a file of one request).
    pub fn first_id(&self) -> &str {
        &self.first_trace
    }

    /// The first trace ids (up to five), sorted: for messages.
    pub fn first_ids(&self) -> impl Iterator<Item = &str> {
        self.settled().tally.first_ids.iter().map(String::as_str)
    }

    /// The spans that could not be used (each skipped, never fatal).
    pub fn problems(&self) -> &[ReadError] {
        &self.problems.list
    }

    /// The document's size.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// The requests one at a time: trace id and spans.
    fn groups(&self) -> Result<Groups<'_>, ReadError> {
        let source = match &self.settled().store {
            Ok(Store::Memory(spans)) => GroupSource::Memory(spans),
            Ok(Store::File(f)) => {
                let f = f
                    .try_clone()
                    .map_err(|e| disk_error(&self.name, STORE_READ, e))?;
                let run = Run::new(f).map_err(|e| disk_error(&self.name, STORE_READ, e))?;
                GroupSource::File(Box::new(run), None)
            }
            Err(e) => return Err(e.clone()),
        };
        Ok(Groups {
            source,
            name: &self.name,
            late_services: &self.late_services,
        })
    }

    fn imported(
        &self,
        spans: &mut [Span],
        problems: Problems,
        bytes: u64,
    ) -> Result<Imported, ReadError> {
        let source = records(spans).finish(&self.name, HashMap::new())?;
        // OpenTelemetry, Jaeger and Zipkin times are since the Unix epoch.
        Ok(Imported::new(source, problems, bytes).at_unix_epoch())
    }

    /// All the spans on one timeline, with the file's problems: memory for
    /// every span of the file. An error is one of the sort on disk.
    pub fn merged(mut self) -> Result<Imported, ReadError> {
        let mut all = Vec::new();
        if let Some(Settled {
            store: Ok(Store::Memory(spans)),
            ..
        }) = self.settled.get_mut()
        {
            // Taken, not copied: the store is not read again.
            all = std::mem::take(spans);
            all.iter_mut()
                .for_each(|s| settle_service(s, &self.late_services));
        } else {
            let mut groups = self.groups()?;
            while let Some((_, spans)) = groups.next_group()? {
                all.extend(spans);
            }
        }
        all.sort_by_key(|s| s.order);
        self.imported(&mut all, self.problems.clone(), self.bytes)
    }

    /// One request's records (`id` in hex of any case, or base64), with
    /// the file's problems first (as
    /// [`super::read`] gives a file holding only this request); `None` when
    /// no span has this trace id. Links to spans of other requests are
    /// dropped.
    pub fn request(&self, id: &str) -> Option<Result<Imported, ReadError>> {
        let id = super::ids::normalize(id);
        let found = (|| {
            let mut groups = self.groups()?;
            while let Some((trace, spans)) = groups.next_group()? {
                if trace == id {
                    return Ok(Some(spans));
                }
            }
            Ok(None)
        })();
        match found {
            Ok(Some(mut spans)) => {
                Some(self.imported(&mut spans, self.problems.clone(), self.bytes))
            }
            Ok(None) => None,
            Err(e) => Some(Err(e)),
        }
    }

    /// One request's records, without the file's problems, as if its
    /// share of the file's bytes (by its spans) were read.
    fn one(&self, spans: &mut [Span]) -> Result<Imported, ReadError> {
        let bytes = self.bytes * spans.len() as u64 / self.spans.max(1);
        self.imported(spans, Problems::new(&self.name, KIND), bytes)
    }

    /// Each request's records, by trace id, built one at a time, without
    /// the file's problems (see [`Requests::problems`]).
    pub fn each(&self) -> impl Iterator<Item = (String, Result<Imported, ReadError>)> + '_ {
        let mut groups = self.groups();
        std::iter::from_fn(move || {
            let next = match &mut groups {
                Ok(g) => g.next_group().transpose()?,
                Err(e) => Err(e.clone()),
            };
            Some(match next {
                Ok((id, mut spans)) => (id, self.one(&mut spans)),
                Err(e) => {
                    // Said once, then the requests end.
                    groups = Ok(Groups {
                        source: GroupSource::Memory(&[]),
                        name: &self.name,
                        late_services: &self.late_services,
                    });
                    (String::new(), Err(e))
                }
            })
        })
    }

    /// Hands each request (trace id and spans, services settled) to
    /// `sink` in order until it says stop; the problem that ended them
    /// early, if any. The first pass over spans the sort left on disk
    /// hands them out as it reads them through. The sink takes the spans
    /// it keeps out of the list it is given (which is then reused).
    fn hand_out(&self, mut sink: impl FnMut(String, &mut Vec<Span>) -> bool) -> Option<ReadError> {
        if self.settled.get().is_none() {
            let mut pending = self.pending.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(merge) = pending.take() {
                let (settled, err) = self.read_through(*merge, sink);
                let _ = self.settled.set(settled);
                return err;
            }
        }
        let mut groups = match self.groups() {
            Ok(g) => g,
            Err(e) => return Some(e),
        };
        loop {
            match groups.next_group() {
                Ok(Some((id, mut spans))) => {
                    if !sink(id, &mut spans) {
                        return None;
                    }
                }
                Ok(None) => return None,
                Err(e) => return Some(e),
            }
        }
    }

    /// `f` of each request's records, by trace id, in the order of
    /// [`Requests::each`]: the records are built and `f` runs on `workers`
    /// threads (the caller's thread only for 1) while the caller's thread
    /// hands out the requests in batches. A problem reading the grouped
    /// spans is the last item, as in `each`.
    pub fn map<T, F>(&self, workers: usize, f: F) -> Vec<T>
    where
        T: Send,
        F: Fn(String, Result<Imported, ReadError>) -> T + Sync,
    {
        let one = &|id: String, spans: &mut [Span]| f(id, self.one(spans));
        // Spans still on disk are many requests' worth.
        let few = (self.settled.get()).is_some_and(|s| s.tally.count < 2 * BATCH);
        if workers <= 1 || few {
            let mut out = Vec::new();
            let failed = self.hand_out(|id, spans| {
                out.push(one(id, spans));
                true
            });
            out.extend(failed.map(|e| f(String::new(), Err(e))));
            return out;
        }
        let (tx, rx) = std::sync::mpsc::sync_channel::<Batch>(workers * 2);
        // Held by the workers only: if every one of them ends early (a
        // panic), the queue closes and the hand-out stops instead of
        // waiting for room.
        let rx = std::sync::Arc::new(std::sync::Mutex::new(rx));
        let mut done: Vec<(usize, Vec<T>)> = Vec::new();
        let mut failed = None;
        std::thread::scope(|scope| {
            let handles: Vec<_> = (0..workers)
                .map(|_| {
                    let rx = std::sync::Arc::clone(&rx);
                    scope.spawn(move || {
                        let mut out = Vec::new();
                        // The lock is held only to take the next batch.
                        let next = || rx.lock().ok()?.recv().ok();
                        while let Some((at, ids, mut spans)) = next() {
                            let each = ids.into_iter().map(|(id, r)| one(id, &mut spans[r]));
                            out.push((at, each.collect::<Vec<T>>()));
                        }
                        out
                    })
                })
                .collect();
            drop(rx);
            failed = self.hand_out_batches(&tx);
            drop(tx);
            for h in handles {
                done.extend(h.join().expect("a request's analysis panicked"));
            }
        });
        done.sort_unstable_by_key(|(at, _)| *at);
        let mut out: Vec<T> = done.into_iter().flat_map(|(_, b)| b).collect();
        out.extend(failed.map(|e| f(String::new(), Err(e))));
        out
    }

    /// Sends the requests to `tx` in numbered batches; the problem that
    /// ended them early, if any.
    fn hand_out_batches(&self, tx: &std::sync::mpsc::SyncSender<Batch>) -> Option<ReadError> {
        let mut batch: Batch = (0, Vec::with_capacity(BATCH), Vec::new());
        let failed = self.hand_out(|id, spans| {
            let (at, ids, all) = &mut batch;
            ids.push((id, all.len()..all.len() + spans.len()));
            all.append(spans);
            if ids.len() < BATCH {
                return true;
            }
            let next = (
                *at + 1,
                Vec::with_capacity(BATCH),
                Vec::with_capacity(all.len()),
            );
            tx.send(std::mem::replace(&mut batch, next)).is_ok()
        });
        if !batch.1.is_empty() {
            let _ = tx.send(batch);
        }
        failed
    }
}

/// Requests handed to a worker of [`Requests::map`] at a time.
const BATCH: usize = 64;

/// A batch's number, its requests' trace ids and where their spans are
/// in its list of spans, and that list: one list for the batch, as a list
/// of a few spans for each request made glibc consolidate its free lists
/// at every request (a list of a kilobyte or more).
type Batch = (usize, Vec<(String, Range<usize>)>, Vec<Span>);

/// Where [`Groups`] reads spans from.
enum GroupSource<'a> {
    Memory(&'a [Span]),
    /// The file, and the first span of the next group.
    File(Box<Run>, Option<Span>),
}

/// The requests of [`Requests`], one at a time.
struct Groups<'a> {
    source: GroupSource<'a>,
    name: &'a str,
    late_services: &'a HashMap<String, String>,
}

impl Groups<'_> {
    /// The next request's trace id and spans, each with its service.
    fn next_group(&mut self) -> Result<Option<(String, Vec<Span>)>, ReadError> {
        let Some((id, mut spans)) = self.next_stored()? else {
            return Ok(None);
        };
        spans
            .iter_mut()
            .for_each(|s| settle_service(s, self.late_services));
        Ok(Some((id, spans)))
    }

    /// The next request's trace id and spans as stored.
    fn next_stored(&mut self) -> Result<Option<(String, Vec<Span>)>, ReadError> {
        match &mut self.source {
            GroupSource::Memory(rest) => {
                let Some(first) = rest.first() else {
                    return Ok(None);
                };
                let n = rest.iter().take_while(|s| s.trace == first.trace).count();
                let (group, tail) = rest.split_at(n);
                *rest = tail;
                Ok(Some((group[0].trace.clone(), group.to_vec())))
            }
            GroupSource::File(run, peeked) => {
                let read = |run: &mut Run| {
                    run.next_item::<Span>()
                        .map_err(|e| disk_error(self.name, STORE_READ, e))
                };
                let Some(first) = peeked.take().map_or_else(|| read(run), |s| Ok(Some(s)))? else {
                    return Ok(None);
                };
                let mut group = vec![first];
                while let Some(s) = read(run)? {
                    if s.trace != group[0].trace {
                        *peeked = Some(s);
                        break;
                    }
                    group.push(s);
                }
                Ok(Some((group[0].trace.clone(), group)))
            }
        }
    }
}

/// A span's final service name (see [`settle_service`]).
fn service_name<'a>(s: &'a Span, late_services: &'a HashMap<String, String>) -> &'a str {
    match late_services.get(&s.service) {
        Some(svc) => svc,
        None if s.service.starts_with('\u{1}') => "unknown_service",
        None => &s.service,
    }
}

/// A span's service, when it carries a resource's placeholder: the
/// resource's, or `unknown_service` for a resource cut short before its
/// `resource`.
fn settle_service(s: &mut Span, late_services: &HashMap<String, String>) {
    if let Some(service) = late_services.get(&s.service) {
        s.service.clone_from(service);
    } else if s.service.starts_with('\u{1}') {
        s.service = "unknown_service".into();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::extsort::ExtSort;
    use critpath_trace::RecordSource;

    /// Requests `0`..`n` of three spans each (a root calling two children,
    /// the second child outliving its parent), the document in reverse
    /// order, grouped by a sort that keeps `budget` spans in memory.
    fn requests(n: u64, budget: usize) -> Requests {
        let mut sort = ExtSort::new(budget);
        let mut order = 0;
        for r in (0..n).rev() {
            let trace = format!("{r:04}");
            for (id, parent, start, end) in [
                ("c2", Some("root"), 5, 12),
                ("c1", Some("root"), 1, 4),
                ("root", None, 0, 10),
            ] {
                sort.push(Span {
                    trace: trace.clone(),
                    order,
                    id: id.into(),
                    parent: parent.map(Into::into),
                    follows: Vec::new(),
                    service: if id == "root" {
                        "front".into()
                    } else {
                        "db".into()
                    },
                    name: id.into(),
                    start: start + r,
                    end: end + r,
                    client: false,
                });
                order += 1;
            }
        }
        let read = Read {
            late_services: HashMap::new(),
            problems: Problems::new("t.json", KIND),
            bytes: 1000,
            first_trace: format!("{:04}", n - 1),
            several: n > 1,
            spans: order,
        };
        Requests::new(sort.finish().unwrap(), read, "t.json")
    }

    /// Each request's trace id and records, by `map` on two threads.
    fn mapped(r: &Requests) -> Vec<(String, usize)> {
        r.map(2, |id, one| (id, records(&mut one.unwrap())))
    }

    fn records(src: &mut Imported) -> usize {
        std::iter::from_fn(|| src.next_record().unwrap()).count()
    }

    /// What the requests say of themselves besides their records.
    fn said(r: &Requests) -> (usize, Vec<String>, String) {
        let ids = r.first_ids().map(str::to_string).collect();
        let sanity = format!("{:?}", r.sanity().diagnostics());
        (r.len(), ids, sanity)
    }

    #[test]
    fn requests_on_disk_are_handed_out_as_read_and_kept_for_later_passes() {
        let n = 300;
        let in_memory = requests(n, 1 << 20);
        let want = (mapped(&in_memory), said(&in_memory));
        assert_eq!(want.0.len(), n as usize);
        assert_eq!(want.1 .0, n as usize);
        assert!(
            want.1 .2.contains("ended after the parent"),
            "{}",
            want.1 .2
        );
        // The first pass hands the requests out as it reads them through;
        // what it counted, and a second pass (from the file), agree.
        let streamed = requests(n, 7);
        assert!(streamed.settled.get().is_none());
        assert_eq!(mapped(&streamed), want.0);
        assert_eq!(said(&streamed), want.1);
        assert_eq!(mapped(&streamed), want.0);
        let mut one = streamed.request("0042").unwrap().unwrap();
        assert_eq!(("0042".to_string(), records(&mut one)), want.0[42]);
        // Asked first, the count reads them through; the pass reads the file.
        let asked = requests(n, 7);
        assert_eq!(said(&asked), want.1);
        assert_eq!(mapped(&asked), want.0);
        let each: Vec<String> = asked.each().map(|(id, _)| id).collect();
        assert_eq!(each, want.0.iter().map(|w| w.0.clone()).collect::<Vec<_>>());
    }

    #[test]
    fn a_span_survives_the_disk() {
        let s = Span {
            trace: "t1".into(),
            order: 9,
            id: "a".into(),
            parent: Some(String::new()),
            follows: vec!["b".into(), "ünï".into()],
            service: "svc".into(),
            name: "GET /".into(),
            start: 1 << 50,
            end: (1 << 50) + 7,
            client: true,
        };
        for parent in [Some(String::new()), None] {
            let s = Span {
                parent,
                ..s.clone()
            };
            let mut b = Vec::new();
            s.put(&mut b);
            let back = Span::take(&b);
            assert_eq!(format!("{back:?}"), format!("{s:?}"));
        }
    }
}
