//! Opening a trace's bytes: a file, or `-` for standard input, or any path
//! that is not seekable (a pipe, `<(…)`, `/dev/stdin`). The first bytes are
//! read once, to detect the format, and kept in front of the rest; gzip,
//! zstd, xz and bzip2 are decompressed on the fly, recognised by their magic bytes
//! (never by the name), so a compressed trace reads as the plain one. A
//! one-shot input is copied to an unnamed temporary file as it is read, so
//! a command that reads its trace twice (`whatif`, `analyze --next`) can,
//! and so can one that only peeks at its start first (is it a PyTorch
//! profiler trace?): the next reading replays the copy, then goes on.

use critpath_readers::head::{read_until_error, Failing};
use critpath_trace::{Location, ReadError};
use std::collections::hash_map::{Entry, HashMap};
use std::fs::File;
use std::io::{self, BufReader, Read, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

/// How many bytes detection looks at.
pub const HEAD: usize = 8192;

/// A trace's bytes as a buffered stream.
pub type Stream = BufReader<Box<dyn Read + Send>>;

/// The magic numbers of a bzip2 block (pi's digits) and of a stream's end
/// (the square root of pi's).
const BZ_BLOCK: &[u8] = &[0x31, 0x41, 0x59, 0x26, 0x53, 0x59];
const BZ_END: &[u8] = &[0x17, 0x72, 0x45, 0x38, 0x50, 0x90];

/// A compression critpath undoes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Compression {
    Gzip,
    Zstd,
    Xz,
    Bzip2,
}

impl Compression {
    /// The compression whose magic bytes start `head`.
    pub fn detect(head: &[u8]) -> Option<Compression> {
        if head.starts_with(&[0x1f, 0x8b]) {
            Some(Compression::Gzip)
        } else if head.starts_with(&[0x28, 0xb5, 0x2f, 0xfd]) {
            Some(Compression::Zstd)
        } else if head.starts_with(&[0xfd, b'7', b'z', b'X', b'Z', 0]) {
            Some(Compression::Xz)
        } else if head.len() >= 10
            && head.starts_with(b"BZh")
            && (b'1'..=b'9').contains(&head[3])
            && [BZ_BLOCK, BZ_END].contains(&&head[4..10])
        {
            // "BZh", the block size, then a block or the stream's end.
            Some(Compression::Bzip2)
        } else {
            None
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Compression::Gzip => "gzip",
            Compression::Zstd => "zstd",
            Compression::Xz => "xz",
            Compression::Bzip2 => "bzip2",
        }
    }

    fn decoder(self, input: Box<dyn Read + Send>) -> io::Result<Box<dyn Read + Send>> {
        let input = BufReader::with_capacity(1 << 16, input);
        Ok(match self {
            // Several gzip members (as `cat a.gz b.gz`) read as one stream.
            Compression::Gzip => Box::new(flate2::bufread::MultiGzDecoder::new(input)),
            Compression::Zstd => Box::new(zstd::stream::read::Decoder::with_buffer(input)?),
            Compression::Xz => Box::new(liblzma::bufread::XzDecoder::new_multi_decoder(input)),
            // Several streams (as `pbzip2` writes, or `cat a.bz2 b.bz2`) too.
            Compression::Bzip2 => Box::new(bzip2::bufread::MultiBzDecoder::new(input)),
        })
    }
}

/// A trace opened for reading, its first bytes already looked at.
pub struct Input {
    /// The name used in messages (`<stdin>` for `-`).
    pub name: String,
    /// The first bytes (after decompression), for format detection.
    pub head: Vec<u8>,
    /// The path, when the input is a regular file read as it is (neither
    /// standard input, nor a pipe, nor compressed): readers that map the
    /// file in place (perf.data, annotations) need it.
    pub file: Option<PathBuf>,
    /// What the input was compressed with.
    pub compression: Option<Compression>,
    /// The whole stream, the head included, decompressed as it is read:
    /// by the thread that reads it, which for a JSON document is the
    /// thread that splits it into events (a thread of its own, beside the
    /// one that parses them: a third thread decompressing only made the
    /// two cores share more work). See [`Input::ahead`].
    pub stream: Stream,
}

