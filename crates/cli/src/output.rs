//! Where results go: standard output, or files that are written whole or
//! not at all. Every output file goes through [`write_file`]: it refuses a
//! path that is one of the command's inputs (the same file, by device and
//! inode, so a symlink or hard link to an input is refused too), writes a
//! temporary file in the output's directory and renames it into place only
//! once everything is written, so an interrupted command never leaves a
//! half-written file where the output belongs (nor, on SIGINT, SIGTERM or
//! SIGHUP, the temporary file: see `interrupt`). A symlink is followed and
//! kept: the file it points to is replaced. A regular file that is replaced
//! keeps its permissions. What is not a regular file (a device such as
//! /dev/null, a FIFO, a terminal, or a descriptor such as /dev/stdout) is
//! written to as it is, never replaced. A read-only file is refused, not
//! replaced. Outputs that belong together ([`stage`] then [`Staged::commit`]
//! each) appear together or not at all. The path `-` is standard output;
//! text printed there has its control characters escaped ([`safe`]).

mod aliases;
mod safe;

pub use aliases::refuse_inputs;
pub use safe::safe;

use crate::error::{CliError, Result};
use crate::interrupt;
use std::fs::{File, Metadata, OpenOptions};
use std::io::{self, BufWriter, IsTerminal, Write};
use std::os::fd::AsFd;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// Whether an output path means standard output (`-`; a file of that
/// name is `./-`).
pub fn is_stdout(path: &Path) -> bool {
    path.as_os_str() == "-"
}

/// Writes `bytes` to the file `output` or, when there is none (or it is
/// `-`), to standard output.
pub fn emit(output: Option<&Path>, inputs: &[PathBuf], bytes: &[u8]) -> Result<()> {
    match output.filter(|p| !is_stdout(p)) {
        Some(path) => write_file(path, inputs, |mut w| {
            w.write_all(bytes).and_then(|_| w.flush())
        }),
        None => stdout(bytes),
    }
}

/// Writes the text `bytes` to standard output, its control characters
/// escaped; a reader that went away (a closed pipe) is not an error.
pub fn stdout(bytes: &[u8]) -> Result<()> {
    let bytes = safe::terminal_safe(bytes);
    let mut out = io::stdout().lock();
    match out.write_all(&bytes).and_then(|_| out.flush()) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Ok(()),
        Err(e) => Err(CliError::Stdout(e)),
    }
}

/// Fails when `path` is standard output and that is a terminal: `what`
/// (binary) would garble it.
pub fn refuse_binary_terminal(path: &Path, what: &str) -> Result<()> {
    if is_stdout(path) && io::stdout().is_terminal() {
        return Err(CliError::input(format!(
            "-: {what} is binary and standard output is a terminal; redirect it (`> FILE`, `| CMD`) or give a file name"
        )));
    }
    Ok(())
}

/// Writes the file `path` with `write`, which gets a buffered writer and
/// must flush it (writers' `finish` does). A regular file (or none yet)
/// appears at `path` only when `write` succeeds; anything else is written
/// to as it is; `-` is standard output. `path` must not be one of `inputs`.
pub fn write_file<T>(
    path: &Path,
    inputs: &[PathBuf],
    write: impl FnOnce(BufWriter<File>) -> io::Result<T>,
) -> Result<T> {
    stage(path, inputs, write)?.commit()
}

/// A temporary file and its place on the list of partial files.
type Temporary = (tempfile::NamedTempFile, interrupt::Partial);

/// An output written whole, not yet in place: [`Staged::commit`] renames
/// it onto its path; dropped, it is removed. Outputs that belong together
/// are all staged, then all committed.
pub struct Staged<T> {
    path: PathBuf,
    /// The temporary file (none when the output was written through).
    tmp: Option<Temporary>,
    value: T,
}

impl<T> Staged<T> {
    /// Puts the output in place.
    pub fn commit(self) -> Result<T> {
        if let Some((tmp, _listed)) = self.tmp {
            tmp.persist(&self.path).map_err(|e| CliError::CannotWrite {
                path: self.path.clone(),
                source: e.error,
            })?;
        }
        Ok(self.value)
    }
}

