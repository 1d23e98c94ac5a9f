//! A plain span file read in place: mapped, and parsed from the mapping
//! (serde_json's slice reader; the stream reader goes a byte at a time)
//! instead of streamed: the read takes about half the time.
//!
//! Only a file that is one JSON document, whole and of the shape the
//! stream reader accepts, is read this way: a first walk of the mapping
//! (the document's structure, each span only checked to be JSON) says so,
//! and anything else (JSON lines, damage, a list that is not one) is read
//! by the stream reader from the start, with its messages. The walks see
//! the same bytes in the same order as the stream reader does, so the
//! spans, their lines and the problems met in them are the same. The pages
//! behind the walk leave this process's memory every 8 MB (as perf.data's
//! do), so reading in place costs little more memory than streaming.

use super::otlp_json::OtlpNode;
use super::{At, Collector, Doc};
use crate::json::Position;
use crate::perf::file::Bytes;
use critpath_trace::{Location, ReadError};
use serde::de::DeserializeSeed;
use serde_json::value::RawValue;
use serde_json::Value;
use std::fs::File;
use std::path::Path;
use std::sync::Arc;

/// How much is walked between two releases of the pages behind: the walk
/// never goes back (a span's text is parsed before the next is found).
const RELEASE_STEP: usize = 8 << 20;

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
}

impl Mapped {
    fn new(bytes: Bytes, dry: bool) -> Self {
        Mapped {
            bytes,
            dry,
            lines: 0,
            counted: 0,
            released: 0,
        }
    }

    /// The 1-based line of `at`, a byte offset at or after the last one
    /// asked for; the pages well behind it are released.
    fn line_at(&mut self, at: usize) -> u64 {
        let all = self.bytes.as_ref();
        let at = at.clamp(self.counted, all.len());
        self.lines += memchr::memchr_iter(b'\n', &all[self.counted..at]).count() as u64;
        self.counted = at;
        if at >= self.released + RELEASE_STEP {
            self.bytes.release(self.released, at);
            self.released = at;
        }
        self.lines + 1
    }

    /// The walk is over: the pages it left leave too.
    fn done(&mut self) {
        let end = self.bytes.as_ref().len();
        self.bytes.release(self.released, end);
        self.released = end;
    }

    /// Where `raw`, borrowed from the mapping, starts in it.
    fn offset(&self, raw: &RawValue) -> usize {
        (raw.get().as_ptr() as usize).wrapping_sub(self.bytes.as_ref().as_ptr() as usize)
    }
}

/// Reads the spans of the plain file at `path` (`name` in messages) in
/// place into `c`; false when it is not read this way (it cannot be
/// mapped, or it is not one whole document of spans): the stream reader
/// reads it then, `c` as it was.
pub(super) fn read(path: &Path, name: &str, c: &mut Collector) -> Result<bool, ReadError> {
    let Some(bytes) = map(path) else {
        return Ok(false);
    };
    let mut dry = Collector::new("");
    dry.mapped = Some(Mapped::new(bytes.clone(), true));
    if walk(&bytes, &mut dry).is_err() {
        return Ok(false);
    }
    c.mapped = Some(Mapped::new(bytes.clone(), false));
    // The first walk went through, so the second does on the same bytes,
    // unless the file changed in between.
    walk(&bytes, c).map_err(|e| {
        let msg = format!("the file changed while it was read: {e}");
        ReadError::new(name, Location::File, msg, true)
    })?;
    c.pos = Position::default();
    c.pos.advance(bytes.as_ref().len() as u64);
    Ok(true)
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

/// One walk of the whole mapping as one document; `c.mapped` is taken.
fn walk(bytes: &Bytes, c: &mut Collector) -> serde_json::Result<()> {
    let mut de = serde_json::Deserializer::from_slice(bytes.as_ref());
    let walked = Doc(&mut *c).deserialize(&mut de).and_then(|()| de.end());
    if let Some(mut m) = c.mapped.take() {
        m.done();
    }
    walked
}

impl Collector {
    /// A span of the mapped document, at `at` in it, given as its text.
    pub(super) fn mapped_span(&mut self, raw: &RawValue, at: At) -> Result<(), String> {
        let Some(m) = self.mapped.as_mut() else {
            return Ok(());
        };
        let line = m.line_at(m.offset(raw));
        if m.dry {
            return Ok(());
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
