//! perf.data from `perf record` / `critpath record`, turned into the OS
//! execution graph as it is read (critpath-os); mapped in place.

use crate::importer::{Confidence, Format, Head, Importer};
use crate::{AnySource, Input};
use critpath_os::PerfSource;
use critpath_trace::{ReadError, Settings};

impl Format {
    #[allow(non_upper_case_globals)]
    pub const Perf: Format = Format("Perf");
}

pub struct Perf;

impl Importer for Perf {
    fn format(&self) -> Format {
        Format::Perf
    }
    fn noun(&self) -> &'static str {
        "a perf.data recording"
    }
    fn sniff(&self, head: &Head) -> Confidence {
        match critpath_os::perf::is_perf_data(head.bytes) {
            true => Confidence::Certain,
            false => Confidence::No,
        }
    }
    fn open(&self, input: Input, settings: &Settings) -> Result<AnySource, ReadError> {
        let path = super::mapped(&input, "perf.data")?;
        let mut src = PerfSource::open_threads(&path, (true, settings.threads))?;
        src.charge_cpu_holders(settings.cpu_holders);
        Ok(AnySource::streaming(src, Format::Perf))
    }
}