/// [`write_file`] but for the last step: the output is written to a
/// temporary file beside `path` (or through, when `path` is no regular
/// file), and appears at `path` on [`Staged::commit`].
pub fn stage<T>(
    path: &Path,
    inputs: &[PathBuf],
    write: impl FnOnce(BufWriter<File>) -> io::Result<T>,
) -> Result<Staged<T>> {
    refuse_inputs(path, inputs)?;
    let done = |value| Staged {
        path: path.to_path_buf(),
        tmp: None,
        value,
    };
    if is_stdout(path) {
        return to_stdout(write).map(done);
    }
    let failed = |source: io::Error| CliError::CannotWrite {
        path: path.to_path_buf(),
        source,
    };
    match target(path).map_err(failed)? {
        Target::Replace(file, existing) => {
            let (value, tmp) = replace(&file, existing.as_ref(), write).map_err(failed)?;
            Ok(Staged {
                path: file,
                tmp: Some(tmp),
                value,
            })
        }
        Target::Through(file, append) => OpenOptions::new()
            .write(true)
            .append(append)
            .open(file)
            .and_then(|f| write(buffered(f)))
            .map(done)
            .map_err(failed),
    }
}

/// The writer `write_file` hands out.
fn buffered(file: File) -> BufWriter<File> {
    BufWriter::with_capacity(1 << 20, file)
}

/// [`write_file`] to standard output (after what was printed to it); a
/// reader that went away ends the command quietly.
fn to_stdout<T>(write: impl FnOnce(BufWriter<File>) -> io::Result<T>) -> Result<T> {
    let out = io::stdout();
    let _ = out.lock().flush();
    let fd = out.as_fd().try_clone_to_owned().map_err(CliError::Stdout)?;
    write(buffered(File::from(fd))).map_err(|e| match e.kind() {
        io::ErrorKind::BrokenPipe => CliError::StdoutClosed,
        _ => CliError::Stdout(e),
    })
}

/// What writing an output does to the file at its path.
enum Target {
    /// Replaces this regular file (or creates it), with the metadata of
    /// the one it replaces.
    Replace(PathBuf, Option<Metadata>),
    /// Writes into this device, FIFO or descriptor as it is (appending,
    /// for a descriptor of a regular file such as /dev/stdout redirected).
    Through(PathBuf, bool),
}

/// The file an output goes to: `path` with its symlinks followed (each
/// relative one from its own directory; the symlinks stay). A symlink in
/// /proc (/dev/stdout, /dev/fd/N) names an open file, not a place for a
/// new one: it is written through.
fn target(path: &Path) -> io::Result<Target> {
    let mut p = path.to_path_buf();
    for _ in 0..40 {
        match std::fs::symlink_metadata(&p) {
            Ok(m) if m.file_type().is_symlink() => {
                if in_proc(&p) {
                    let regular = std::fs::metadata(&p).is_ok_and(|m| m.is_file());
                    return Ok(Target::Through(p, regular));
                }
                let to = std::fs::read_link(&p)?;
                p = p.parent().map_or_else(|| to.clone(), |d| d.join(&to));
            }
            Ok(m) if m.is_dir() => return Err(io::Error::from_raw_os_error(libc::EISDIR)),
            Ok(m) if m.is_file() => {
                refuse_read_only(&p, &m)?;
                return Ok(Target::Replace(p, Some(m)));
            }
            Ok(_) => return Ok(Target::Through(p, false)),
            Err(_) => return Ok(Target::Replace(p, None)),
        }
    }
    Err(io::Error::from_raw_os_error(libc::ELOOP))
}

/// Fails when the file `path` (of metadata `m`) may not be written: no
/// write permission at all (mode 444, even for root), or none for this
/// user. Replacing it would need only the directory's.
fn refuse_read_only(path: &Path, m: &Metadata) -> io::Result<()> {
    let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes())?;
    // SAFETY: access only reads the NUL-terminated path it is given.
    let writable = unsafe { libc::access(c.as_ptr(), libc::W_OK) } == 0;
    if m.mode() & 0o222 == 0 || !writable {
        return Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!(
                "the file is read-only (mode {:o}) and was left as it was; make it writable or write elsewhere",
                m.mode() & 0o7777
            ),
        ));
    }
    Ok(())
}

