//! Annotations written by the SDKs alone (docs/formats.md); mapped in
//! place.

use crate::importer::{Confidence, Format, Head, Importer};
use crate::{AnySource, Input};
use critpath_os::AnnotSource;
use critpath_readers::annot;
use critpath_trace::{ReadError, Settings};

impl Format {
    #[allow(non_upper_case_globals)]
    pub const Annotations: Format = Format("Annotations");
}

pub struct Annotations;

impl Importer for Annotations {
    fn format(&self) -> Format {
        Format::Annotations
    }
    fn noun(&self) -> &'static str {
        "an annotation file of the SDKs"
    }
    fn sniff(&self, head: &Head) -> Confidence {
        match annot::is_annotations(head.bytes) {
            true => Confidence::Certain,
            false => Confidence::No,
        }
    }
    fn open(&self, input: Input, _: &Settings) -> Result<AnySource, ReadError> {
        let path = super::mapped(&input, "an annotation trace")?;
        let src = AnnotSource::open(&path)?;
        Ok(AnySource::in_memory(src, Format::Annotations))
    }
}
