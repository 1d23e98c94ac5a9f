//! Kineto (PyTorch profiler) traces go to critpath-gpu: one file is one
//! rank; several files are ranks of one job, aligned on their collectives
//! rather than on send/recv pairs.

use crate::input::{display_name, open_input};
use crate::multi::{Alignment, ClockOffset};
use crate::AnySource;
use critpath_gpu::join::Again;
use critpath_gpu::{GpuOptions, GpuSource, KinetoInput};
use critpath_trace::ReadError;
use std::io::Read;
use std::path::{Path, PathBuf};

/// Is this input (a file, compressed or not, or a pipe, or `-`) a Kineto
/// trace? A pipe's first bytes are kept for its reading.
pub fn is_kineto(path: &Path) -> bool {
    open_input(path).is_ok_and(|i| critpath_gpu::looks_like(&i.head))
}

/// Are these traces all Kineto traces?
pub fn all_kineto(paths: &[PathBuf]) -> bool {
    !paths.is_empty() && paths.iter().all(|p| is_kineto(p))
}

/// A way to read a Kineto input anew, when it is a regular file
/// (compressed or not): one step of it is then read in one pass that
/// guesses the step's window (`critpath_gpu::join::prepare`).
pub fn again(path: &Path) -> Option<Again> {
    let regular = path != Path::new("-") && std::fs::metadata(path).is_ok_and(|m| m.is_file());
    let path = path.to_path_buf();
    let reopen = move || match open_input(&path) {
        Ok(i) => Ok(Box::new(i.stream) as Box<dyn Read + Send>),
        Err(e) => Err(e.message),
    };
    regular.then(|| Again::new(Box::new(reopen)))
}

/// Kineto traces (one rank, or several of one job) as one source, read
/// from any input the way every trace is: compressed, piped or on standard
/// input.
pub fn open_gpu(paths: &[PathBuf], opts: &GpuOptions) -> Result<GpuSource, ReadError> {
    // Before they are opened, all at once.
    let first = paths.first().map(|p| display_name(p));
    critpath_gpu::source::at_most_max_ranks(paths.len(), first.as_deref())?;
    let inputs = paths
        .iter()
        .map(|p| {
            open_input(p).map(|i| KinetoInput {
                name: i.name,
                json: Box::new(i.stream),
                again: again(p),
            })
        })
        .collect::<Result<_, _>>()?;
    critpath_gpu::open_inputs(inputs, opts)
}

/// Several Kineto traces: ranks of one job.
fn ranks_of_one_job(paths: &[PathBuf]) -> bool {
    paths.len() > 1 && all_kineto(paths)
}

/// Several ranks' Kineto traces as one source, if every file is one.
pub fn open_ranks(paths: &[PathBuf]) -> Result<Option<AnySource>, ReadError> {
    if !ranks_of_one_job(paths) {
        return Ok(None);
    }
    let src = open_gpu(paths, &GpuOptions::default())?;
    Ok(Some(AnySource::in_memory(src, crate::Format::Kineto)))
}

/// The ranks' clock offsets (from their collectives), if every file is a
/// Kineto trace.
pub fn alignment(paths: &[PathBuf]) -> Result<Option<Alignment>, ReadError> {
    if !ranks_of_one_job(paths) {
        return Ok(None);
    }
    let src = open_gpu(paths, &GpuOptions::default())?;
    let offsets: Vec<ClockOffset> = src
        .report()
        .offsets
        .iter()
        .enumerate()
        .map(|(i, o)| ClockOffset {
            file: o.file.clone(),
            sys: format!("rank{}", o.rank),
            offset_ns: o.offset_ns,
            links_out: o.collectives,
            links_in: o.collectives,
            method: match (i, o.collectives) {
                (0, _) => "reference".into(),
                (_, 0) => "unlinked".into(),
                _ => "collectives".into(),
            },
        })
        .collect();
    let unlinked = offsets
        .iter()
        .enumerate()
        .filter(|(_, o)| o.method == "unlinked")
        .map(|(i, _)| i)
        .collect();
    Ok(Some(Alignment {
        first_t: vec![0; offsets.len()],
        offsets,
        unlinked,
    }))
}
