//! critpath-engine: the streaming critical-path engine with its on-disk node
//! log, the result tables that every view renders, and the analyses derived
//! from them.
//!
//! Data flows one way: a [`RecordSource`](critpath_trace::RecordSource)
//! yields records, the [`pump`] feeds them to the [`Engine`] in one pass
//! (telling an [`Observer`] of each state visit and dependence), and
//! [`Engine::finish`] returns an [`Analysis`]. The analyses built on whole
//! runs (what-if, next path, diff, overhead correction, modules, check) each
//! have their own module.

pub mod analyses;
pub mod check;
pub mod engine;
pub mod error;
mod logshare;
pub mod modules;
pub mod nodelog;
pub mod observer;
pub mod pump;
pub mod results;
pub mod slack;
mod spare;
mod spill;

pub use engine::{Engine, Options, Prediction, Rewalk, Speedup};
pub use error::{Error, Input};
pub use observer::{Observer, PathEdge, Visit};
pub use pump::{
    analyze, analyze_observed, analyze_parallel, observed_engine, run, run_parallel, scoped,
};
pub use results::Analysis;