/// Whether `path`'s directory is in /proc.
fn in_proc(path: &Path) -> bool {
    std::fs::canonicalize(dir_of(path)).is_ok_and(|d| d.starts_with("/proc"))
}

/// The directory `path` is in (`.` for a bare name).
fn dir_of(path: &Path) -> &Path {
    match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    }
}

/// Writes a temporary file beside `path`, to be renamed onto `path`; it
/// gets the permissions (and, where allowed, the owner) of the `existing`
/// file it replaces.
fn replace<T>(
    path: &Path,
    existing: Option<&Metadata>,
    write: impl FnOnce(BufWriter<File>) -> io::Result<T>,
) -> io::Result<(T, Temporary)> {
    let mode = existing.map_or(0o666, |m| m.mode() & 0o777);
    let (tmp, listed) = interrupt::partial_file(|| temporary_beside(path, mode))?;
    if let Some(m) = existing {
        let file = tmp.as_file();
        file.set_permissions(std::fs::Permissions::from_mode(mode))?;
        let now = file.metadata()?;
        if (m.uid(), m.gid()) != (now.uid(), now.gid()) {
            let _ = std::os::unix::fs::fchown(file, Some(m.uid()), Some(m.gid()));
        }
    }
    let value = write(buffered(tmp.as_file().try_clone()?))?;
    Ok((value, (tmp, listed)))
}

/// A temporary file in `path`'s directory (so renaming it is atomic),
/// created with `mode` (less the umask).
fn temporary_beside(path: &Path, mode: u32) -> io::Result<tempfile::NamedTempFile> {
    let dir = dir_of(path);
    let name = path
        .file_name()
        .map_or_else(|| "output".into(), |n| n.to_string_lossy().into_owned());
    tempfile::Builder::new()
        .prefix(&format!(".{name}."))
        .suffix(".partial")
        .permissions(std::fs::Permissions::from_mode(mode))
        .tempfile_in(dir)
}

/// [`refuse_inputs`] for an output that may be standard output.
pub fn refuse_inputs_opt(output: Option<&Path>, inputs: &[PathBuf]) -> Result<()> {
    output.map_or(Ok(()), |o| refuse_inputs(o, inputs))
}

/// What text output has room for: the columns a line may take and, on a
/// terminal, the rows of one screen.
#[derive(Clone, Copy, Debug, Default)]
pub struct Screen {
    /// From `COLUMNS`, else the terminal's width; `None` when standard
    /// output is piped or redirected and `COLUMNS` is unset (no limit).
    pub width: Option<usize>,
    /// The terminal's height when standard output is one.
    pub rows: Option<usize>,
}

/// The room of standard output (none at all when `to_file`).
pub fn screen(to_file: bool) -> Screen {
    if to_file {
        return Screen::default();
    }
    let term = terminal_size();
    let columns = std::env::var("COLUMNS")
        .ok()
        .and_then(|c| c.trim().parse::<usize>().ok())
        .filter(|&c| c > 0);
    Screen {
        width: columns.or(term.map(|t| t.0)),
        rows: term.map(|t| t.1),
    }
}

/// Standard output's terminal size (columns, rows), when it is a terminal.
fn terminal_size() -> Option<(usize, usize)> {
    use std::io::IsTerminal;
    if !io::stdout().is_terminal() {
        return None;
    }
    // SAFETY: TIOCGWINSZ fills the winsize struct it is given, nothing more.
    let mut ws: libc::winsize = unsafe { std::mem::zeroed() };
    let ok = unsafe { libc::ioctl(libc::STDOUT_FILENO, libc::TIOCGWINSZ, &mut ws) } == 0;
    (ok && ws.ws_col > 0).then_some((ws.ws_col as usize, ws.ws_row.max(1) as usize))
}
