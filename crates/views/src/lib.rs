//! critpath-views: rendering only. Each module turns results (an engine
//! `Analysis`, or what an observer gathered) into text, JSON, DOT/SVG, HTML,
//! Perfetto JSON or CSV/Parquet tables; none reads a trace or computes an
//! analysis, and none writes anywhere but the writer it is given.

pub mod analysis;
pub mod batch;
pub mod check;
pub mod compare;
pub mod counters;
pub mod dot;
pub mod gpu;
pub mod json;
pub mod modules;
pub mod packets;
pub mod perfetto;
pub mod profile;
pub mod report;
pub mod report_runs;
pub mod tables;
pub mod text;
pub mod timeline;
pub mod whatif;

pub use text::{dur, grid};
