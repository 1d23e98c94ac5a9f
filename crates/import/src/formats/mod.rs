//! The formats critpath reads, one module each (see `importer.rs`).

pub mod annotations;
pub mod chrome;
pub mod cpt;
pub mod jsonl;
pub mod kineto;
pub mod perf;
pub mod spans;

use crate::input::Input;
use critpath_trace::{Location, ReadError};
use std::path::PathBuf;

/// Is the head a JSON document (the Trace Event Format's array or
/// `traceEvents` object, or a pretty-printed or long object whose keys are
/// no record's), rather than JSONL records? Never after a `#` comment.
pub fn json_document(head: &crate::importer::Head) -> bool {
    let first = head.first_line.as_deref();
    !head.first_is_record
        && !head.commented
        && (first.is_some_and(|l| l.starts_with('['))
            || head.text.contains("\"traceEvents\"")
            || first.is_some_and(|l| l.starts_with('{') && crate::object_document(head)))
}

/// The path of a format read in place (mapped): a regular, uncompressed
/// file; said plainly otherwise.
pub fn mapped(input: &Input, what: &str) -> Result<PathBuf, ReadError> {
    if let Some(p) = &input.file {
        return Ok(p.clone());
    }
    let how = match input.compression {
        Some(c) => format!("this is {what} compressed with {}", c.name()),
        None => format!("this is {what} on a pipe or standard input"),
    };
    Err(ReadError::new(
        &input.name,
        Location::File,
        format!("{how}: critpath reads {what} in place, so it needs a regular, uncompressed file; save (and decompress) it to a file first"),
        true,
    ))
}
