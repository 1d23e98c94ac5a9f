//! The analysis as Chrome / Perfetto trace JSON: every state visit a slice
//! on its SM's track, every dependence a flow arrow, and the critical path
//! as a track of its own.
//!
//! Written as the engine's pass goes: [`TraceWriter`] observes the pass
//! and writes each visit's events to a spool the moment the engine hands
//! it over, keeping only the numbers of the tracks met so far; memory does
//! not grow with the trace. The critical path's edges, which the engine's
//! walk back hands over last first, go to a second spool (`path.rs`).
//! [`TraceWriter::finish`] then writes the document: its head (which names
//! the path's length, known only at the end), the spooled events, and the
//! critical path's track, first edge to last.

mod events;
mod path;
#[cfg(test)]
pub(crate) mod tests;

use critpath_engine::{Analysis, Observer, PathEdge, Visit};
use critpath_trace::{Interner, Sym};
use events::{us, Flow, Meta, PathArgs, PathSlice, Slice};
use path::PathSpool;
use serde::Serialize;
use std::collections::HashMap;
use std::io::{self, BufWriter, Read, Seek, SeekFrom, Write};

/// The elements of the `traceEvents` array, comma-separated as they come.
struct Events<W: Write> {
    out: W,
    /// Events written so far.
    n: u64,
}

impl<W: Write> Events<W> {
    fn push<T: Serialize>(&mut self, e: &T) -> io::Result<()> {
        if self.n > 0 {
            self.out.write_all(b",")?;
        }
        self.n += 1;
        serde_json::to_writer(&mut self.out, e).map_err(io::Error::from)
    }
}

/// An observer of the engine's pass that spools the trace's events as
/// they come (see the module's documentation).
pub struct TraceWriter<W: Write + Read + Seek> {
    events: Events<BufWriter<W>>,
    path: PathSpool<W>,
    pids: HashMap<Sym, u64>,
    tids: HashMap<(Sym, Sym), u64>,
    slices: u64,
    flows: u64,
    /// The first failure to write the spool; nothing is written after it.
    err: Option<io::Error>,
}

impl<W: Write + Read + Seek> TraceWriter<W> {
    /// A writer spooling the events to `spool` and the path's edges to
    /// `path` (both empty, at their start).
    pub fn new(spool: W, path: W) -> Self {
        TraceWriter {
            events: Events {
                out: BufWriter::with_capacity(1 << 16, spool),
                n: 0,
            },
            path: PathSpool::new(path),
            pids: HashMap::new(),
            tids: HashMap::new(),
            slices: 0,
            flows: 0,
            err: None,
        }
    }

    /// State visits seen so far (one slice each).
    pub fn slices(&self) -> u64 {
        self.slices
    }

    /// Dependences seen so far (one flow arrow each).
    pub fn flows(&self) -> u64 {
        self.flows
    }

    /// The critical path's edges seen so far (one slice each).
    pub fn path_edges(&self) -> u64 {
        self.path.len()
    }

    /// The process and thread of SM `sm` of system `sys`, named by
    /// metadata events the first time they are met.
    fn track(&mut self, sys: Sym, sm: Sym, s: &Interner) -> io::Result<(u64, u64)> {
        let pid = match self.pids.get(&sys) {
            Some(&pid) => pid,
            None => {
                let pid = self.pids.len() as u64 + 1;
                self.pids.insert(sys, pid);
                self.events.push(&Meta::process(pid, s.resolve(sys)))?;
                pid
            }
        };
        let tid = match self.tids.get(&(sys, sm)) {
            Some(&tid) => tid,
            None => {
                let tid = self.tids.len() as u64 + 1;
                self.tids.insert((sys, sm), tid);
                self.events.push(&Meta::thread(pid, tid, s.resolve(sm)))?;
                tid
            }
        };
        Ok((pid, tid))
    }

