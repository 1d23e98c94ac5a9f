//! critpath-views: the renderers. Each module turns results (an engine
//! `Analysis`, or what an observer gathered) into text, JSON, DOT/SVG, HTML,
//! Perfetto JSON or CSV/Parquet tables; none reads a trace, and none writes
//! anywhere but the writer it is given. One module runs the engine:
//! [`report_runs`] asks the caller's engine runs for the report's what-ifs
//! and timeline (the caller opens the traces).

pub mod analysis;
pub mod batch;
pub mod check;
pub mod compare;
pub mod counters;
pub mod diagnostics;
pub mod dot;
pub mod gpu;
pub mod json;
pub mod modules;
pub mod packets;
pub mod perfetto;
pub mod profile;
pub mod report;
pub mod report_many;
pub mod report_path;
pub mod report_runs;
pub mod tables;
pub mod text;
pub mod timeline;
pub mod whatif;

pub use text::{dur, grid};
