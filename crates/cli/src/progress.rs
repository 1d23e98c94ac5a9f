//! The progress bar drawn while a big input is read.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;
use std::path::Path;

/// A progress bar over the input's bytes, drawn only on a terminal and
/// only for inputs big enough to take a while.
pub fn progress_bar(path: &Path) -> Option<ProgressBar> {
    let len = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
    if len < (32 << 20) || !std::io::stderr().is_terminal() {
        return None;
    }
    let pb = ProgressBar::with_draw_target(Some(len), ProgressDrawTarget::stderr());
    pb.set_style(
        ProgressStyle::with_template("{spinner} {msg} [{bar:40}] {bytes}/{total_bytes} ({eta})")
            .expect("valid template")
            .progress_chars("=> "),
    );
    pb.set_message(path.display().to_string());
    Some(pb)
}

/// Moves the bar, if there is one, to `bytes` read.
pub fn advance(pb: &Option<ProgressBar>, bytes: u64) {
    if let Some(pb) = pb {
        pb.set_position(bytes);
    }
}

/// Removes the bar, if there is one.
pub fn clear(pb: Option<ProgressBar>) {
    if let Some(pb) = pb {
        pb.finish_and_clear();
    }
}

/// A progress bar over `n` files, drawn only on a terminal and only for
/// more than one file.
pub fn files_bar(n: usize) -> Option<ProgressBar> {
    if n < 2 || !std::io::stderr().is_terminal() {
        return None;
    }
    let pb = ProgressBar::with_draw_target(Some(n as u64), ProgressDrawTarget::stderr());
    pb.set_style(
        ProgressStyle::with_template("{spinner} analyzing [{bar:40}] {pos}/{len} files ({eta})")
            .expect("valid template")
            .progress_chars("=> "),
    );
    Some(pb)
}