impl Input {
    /// The input with a compressed [`Input::stream`] decompressed on a
    /// thread of its own, ahead of a reader that parses on the thread that
    /// reads (JSONL, `.cpt`, span files): a gzipped JSONL trace of 2 M
    /// lines took 0.30 s with the reader decompressing, 0.26 s with a
    /// thread ahead.
    pub fn ahead(self) -> Input {
        if self.compression.is_none() {
            return self;
        }
        // The decoder itself goes to the thread (after any bytes the buffer
        // holds), not through the buffer: that would copy every byte again.
        let held = io::Cursor::new(self.stream.buffer().to_vec());
        let decoder: Box<dyn Read + Send> = Box::new(held.chain(self.stream.into_inner()));
        let ahead = crate::readahead::read_ahead(decoder);
        Input {
            stream: BufReader::with_capacity(STREAM_BUFFER, ahead),
            ..self
        }
    }
}

/// The buffer of an input's stream.
const STREAM_BUFFER: usize = 1 << 20;

/// A copy of a one-shot input (a pipe, standard input) kept as it is read,
/// so a command that reads its trace twice reads the copy the second time.
struct Spool {
    file: Option<Arc<File>>,
    /// The first reading got to the end: the copy is whole.
    done: Arc<AtomicBool>,
    /// What a reading that stopped early (detecting the format, say) left
    /// unread: the next reading goes on from there after the copy.
    rest: Arc<Mutex<Option<Box<dyn Read + Send>>>>,
}

static SPOOLS: Mutex<Option<HashMap<PathBuf, Spool>>> = Mutex::new(None);

/// Copies what it reads into the spool; dropped before the end, it leaves
/// the unread input to the spool.
struct Tee {
    inner: Option<Box<dyn Read + Send>>,
    copy: Option<Arc<File>>,
    done: Arc<AtomicBool>,
    rest: Arc<Mutex<Option<Box<dyn Read + Send>>>>,
}

impl Read for Tee {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let Some(inner) = self.inner.as_mut() else {
            return Ok(0);
        };
        let n = inner.read(buf)?;
        if n == 0 {
            self.done.store(self.copy.is_some(), Ordering::Relaxed);
            self.inner = None;
        } else if let Some(f) = &self.copy {
            if (&**f).write_all(&buf[..n]).is_err() {
                self.copy = None; // the disk is full: no second reading
            }
        }
        Ok(n)
    }
}

impl Drop for Tee {
    fn drop(&mut self) {
        if self.copy.is_some() && !self.done.load(Ordering::Relaxed) {
            *self.rest.lock().unwrap_or_else(|e| e.into_inner()) = self.inner.take();
        }
    }
}

/// Reads the spool from its start, independently of its writer, up to
/// `end` (what the copy held when the reading began).
struct Replay {
    file: Arc<File>,
    pos: u64,
    end: u64,
}

impl Read for Replay {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let want = buf.len().min((self.end - self.pos) as usize);
        let n = self.file.read_at(&mut buf[..want], self.pos)?;
        self.pos += n as u64;
        Ok(n)
    }
}

/// Has the one-shot input at `path` been read before (its copy kept)?
fn spooled(path: &Path) -> bool {
    let spools = SPOOLS.lock().unwrap_or_else(|e| e.into_inner());
    spools.as_ref().is_some_and(|s| s.contains_key(path))
}

