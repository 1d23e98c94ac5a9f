//! PyTorch profiler (Kineto) traces: Chrome trace JSON that the PyTorch
//! profiler wrote, read by critpath-gpu (one rank here; several ranks of
//! one job: `crate::kineto`).

use crate::importer::{Confidence, Format, Head, Importer};
use crate::{AnySource, Input};
use critpath_gpu::{GpuOptions, KinetoInput};
use critpath_trace::{ReadError, Settings};

impl Format {
    #[allow(non_upper_case_globals)]
    pub const Kineto: Format = Format("Kineto");
}

pub struct Kineto;

impl Importer for Kineto {
    fn format(&self) -> Format {
        Format::Kineto
    }
    fn noun(&self) -> &'static str {
        "a PyTorch profiler (Kineto) trace"
    }
    fn sniff(&self, head: &Head) -> Confidence {
        // A document on one line that is no record is one too: Kineto's
        // keys say what it is, and its reader what it lacks (a header
        // without `traceEvents`).
        let object = !head.first_is_record
            && !head.commented
            && (head.first_line.as_deref()).is_some_and(|l| l.starts_with('{'));
        match (super::json_document(head) || object) && critpath_gpu::looks_like(head.bytes) {
            true => Confidence::Likely,
            false => Confidence::No,
        }
    }
    fn open(&self, input: Input, _: &Settings) -> Result<AnySource, ReadError> {
        let one = KinetoInput {
            name: input.name,
            json: Box::new(input.stream),
            again: None,
        };
        let src = critpath_gpu::open_inputs(vec![one], &GpuOptions::default())?;
        Ok(AnySource::in_memory(src, Format::Kineto))
    }
}
