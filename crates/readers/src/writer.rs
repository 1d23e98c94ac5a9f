//! What the writers of the native formats (JSONL and `.cpt`) have in
//! common, so that a conversion writes through either the same way: the
//! records, then what the source says of them at the end.

use critpath_trace::{Interner, Record, Summary};
use std::io;

/// A writer of records into a trace file (its scope, if any, given when it
/// was made, before the first record).
pub trait TraceWriter {
    /// Writes one record, its names resolved in `strings`.
    fn write(&mut self, r: &Record, strings: &Interner) -> io::Result<()>;
    /// Writes the source's summary and inferred links, after the last
    /// record.
    fn summary(&mut self, s: &Summary, inferred: &[(String, u64)]) -> io::Result<()>;
    /// Ends the file (flushes what is buffered).
    fn end(self) -> io::Result<()>;
}

impl<W: io::Write> TraceWriter for crate::CptWriter<W> {
    fn write(&mut self, r: &Record, strings: &Interner) -> io::Result<()> {
        crate::CptWriter::write(self, r, strings)
    }
    fn summary(&mut self, s: &Summary, inferred: &[(String, u64)]) -> io::Result<()> {
        crate::CptWriter::summary(self, s, inferred)
    }
    fn end(self) -> io::Result<()> {
        self.finish().map(drop)
    }
}

impl<W: io::Write> TraceWriter for crate::JsonlWriter<W> {
    fn write(&mut self, r: &Record, strings: &Interner) -> io::Result<()> {
        crate::JsonlWriter::write(self, r, strings)
    }
    fn summary(&mut self, s: &Summary, inferred: &[(String, u64)]) -> io::Result<()> {
        crate::JsonlWriter::summary(self, s, inferred)
    }
    fn end(self) -> io::Result<()> {
        self.finish().map(drop)
    }
}
