//! OTLP spans of a mapped file parsed on other threads while the walk of
//! the document goes on: the walk finds each span's text (its structure
//! only) and hands the spans out in batches, each batch to the next worker
//! in turn; a worker parses them, noting their problems; the walk takes
//! the batches back in the order it handed them out and keeps their spans
//! and problems, so the spans, their order and the problems met in them
//! are those of a walk that parses each span itself.

use super::otlp_json::OtlpNode;
use super::{At, Collector, Span};
use critpath_trace::Location;
use std::collections::VecDeque;
use std::ops::Range;
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::thread::JoinHandle;

/// Spans handed to a worker at a time.
const BATCH: usize = 2048;
/// Batches handed out and not yet taken back at most, per worker: the walk
/// waits for the oldest beyond that.
const QUEUED: usize = 2;
/// Workers at most.
const WORKERS: usize = 3;

/// A span for a worker: its text in the mapping and what the walk knew of
/// it there.
struct Job {
    text: Range<usize>,
    at: At,
    line: u64,
    /// The service of its resource, once that was read.
    service: Option<String>,
    doc: usize,
}

/// A batch parsed: its spans, the problems met (each worker lists as many
/// as a file does, and counts the rest), and the first span that could not
/// be parsed (the batch stops there, as the walk does).
struct Parsed {
    spans: Vec<Span>,
    problems: crate::json::Problems,
    failed: Option<String>,
}

/// One worker: its queue and its answers.
struct Worker {
    tx: SyncSender<Vec<Job>>,
    rx: Receiver<Parsed>,
    thread: JoinHandle<()>,
}

/// The workers and the batches handed out to them.
pub(super) struct Aside {
    workers: Vec<Worker>,
    batch: Vec<Job>,
    /// The batches out, oldest first: the worker and the first byte of its
    /// first span.
    out: VecDeque<(usize, usize)>,
    /// The next worker to hand a batch to.
    next: usize,
    /// The first span that could not be parsed.
    failed: Option<String>,
}

impl Aside {
    /// Workers for the spans of `bytes`; `name` is the file's, in the
    /// problems.
    pub(super) fn start(bytes: &crate::perf::file::Bytes, name: &str) -> Aside {
        let n = std::thread::available_parallelism().map_or(1, |n| n.get().min(WORKERS));
        let workers = (0..n).map(|_| Worker::start(bytes.clone(), name)).collect();
        Aside {
            workers,
            batch: Vec::with_capacity(BATCH),
            out: VecDeque::new(),
            next: 0,
            failed: None,
        }
    }

    /// The span whose text is `text` in the mapping, for a worker; the
    /// walk is in the document `doc`, in a resource of `service`. Batches
    /// parsed are kept in `c` on the way.
    pub(super) fn push(&mut self, c: &mut Collector, text: Range<usize>, at: At, line: u64) {
        self.batch.push(Job {
            text,
            at,
            line,
            service: c.service.clone(),
            doc: c.doc,
        });
        if self.batch.len() == BATCH {
            self.send(c);
        }
    }

    /// Hands the batch out, taking back the oldest first when as many are
    /// out as may be.
    fn send(&mut self, c: &mut Collector) {
        if self.out.len() >= QUEUED * self.workers.len() {
            self.take_back(c);
        }
        let batch = std::mem::replace(&mut self.batch, Vec::with_capacity(BATCH));
        let first = batch.first().map_or(0, |j| j.text.start);
        let k = self.next;
        self.next = (k + 1) % self.workers.len();
        // A worker gone (a panic) is met when it is joined.
        let _ = self.workers[k].tx.send(batch);
        self.out.push_back((k, first));
    }

    /// The oldest batch out, kept in `c`.
    fn take_back(&mut self, c: &mut Collector) {
        let Some((k, _)) = self.out.pop_front() else {
            return;
        };
        let Ok(mut parsed) = self.workers[k].rx.recv() else {
            // The worker is gone: joining it says why.
            return;
        };
        if self.failed.is_some() {
            return;
        }
        c.problems.append(&mut parsed.problems);
        parsed.spans.into_iter().for_each(|s| c.keep(s));
        self.failed = parsed.failed;
    }

    /// Where the spans not yet parsed start: the pages before it may go.
    pub(super) fn parsed_before(&self) -> Option<usize> {
        match self.out.front() {
            Some(&(_, first)) => Some(first),
            None => self.batch.first().map(|j| j.text.start),
        }
    }

