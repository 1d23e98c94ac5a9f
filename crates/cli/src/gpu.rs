//! PyTorch profiler (Kineto) traces on the command line: the session's
//! GPU analysis (critpath-session) with a progress bar (docs/gpu.md).

use crate::error::Result;
use crate::progress::{advance, clear, progress_bar};
use critpath_engine::{Observer, Options};
use critpath_gpu::GpuOptions;
pub use critpath_session::GpuRun;
use critpath_session::Session;
use std::path::Path;

/// The first analysis of the session's Kineto traces, with every state
/// visit and dependence handed to `observer`; `keep_path` keeps the
/// path's segments in the result.
pub fn analyze_observed(
    session: &mut Session,
    first: &Path,
    window: &GpuOptions,
    opts: Options,
    keep_path: bool,
    observer: &mut dyn Observer,
) -> Result<GpuRun> {
    let pb = progress_bar(first);
    let run = session.gpu(window, opts, keep_path, observer, &mut |_, bytes| {
        advance(&pb, bytes)
    });
    clear(pb);
    Ok(run?)
}