/// A one-shot input: the first time, read while being copied; later, the
/// copy, followed by what an earlier reading left unread.
fn one_shot(
    path: &Path,
    name: &str,
    raw: impl FnOnce() -> Box<dyn Read + Send>,
) -> Result<Box<dyn Read + Send>, ReadError> {
    let mut spools = SPOOLS.lock().unwrap_or_else(|e| e.into_inner());
    let spools = spools.get_or_insert_with(HashMap::new);
    if let Some(s) = spools.get(path) {
        let rest = s.rest.lock().unwrap_or_else(|e| e.into_inner()).take();
        let file = s.file.clone();
        return match (file, s.done.load(Ordering::Relaxed), rest) {
            (Some(f), true, _) => {
                let end = f.metadata().map(|m| m.len()).unwrap_or(0);
                Ok(Box::new(Replay { file: f, pos: 0, end }))
            }
            (Some(f), false, Some(inner)) => {
                let end = f.metadata().map(|m| m.len()).unwrap_or(0);
                let replay = Replay { file: f.clone(), pos: 0, end };
                let tee = Tee {
                    inner: Some(inner),
                    copy: Some(f),
                    done: s.done.clone(),
                    rest: s.rest.clone(),
                };
                Ok(Box::new(replay.chain(tee)))
            }
            _ => Err(ReadError::new(
                name,
                Location::File,
                "was already read: it is a pipe or standard input, which can be read only once, and this command reads its trace more than once; save the trace to a file first",
                true,
            )),
        };
    }
    let file = tempfile::tempfile().ok().map(Arc::new);
    let spool = Spool {
        file: file.clone(),
        done: Arc::new(AtomicBool::new(false)),
        rest: Arc::new(Mutex::new(None)),
    };
    let tee = Tee {
        inner: Some(raw()),
        copy: file,
        done: spool.done.clone(),
        rest: spool.rest.clone(),
    };
    spools.insert(path.to_path_buf(), spool);
    Ok(Box::new(tee))
}

/// Reads up to `n` bytes (fewer only at the end of the input).
fn read_head(r: &mut dyn Read, n: usize) -> io::Result<Vec<u8>> {
    let mut head = Vec::with_capacity(n);
    r.take(n as u64).read_to_end(&mut head)?;
    Ok(head)
}

/// The name `path` has in messages.
pub fn display_name(path: &Path) -> String {
    if path == Path::new("-") {
        "<stdin>".to_string()
    } else {
        path.display().to_string()
    }
}

/// A regular file's identity, its device and inode: the same under every
/// name (`a.json`, `./a.json`, a symbolic or hard link). `None` for
/// standard input, a pipe or device (each read as it comes), or a path
/// that cannot be looked at here.
pub fn file_identity(path: &Path) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    if path == Path::new("-") {
        return None;
    }
    let m = path.metadata().ok().filter(|m| m.is_file())?;
    Some((m.dev(), m.ino()))
}

/// For each of `paths`, the index of an earlier one that names the same
/// regular file ([`file_identity`]; standard input redirected from a file
/// is that file), or standard input (`-`) again, if any: an input given
/// twice.
pub fn given_before<P: AsRef<Path>>(paths: &[P]) -> Vec<Option<usize>> {
    const STDIN: (u64, u64) = (u64::MAX, u64::MAX);
    // Standard input redirected from a file is that file.
    let identity = |p: &Path| match p == Path::new("-") {
        true => file_identity(Path::new("/dev/stdin")).or(Some(STDIN)),
        false => file_identity(p),
    };
    let mut first: HashMap<(u64, u64), usize> = HashMap::new();
    let mut out = Vec::with_capacity(paths.len());
    for (i, p) in paths.iter().enumerate() {
        out.push(identity(p.as_ref()).and_then(|id| match first.entry(id) {
            Entry::Occupied(e) => Some(*e.get()),
            Entry::Vacant(e) => {
                e.insert(i);
                None
            }
        }));
    }
    out
}

/// Why a path given after `first`, the same file, is not read again (its
/// events would count twice), and what was done instead (`outcome`).
pub fn given_twice_message(first: &Path, outcome: &str) -> String {
    format!(
        "the same file as {}, given before it; {outcome} (its events would count twice)",
        display_name(first)
    )
}

