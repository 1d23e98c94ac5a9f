//! Observers of the kernel events a perf.data recording holds: views of
//! the kernel's own events (profiles, packet lives) are computed from them
//! beside the OS graph, as the recording streams by
//! ([`crate::PerfSource::observe`]).

use critpath_readers::perf::KRecord;
use critpath_trace::Interner;
use std::any::Any;

/// Is handed every decoded kernel event, in time order.
pub trait KernelObserver: Any {
    /// One kernel event; `strings` resolves its symbols.
    fn event(&mut self, k: &KRecord, strings: &Interner);
}
