//! critpath-gpu: PyTorch profiler (Kineto) traces as state machines, so the
//! critical path runs through CPU threads and CUDA streams alike (see
//! docs/gpu.md).
//!
//! - [`kineto`] decodes a trace (plain or gzip JSON) event by event;
//! - [`guess`] finds one step's window as the read goes;
//! - [`join`] sorts a rank's events on disk past a budget, joins launches,
//!   kernels and synchronizations by correlation, and keeps the window;
//! - [`streams`] gives GPU ops their effective times in stream order;
//! - [`ranks`] joins several ranks: collectives, clocks, stragglers;
//! - [`cpucoll`] finds the collectives CPUs run (gloo, `c10d`);
//! - [`pass`] makes a rank's records in one time-ordered pass, holding only
//!   what is in flight ([`emit`] says what the records mean);
//! - [`items`] are what the sorts hold;
//! - [`source`] offers it all as a `RecordSource`;
//! - [`breakdown`] says what bounds an analysed path (HTA's `bound_by`).

pub mod breakdown;
pub mod cpucoll;
pub mod emit;
pub mod guess;
pub mod items;
pub mod join;
pub mod kineto;
pub mod pass;
pub mod peek;
pub mod ranks;
pub mod source;
pub mod streams;
mod unread;

pub use breakdown::{bound_by, bound_by_window, BreakdownObserver, GpuBreakdown, GpuFacts, Tally};
pub use join::GpuOptions;
pub use kineto::looks_like;
pub use ranks::{RankOffset, RanksReport, StepStraggler};
pub use source::{
    is_kineto_file, open, open_inputs, open_ranks, open_ranks_with, open_with, GpuSource,
    KinetoInput,
};
