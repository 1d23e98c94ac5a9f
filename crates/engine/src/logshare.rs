//! The node log encoded beside the engine's thread: while the reader's
//! thread of [`crate::pump::run_parallel`] waits for the engine (the
//! channel of batches is full), it encodes the entries the engine logged.
//!
//! The engine fills chunks of [`CHUNK`] entries (fixed-size, in node order)
//! and queues them ([`LogSender::log_or_hold`]); whoever encodes holds the
//! log's lock, takes every chunk queued, encodes them in order into the
//! [`NodeLog`] and gives the emptied chunks back for the engine to fill
//! again. The reader's thread encodes only when it would otherwise wait
//! ([`LogHelper::encode_queued`]), and the engine leaves chunks to it only
//! while it does: otherwise (a reader that is the slower thread, as a
//! recording's OS graph) the engine holds the log and encodes each entry
//! as it comes, so a slower reader is not slowed, and when more than
//! [`LAG`] chunks wait it encodes them and takes the log back, so the
//! queue stays bounded. The bytes are those the engine would have written
//! alone.

use crate::engine::DEFER;
use crate::nodelog::{Entry, NodeLog};
use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

/// Entries a chunk holds (128 KB) when it is queued.
const CHUNK: usize = 4096;
/// Room of a chunk: entries held past [`CHUNK`] wait for at most
/// [`DEFER`] deferred passes.
const ROOM: usize = CHUNK + DEFER;
/// Chunks waiting past which the engine encodes them itself: a batch of
/// the parallel pump makes about four, so the reader may lag by two.
const LAG: usize = 8;

/// The log and what encoding it needs, under one lock.
struct Encoder {
    /// The log, while chunks are left to the helper (the engine holds it
    /// otherwise, see [`LogSender`]).
    log: Option<NodeLog>,
    /// The chunks taken from the queue, being encoded (kept for its room).
    taken: Vec<Vec<Entry>>,
    /// The first error writing the log.
    io_error: Option<io::Error>,
}

/// The chunks between the engine and whoever encodes them.
#[derive(Default)]
struct Queue {
    full: Vec<Vec<Entry>>,
    empty: Vec<Vec<Entry>>,
}

struct Shared {
    encoder: Mutex<Encoder>,
    queue: Mutex<Queue>,
    /// Set by the helper each time it finds the engine behind: the engine
    /// then leaves the log to it (see [`LogSender::look`]).
    engine_behind: AtomicBool,
}

/// Locks `m`; a thread that panicked while holding it left nothing
/// half-written that matters more than its panic, which the pump reports.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Encodes `entries` into `log`, keeping the first error in `error`.
fn push_all(log: &mut NodeLog, entries: &[Entry], error: &mut Option<io::Error>) {
    for &e in entries {
        if let Err(err) = log.push(e) {
            error.get_or_insert(err);
        }
    }
}

impl Shared {
    /// Encodes every chunk queued, in order; waits for the log's lock when
    /// `wait`, else returns when another thread holds it.
    fn encode(&self, wait: bool) {
        let mut enc = match self.encoder.try_lock() {
            Ok(enc) => enc,
            Err(_) if wait => lock(&self.encoder),
            Err(_) => return,
        };
        let enc = &mut *enc;
        // Without the log, nothing is queued: the engine encodes itself.
        let Some(log) = enc.log.as_mut() else {
            return;
        };
        std::mem::swap(&mut lock(&self.queue).full, &mut enc.taken);
        for chunk in &enc.taken {
            push_all(log, chunk, &mut enc.io_error);
        }
        let mut q = lock(&self.queue);
        for mut chunk in enc.taken.drain(..) {
            chunk.clear();
            q.empty.push(chunk);
        }
    }
}

/// The engine's side. While the helper does not find the engine behind,
/// the engine holds the log and encodes each entry as it comes (its
/// `own`); once it does, the engine hands the log over and queues chunks,
/// until more than [`LAG`] wait (the helper lags): it then encodes them and
/// takes the log back.
pub(crate) struct LogSender {
    shared: Arc<Shared>,
    own: Option<NodeLog>,
    /// The first error writing `own`.
    own_error: Option<io::Error>,
    /// Entries encoded into `own` since the engine last looked whether the
    /// helper found it behind.
    since_look: usize,
    /// Entries to queue, or held (below): in node order, before any entry
    /// encoded later.
    chunk: Vec<Entry>,
    /// Where in `chunk` the entries whose tags are not final yet begin
    /// (see [`LogSender::log_or_hold`]).
    held_from: Option<usize>,
}

/// The helper's side, for the reader's thread.
pub(crate) struct LogHelper(Arc<Shared>);

impl LogHelper {
    /// Says the engine is behind, and encodes the chunks the engine
    /// queued, unless the engine is encoding them itself.
    pub(crate) fn encode_queued(&self) {
        self.0.engine_behind.store(true, Ordering::Relaxed);
        self.0.encode(false);
    }
}

impl LogSender {
    /// The engine's side of `log`, and the helper's.
    pub(crate) fn new(log: NodeLog) -> (LogSender, LogHelper) {
        let shared = Arc::new(Shared {
            encoder: Mutex::new(Encoder {
                log: None,
                taken: Vec::new(),
                io_error: None,
            }),
            queue: Mutex::new(Queue::default()),
            engine_behind: AtomicBool::new(false),
        });
        let sender = LogSender {
            shared: shared.clone(),
            own: Some(log),
            own_error: None,
            since_look: 0,
            chunk: Vec::with_capacity(ROOM),
            held_from: None,
        };
        (sender, LogHelper(shared))
    }

