//! One module per subcommand: its arguments (clap) and the code that wires
//! the inputs, the engine or the observers, and a view together.

pub mod analyze;
pub mod batch;
pub mod bench;
pub mod cgraph;
pub mod check;
pub mod collect;
pub mod convert;
pub mod counters;
pub mod demo;
pub mod diff;
pub mod export;
pub mod modules;
pub mod packets;
pub mod profile;
pub mod record;
pub mod report;
pub mod slack;
pub mod whatif;
