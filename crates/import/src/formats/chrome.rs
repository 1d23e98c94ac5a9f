//! Chrome / Perfetto trace JSON (the Trace Event Format).

use crate::importer::{Confidence, Format, Head, Importer};
use crate::{AnySource, Input};
use critpath_readers::chrome;
use critpath_trace::{ReadError, Settings};

impl Format {
    #[allow(non_upper_case_globals)]
    pub const Chrome: Format = Format("Chrome");
}

pub struct Chrome;

impl Importer for Chrome {
    fn format(&self) -> Format {
        Format::Chrome
    }
    fn noun(&self) -> &'static str {
        "a Chrome / Perfetto trace JSON"
    }
    fn sniff(&self, head: &Head) -> Confidence {
        match super::json_document(head) {
            true => Confidence::Maybe,
            false => Confidence::No,
        }
    }
    fn open(&self, input: Input, _: &Settings) -> Result<AnySource, ReadError> {
        let r = chrome::read(input.stream, &input.name)?;
        Ok(AnySource::in_memory(r, Format::Chrome))
    }
}
