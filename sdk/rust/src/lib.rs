//! critpath-sdk: annotate a Rust program for critpath (the verbs of `docs/event-model.md`).
//!
//! ```no_run
//! let _req = critpath_sdk::sm("request"); // ends the SM when dropped
//! critpath_sdk::state("parse");
//! critpath_sdk::wait("idle", None, None); // an open wait: only a recv ends it
//! critpath_sdk::recv(42, "process");
//! critpath_sdk::send(43);
//! ```
//!
//! The verbs are those of `sdk/c/critpath.h`. Events go to a per-thread
//! buffer (no lock on the hot path), appended to the file named by
//! `CRITPATH_OUT` in one `write` when full, when the thread exits and when
//! the process exits (the threads still running then have their whole
//! events written; an event being recorded at that moment, and any after,
//! is left out); [`flush`] writes it now. Each thread's last event says
//! when it exited (or the process did while it ran): read alone, the file
//! ends there the SMs still begun on it. With
//! `CRITPATH_OUT` unset every call is one relaxed atomic load. With
//! `CRITPATH_CALIBRATE=1` the process measures its cost per event and
//! writes it to the trace for `critpath analyze --correct-overhead`. The
//! file format is described in `docs/formats.md` ("Annotation files") and
//! read by `crates/readers/src/annot.rs`.
//!
//! Ids are any 64-bit integer; names longer than 1024 bytes are cut at the
//! last character boundary within them (so they stay UTF-8).

use std::cell::{RefCell, UnsafeCell};
use std::fs::File;
use std::io::Write;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

const BUF: usize = 64 * 1024;
const HDR: usize = 16;
const MAXSTR: usize = 1024;
const NONE: u16 = 0xffff;

const BEGIN: u8 = 1;
const END: u8 = 2;
const STATE: u8 = 3;
const WAIT: u8 = 4;
const SEND: u8 = 5;
const RECV: u8 = 6;
const THREAD: u8 = 7;
const LOST: u8 = 8;
const CALIB: u8 = 9;
const EXIT: u8 = 11;

/// 0: not set up, 1: on, 2: off.
static MODE: AtomicU8 = AtomicU8::new(0);
static OUT: OnceLock<Option<File>> = OnceLock::new();
static CALIB_PS: AtomicU64 = AtomicU64::new(0);
static WARNED: AtomicBool = AtomicBool::new(false);
/// Bumped in a forked child: buffers of an older generation are the
/// parent's.
static FORKS: AtomicU64 = AtomicU64::new(0);

/// The buffers of the threads alive, for the exit writer. A spin lock of
/// its own: the fork handlers take it around a fork, so a child never
/// inherits it taken or its list half changed.
struct Live {
    lock: AtomicBool,
    bufs: UnsafeCell<Vec<Arc<Shared>>>,
}

// SAFETY: `bufs` is only touched with `lock` taken (`Live::with`).
unsafe impl Sync for Live {}

static LIVE: Live = Live {
    lock: AtomicBool::new(false),
    bufs: UnsafeCell::new(Vec::new()),
};

impl Live {
    fn lock(&self) {
        while self
            .lock
            .compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            std::thread::yield_now();
        }
    }

    fn unlock(&self) {
        self.lock.store(false, Ordering::Release);
    }

    fn with<R>(&self, f: impl FnOnce(&mut Vec<Arc<Shared>>) -> R) -> R {
        self.lock();
        // SAFETY: the lock is taken; `f` only pushes, removes or reads.
        let r = f(unsafe { &mut *self.bufs.get() });
        self.unlock();
        r
    }
}

extern "C" fn before_fork() {
    LIVE.lock();
}

extern "C" fn after_fork_parent() {
    LIVE.unlock();
}

extern "C" fn forked() {
    FORKS.fetch_add(1, Ordering::Relaxed);
    LIVE.unlock();
}

/// At process exit: writes the whole events of every live thread's
/// buffer (those threads may still be recording) and closes it for good.
extern "C" fn at_exit() {
    MODE.store(2, Ordering::Release); // later calls do nothing
    let t = now();
    let forks = FORKS.load(Ordering::Relaxed);
    LIVE.with(|bufs| {
        for s in bufs.iter().filter(|s| s.forks == forks) {
            if !s.take() {
                continue;
            }
            let done = s.done.load(Ordering::Acquire);
            if done > s.start.load(Ordering::Relaxed) {
                let _ = s.put(done);
            }
            // The process ends the thread: a block of its exit.
            let _ = s.put_exit(t);
            s.busy.store(CLOSED, Ordering::Release);
        }
    });
}

const FREE: u8 = 0;
const BUSY: u8 = 1;
const CLOSED: u8 = 2;

