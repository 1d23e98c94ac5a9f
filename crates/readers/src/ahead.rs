//! Work done ahead of its reader on a thread of its own: a producer (a
//! decompressor, a sort's merge) moves to the thread and sends what it
//! makes over a bounded channel. When no thread can start, or the
//! installed settings ask for one thread, the producer stays with the
//! caller. A thread that stops short (a panic) is an error for the reader,
//! not the end of what it sends.

use std::io;
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::thread::JoinHandle;

/// What a thread sends ahead of its reader.
pub struct Feed<T> {
    rx: Receiver<T>,
    /// The thread, until it is found ended.
    thread: Option<JoinHandle<()>>,
    /// What the thread does, for the error when it stops short.
    what: &'static str,
}

/// Moves `producer` to a thread named `name` that runs `produce` with it,
/// `bound` messages ahead at most; `Err(producer)` when no thread starts
/// or the installed settings ask for one thread. `what` says what the
/// thread does ("merging the sort").
pub fn spawn<P, T, F>(
    name: &str,
    what: &'static str,
    bound: usize,
    producer: P,
    produce: F,
) -> Result<Feed<T>, P>
where
    P: Send + 'static,
    T: Send + 'static,
    F: FnOnce(P, &SyncSender<T>) + Send + 'static,
{
    if !critpath_trace::Settings::current().threads {
        return Err(producer);
    }
    let (tx, rx) = sync_channel(bound);
    // The producer goes to the thread once it runs (else it stays here).
    let (go, wait) = sync_channel::<P>(1);
    let started = std::thread::Builder::new()
        .name(name.into())
        .spawn(move || {
            if let Ok(p) = wait.recv() {
                produce(p, &tx);
            }
        });
    let Ok(thread) = started else {
        return Err(producer);
    };
    match go.send(producer) {
        Ok(()) => Ok(Feed {
            rx,
            thread: Some(thread),
            what,
        }),
        Err(back) => Err(back.0),
    }
}

impl<T> Feed<T> {
    /// The next message; `Ok(None)` once the thread ended after its last,
    /// an error when it stopped short.
    pub fn recv(&mut self) -> io::Result<Option<T>> {
        if let Ok(m) = self.rx.recv() {
            return Ok(Some(m));
        }
        match self.thread.take().map(JoinHandle::join) {
            Some(Err(_)) => Err(io::Error::other(format!(
                "the thread {} stopped",
                self.what
            ))),
            _ => Ok(None),
        }
    }
}
