//! A span file's spans grouped by request (trace id), as the external sort
//! hands them out: held in memory when they fit the sort's budget, else in
//! one temporary file read a request at a time.

use super::build::records;
use super::outlive::{cut_ends, label};
use super::sanity::{check, FileSanity};
use super::{Span, KIND};
use crate::extsort::{disk_error, put_str, write_item, Fields, Run, Sorted, Spill};
use crate::json::{Imported, Problems};
use critpath_trace::ReadError;
use std::collections::HashMap;
use std::fs::File;
use std::io::{self, BufWriter};

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
pub struct Requests {
    store: Store,
    /// How many trace ids.
    count: usize,
    /// The first trace ids, sorted.
    first_ids: Vec<String>,
    /// The trace id of the last group counted.
    last: String,
    /// The services of spans that carry a placeholder (an OTLP resource
    /// named after its spans).
    late_services: HashMap<String, String>,
    problems: Problems,
    bytes: u64,
    /// The file's name, for messages.
    name: String,
    /// Signs of trace context lost between services (boxed: kept out of
    /// the way of the rest).
    sanity: Box<FileSanity>,
}

impl Requests {
    /// The spans of `sorted` (by trace id), kept in memory if the sort kept
    /// them there, else in one temporary file.
    pub(super) fn new(
        sorted: Sorted<Span>,
        late_services: HashMap<String, String>,
        problems: Problems,
        bytes: u64,
        name: &str,
    ) -> Result<Self, ReadError> {
        let mut me = Requests {
            store: Store::Memory(Vec::new()),
            count: 0,
            first_ids: Vec::new(),
            last: String::new(),
            late_services,
            problems,
            bytes,
            name: name.to_string(),
            sanity: Box::default(),
        };
        let io = |e: io::Error| disk_error(name, STORE_WRITE, e);
        match sorted {
            Sorted::Memory(spans) => {
                let spans: Vec<Span> = spans.collect();
                spans.iter().for_each(|s| me.count_id(&s.trace));
                for group in spans.chunk_by(|a, b| a.trace == b.trace) {
                    me.check_group(group);
                }
                me.store = Store::Memory(spans);
            }
            Sorted::Merge(mut merge) => {
                let mut w = BufWriter::with_capacity(1 << 16, tempfile::tempfile().map_err(io)?);
                let mut bytes = Vec::new();
                let mut group: Vec<Span> = Vec::new();
                while let Some(s) = merge.next_item().map_err(io)? {
                    me.count_id(&s.trace);
                    write_item(&mut w, &s, &mut bytes).map_err(io)?;
                    if group.first().is_some_and(|g| g.trace != s.trace) {
                        me.check_group(&group);
                        group.clear();
                    }
                    group.push(s);
                }
                me.check_group(&group);
                me.store = Store::File(w.into_inner().map_err(|e| io(e.into_error()))?);
            }
        }
        Ok(me)
    }

    /// Adds one request's signs of lost context to the file's.
    fn check_group(&mut self, group: &[Span]) {
        let Some(first) = group.first() else {
            return;
        };
        let late = &self.late_services;
        let found = check(group, |s| service_name(s, late));
        // As the request's analysis cuts them, its spans' services settled.
        let mut ends: Vec<u64> = group.iter().map(|s| s.end).collect();
        let outlived = cut_ends(group, &mut ends, |s| label(service_name(s, late), &s.name));
        self.sanity.add_outlived(&first.trace, &outlived);
        self.sanity.add(&first.trace, found);
    }

    /// Signs of trace context lost between services, over the file's
    /// requests (`span-context` diagnostics).
    pub fn sanity(&self) -> &FileSanity {
        &self.sanity
    }

    /// Counts `trace` when it starts a new group (spans come grouped).
    fn count_id(&mut self, trace: &str) {
        if self.count > 0 && self.last == trace {
            return;
        }
        self.count += 1;
        self.last.clear();
        self.last.push_str(trace);
        if self.first_ids.len() < IDS_NAMED {
            self.first_ids.push(trace.to_string());
        }
    }

    /// How many trace ids the file holds (spans without one count as one
    /// request, of trace id `""`).
    pub fn len(&self) -> usize {
        self.count
    }

    /// Never true: a file without spans is an error.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// The first trace ids (up to five), sorted: for messages, and the id
    /// of a file of one request.
    pub fn first_ids(&self) -> impl Iterator<Item = &str> {
        self.first_ids.iter().map(String::as_str)
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
        let source = match &self.store {
            Store::Memory(spans) => GroupSource::Memory(spans),
            Store::File(f) => {
                let f = f
                    .try_clone()
                    .map_err(|e| disk_error(&self.name, STORE_READ, e))?;
                let run = Run::new(f).map_err(|e| disk_error(&self.name, STORE_READ, e))?;
                GroupSource::File(Box::new(run), None)
            }
        };
        Ok(Groups {
            source,
            name: &self.name,
            late_services: &self.late_services,
        })
    }

    fn imported(
        &self,
        spans: Vec<Span>,
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
        if let Store::Memory(spans) = &mut self.store {
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
        self.imported(all, self.problems.clone(), self.bytes)
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
            Ok(Some(spans)) => Some(self.imported(spans, self.problems.clone(), self.bytes)),
            Ok(None) => None,
            Err(e) => Some(Err(e)),
        }
    }

    /// One request's records, without the file's problems, as if its
    /// share of the file's bytes were read.
    fn one(&self, spans: Vec<Span>) -> Result<Imported, ReadError> {
        let bytes = self.bytes / self.count.max(1) as u64;
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
                Ok((id, spans)) => (id, self.one(spans)),
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
        if workers <= 1 || self.count < 2 * BATCH {
            return self.each().map(|(id, r)| f(id, r)).collect();
        }
        let one = &|(id, spans): (String, Vec<Span>)| f(id, self.one(spans));
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
                        while let Some((at, batch)) = next() {
                            out.push((at, batch.into_iter().map(one).collect::<Vec<T>>()));
                        }
                        out
                    })
                })
                .collect();
            drop(rx);
            failed = self.hand_out(&tx);
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
    fn hand_out(&self, tx: &std::sync::mpsc::SyncSender<Batch>) -> Option<ReadError> {
        let mut groups = match self.groups() {
            Ok(g) => g,
            Err(e) => return Some(e),
        };
        for at in 0.. {
            let mut batch = Vec::with_capacity(BATCH);
            while batch.len() < BATCH {
                match groups.next_group() {
                    Ok(Some(g)) => batch.push(g),
                    Ok(None) => break,
                    Err(e) => {
                        let _ = tx.send((at, batch));
                        return Some(e);
                    }
                }
            }
            if batch.is_empty() || tx.send((at, batch)).is_err() {
                break;
            }
        }
        None
    }
}

/// Requests handed to a worker of [`Requests::map`] at a time.
const BATCH: usize = 64;

/// A batch's number and its requests' trace ids and spans.
type Batch = (usize, Vec<(String, Vec<Span>)>);

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
