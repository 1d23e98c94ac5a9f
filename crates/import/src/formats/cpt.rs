//! `.cpt`: critpath's own binary format (docs/formats.md).

use crate::importer::{Confidence, Format, Head, Importer};
use crate::{AnySource, Input};
use critpath_readers::{cpt, CptReader};
use critpath_trace::{ReadError, Settings};

impl Format {
    #[allow(non_upper_case_globals)]
    pub const Cpt: Format = Format("Cpt");
}

pub struct Cpt;

impl Importer for Cpt {
    fn format(&self) -> Format {
        Format::Cpt
    }
    fn noun(&self) -> &'static str {
        "a native .cpt trace"
    }
    fn sniff(&self, head: &Head) -> Confidence {
        match head.bytes.starts_with(cpt::MAGIC) {
            true => Confidence::Certain,
            false => Confidence::No,
        }
    }
    fn open(&self, input: Input, _: &Settings) -> Result<AnySource, ReadError> {
        let input = input.ahead();
        let r = CptReader::new(input.stream, &input.name)?;
        Ok(AnySource::streaming(r, Format::Cpt))
    }
}
