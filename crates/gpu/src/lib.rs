//! critpath-gpu: PyTorch profiler (Kineto) traces as state machines, so the
//! critical path runs through CPU threads and CUDA streams alike (see
//! docs/gpu.md).
//!
//! - [`kineto`] decodes a trace (plain or gzip JSON) event by event;
//! - [`model`] keeps one rank's window of CPU ops and GPU ops;
//! - [`sync`] resolves what each synchronization waited for;
//! - [`emit`] turns a rank into records: threads, streams, launches;
//! - [`ranks`] joins several ranks: collectives, clocks, stragglers;
//! - [`source`] offers it all as a `RecordSource`;
//! - [`breakdown`] says what bounds an analysed path (HTA's `bound_by`).

pub mod breakdown;
pub mod emit;
pub mod kineto;
pub mod model;
pub mod ranks;
pub mod source;
pub mod sync;

pub use breakdown::{bound_by, bound_by_window, GpuBreakdown, GpuFacts};
pub use kineto::looks_like;
pub use model::GpuOptions;
pub use ranks::{RankOffset, RanksReport, StepStraggler};
pub use source::{
    is_kineto_file, open, open_inputs, open_ranks, open_ranks_with, open_with, GpuSource,
    KinetoInput,
};
