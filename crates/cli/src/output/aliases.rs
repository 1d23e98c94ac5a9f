//! The check that no output is one of the command's inputs: the same file
//! by device and inode, whatever names it — a path, a symlink or hard link
//! to it, `-` (standard input, or standard output for the output),
//! `/dev/stdin`, `/dev/fd/N`, `/proc/self/fd/N` — or any file the process
//! has open to read (a descriptor it inherited or opened for an input).

use crate::error::{CliError, Result};
use std::fs::{File, Metadata};
use std::io;
use std::os::fd::AsFd;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};

/// A file's identity.
type Id = (u64, u64);

/// Whether a file of this kind can be an input that an output destroys:
/// a regular file or a FIFO (not a device such as /dev/null or a
/// terminal, which input and output may share).
fn guarded(m: &Metadata) -> bool {
    m.is_file() || m.file_type().is_fifo()
}

fn id(m: &Metadata) -> Id {
    (m.dev(), m.ino())
}

/// The file behind standard input (0) or output (1).
fn descriptor(fd: i32) -> Option<Metadata> {
    let f = match fd {
        0 => io::stdin().as_fd().try_clone_to_owned(),
        _ => io::stdout().as_fd().try_clone_to_owned(),
    };
    f.map(File::from).and_then(|f| f.metadata()).ok()
}

/// The file an output path names, when it exists (`-`: standard output).
fn output_file(output: &Path) -> Option<Metadata> {
    if super::is_stdout(output) {
        return descriptor(1);
    }
    std::fs::metadata(output).ok()
}

/// The inputs' files: each named input (`-` is standard input), then every
/// file open in this process but standard output and error, named by what
/// it is.
fn input_files(inputs: &[PathBuf]) -> Vec<(Id, PathBuf)> {
    let mut all = Vec::new();
    for input in inputs {
        let m = if input.as_os_str() == "-" {
            descriptor(0)
        } else {
            std::fs::metadata(input).ok()
        };
        if let Some(m) = m.filter(guarded) {
            all.push((id(&m), input.clone()));
        }
    }
    let Ok(fds) = std::fs::read_dir("/proc/self/fd") else {
        return all;
    };
    for fd in fds.flatten() {
        let n: i32 = fd
            .file_name()
            .to_str()
            .and_then(|s| s.parse().ok())
            .unwrap_or(-1);
        if n < 0 || n == 1 || n == 2 || write_only(n) {
            continue;
        }
        if let Ok(m) = std::fs::metadata(fd.path()) {
            if guarded(&m) {
                let name = match n {
                    0 => PathBuf::from("standard input"),
                    _ => std::fs::read_link(fd.path()).unwrap_or_else(|_| fd.path()),
                };
                all.push((id(&m), name));
            }
        }
    }
    all
}

/// Whether descriptor `fd` is open for writing only (an output the
/// command was handed, such as `>(cmd)`; not an input).
fn write_only(fd: i32) -> bool {
    let info = std::fs::read_to_string(format!("/proc/self/fdinfo/{fd}")).unwrap_or_default();
    let flags = info
        .lines()
        .find_map(|l| l.strip_prefix("flags:"))
        .and_then(|f| u32::from_str_radix(f.trim(), 8).ok());
    flags.is_some_and(|f| f & libc::O_ACCMODE as u32 == libc::O_WRONLY as u32)
}

/// Fails when `output` is one of `inputs` or a file the process has open
/// to read (see the module).
pub fn refuse_inputs(output: &Path, inputs: &[PathBuf]) -> Result<()> {
    let Some(out) = output_file(output).filter(guarded) else {
        return Ok(());
    };
    match input_files(inputs)
        .into_iter()
        .find(|(i, _)| *i == id(&out))
    {
        Some((_, input)) => Err(CliError::OverwritesInput {
            output: output.to_path_buf(),
            input,
        }),
        None => Ok(()),
    }
}
