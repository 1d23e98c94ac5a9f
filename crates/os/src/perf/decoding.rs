//! The decoding stage of a perf.data source: the file's kernel events
//! ([`KernelEvents`]) in batches, decoded on a thread of its own so that
//! decoding runs beside the OS graph and the engine (or on the caller's
//! thread after [`Decoding::inline`]; the events are the same).
//!
//! The decoder interns the names it meets (interrupts, timer callbacks,
//! packet points) in a string table of its own, a copy of the OS graph's as
//! it was when the file was opened. Each batch carries the names it
//! introduced; [`Decoding::next`] adds them to the graph's table and gives
//! the events with their symbols moved to it.

use critpath_readers::perf::names::Found;
use critpath_readers::perf::records::Damage;
use critpath_readers::perf::{KRecord, KernelEvents};
use critpath_trace::{contained, Diagnostic, Interner, Location, ReadError, Sym};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::thread::JoinHandle;

/// Events decoded at a time.
const BATCH: usize = 4096;
/// Batches the decoder may be ahead of the OS graph: with three threads on
/// two cores, deep enough that two of them are rarely waiting at once.
const AHEAD: usize = 32;

/// One batch of decoded events and how reading stands after it.
#[derive(Default)]
pub(super) struct Batch {
    pub events: Vec<KRecord>,
    /// Names added to the decoder's table by these events.
    names: Vec<Box<str>>,
    /// The file has no more events (at its end, or after `error`).
    pub done: bool,
    /// The error that ended reading.
    pub error: Option<ReadError>,
    /// The reader's progress, in bytes of the file.
    pub progress: u64,
    /// Events perf reported lost so far.
    pub lost: u64,
    /// Samples dropped so far as copies of one read before.
    pub repeated: u64,
    /// Samples that could not be read so far, and where the first starts.
    pub malformed: (u64, Option<usize>),
    /// Damaged record headers skipped over so far.
    pub damage: Damage,
    /// With the last batch of a file whose names came late: what the names
    /// pass over the whole file finds, and its diagnostic
    /// ([`KernelEvents::gathered`]).
    pub gathered: Option<(Found, Option<Diagnostic>)>,
}

/// The reader and its own string table.
struct Decoder {
    reader: KernelEvents,
    strings: Interner,
    /// Names of `strings` already sent.
    sent: usize,
}

impl Decoder {
    /// Decodes the next events into `b` (cleared first).
    fn fill(&mut self, b: &mut Batch) {
        b.events.clear();
        b.names.clear();
        b.done = false;
        b.error = None;
        // A panic while decoding (of code not critpath's own, on a damaged
        // file) ends reading with an error, as one the reader reports does.
        let (reader, strings) = (&mut self.reader, &mut self.strings);
        let read = contained(|| reader.read_into(strings, &mut b.events, BATCH));
        match read.unwrap_or_else(|why| Err(self.stopped(&why))) {
            Ok(more) => b.done = !more,
            Err(e) => {
                b.done = true;
                b.error = Some(e);
            }
        }
        b.names.extend(self.strings.since(self.sent).map(Box::from));
        self.sent = self.strings.len();
        b.progress = self.reader.progress();
        b.lost = self.reader.lost();
        b.repeated = self.reader.repeated();
        b.malformed = self.reader.malformed();
        b.damage = self.reader.damage();
        b.gathered = if b.done { self.reader.gathered() } else { None };
    }

    /// The error of a decoder that panicked with `why`, at the byte it
    /// had read to.
    fn stopped(&self, why: &str) -> ReadError {
        let at = self.reader.progress();
        ReadError::new(
            self.reader.name(),
            Location::Offset(at),
            format!("damaged perf.data near byte {at}: the decoder stopped ({why}); the analysis covers the events before it"),
            true,
        )
    }

    /// Decodes the whole file into batches sent over `tx`, reusing the
    /// ones that come back over `spent`, until the end or until nobody
    /// listens.
    fn run(mut self, tx: SyncSender<Batch>, spent: Receiver<Batch>) {
        loop {
            let mut b = spent.try_recv().unwrap_or_default();
            self.fill(&mut b);
            let done = b.done;
            if tx.send(b).is_err() || done {
                return;
            }
        }
    }
}