    /// A visit's events: a slice, or a flow's two ends.
    fn write(&mut self, v: &Visit, s: &Interner) -> io::Result<()> {
        match *v {
            Visit::State {
                sys,
                sm,
                state,
                start,
                end,
            } => {
                let (pid, tid) = self.track(sys, sm, s)?;
                self.slices += 1;
                self.events.push(&Slice {
                    cat: "state",
                    dur: us(end - start),
                    name: s.resolve(state),
                    ph: "X",
                    pid,
                    tid,
                    ts: us(start),
                })
            }
            Visit::Link {
                from_sys,
                from_sm,
                to_sys,
                to_sm,
                sent,
                received,
                wait,
            } => {
                let from = self.track(from_sys, from_sm, s)?;
                let to = self.track(to_sys, to_sm, s)?;
                self.flows += 1;
                self.flow(from, to, (sent, received), wait)
            }
        }
    }

    /// The two ends of flow arrow number `self.flows`.
    fn flow(
        &mut self,
        from: (u64, u64),
        to: (u64, u64),
        at: (u64, u64),
        wait: bool,
    ) -> io::Result<()> {
        let name = if wait { "wait" } else { "message" };
        let end = |bp, ph, (pid, tid): (u64, u64), ts| Flow {
            bp,
            cat: "dependence",
            id: self.flows,
            name,
            ph,
            pid,
            tid,
            ts: us(ts),
        };
        let (start, finish) = (end(None, "s", from, at.0), end(Some("e"), "f", to, at.1));
        self.events.push(&start)?;
        self.events.push(&finish)
    }

    /// Writes the whole document to `out`: its head, the spooled events,
    /// then the critical path as a track of its own. `a` is the analysis
    /// of the pass observed and `s` the string table of its symbols. Fails
    /// if a spool could not be written or read.
    pub fn finish(self, a: &Analysis, s: &Interner, out: &mut impl Write) -> io::Result<()> {
        if let Some(e) = self.err {
            return Err(e);
        }
        let mut spool = self.events.out.into_inner().map_err(|e| e.into_error())?;
        let len = spool.stream_position()?;
        spool.seek(SeekFrom::Start(0))?;
        let length = a.critical_path.length_ns;
        write!(
            out,
            "{{\"displayTimeUnit\":\"ns\",\"otherData\":{{\"critpath_length_ns\":{length}}},\"traceEvents\":["
        )?;
        io::copy(&mut spool.take(len), out)?;
        let mut tail = Events {
            out,
            n: self.events.n,
        };
        let pid = self.pids.len() as u64 + 1;
        path_track(&mut tail, length, pid)?;
        for edge in self.path.reversed()? {
            path_slice(&mut tail, &edge?, s, pid)?;
        }
        tail.out.write_all(b"]}")
    }
}

impl<W: Write + Read + Seek> Observer for TraceWriter<W> {
    fn visit(&mut self, v: &Visit, s: &Interner) {
        if self.err.is_none() {
            self.err = self.write(v, s).err();
        }
    }

    fn wants_path(&self) -> bool {
        true
    }

    fn path_edge(&mut self, edge: &PathEdge, _: &Interner) {
        if self.err.is_none() {
            self.err = self.path.push(edge).err();
        }
    }
}

/// The head of the critical path's track, process `pid`, in red: the
/// path is `length` ns long.
fn path_track<W: Write>(events: &mut Events<W>, length: u64, pid: u64) -> io::Result<()> {
    events.push(&Meta::process(pid, "critical path"))?;
    events.push(&Meta::thread(
        pid,
        1,
        &format!("critical path ({length} ns)"),
    ))
}

/// An edge of the critical path as a slice of its track (process `pid`).
fn path_slice<W: Write>(
    events: &mut Events<W>,
    e: &PathEdge,
    s: &Interner,
    pid: u64,
) -> io::Result<()> {
    let (sm, from_sm) = (s.resolve(e.sm), s.resolve(e.from_sm));
    let state = e.state.map_or("", |st| s.resolve(st));
    let what = if e.inter {
        format!("{sm} waits on {from_sm}: {state}")
    } else {
        format!("{sm}: {state}")
    };
    events.push(&PathSlice {
        args: PathArgs {
            inter: e.inter,
            sm,
            state,
            sys: s.resolve(e.sys),
        },
        cat: "critical",
        cname: "terrible",
        dur: us(e.end_ns - e.start_ns),
        name: &what,
        ph: "X",
        pid,
        tid: 1,
        ts: us(e.start_ns),
    })
}
