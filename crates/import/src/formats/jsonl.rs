//! JSONL: one record per line (docs/formats.md).

use crate::importer::{Confidence, Format, Head, Importer};
use crate::{AnySource, Input};
use critpath_readers::JsonlReader;
use critpath_trace::{ReadError, Settings};

impl Format {
    #[allow(non_upper_case_globals)]
    pub const Jsonl: Format = Format("Jsonl");
}

pub struct Jsonl;

impl Importer for Jsonl {
    fn format(&self) -> Format {
        Format::Jsonl
    }
    fn noun(&self) -> &'static str {
        "a JSONL trace"
    }
    fn sniff(&self, head: &Head) -> Confidence {
        match &head.first_line {
            _ if head.first_is_record => Confidence::Surely,
            Some(l) if l.starts_with('{') => Confidence::Fallback,
            // Comments are JSONL's alone: its reader says what the line
            // after them lacks.
            Some(_) if head.commented => Confidence::Fallback,
            _ => Confidence::No,
        }
    }
    fn open(&self, input: Input, _: &Settings) -> Result<AnySource, ReadError> {
        let input = input.ahead();
        let r = JsonlReader::new(input.stream, &input.name);
        Ok(AnySource::streaming(r, Format::Jsonl))
    }
}
