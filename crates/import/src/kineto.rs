//! Kineto (PyTorch profiler) traces go to critpath-gpu: one file is one
//! rank; several files are ranks of one job, aligned on their collectives
//! rather than on send/recv pairs.

use crate::multi::{Alignment, ClockOffset};
use crate::AnySource;
use critpath_trace::ReadError;
use std::path::{Path, PathBuf};

/// One Kineto trace, if `path` is one.
pub fn open_one(path: &Path) -> Result<Option<AnySource>, ReadError> {
    if !critpath_gpu::is_kineto_file(path) {
        return Ok(None);
    }
    let src = critpath_gpu::open(path)?;
    Ok(Some(AnySource::Gpu(Box::new(src))))
}

/// Are these traces all Kineto traces (regular files only)?
pub fn all_kineto(paths: &[PathBuf]) -> bool {
    !paths.is_empty() && paths.iter().all(|p| critpath_gpu::is_kineto_file(p))
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
    let src = critpath_gpu::open_ranks(paths)?;
    Ok(Some(AnySource::Gpu(Box::new(src))))
}

/// The ranks' clock offsets (from their collectives), if every file is a
/// Kineto trace.
pub fn alignment(paths: &[PathBuf]) -> Result<Option<Alignment>, ReadError> {
    if !ranks_of_one_job(paths) {
        return Ok(None);
    }
    let src = critpath_gpu::open_ranks(paths)?;
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
