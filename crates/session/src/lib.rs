//! critpath-session: one analysis of critpath's inputs, from their bytes to
//! every answer asked of them. [`Session::open`] opens each input once and
//! sniffs its format from its first bytes (the importer registry of
//! critpath-import); the first engine pass reads it, keeping its records,
//! and every later pass (a what-if, the next paths, the verdict's what-if)
//! replays them instead of opening and parsing the input again. The
//! command line, the Python package and `batch` all analyze through it.
//!
//! The settings of a run ([`Settings`]) are resolved once by the program
//! (flags, then the environment: [`env`], the one place that reads it,
//! then the defaults) and passed down.

pub mod env;
mod error;
mod gpu;
mod log;
mod session;

pub use critpath_trace::Settings;
pub use error::{Error, Result};
pub use gpu::GpuRun;
pub use log::{Recorder, Replay};
pub use session::{display_name, each_once, nonempty, Session};
