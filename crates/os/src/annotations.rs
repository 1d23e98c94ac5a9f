//! An annotation trace (the SDKs' blocks, without a kernel recording)
//! analyzed alone: each thread is an SM `COMM:TID` running from its first
//! annotation, with its annotated SMs stacked on it — the same construction
//! as annotations merged into a kernel recording.

use crate::osgraph::Builder;
use critpath_readers::annot::{summary, AnnotReader, Facts};
use critpath_trace::ReadError;
use std::path::Path;

/// An annotation trace analyzed alone: each thread is an SM `COMM:TID`
/// running from its first annotation, with its annotated SMs stacked on it
/// (the same construction as annotations merged into a kernel recording).
pub struct AnnotSource {
    reader: AnnotReader,
    builder: Builder,
    index: u64,
    done: bool,
}

impl AnnotSource {
    pub fn open(path: &Path) -> Result<AnnotSource, ReadError> {
        let reader = AnnotReader::open(path)?;
        let names = reader.facts.threads.clone();
        let builder =
            Builder::new(critpath_trace::Interner::new(), "local", names, None).annotations_only();
        Ok(AnnotSource {
            reader,
            builder,
            index: 0,
            done: false,
        })
    }

    /// The per-process cost of one annotation event, from calibration
    /// records (`critpath record --calibrate`).
    pub fn facts(&self) -> &Facts {
        &self.reader.facts
    }
}

impl critpath_trace::RecordSource for AnnotSource {
    fn next_record(
        &mut self,
    ) -> Result<Option<(critpath_trace::Record, critpath_trace::Pos)>, ReadError> {
        loop {
            if let Some(r) = self.builder.drain_ready(1, self.done).next() {
                self.index += 1;
                return Ok(Some((r, critpath_trace::Pos::record(self.index))));
            }
            if self.done {
                return Ok(None);
            }
            match self.reader.next_annotation() {
                Some(a) => self.builder.feed_annot(&a),
                None => {
                    self.done = true;
                    self.builder.finish();
                }
            }
        }
    }
    fn strings(&self) -> &critpath_trace::Interner {
        &self.builder.strings
    }
    fn bytes_read(&self) -> u64 {
        // Annotations are merged from many blocks: progress by records.
        0
    }
    fn summary(&mut self) -> critpath_trace::Summary {
        let mut s = summary(&mut self.reader);
        s.diagnostics.extend(self.builder.diagnostics());
        s.annotation_costs = self
            .builder
            .annotation_costs(&self.reader.facts.calibration);
        s
    }
}