/// A thread's buffer as the exit writer sees it. Its owner appends at
/// `len >= done` and publishes whole events by a release store of `done`;
/// `busy` is taken by whoever writes the block (the owner when the buffer
/// is full, flushed or its thread ends; the exit writer once).
struct Shared {
    data: *mut u8,
    done: AtomicUsize,
    /// Where the block's events begin (set with `busy` taken).
    start: AtomicUsize,
    busy: AtomicU8,
    tid: u32,
    pid: u32,
    forks: u64,
}

// SAFETY: `data` is written by its owner thread past `done` only, and
// below it only with `busy` taken, as is every read of another thread.
unsafe impl Send for Shared {}
unsafe impl Sync for Shared {}

impl Shared {
    /// Takes `busy`: false when the exit writer has closed the buffer.
    fn take(&self) -> bool {
        loop {
            match self
                .busy
                .compare_exchange_weak(FREE, BUSY, Ordering::Acquire, Ordering::Relaxed)
            {
                Ok(_) => return true,
                Err(CLOSED) => return false,
                Err(_) => std::thread::yield_now(),
            }
        }
    }

    /// Appends block `data[..len]` with its header (`busy` taken).
    fn put(&self, len: usize) -> std::io::Result<()> {
        let head = self.header(len - HDR);
        // SAFETY: `busy` is taken: nobody else writes below `len`, and the
        // header's room is in the allocation of BUF bytes.
        let block = unsafe {
            std::ptr::copy_nonoverlapping(head.as_ptr(), self.data, HDR);
            std::slice::from_raw_parts(self.data, len)
        };
        write_block(block)
    }

    /// Appends a block of this thread's exit at `t` alone (`busy` taken,
    /// the process exiting).
    fn put_exit(&self, t: u64) -> std::io::Result<()> {
        let mut b = [0u8; HDR + 9];
        b[..HDR].copy_from_slice(&self.header(9));
        b[HDR] = EXIT;
        b[HDR + 1..].copy_from_slice(&t.to_le_bytes());
        write_block(&b)
    }

    /// The header of a block of this thread holding `payload` bytes.
    fn header(&self, payload: usize) -> [u8; HDR] {
        let mut head = [0u8; HDR];
        head[0..4].copy_from_slice(b"CPAB");
        head[4..8].copy_from_slice(&(payload as u32).to_le_bytes());
        head[8..12].copy_from_slice(&self.pid.to_le_bytes());
        head[12..16].copy_from_slice(&self.tid.to_le_bytes());
        head
    }
}

/// Appends `block` to `CRITPATH_OUT` in one write.
fn write_block(block: &[u8]) -> std::io::Result<()> {
    match OUT.get() {
        Some(Some(f)) => (&*f).write_all(block),
        _ => Err(std::io::Error::other("not open")),
    }
}

impl Drop for Shared {
    fn drop(&mut self) {
        let all = std::ptr::slice_from_raw_parts_mut(self.data, BUF);
        // SAFETY: made by `Box::into_raw` of a BUF-byte slice in `Buf::new`.
        drop(unsafe { Box::from_raw(all) });
    }
}

fn now() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes the timespec it is given.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

fn gettid() -> u32 {
    // SAFETY: gettid has no arguments and cannot fail.
    unsafe { libc::syscall(libc::SYS_gettid) as u32 }
}

/// `s` cut to at most MAXSTR bytes, at a character boundary (a cut name
/// stays UTF-8).
#[inline]
fn cut(s: &str) -> &str {
    if s.len() <= MAXSTR {
        return s;
    }
    let mut n = MAXSTR;
    while !s.is_char_boundary(n) {
        n -= 1;
    }
    &s[..n]
}

struct Buf {
    shared: Arc<Shared>,
    /// `shared.data`, at hand.
    data: *mut u8,
    len: usize,
    events: u64,
    lost: u64,
    /// The lost count this block says (lost again if the block is).
    said: u64,
    /// Do not write (calibration's scratch buffer).
    scratch: bool,
}

impl Buf {
    fn new(scratch: bool) -> Buf {
        let data = Box::into_raw(vec![0u8; BUF].into_boxed_slice()) as *mut u8;
        let shared = Arc::new(Shared {
            data,
            done: AtomicUsize::new(0),
            start: AtomicUsize::new(0),
            busy: AtomicU8::new(FREE),
            tid: gettid(),
            pid: std::process::id(),
            forks: FORKS.load(Ordering::Relaxed),
        });
        let mut b = Buf {
            shared,
            data,
            len: 0,
            events: 0,
            lost: 0,
            said: 0,
            scratch,
        };
        b.start();
        if !scratch {
            LIVE.with(|bufs| bufs.push(b.shared.clone()));
        }
        b
    }