    /// Appends the next node's entry; `hold` when its tag is not final
    /// yet (a deferred inter-SM pass's): it and the entries after it stay
    /// in the chunk until [`LogSender::settle`]. The entries held.
    #[inline]
    pub(crate) fn log_or_hold(&mut self, e: Entry, hold: bool) -> usize {
        if let (Some(log), None, false) = (self.own.as_mut(), self.held_from, hold) {
            // Held entries are encoded when settled: `chunk` is empty.
            if let Err(err) = log.push(e) {
                self.own_error.get_or_insert(err);
            }
            self.since_look += 1;
            if self.since_look == CHUNK {
                self.look();
            }
            return 0;
        }
        if hold && self.held_from.is_none() {
            self.held_from = Some(self.chunk.len());
        }
        self.chunk.push(e);
        match self.held_from {
            None if self.chunk.len() >= CHUNK => {
                self.pass_on();
                0
            }
            None => 0,
            Some(from) => self.chunk.len() - from,
        }
    }

    /// Makes the held entries' tags final (`fix`); they are then encoded
    /// or queued as any others.
    pub(crate) fn settle(&mut self, fix: impl Fn(&mut Entry)) {
        if let Some(from) = self.held_from.take() {
            self.chunk[from..].iter_mut().for_each(fix);
            if self.own.is_some() || self.chunk.len() >= CHUNK {
                self.pass_on();
            }
        }
    }

    /// Hands the log to the helper if it found the engine behind since the
    /// engine last looked (`chunk` is empty).
    #[inline(never)]
    fn look(&mut self) {
        self.since_look = 0;
        if self.shared.engine_behind.swap(false, Ordering::Relaxed) {
            lock(&self.shared.encoder).log = self.own.take();
        }
    }

    /// Encodes the chunk's entries into the log the engine holds, or queues
    /// the chunk for the helper; takes the log back when the helper lags.
    #[inline(never)]
    fn pass_on(&mut self) {
        if let Some(log) = self.own.as_mut() {
            push_all(log, &self.chunk, &mut self.own_error);
            self.chunk.clear();
            return self.look();
        }
        let waiting = {
            let mut q = lock(&self.shared.queue);
            let next = q.empty.pop().unwrap_or_else(|| Vec::with_capacity(ROOM));
            q.full.push(std::mem::replace(&mut self.chunk, next));
            q.full.len()
        };
        if waiting > LAG {
            self.take_log();
        }
    }

    /// Encodes the chunks queued and takes the log back from the helper.
    fn take_log(&mut self) {
        self.shared.encode(true);
        self.own = lock(&self.shared.encoder).log.take();
        self.shared.engine_behind.store(false, Ordering::Relaxed);
    }

    /// Encodes whatever is left and gives the log back, with the first
    /// error writing it.
    pub(crate) fn finish(mut self) -> (NodeLog, Option<io::Error>) {
        debug_assert!(self.held_from.is_none(), "entries settled first");
        if self.own.is_none() {
            self.take_log();
        }
        let mut log = self.own.take().expect("the log, taken back");
        let mut error = self.own_error.take();
        push_all(&mut log, &self.chunk, &mut error);
        let shared = lock(&self.shared.encoder).io_error.take();
        (log, error.or(shared))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nodelog::NO_PRED;

    fn entry(i: u64) -> Entry {
        let pred = if i.is_multiple_of(5) { NO_PRED } else { i / 2 };
        Entry {
            pred,
            weight: i * 31 % 100_003,
            tag: (i % 70_001) as u32,
            span: i * 31 % 100_003,
        }
    }

    /// Every entry of a sealed log, last first.
    fn entries(log: &mut NodeLog) -> Vec<Entry> {
        log.seal().unwrap();
        let mut cur = log.cursor();
        (0..log.len())
            .rev()
            .map(|i| cur.get(log, i).unwrap())
            .collect()
    }

    /// A log encoded by a helper now and then, by the engine when the
    /// helper lags and at the end, holds the entries and the bytes of the
    /// log the engine writes alone (past several spills).
    #[test]
    fn a_shared_log_is_the_log_written_alone() {
        const N: u64 = 3_000_000;
        let mut alone = NodeLog::new();
        for i in 0..N {
            alone.push(entry(i)).unwrap();
        }
        let (mut sender, helper) = LogSender::new(NodeLog::new());
        std::thread::scope(|s| {
            let (tx, rx) = std::sync::mpsc::channel::<()>();
            s.spawn(move || {
                while rx.recv().is_ok() {
                    helper.encode_queued();
                }
            });
            for i in 0..N {
                sender.log_or_hold(entry(i), false);
                // The helper encodes only now and then: the engine too.
                if i % 10_000 == 0 {
                    tx.send(()).unwrap();
                }
            }
        });
        let (mut shared, err) = sender.finish();
        assert!(err.is_none());
        assert_eq!(shared.len(), N);
        let want = entries(&mut alone);
        assert_eq!(entries(&mut shared), want);
        assert_eq!(shared.disk_bytes(), alone.disk_bytes());
        assert!(alone.disk_bytes() > 0, "the log spilled");
    }
}