/// Where the decoder runs.
enum Stage {
    /// Not started: it starts at the first batch asked for.
    Idle(Box<Decoder>),
    Inline(Box<Decoder>),
    Thread {
        rx: Receiver<Batch>,
        spent: SyncSender<Batch>,
        handle: Option<JoinHandle<()>>,
    },
    /// The last batch has been given.
    Over,
}

/// The decoding stage: batches of events whose symbols are the OS graph's.
pub(super) struct Decoding {
    stage: Stage,
    /// The graph's symbol of each name the decoder added, by the decoder's
    /// symbol minus `base`.
    moved: Vec<Sym>,
    /// Symbols below this one are the same in both tables.
    base: usize,
    /// The batch last given, kept to be reused.
    batch: Batch,
}

impl Decoding {
    /// The stage for `reader`, whose names so far are in `strings`.
    pub fn new(reader: KernelEvents, strings: &Interner) -> Decoding {
        let base = strings.len();
        let decoder = Decoder {
            reader,
            strings: strings.clone(),
            sent: base,
        };
        Decoding {
            stage: Stage::Idle(Box::new(decoder)),
            moved: Vec::new(),
            base,
            batch: Batch::default(),
        }
    }

    /// The reader, before the first batch.
    pub fn reader(&mut self) -> Option<&mut KernelEvents> {
        match &mut self.stage {
            Stage::Idle(d) | Stage::Inline(d) => Some(&mut d.reader),
            _ => None,
        }
    }

    /// Decodes on the caller's thread, as when threads are not allowed
    /// (before the first batch; later it changes nothing).
    pub fn inline(&mut self) {
        if let Stage::Idle(_) = self.stage {
            let Stage::Idle(d) = std::mem::replace(&mut self.stage, Stage::Over) else {
                unreachable!("matched above");
            };
            self.stage = Stage::Inline(d);
        }
    }

    /// The next batch, its symbols in `strings` (the OS graph's table);
    /// `None` once the last one was given.
    pub fn next(&mut self, strings: &mut Interner) -> Option<&mut Batch> {
        let spent = std::mem::take(&mut self.batch);
        let mut b = self.decode(spent)?;
        self.moved
            .extend(b.names.iter().map(|name| strings.intern(name)));
        if !self.moved.is_empty() {
            let (base, moved) = (self.base, &self.moved);
            let map = |s: Sym| match s.index().checked_sub(base) {
                Some(i) => moved[i],
                None => s,
            };
            for k in &mut b.events {
                k.ev.map_syms(map);
            }
        }
        if b.done {
            self.stage = Stage::Over;
        }
        self.batch = b;
        Some(&mut self.batch)
    }

    /// The next batch as the decoder gives it; `spent` is the batch before,
    /// to reuse.
    fn decode(&mut self, mut spent: Batch) -> Option<Batch> {
        if let Stage::Idle(_) = self.stage {
            self.start();
        }
        match &mut self.stage {
            Stage::Inline(d) => {
                d.fill(&mut spent);
                Some(spent)
            }
            Stage::Thread {
                rx,
                spent: back,
                handle,
            } => {
                let _ = back.try_send(spent);
                match rx.recv() {
                    Ok(b) => Some(b),
                    // The decoder's thread ended without its last batch:
                    // it panicked; so does the caller, with its message.
                    Err(_) => match handle.take().map(JoinHandle::join) {
                        Some(Err(panic)) => std::panic::resume_unwind(panic),
                        _ => panic!("the perf.data decoder stopped early"),
                    },
                }
            }
            Stage::Idle(_) | Stage::Over => None,
        }
    }

    /// Starts the decoder: on a thread of its own unless threads are not
    /// allowed (or none can be made).
    fn start(&mut self) {
        let Stage::Idle(d) = std::mem::replace(&mut self.stage, Stage::Over) else {
            return;
        };
        let (tx, rx) = sync_channel(AHEAD);
        let (back, spent) = sync_channel(AHEAD + 2);
        // The decoder goes to the thread once it runs, so that it stays
        // here if none can be made.
        let (give, take) = sync_channel::<Box<Decoder>>(1);
        let spawned = std::thread::Builder::new()
            .name("perf-decode".into())
            .spawn(move || {
                if let Ok(d) = take.recv() {
                    d.run(tx, spent);
                }
            });
        self.stage = match spawned {
            Ok(handle) => {
                give.send(d).expect("the decoder's thread waits for it");
                Stage::Thread {
                    rx,
                    spent: back,
                    handle: Some(handle),
                }
            }
            Err(_) => Stage::Inline(d),
        };
    }
}