/// Opens `path` (or standard input for `-`), reads its head, and undoes its
/// compression.
pub fn open_input(path: &Path) -> Result<Input, ReadError> {
    let name = display_name(path);
    let io_err =
        |e: io::Error| ReadError::new(&name, Location::File, format!("cannot open: {e}"), true);
    let (raw, seekable): (Box<dyn Read + Send>, bool) = if path == Path::new("-") {
        (one_shot(path, &name, || Box::new(io::stdin()))?, false)
    } else if spooled(path) {
        // Read before (a pipe, a FIFO): its copy, without opening it again
        // (a FIFO's second open would wait for another writer).
        (one_shot(path, &name, || Box::new(io::empty()))?, false)
    } else {
        let f = File::open(path).map_err(io_err)?;
        let meta = f.metadata().map_err(io_err)?;
        if meta.is_dir() {
            return Err(ReadError::new(
                &name,
                Location::File,
                "is a directory, expected a trace file",
                true,
            ));
        }
        if meta.is_file() {
            (Box::new(f), true)
        } else {
            (one_shot(path, &name, || Box::new(f))?, false)
        }
    };
    from_reader(raw, &name, seekable.then(|| path.to_path_buf()))
}

/// The UTF-8 byte-order mark.
const UTF8_BOM: &[u8] = b"\xef\xbb\xbf";

/// An input over any reader (tests and fuzzing use it on bytes in memory);
/// `file` is its path when it is a regular file.
pub fn from_reader(
    mut raw: Box<dyn Read + Send>,
    name: &str,
    file: Option<PathBuf>,
) -> Result<Input, ReadError> {
    let read_err =
        |e: io::Error| ReadError::new(name, Location::File, format!("read error: {e}"), true);
    let mut head = read_head(&mut raw, HEAD).map_err(read_err)?;
    let compression = Compression::detect(&head);
    // Where decompressing the head failed: the bytes before still tell
    // the format, unless they are too few to.
    let mut cut = None;
    if let Some(c) = compression {
        let whole: Box<dyn Read + Send> = Box::new(io::Cursor::new(head).chain(raw));
        let what = |e: io::Error| {
            io::Error::new(
                e.kind(),
                format!("{} data that does not decompress: {e}", c.name()),
            )
        };
        raw = c.decoder(whole).map_err(what).map_err(read_err)?;
        // Damage within the head's reach still leaves what decompressed
        // before it to read: the error comes after those bytes, where the
        // reader meets it (at its line or offset).
        let (got, err) = read_until_error(&mut raw, HEAD);
        head = got;
        if let Some(e) = err {
            if head.is_empty() {
                return Err(read_err(what(e)));
            }
            let e = what(e);
            cut = Some(format!("read error: {e}"));
            raw = Box::new(Failing(Some(e)));
        }
    }
    // A UTF-8 byte-order mark (as Windows tools write before JSON) is no
    // part of any format: the readers see the text after it. A file read
    // in place by its path would see it: such an input is streamed.
    let bom = head.starts_with(UTF8_BOM);
    if bom {
        head.drain(..UTF8_BOM.len());
    }
    if let Some(message) = cut {
        cut_head(&head, name, message)?;
    }
    let stream: Box<dyn Read + Send> = Box::new(io::Cursor::new(head.clone()).chain(raw));
    Ok(Input {
        name: name.to_string(),
        head,
        file: if compression.is_none() && !bom {
            file
        } else {
            None
        },
        compression,
        stream: BufReader::with_capacity(STREAM_BUFFER, stream),
    })
}

/// A head that decompressing cut short (`message` says how): when its
/// bytes do not tell the format (records cut before the first whole one,
/// say), the input fails with the damage where it lies, at the line (text)
/// or byte offset (binary) the head ends on, not with what the format
/// detection makes of the bytes before it (`holds no records`).
fn cut_head(head: &[u8], name: &str, message: String) -> Result<(), ReadError> {
    if crate::detect::detect(head, name).is_ok() {
        return Ok(());
    }
    let location = match head.contains(&0) {
        false => Location::Line(head.iter().filter(|&&b| b == b'\n').count() as u64 + 1),
        true => Location::Offset(head.len() as u64),
    };
    Err(ReadError::new(name, location, message, true))
}
