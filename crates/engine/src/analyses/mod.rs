//! Analyses built on whole runs of the engine, one per file: the next most
//! critical path (paper §5.3, Table 2), the comparison of two runs, and the
//! correction of annotation overhead (VTRACE). What-if speed-ups, slack and
//! windows are computed by the engine itself during its pass.

mod band;
mod diff;
mod levers;
mod next_path;
mod overhead;
mod verdict;

pub use band::{predicted_range, shares, Shares};
pub use diff::{diff, Diff, StateChange};
pub use levers::{levers, outside, Lever};
pub use next_path::{next_paths, NextPath};
pub use overhead::{correct_overhead, Correction};
pub use verdict::{top_twice, TOP_TWICE_MAX_RECORDS};

use crate::results::StateRow;

/// A state as users name it: `SM:STATE`, or `SYS/SM:STATE` outside the
/// local system.
pub(crate) fn name(s: &StateRow) -> String {
    crate::engine::state_target(&s.sys, &s.sm, &s.state)
}

/// The recorded program's SMs (see [`crate::results::Analysis::program`]).
pub(crate) fn program_sms(a: &crate::results::Analysis) -> rustc_hash::FxHashSet<&str> {
    a.program.iter().map(String::as_str).collect()
}
