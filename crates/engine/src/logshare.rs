//! The node log encoded beside the engine's thread: while the reader's
//! thread of [`crate::pump::run_parallel`] waits for the engine (the
//! channel of batches is full), it encodes the entries the engine logged.
//!
//! The engine fills chunks of [`CHUNK`] entries (fixed-size, in node order)
//! and queues them ([`LogSender::log`]); whoever encodes holds the log's
//! lock, takes every chunk queued, encodes them in order into the
//! [`NodeLog`] and gives the emptied chunks back for the engine to fill
//! again. The reader's thread encodes only when it would otherwise wait
//! ([`LogHelper::encode_queued`]); when more than [`LAG`] chunks wait, the
//! engine encodes them itself, so a reader that is the slower thread (a
//! recording's OS graph) is not slowed, and the queue stays bounded. The
//! bytes are those the engine would have written alone.

use crate::engine::DEFER;
use crate::nodelog::{Entry, NodeLog};
use std::io;
use std::sync::{Arc, Mutex, MutexGuard};

/// Entries a chunk holds (128 KB) when it is queued.
const CHUNK: usize = 4096;
/// Room of a chunk: entries held past [`CHUNK`] wait for at most
/// [`DEFER`] deferred passes.
const ROOM: usize = CHUNK + DEFER;
/// Chunks waiting past which the engine encodes them itself: a batch of
/// the parallel pump makes about four, so the reader may lag by two.
const LAG: usize = 8;
/// Chunks waiting past which the engine waits for the log's lock to
/// encode them (the helper is encoding others): the queue's bound.
const MOST: usize = 4 * LAG;

/// The log and what encoding it needs, under one lock.
struct Encoder {
    log: NodeLog,
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
}

/// Locks `m`; a thread that panicked while holding it left nothing
/// half-written that matters more than its panic, which the pump reports.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
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
        std::mem::swap(&mut lock(&self.queue).full, &mut enc.taken);
        for chunk in &enc.taken {
            for &e in chunk {
                if let Err(err) = enc.log.push(e) {
                    enc.io_error.get_or_insert(err);
                }
            }
        }
        let mut q = lock(&self.queue);
        for mut chunk in enc.taken.drain(..) {
            chunk.clear();
            q.empty.push(chunk);
        }
    }
}

/// The engine's side: fills chunks and queues them.
pub(crate) struct LogSender {
    shared: Arc<Shared>,
    chunk: Vec<Entry>,
    /// Where in `chunk` the entries whose tags are not final yet begin
    /// (see [`LogSender::log_or_hold`]).
    held_from: Option<usize>,
}

/// The helper's side, for the reader's thread.
pub(crate) struct LogHelper(Arc<Shared>);

impl LogHelper {
    /// Encodes the chunks the engine queued, unless the engine is encoding
    /// them itself.
    pub(crate) fn encode_queued(&self) {
        self.0.encode(false);
    }
}

impl LogSender {
    /// Hands `log` over: entries are then encoded by whoever holds the
    /// helper, or by the engine when the helper lags.
    pub(crate) fn new(log: NodeLog) -> (LogSender, LogHelper) {
        let shared = Arc::new(Shared {
            encoder: Mutex::new(Encoder {
                log,
                taken: Vec::new(),
                io_error: None,
            }),
            queue: Mutex::new(Queue::default()),
        });
        let sender = LogSender {
            shared: shared.clone(),
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
        if hold && self.held_from.is_none() {
            self.held_from = Some(self.chunk.len());
        }
        self.chunk.push(e);
        match self.held_from {
            None if self.chunk.len() >= CHUNK => {
                self.queue_chunk();
                0
            }
            None => 0,
            Some(from) => self.chunk.len() - from,
        }
    }

    /// Makes the held entries' tags final (`fix`); they are then queued as
    /// any others.
    pub(crate) fn settle(&mut self, fix: impl Fn(&mut Entry)) {
        if let Some(from) = self.held_from.take() {
            self.chunk[from..].iter_mut().for_each(fix);
            if self.chunk.len() >= CHUNK {
                self.queue_chunk();
            }
        }
    }

    /// Queues the full chunk, and encodes when the helper lags.
    #[inline(never)]
    fn queue_chunk(&mut self) {
        let waiting = {
            let mut q = lock(&self.shared.queue);
            let next = q.empty.pop().unwrap_or_else(|| Vec::with_capacity(ROOM));
            q.full.push(std::mem::replace(&mut self.chunk, next));
            q.full.len()
        };
        if waiting > LAG {
            self.shared.encode(waiting > MOST);
        }
    }

    /// Encodes whatever is left and gives the log back, with the first
    /// error writing it.
    pub(crate) fn finish(mut self) -> (NodeLog, Option<io::Error>) {
        debug_assert!(self.held_from.is_none(), "entries settled first");
        if !self.chunk.is_empty() {
            let last = std::mem::take(&mut self.chunk);
            lock(&self.shared.queue).full.push(last);
        }
        self.shared.encode(true);
        let mut enc = lock(&self.shared.encoder);
        (std::mem::take(&mut enc.log), enc.io_error.take())
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
                if i % 50_000 == 0 {
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