    #[inline]
    fn put(&mut self, bytes: &[u8]) {
        assert!(self.len + bytes.len() <= BUF);
        // SAFETY: in bounds (checked), and past `done`: the owner's alone.
        unsafe {
            std::ptr::copy_nonoverlapping(bytes.as_ptr(), self.data.add(self.len), bytes.len())
        };
        self.len += bytes.len();
    }

    /// The events so far are whole: the exit writer may write them.
    #[inline]
    fn publish(&self) {
        self.shared.done.store(self.len, Ordering::Release);
    }

    #[inline]
    fn str(&mut self, s: Option<&str>) {
        match s {
            None => self.put(&NONE.to_le_bytes()),
            Some(s) => {
                let b = cut(s).as_bytes();
                self.put(&(b.len() as u16).to_le_bytes());
                self.put(b);
            }
        }
    }

    /// A new block: header room, thread name, lost count, calibration.
    fn start(&mut self) {
        self.len = HDR;
        self.events = 0;
        let mut name = [0u8; 17];
        // SAFETY: PR_GET_NAME writes at most 16 bytes and a NUL.
        unsafe { libc::prctl(libc::PR_GET_NAME, name.as_mut_ptr()) };
        let n = name.iter().position(|&c| c == 0).unwrap_or(16);
        self.put(&[THREAD]);
        self.str(Some(&String::from_utf8_lossy(&name[..n])));
        self.said = self.lost;
        if self.lost > 0 {
            self.put(&[LOST]);
            self.put(&self.lost.to_le_bytes());
            self.lost = 0;
        }
        let ps = CALIB_PS.load(Ordering::Relaxed);
        if ps > 0 {
            self.put(&[CALIB]);
            self.put(&ps.to_le_bytes());
            self.str(Some("rust"));
        }
        self.shared.start.store(self.len, Ordering::Relaxed);
        self.publish();
    }

    /// Writes the block; after the exit writer closed the buffer its
    /// events are dropped (the process is ending).
    fn write(&mut self) {
        if self.events == 0 || self.scratch {
            return;
        }
        if !self.shared.take() {
            self.len = self.shared.start.load(Ordering::Relaxed);
            self.events = 0;
            return;
        }
        if let Err(e) = self.shared.put(self.len) {
            self.lost += self.events + self.said;
            if !WARNED.swap(true, Ordering::Relaxed) {
                eprintln!(
                    "critpath: cannot write annotations to {}: {e}; events are being dropped (the trace says how many)",
                    std::env::var("CRITPATH_OUT").unwrap_or_default()
                );
            }
        }
        self.start();
        self.shared.busy.store(FREE, Ordering::Release);
    }

    #[inline]
    fn event(&mut self, kind: u8, need: usize) {
        if self.len + need > BUF {
            self.write();
        }
        self.put(&[kind]);
        self.put(&now().to_le_bytes());
        self.events += 1;
    }
}

impl Drop for Buf {
    /// The thread ends: its exit is the block's last event (the SMs still
    /// begun on it end there).
    fn drop(&mut self) {
        if !self.scratch {
            self.event(EXIT, 9);
        }
        self.write();
        if !self.scratch {
            LIVE.with(|bufs| bufs.retain(|s| !Arc::ptr_eq(s, &self.shared)));
        }
    }
}

thread_local! {
    static ME: RefCell<Option<Buf>> = const { RefCell::new(None) };
}

#[cold]
fn init() -> bool {
    let on = OUT
        .get_or_init(|| {
            let path = std::env::var_os("CRITPATH_OUT").filter(|p| !p.is_empty())?;
            match std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&path)
            {
                Ok(f) => {
                    // SAFETY: the fork handlers only take and give back the
                    // spin lock of the live buffers and bump an atomic; the
                    // exit handler writes those buffers under that lock.
                    unsafe {
                        libc::pthread_atfork(
                            Some(before_fork),
                            Some(after_fork_parent),
                            Some(forked),
                        );
                        libc::atexit(at_exit);
                    }
                    if std::env::var("CRITPATH_CALIBRATE").is_ok_and(|v| !v.is_empty() && v != "0")
                    {
                        CALIB_PS.store((calibrate() * 1000.0) as u64, Ordering::Relaxed);
                    }
                    Some(f)
                }
                Err(e) => {
                    eprintln!(
                        "critpath: cannot open CRITPATH_OUT={}: {e}; annotations are off",
                        path.to_string_lossy()
                    );
                    None
                }
            }
        })
        .is_some();
    MODE.store(if on { 1 } else { 2 }, Ordering::Release);
    on
}

