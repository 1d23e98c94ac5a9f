//! A plain span file read in place: mapped, and parsed from the mapping
//! (serde_json's slice reader; the stream reader goes a byte at a time)
//! instead of streamed: the read takes about half the time.
//!
//! Only a file of whole JSON documents (one, or JSON lines) of the shape
//! the stream reader accepts is read this way: a first walk of the mapping
//! (the documents' structure, each span only checked to be JSON) says so,
//! and anything else (damage, a list that is not one) is read by the
//! stream reader from the start, with its messages. The first file of a
//! read skips that walk when it can: it is read as one document straight
//! away, and only when that fails is it put back and walked first. The walks see
//! the same bytes in the same order as the stream reader does, so the
//! spans, their lines and the problems met in them are the same. The pages
//! behind the walk leave this process's memory every 8 MB (as perf.data's
//! do), so reading in place costs little more memory than streaming. The
//! walk that keeps the spans has their OTLP spans parsed on other threads
//! ([`super::aside`]) and kept in the order it found them.

use super::aside::Aside;
use super::otlp_json::OtlpNode;
use super::{At, Collector, Doc};
use crate::json::Position;
use crate::perf::file::Bytes;
use critpath_trace::{Location, ReadError};
use serde::de::DeserializeSeed;
use serde_json::value::RawValue;
use serde_json::Value;
use std::fmt;
use std::fs::File;
use std::ops::Range;
use std::path::Path;
use std::sync::Arc;

/// The mapping being walked, and where the walk is in it.
pub(super) struct Mapped {
    bytes: Bytes,
    /// The first walk: the structure only, nothing kept.
    pub(super) dry: bool,
    /// Newlines before `counted`.
    lines: u64,
    counted: usize,
    /// Pages before this offset were released.
    released: usize,
    /// The threads that parse the OTLP spans of a walk that keeps them.
    aside: Option<Aside>,
}

impl Mapped {
    fn new(bytes: Bytes, dry: bool) -> Self {
        Mapped {
            bytes,
            dry,
            lines: 0,
            counted: 0,
            released: 0,
            aside: None,
        }
    }

    /// The walk that keeps the spans: its OTLP spans are parsed on other
    /// threads ([`Aside`]); `name` is the file's, in the problems.
    fn kept(bytes: Bytes, name: &str) -> Self {
        let aside = Aside::start(&bytes, name);
        Mapped {
            aside: Some(aside),
            ..Mapped::new(bytes, false)
        }
    }

    /// The 1-based line of `at`, a byte offset at or after the last one
    /// asked for; the pages well behind it are released.
    fn line_at(&mut self, at: usize) -> u64 {
        let all = self.bytes.as_ref();
        let at = at.clamp(self.counted, all.len());
        self.lines += memchr::memchr_iter(b'\n', &all[self.counted..at]).count() as u64;
        self.counted = at;
        // Not the pages of spans still to be parsed aside.
        let behind = self.aside.as_ref().and_then(Aside::parsed_before);
        let behind = behind.map_or(at, |b| b.min(at));
        let step = crate::perf::file::TEXT_RELEASE_STEP;
        self.bytes.release_behind(&mut self.released, behind, step);
        self.lines + 1
    }

    /// The walk is over: the spans parsed aside are kept in `c` (the first
    /// that could not be parsed is the error), and the pages the walk left
    /// leave.
    fn done(&mut self, c: &mut Collector) -> Result<(), String> {
        let aside = self.aside.take().map_or(Ok(()), |a| a.finish(c));
        let end = self.bytes.as_ref().len();
        self.bytes.release(self.released, end);
        self.released = end;
        aside
    }
}

/// Where `text`, borrowed from `all`, starts in it.
fn offset_in(all: &[u8], text: &str) -> usize {
    (text.as_ptr() as usize).wrapping_sub(all.as_ptr() as usize)
}

/// Reads the spans of the plain file at `path` (`name` in messages) in
/// place into `c`; false when it is not read this way (it cannot be
/// mapped, or it is not whole documents of spans): the stream reader
/// reads it then, `c` as it was.
pub(super) fn read(path: &Path, name: &str, c: &mut Collector) -> Result<bool, ReadError> {
    let Some(bytes) = map(path) else {
        return Ok(false);
    };
    // A collector that holds no span yet walks the file as one document
    // straight away, keeping the spans: when that goes through, the first
    // walk (a part of it) would have too. Else it is put back as it was.
    let fresh = c.fresh_copy();
    if let Some(fresh) = &fresh {
        if walk_kept(&bytes, &Docs::One, c).is_ok() {
            return Ok(true);
        }
        *c = fresh.clone_fresh();
    }
    let Some(docs) = documents(&bytes) else {
        return Ok(false);
    };
    // The first walk checks each span only to be JSON; the second parses
    // it, and may find what the first let through (a number out of range,
    // values nested too deep). A collector put back as it was leaves the
    // file to the stream reader, which skips what it cannot read.
    match (walk_kept(&bytes, &docs, c), fresh) {
        (Ok(()), _) => Ok(true),
        (Err(_), Some(fresh)) => {
            *c = fresh;
            Ok(false)
        }
        (Err(e), None) => {
            let msg = format!("a span could not be read ({e}), after the spans of the files before it were kept: read this file alone to keep the spans around it");
            Err(ReadError::new(name, Location::File, msg, true))
        }
    }
}

