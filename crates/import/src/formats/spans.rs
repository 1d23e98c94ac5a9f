//! OpenTelemetry (OTLP JSON, the collector's JSON lines, OTLP protobuf),
//! Jaeger and Zipkin JSON spans.

use crate::importer::{Confidence, Format, Head, Importer};
use crate::{AnySource, Input};
use critpath_readers::spans;
use critpath_trace::{ReadError, Settings};

impl Format {
    #[allow(non_upper_case_globals)]
    pub const Spans: Format = Format("Spans");
}

pub struct Spans;

impl Importer for Spans {
    fn format(&self) -> Format {
        Format::Spans
    }
    fn noun(&self) -> &'static str {
        "a span file (OpenTelemetry, Jaeger or Zipkin)"
    }
    fn sniff(&self, head: &Head) -> Confidence {
        match !head.first_is_record && !head.commented && spans::looks_like(&head.text) {
            true => Confidence::Surely,
            false => Confidence::No,
        }
    }
    fn open(&self, input: Input, _: &Settings) -> Result<AnySource, ReadError> {
        let input = input.ahead();
        let r = spans::read_in(input.stream, &input.name, input.file)?;
        Ok(AnySource::in_memory(r, Format::Spans))
    }
}
