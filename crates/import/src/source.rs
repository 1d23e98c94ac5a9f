//! [`AnySource`]: the records of any format, whichever importer opened it.

use crate::importer::Format;
use critpath_trace::{Interner, Pos, ReadError, Record, RecordSource, Scope, Summary};
use std::any::Any;

/// A reader of any format behind one type.
pub trait Source: RecordSource + Send {
    fn as_any_mut(&mut self) -> &mut dyn Any;
}

impl<T: RecordSource + Send + 'static> Source for T {
    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }
}

/// The records of an opened input, and its format.
pub struct AnySource {
    inner: Box<dyn Source>,
    format: Format,
    streams: bool,
}

impl AnySource {
    /// A reader that decodes as it goes (a reader's thread of its own
    /// pays off).
    pub fn streaming(src: impl Source + 'static, format: Format) -> Self {
        AnySource {
            inner: Box::new(src),
            format,
            streams: true,
        }
    }

    /// A reader whose records were built in memory when it was opened.
    pub fn in_memory(src: impl Source + 'static, format: Format) -> Self {
        AnySource {
            inner: Box::new(src),
            format,
            streams: false,
        }
    }

    pub fn format(&self) -> Format {
        self.format
    }

    /// Does the reader decode as it goes (worth a thread of its own)?
    pub fn streams(&self) -> bool {
        self.streams
    }

    /// The reader itself, to be handed to the parallel pump.
    pub fn reader(&mut self) -> &mut dyn Source {
        &mut *self.inner
    }

    /// The reader as its own type, when it is one (a perf.data source, for
    /// the views that observe the kernel's events).
    pub fn downcast_mut<T: 'static>(&mut self) -> Option<&mut T> {
        self.inner.as_any_mut().downcast_mut::<T>()
    }
}

impl RecordSource for AnySource {
    #[inline]
    fn next_record(&mut self) -> Result<Option<(Record, Pos)>, ReadError> {
        self.inner.next_record()
    }
    fn next_batch(&mut self, out: &mut Vec<(Record, Pos)>, max: usize) -> Result<(), ReadError> {
        self.inner.next_batch(out, max)
    }
    fn strings(&self) -> &Interner {
        self.inner.strings()
    }
    fn summary(&mut self) -> Summary {
        self.inner.summary()
    }
    fn inferred_links(&mut self) -> Vec<(String, u64)> {
        self.inner.inferred_links()
    }
    fn scope(&mut self) -> Scope {
        self.inner.scope()
    }
    fn prepare(&mut self, late_names: bool) {
        self.inner.prepare(late_names)
    }
    fn restart(&mut self) -> bool {
        self.inner.restart()
    }
    fn bytes_read(&self) -> u64 {
        self.inner.bytes_read()
    }
}