#[inline]
fn with(f: impl FnOnce(&mut Buf)) {
    match MODE.load(Ordering::Relaxed) {
        2 => return,
        0 if !init() => return,
        _ => {}
    }
    let _ = ME.try_with(|me| {
        let mut me = me.borrow_mut();
        let b = me.get_or_insert_with(|| Buf::new(false));
        if b.shared.forks != FORKS.load(Ordering::Relaxed) {
            // A forked child: the buffered events are the parent's.
            b.scratch = true;
            LIVE.with(|bufs| bufs.retain(|s| !Arc::ptr_eq(s, &b.shared)));
            *b = Buf::new(false);
        }
        f(b);
        b.publish();
    });
}

fn named(kind: u8, name: &str) {
    with(|b| {
        b.event(kind, 11 + name.len().min(MAXSTR));
        b.str(Some(name));
    })
}

/// A state machine begins on this thread (the paper's beginSM).
pub fn begin_sm(name: &str) {
    named(BEGIN, name)
}

/// The state machine on top of this thread's stack ends (endSM).
pub fn end_sm(name: &str) {
    named(END, name)
}

/// The current SM enters `name`.
pub fn state(name: &str) {
    named(STATE, name)
}

/// The current SM waits in `state` until SM `on_sm` enters `on_state`
/// (any state when `None`); with `on_sm` `None` only a [`recv`] ends it.
pub fn wait(state: &str, on_sm: Option<&str>, on_state: Option<&str>) {
    with(|b| {
        let n = state.len() + on_sm.map_or(0, str::len) + on_state.map_or(0, str::len);
        b.event(WAIT, 15 + n.min(3 * MAXSTR));
        b.str(Some(state));
        b.str(on_sm);
        b.str(on_sm.and(on_state));
    })
}

/// A causal link leaves the current state (which goes on).
pub fn send(id: u64) {
    with(|b| {
        b.event(SEND, 17);
        b.put(&id.to_le_bytes());
    })
}

/// The current SM enters `state`, depending on the [`send`] of `id`.
pub fn recv(id: u64, state: &str) {
    with(|b| {
        b.event(RECV, 19 + state.len().min(MAXSTR));
        b.put(&id.to_le_bytes());
        b.str(Some(state));
    })
}

/// Writes this thread's buffered events now.
pub fn flush() {
    if MODE.load(Ordering::Relaxed) == 1 {
        let _ = ME.try_with(|me| {
            if let Some(b) = me.borrow_mut().as_mut() {
                b.write();
            }
        });
    }
}

/// A begun state machine; it ends when dropped.
#[must_use = "the SM ends when this guard is dropped"]
pub struct Sm<'a> {
    name: &'a str,
}

/// Begins SM `name` on this thread; the guard ends it.
pub fn sm(name: &str) -> Sm<'_> {
    begin_sm(name);
    Sm { name }
}

impl Drop for Sm<'_> {
    fn drop(&mut self) {
        end_sm(self.name)
    }
}

/// Measures the cost of one event here (clock read and buffer write, into
/// a scratch buffer that is never written), in ns: the best of 3 rounds
/// of 20,000 (about 2 ms, spent in the first annotation call).
pub fn calibrate() -> f64 {
    const N: u32 = 20_000;
    let mut b = Buf::new(true);
    let mut best = u64::MAX;
    for _ in 0..3 {
        let t0 = now();
        for i in 0..N {
            if b.len + 32 > BUF {
                b.len = HDR;
            }
            b.event(STATE, 24);
            b.str(Some(if i & 1 == 1 {
                "calibrate-a"
            } else {
                "calibrate-b"
            }));
        }
        best = best.min(now() - t0);
    }
    best as f64 / N as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The name record `Buf::str` writes for `name`: length, then bytes.
    fn written(name: &str) -> (u16, Vec<u8>) {
        let mut b = Buf::new(true);
        let at = b.len;
        b.str(Some(name));
        // SAFETY: `data` holds BUF bytes, of which `len` are written.
        let d = unsafe { std::slice::from_raw_parts(b.data, b.len) };
        (u16::from_le_bytes([d[at], d[at + 1]]), d[at + 2..].to_vec())
    }

    #[test]
    fn a_long_name_is_cut_at_a_character_boundary() {
        // Byte 1024 falls inside a character of each: cut before it.
        let two = format!("x{}", "\u{e9}".repeat(600));
        let three = "\u{20ac}".repeat(400);
        for name in [two, three] {
            let (n, bytes) = written(&name);
            assert_eq!((n, bytes.len()), (1023, 1023));
            assert_eq!(std::str::from_utf8(&bytes), Ok(&name[..1023]));
        }
        // 4 x 256 bytes: byte 1024 is a boundary, all 1024 are kept.
        let four = "\u{1f600}".repeat(300);
        assert_eq!(written(&four), (1024, four.as_bytes()[..1024].to_vec()));
        assert_eq!(written("short").1, b"short");
    }
}