    /// Every span handed out parsed and kept in `c`, the workers ended;
    /// the first span that could not be parsed is the error.
    pub(super) fn finish(mut self, c: &mut Collector) -> Result<(), String> {
        if !self.batch.is_empty() {
            self.send(c);
        }
        while !self.out.is_empty() {
            self.take_back(c);
        }
        for w in self.workers {
            drop(w.tx);
            if let Err(panic) = w.thread.join() {
                std::panic::resume_unwind(panic);
            }
        }
        self.failed.map_or(Ok(()), Err)
    }
}

impl Worker {
    fn start(bytes: crate::perf::file::Bytes, name: &str) -> Worker {
        let (tx, jobs) = sync_channel::<Vec<Job>>(QUEUED);
        let (done, rx) = sync_channel::<Parsed>(QUEUED);
        let name = name.to_string();
        let thread = std::thread::spawn(move || {
            // A collector of its own (its line counter stays here), whose
            // problems go back with each batch.
            let mut w = Collector::new(&name);
            for batch in jobs {
                if done.send(parse(bytes.as_ref(), &mut w, batch)).is_err() {
                    return;
                }
            }
        });
        Worker { tx, rx, thread }
    }
}

/// A batch's spans parsed in `w`, their problems taken from it.
fn parse(all: &[u8], w: &mut Collector, batch: Vec<Job>) -> Parsed {
    let mut spans = Vec::with_capacity(batch.len());
    let mut failed = None;
    for j in batch {
        let node = match serde_json::from_slice::<OtlpNode>(&all[j.text]) {
            Ok(node) => node,
            Err(e) => {
                failed = Some(format!("span at line {}: {e}", j.line));
                break;
            }
        };
        w.loc = Location::Line(j.line);
        w.service = j.service;
        w.doc = j.doc;
        spans.extend(w.otlp_parse(node, j.at));
    }
    let name = w.problems.name().to_string();
    let problems = std::mem::replace(
        &mut w.problems,
        crate::json::Problems::new(&name, super::KIND),
    );
    Parsed {
        spans,
        problems,
        failed,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::perf::file::Bytes;
    use std::sync::Arc;

    #[test]
    fn batches_come_back_in_the_order_handed_out() {
        // More spans than the workers hold at once, every third without
        // its times.
        let n = BATCH * QUEUED * WORKERS * 2 + 5;
        let mut doc = Vec::new();
        let mut texts = Vec::new();
        for i in 0..n {
            let start = doc.len();
            match i % 3 {
                0 => doc.extend_from_slice(format!(r#"{{"spanId":"{i:x}"}}"#).as_bytes()),
                _ => doc.extend_from_slice(
                    format!(r#"{{"traceId":"{:x}","spanId":"{i:x}","startTimeUnixNano":"{i}","endTimeUnixNano":"{i}"}}"#, i % 7)
                        .as_bytes(),
                ),
            }
            texts.push(start..doc.len());
            doc.push(b'\n');
        }
        let bytes = Bytes::Owned(Arc::new(doc));
        let mut c = Collector::new("t.json");
        let mut a = Aside::start(&bytes, "t.json");
        for (i, t) in texts.into_iter().enumerate() {
            a.push(&mut c, t, At::Otlp(0, "scopeSpans", 0, i), i as u64 + 1);
        }
        a.finish(&mut c).unwrap();
        // Two problems (no start, no end) for every third span, in order.
        let bad = n.div_ceil(3) as u64;
        assert_eq!(c.problems.count(), 2 * bad);
        let lines: Vec<String> = c.problems.list.iter().map(|e| e.to_string()).collect();
        for (k, l) in lines.iter().enumerate() {
            let i = 3 * (k / 2);
            let at = format!(
                "t.json:{}: resourceSpans[0].scopeSpans[0].spans[{i}]:",
                i + 1
            );
            assert!(l.starts_with(&at), "{l}");
        }
        assert_eq!(c.spans, n as u64 - bad);
        // Numbered in the document's order.
        let mut sorted = c.sorted.finish().unwrap();
        let mut kept = Vec::new();
        while let Some(s) = sorted.next_item().unwrap() {
            kept.push((s.order, s.start));
        }
        kept.sort_unstable();
        let want: Vec<(u64, u64)> = (0..n as u64)
            .filter(|i| i % 3 != 0)
            .enumerate()
            .map(|(k, i)| (k as u64, i))
            .collect();
        assert_eq!(kept, want);
    }
}
