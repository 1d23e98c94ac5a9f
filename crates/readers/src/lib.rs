//! critpath-readers: decoders that turn a trace's bytes into records (or,
//! for perf.data, into raw kernel records) without interpreting them.
//! Each format is a module; the OS graph (critpath-os) and the importer
//! (critpath-import) build on them.

pub mod ahead;
pub mod annot;
pub mod chrome;
pub mod cpt;
pub mod extsort;
pub mod head;
pub mod json;
pub mod jsonl;
pub mod jsonsplit;
pub mod meta;
pub mod perf;
pub mod recsort;
pub mod spans;
mod ties;
pub mod tracks;
pub mod writer;

pub use cpt::{Codec, CptReader, CptWriter};
pub use jsonl::{JsonlReader, JsonlWriter};
pub use writer::TraceWriter;

/// A file that belongs to a trace, named after it: `OUT` + `suffix`
/// (`critpath record -o OUT` writes `OUT.annot` and `OUT.syms`).
pub fn companion(trace: &std::path::Path, suffix: &str) -> std::path::PathBuf {
    let mut name = trace.as_os_str().to_owned();
    name.push(suffix);
    std::path::PathBuf::from(name)
}