/// The walk that keeps the spans of `docs` in `c`; once it went through,
/// the whole file was read.
fn walk_kept(bytes: &Bytes, docs: &Docs, c: &mut Collector) -> Result<(), Failed> {
    c.mapped = Some(Mapped::kept(bytes.clone(), c.problems.name()));
    walk(bytes, docs, c)?;
    c.pos = Position::default();
    c.pos.advance(bytes.as_ref().len() as u64);
    Ok(())
}

/// The documents of a mapping: the whole of it, or each one's bytes (JSON
/// lines: the collector's file exporter writes one document a line).
enum Docs {
    One,
    Each(Vec<Range<usize>>),
}

/// Why a walk stopped.
enum Failed {
    /// A document went through, and more follows it.
    Trailing,
    Bad(serde_json::Error),
}

impl fmt::Display for Failed {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        match self {
            Failed::Trailing => f.write_str("more after the document"),
            Failed::Bad(e) => e.fmt(f),
        }
    }
}

/// The documents of the mapping when it is read in place: the first walk
/// (nothing kept) of the whole as one document, else of each document in
/// turn; `None` when a walk finds what the stream reader must report.
fn documents(bytes: &Bytes) -> Option<Docs> {
    let dry = || {
        let mut c = Collector::new("");
        c.mapped = Some(Mapped::new(bytes.clone(), true));
        c
    };
    match walk(bytes, &Docs::One, &mut dry()) {
        Ok(()) => return Some(Docs::One),
        Err(Failed::Trailing) => {}
        Err(Failed::Bad(_)) => return None,
    }
    let all = bytes.as_ref();
    let mut each = Vec::new();
    for doc in serde_json::Deserializer::from_slice(all).into_iter::<&RawValue>() {
        let text = doc.ok()?.get();
        let start = offset_in(all, text);
        each.push(start..start + text.len());
    }
    let docs = Docs::Each(each);
    walk(bytes, &docs, &mut dry()).ok()?;
    Some(docs)
}

fn map(path: &Path) -> Option<Bytes> {
    let file = File::open(path).ok()?;
    // SAFETY: the mapping is read-only; a file changed while it is read
    // gives wrong spans or a parse error, as a file changed under a
    // stream reader does (one cut short under the mapping stops the
    // program, as it does perf.data's reader).
    let m = unsafe { memmap2::Mmap::map(&file) }.ok()?;
    Some(Bytes::Map(Arc::new(m)))
}

/// One walk of the mapping's documents; `c.mapped` is taken.
fn walk(bytes: &Bytes, docs: &Docs, c: &mut Collector) -> Result<(), Failed> {
    let all = bytes.as_ref();
    let walked = match docs {
        Docs::One => walk_doc(all, c),
        Docs::Each(each) => each.iter().enumerate().try_for_each(|(k, r)| {
            // As the stream reader counts the documents of JSON lines.
            c.doc += usize::from(k > 0);
            walk_doc(&all[r.clone()], c)
        }),
    };
    let Some(mut m) = c.mapped.take() else {
        return walked;
    };
    let aside = m.done(c);
    walked?;
    aside.map_err(|e| Failed::Bad(serde::de::Error::custom(e)))
}

/// One document, which is the whole of `text`.
fn walk_doc(text: &[u8], c: &mut Collector) -> Result<(), Failed> {
    let mut de = serde_json::Deserializer::from_slice(text);
    Doc(&mut *c).deserialize(&mut de).map_err(Failed::Bad)?;
    de.end().map_err(|_| Failed::Trailing)
}

impl Collector {
    /// A span of the mapped document, at `at` in it, given as its text.
    pub(super) fn mapped_span(&mut self, raw: &RawValue, at: At) -> Result<(), String> {
        let Some(m) = self.mapped.as_mut() else {
            return Ok(());
        };
        let start = offset_in(m.bytes.as_ref(), raw.get());
        let line = m.line_at(start);
        if m.dry {
            return Ok(());
        }
        if let (At::Otlp(..), Some(mut aside)) = (at, m.aside.take()) {
            aside.push(self, start..start + raw.get().len(), at, line);
            if let Some(m) = self.mapped.as_mut() {
                m.aside = Some(aside);
            }
            return Ok(());
        }
        // Anything else is kept here, after the spans parsed aside.
        if let Some(aside) = m.aside.take() {
            aside.finish(self)?;
        }
        self.loc = Location::Line(line);
        let text = raw.get();
        let bad = |e: serde_json::Error| format!("span at line {line}: {e}");
        match at {
            At::Otlp(..) => {
                self.otlp_span(serde_json::from_str::<OtlpNode>(text).map_err(bad)?, at)
            }
            At::Jaeger(..) => {
                self.jaeger_span(serde_json::from_str::<Value>(text).map_err(bad)?, at)
            }
            At::Zipkin(..) => {
                self.zipkin_span(serde_json::from_str::<Value>(text).map_err(bad)?, at)
            }
        }
        Ok(())
    }
}
