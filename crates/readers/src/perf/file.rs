//! A perf.data file's bytes and header: mapped in place, or, when perf was
//! killed or the file was cut, a copy whose header is repaired to cover the
//! complete records. Also the command `perf record -- CMD` ran.

use critpath_trace::{Location, ReadError};
use std::path::Path;
use std::sync::Arc;

/// The bytes of a perf.data file: mapped; mapped up to its last complete
/// record under a repaired header (a cut file); or held in memory.
#[derive(Clone)]
pub enum Bytes {
    Map(Arc<memmap2::Mmap>),
    /// A mapping and how many of its bytes are whole records' (the rest is
    /// cut off). A cut file's (not a pipe-format one's) is private
    /// (copy-on-write), its first page holding the repaired header.
    Cut(Arc<memmap2::Mmap>, usize),
    Owned(Arc<Vec<u8>>),
}

/// How much is read between two releases of the pages behind the reader.
pub const RELEASE_STEP: usize = 32 << 20;

/// [`RELEASE_STEP`] of a walk over a mapped text document (a span file, a
/// trace searched for a step's window).
pub const TEXT_RELEASE_STEP: usize = 8 << 20;

impl Bytes {
    /// Releases the pages from `*released` to `at` once they are `step`
    /// bytes or more, `*released` then moved to `at`: a reader going front
    /// to back calls it as it goes.
    pub fn release_behind(&self, released: &mut usize, at: usize, step: usize) {
        if at >= *released + step {
            self.release(*released, at);
            *released = at;
        }
    }

    /// Tells the kernel the mapped pages of `from..to` are done with: they
    /// leave this process's resident memory (the page cache keeps them), so
    /// that reading a file front to back keeps memory flat. Any whole pages
    /// of the range go, never the first (a cut file's repaired header,
    /// which only this process holds); a copy keeps its bytes.
    pub fn release(&self, from: usize, to: usize) {
        #[cfg(unix)]
        if let Bytes::Map(m) | Bytes::Cut(m, _) = self {
            // SAFETY: sysconf has no preconditions.
            let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) }.max(4096) as usize;
            let (from, to) = (
                from.max(1).div_ceil(page) * page,
                (to.min(m.len()) / page) * page,
            );
            if to > from {
                // SAFETY: the mapping is a read-only map of a file: pages
                // dropped are read again from the file when touched, with
                // the same bytes (the first page, the only one a cut file's
                // mapping changed, is never dropped), so no borrow of the
                // mapping sees a change.
                let _ = unsafe {
                    m.unchecked_advise_range(memmap2::UncheckedAdvice::DontNeed, from, to - from)
                };
            }
        }
        #[cfg(not(unix))]
        let _ = (from, to);
    }
}

impl AsRef<[u8]> for Bytes {
    fn as_ref(&self) -> &[u8] {
        match self {
            Bytes::Map(m) => m,
            Bytes::Cut(m, len) => &m[..*len],
            Bytes::Owned(v) => v,
        }
    }
}

/// What a perf.data file's first bytes are.
pub fn is_perf_data(head: &[u8]) -> bool {
    head.starts_with(b"PERFILE2")
}

/// Where the records of a perf.data file lie, read from its header.
#[derive(Clone, Copy, Debug)]
pub struct Layout {
    pub data_offset: u64,
    pub data_size: u64,
}

/// The size of a perf.data file header (`struct perf_file_header`).
pub const HEADER_SIZE: u64 = 104;

/// The command a `perf record ... -- CMD` recorded, as its comm (the first
/// 15 bytes of the program's file name).
pub fn recorded_command(cmdline: &[&str]) -> Option<String> {
    let i = cmdline.iter().position(|a| *a == "--")?;
    let prog = cmdline.get(i + 1)?;
    let base = prog.rsplit('/').next().unwrap_or(prog);
    Some(base.chars().take(15).collect())
}

/// A fatal problem with the file as a whole.
pub fn file_error(name: &str, msg: impl Into<String>) -> ReadError {
    ReadError::new(name, Location::File, msg, true)
}

/// A perf.data file's bytes, ready for the record readers.
pub struct Mapped {
    pub bytes: Bytes,
    /// The file's size on disk.
    pub size: u64,
    /// Where its (complete) records lie.
    pub layout: Layout,
    /// Set when the file was cut short and its header repaired.
    pub cut: Option<ReadError>,
    /// Set when the file is in perf's pipe format.
    pub pipe: Option<Pipe>,
}

impl Mapped {
    /// Where a pipe-format file's tracepoint layouts lie ([`Pipe`]).
    pub fn layouts(&self) -> Option<(usize, usize)> {
        self.pipe.as_ref().and_then(|p| p.tracing)
    }
}

/// A file in perf's pipe format (`perf record -o -` saved to a file): a
/// 16-byte header, then the event attributes, the header's features and the
/// tracepoint layouts as records (`PERF_RECORD_HEADER_*`) before the
/// events, and no sizes or offsets anywhere.
pub struct Pipe {
    /// Where the tracepoint layouts lie: the bytes after a
    /// HEADER_TRACING_DATA record, which its header's size does not count.
    pub tracing: Option<(usize, usize)>,
    /// The file ends (or is damaged) among the records of its header.
    pub cut: bool,
}

/// A pipe-format file mapped: up to its last complete record, with an
/// error saying so when the last one is cut (perf stopped mid-write; the
/// format has no sizes to tell it otherwise). The walk to that record
/// releases the pages it read.
fn pipe_mapped(map: Arc<memmap2::Mmap>, mut layout: Layout, pipe: Pipe, name: &str) -> Mapped {
    let (size, bytes) = (map.len() as u64, Bytes::Map(map.clone()));
    let end = match pipe.cut {
        true => layout.data_offset,
        false => complete_records_end(&bytes, layout.data_offset),
    };
    if end == size {
        return Mapped {
            bytes,
            size,
            layout,
            cut: None,
            pipe: Some(pipe),
        };
    }
    layout.data_size = end - layout.data_offset;
    let why = "perf's pipe format, whose last record is cut off";
    Mapped {
        bytes: Bytes::Cut(map, end as usize),
        size,
        layout,
        cut: Some(cut_at(name, why, end)),
        pipe: Some(pipe),
    }
}

/// The size of a pipe-format header: magic and this size.
const PIPE_HEADER: u64 = 16;

/// Whether a perf.data file whose first bytes are `head` is in perf's pipe
/// format.
pub fn is_pipe(head: &[u8]) -> bool {
    let size = head
        .get(8..16)
        .map(|x| u64::from_le_bytes(x.try_into().unwrap()));
    is_perf_data(head) && size == Some(PIPE_HEADER)
}

/// The layout of a pipe-format file `b`: its events start after the
/// records that stand for a header (attributes, event types, tracepoint
/// layouts, build ids, features) and end with the file. `None` for a file
/// that is not in the pipe format.
fn pipe_layout(b: &[u8]) -> Option<(Layout, Pipe)> {
    if !is_pipe(b) {
        return None;
    }
    let (mut at, mut tracing, mut cut) = (PIPE_HEADER as usize, None, false);
    while let Some((ty, _, size)) = super::records::header(b, at) {
        if !matches!(ty, 64..=67 | 80) {
            break;
        }
        // HEADER_TRACING_DATA: its size, then as many bytes (8-aligned).
        let layouts = b.get(at + 8..at + 12).filter(|_| ty == 66);
        let n = layouts.map_or(0, |n| u32::from_le_bytes(n.try_into().unwrap()) as usize);
        let next = at + size + n.div_ceil(8) * 8;
        if size < 8 || next > b.len() {
            // Cut (or damaged) among the header's records: no events.
            cut = true;
            break;
        }
        if ty == 66 {
            tracing = Some((at + size, next));
        }
        at = next;
    }
    let layout = Layout {
        data_offset: at as u64,
        data_size: (b.len() - at) as u64,
    };
    Some((layout, Pipe { tracing, cut }))
}

/// A [`Bytes`] read as a stream (by the perf parser), without the bytes of
/// `hole`: a pipe-format file's tracepoint layouts, which follow their
/// record uncounted and would read as records.
pub struct Stream {
    bytes: Bytes,
    /// The position in the stream (the bytes less the hole).
    pos: u64,
    /// Where the hole starts in the bytes, and its length.
    hole: (u64, u64),
    /// The pages before this place in the bytes were released (read front
    /// to back, the stream keeps memory flat as the in-place readers do).
    released: u64,
}

impl Stream {
    pub fn new(bytes: Bytes, hole: Option<(usize, usize)>) -> Stream {
        let hole = hole.map_or((u64::MAX, 0), |(from, to)| {
            (from as u64, to.saturating_sub(from) as u64)
        });
        Stream {
            bytes,
            pos: 0,
            hole,
            released: 0,
        }
    }

    fn len(&self) -> u64 {
        self.bytes.as_ref().len() as u64 - self.hole.1
    }
}

impl std::io::Read for Stream {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        let b = self.bytes.as_ref();
        let (at, until) = if self.pos < self.hole.0 {
            (self.pos, self.hole.0.min(b.len() as u64))
        } else {
            (self.pos + self.hole.1, b.len() as u64)
        };
        let n = (until.saturating_sub(at) as usize).min(out.len());
        if n > 0 {
            out[..n].copy_from_slice(&b[at as usize..at as usize + n]);
        }
        self.pos += n as u64;
        if at < self.released {
            // Sought back: released from here on.
            self.released = at;
        } else if at - self.released >= RELEASE_STEP as u64 {
            self.bytes.release(self.released as usize, at as usize);
            self.released = at;
        }
        Ok(n)
    }
}

impl std::io::Seek for Stream {
    fn seek(&mut self, to: std::io::SeekFrom) -> std::io::Result<u64> {
        use std::io::SeekFrom;
        let pos = match to {
            SeekFrom::Start(p) => Some(p),
            SeekFrom::End(d) => self.len().checked_add_signed(d),
            SeekFrom::Current(d) => self.pos.checked_add_signed(d),
        };
        let pos = pos.ok_or_else(|| {
            std::io::Error::new(std::io::ErrorKind::InvalidInput, "seek before the start")
        })?;
        self.pos = pos;
        Ok(pos)
    }
}

/// Maps the file `path` (called `name` in messages); with its header
/// repaired when that does not cover its records.
pub fn map(path: &Path, name: &str) -> Result<Mapped, ReadError> {
    let f = std::fs::File::open(path).map_err(|e| file_error(name, format!("cannot open: {e}")))?;
    // SAFETY: the file is only read; a file changed underneath is the
    // same risk every mmap-based reader takes.
    let map = unsafe { memmap2::Mmap::map(&f) }
        .map_err(|e| file_error(name, format!("cannot map: {e}")))?;
    // The records are read front to back: the kernel may read ahead
    // further and drop pages already read sooner.
    #[cfg(unix)]
    let _ = map.advise(memmap2::Advice::Sequential);
    let size = map.len() as u64;
    if let Some((layout, pipe)) = pipe_layout(&map) {
        return Ok(pipe_mapped(Arc::new(map), layout, pipe, name));
    }
    let lay = layout(&map).map_err(|m| file_error(name, m))?;
    let data_end = lay.data_offset.saturating_add(lay.data_size);
    let bytes = Bytes::Map(Arc::new(map));
    let whole = lay.data_size != 0 && data_end <= size;
    if whole && features_fit(bytes.as_ref(), data_end) {
        return Ok(Mapped {
            bytes,
            size,
            layout: lay,
            cut: None,
            pipe: None,
        });
    }
    // Every record is there, but the feature sections after them are not:
    // the records are read as those of a file cut after them.
    let (end, cut) = match whole {
        true => (data_end, features_cut(name, size, data_end)),
        false => {
            let end = complete_records_end(&bytes, lay.data_offset);
            (end, cut_error(name, &lay, size, end))
        }
    };
    let bytes =
        repaired(&f, &lay, end).map_err(|e| file_error(name, format!("cannot map: {e}")))?;
    let layout = layout(bytes.as_ref()).expect("repaired header");
    Ok(Mapped {
        bytes,
        size,
        layout,
        cut: Some(cut),
        pipe: None,
    })
}

/// perf was killed or the file was cut: the file mapped privately with its
/// header changed (only that page is copied) to cover the records up to
/// `end` and claim no feature sections.
fn repaired(f: &std::fs::File, lay: &Layout, end: u64) -> std::io::Result<Bytes> {
    // SAFETY: as in `map`; the mapping is private, so the header changed
    // here is this process's alone.
    let mut m = unsafe { memmap2::MmapOptions::new().map_copy(f) }?;
    if (m.len() as u64) < end.max(HEADER_SIZE) {
        let shrunk = "the file became shorter while it was read";
        return Err(std::io::Error::new(
            std::io::ErrorKind::UnexpectedEof,
            shrunk,
        ));
    }
    m[48..56].copy_from_slice(&(end - lay.data_offset.min(end)).to_le_bytes());
    m[72..104].fill(0);
    let m = m.make_read_only()?;
    #[cfg(unix)]
    let _ = m.advise(memmap2::Advice::Sequential);
    Ok(Bytes::Cut(Arc::new(m), end as usize))
}

/// The error that says the file was cut and where its records end.
fn cut_error(name: &str, lay: &Layout, size: u64, end: u64) -> ReadError {
    let data_end = lay.data_offset.saturating_add(lay.data_size);
    let header = if lay.data_size == 0 {
        "its header was never finished: perf was stopped before writing it".to_string()
    } else {
        format!("its header promises {data_end} bytes, the file has {size}")
    };
    cut_at(name, &header, end)
}

/// Whether the feature sections the header of `b` claims (a table of
/// offset and size at `data_end`, one per bit of the header's feature
/// bitmap) lie within the file, and the counts of the event descriptions
/// fit in their section. (The perf.data parser, `linux-perf-data`,
/// allocates what a section or count claims before reading it: one
/// corrupt number would ask for terabytes.)
fn features_fit(b: &[u8], data_end: u64) -> bool {
    let len = b.len() as u64;
    let u = |at: usize| u64::from_le_bytes(b[at..at + 8].try_into().unwrap());
    let features: Vec<usize> = (0..256)
        .filter(|&i| b[72 + i / 8] & (1 << (i % 8)) != 0)
        .collect();
    if data_end.saturating_add(16 * features.len() as u64) > len {
        return false;
    }
    features.iter().enumerate().all(|(k, &feature)| {
        let at = (data_end + 16 * k as u64) as usize;
        let (off, size) = (u(at), u(at + 8));
        match off.checked_add(size) {
            Some(end) if end <= len => {
                feature != EVENT_DESC || event_desc_fits(&b[off as usize..end as usize])
            }
            _ => false,
        }
    })
}

/// The feature number of the event descriptions (perf's HEADER_EVENT_DESC).
const EVENT_DESC: usize = 12;

/// Walks the event description section: `nr`, `attr_size`, then per event
/// the attribute, `nr_ids`, a string (`len` and bytes) and the ids; false
/// when a count runs past the section's end.
fn event_desc_fits(b: &[u8]) -> bool {
    let u32_at = |at: usize| -> Option<usize> {
        Some(u32::from_le_bytes(b.get(at..at.checked_add(4)?)?.try_into().ok()?) as usize)
    };
    let walk = || -> Option<()> {
        let (nr, attr_size) = (u32_at(0)?, u32_at(4)?);
        let mut at = 8usize;
        for _ in 0..nr {
            at = at.checked_add(attr_size)?;
            let ids = u32_at(at)?;
            let text = u32_at(at + 4)?;
            at = (at + 8)
                .checked_add(text)?
                .checked_add(ids.checked_mul(8)?)?;
            if at > b.len() {
                return None;
            }
        }
        Some(())
    };
    walk().is_some()
}

/// The error of a file whose records are whole but whose feature sections
/// are cut (or point outside it).
fn features_cut(name: &str, size: u64, data_end: u64) -> ReadError {
    ReadError::new(
        name,
        Location::Offset(data_end),
        format!(
            "the perf.data file's feature sections after its records are cut short or damaged (the file has {size} bytes, its records end at byte {data_end}): what they held (host name, command line, tracepoint layouts) is lost; every record is read"
        ),
        false,
    )
}

/// The error that says the file was cut (`why`) and where its complete
/// records end.
fn cut_at(name: &str, why: &str, end: u64) -> ReadError {
    ReadError::new(
        name,
        Location::Offset(end),
        format!(
            "the perf.data file is cut short ({why}; complete records end at byte {end}); the analysis covers the records up to there"
        ),
        false,
    )
}

/// The layout of the file `b` from its header: an error says why there is
/// none (the header cut short, or a data section outside the file).
pub fn layout(b: &[u8]) -> Result<Layout, String> {
    let u = |at: usize| u64::from_le_bytes(b[at..at + 8].try_into().unwrap());
    let len = b.len() as u64;
    if len < HEADER_SIZE {
        return Err(format!(
            "the perf.data header is cut short (the file has {len} bytes, a header {HEADER_SIZE})"
        ));
    }
    let (data_offset, data_size) = (u(40), u(48));
    if !(HEADER_SIZE..=len).contains(&data_offset) {
        return Err(format!(
            "the perf.data header is damaged: its data section starts at byte {data_offset}, outside the file ({len} bytes, a header of {HEADER_SIZE})"
        ));
    }
    Ok(Layout {
        data_offset,
        data_size,
    })
}

/// The end of the last complete record from `start`, scanning headers: a
/// record reaching past the file is where it was cut; a header shorter than
/// a header is damage, stepped over as the readers do
/// ([`next_boundary`](super::records::next_boundary)). The pages read are
/// released as it goes.
fn complete_records_end(bytes: &Bytes, start: u64) -> u64 {
    let b = bytes.as_ref();
    let start = start as usize;
    let (mut at, mut released) = (start, start);
    while let Some((_, _, size)) = super::records::header(b, at) {
        bytes.release_behind(&mut released, at, RELEASE_STEP);
        if size < 8 {
            match super::records::next_boundary(b, start, at + 8, (b.len(), b.len())) {
                Some(next) => at = next,
                None => break,
            }
            continue;
        }
        if at + size > b.len() {
            break;
        }
        at += size;
    }
    bytes.release(released, b.len());
    at as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A perf.data header (104 bytes) whose data section starts right
    /// after it and claims `data_size` bytes, then `records`.
    fn file(data_size: u64, records: &[&[u8]]) -> Vec<u8> {
        let mut b = b"PERFILE2".to_vec();
        b.resize(104, 0);
        b[40..48].copy_from_slice(&104u64.to_le_bytes());
        b[48..56].copy_from_slice(&data_size.to_le_bytes());
        b[72..80].fill(0xff);
        for r in records {
            b.extend_from_slice(r);
        }
        b
    }

    /// A record of type `ty` and `size` bytes (header included).
    fn record(ty: u32, size: u16) -> Vec<u8> {
        let mut r = ty.to_le_bytes().to_vec();
        r.extend_from_slice(&0u16.to_le_bytes());
        r.extend_from_slice(&size.to_le_bytes());
        r.resize(size as usize, 0);
        r
    }

    fn mapped(bytes: &[u8]) -> Result<Mapped, ReadError> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("perf.data");
        std::fs::write(&path, bytes).unwrap();
        map(&path, "perf.data")
    }

    /// A stream without its hole reads and seeks as the bytes around it
    /// put end to end, whatever the size of each read.
    #[test]
    fn a_stream_leaves_its_hole_out() {
        use std::io::{Read, Seek, SeekFrom};
        let b: Vec<u8> = (0..100u8).collect();
        let want: Vec<u8> = (0..30u8).chain(50..100).collect();
        for chunk in [1, 7, 30, 64, 200] {
            let mut s = Stream::new(Bytes::Owned(Arc::new(b.clone())), Some((30, 50)));
            let (mut got, mut buf) = (Vec::new(), vec![0u8; chunk]);
            loop {
                let n = s.read(&mut buf).unwrap();
                if n == 0 {
                    break;
                }
                got.extend_from_slice(&buf[..n]);
            }
            assert_eq!(got, want, "reads of {chunk}");
        }
        let mut s = Stream::new(Bytes::Owned(Arc::new(b.clone())), Some((30, 50)));
        assert_eq!(s.seek(SeekFrom::End(-2)).unwrap(), 78);
        let mut two = [0u8; 2];
        s.read_exact(&mut two).unwrap();
        assert_eq!(two, [98, 99]);
        assert_eq!(s.seek(SeekFrom::Start(29)).unwrap(), 29);
        s.read_exact(&mut two).unwrap();
        assert_eq!(two, [29, 50]);
        assert!(s.seek(SeekFrom::Current(-100)).is_err());
        // Without a hole: the bytes.
        let mut s = Stream::new(Bytes::Owned(Arc::new(b.clone())), None);
        let mut all = Vec::new();
        s.read_to_end(&mut all).unwrap();
        assert_eq!(all, b);
    }

    #[test]
    fn a_complete_file_is_mapped_as_it_is() {
        let (a, b) = (record(9, 16), record(9, 24));
        let mut whole = file(40, &[&a, &b]);
        // No feature sections claimed, so none missing.
        whole[72..104].fill(0);
        let m = mapped(&whole).unwrap();
        assert!(m.cut.is_none());
        assert_eq!((m.layout.data_offset, m.layout.data_size), (104, 40));
        assert!(is_perf_data(m.bytes.as_ref()));
    }

    #[test]
    fn whole_records_without_their_feature_sections_are_read_as_a_cut_file() {
        let (a, b) = (record(9, 16), record(9, 24));
        // 64 feature sections claimed, no table after the records.
        let m = mapped(&file(40, &[&a, &b])).unwrap();
        let e = m.cut.expect("cut");
        assert!(
            e.message.contains("feature sections after its records"),
            "{}",
            e.message
        );
        assert_eq!((m.layout.data_offset, m.layout.data_size), (104, 40));
        assert!(m.bytes.as_ref()[72..104].iter().all(|&x| x == 0));
    }

    #[test]
    fn a_cut_files_records_end_past_a_damaged_header() {
        let header = |size: u16| {
            let mut h = 9u32.to_le_bytes().to_vec();
            h.extend([0, 0]);
            h.extend(size.to_le_bytes());
            h.resize((size as usize).max(8), 0);
            h
        };
        let mut b = header(16);
        b.extend(header(4));
        for _ in 0..40 {
            b.extend(header(16));
        }
        let complete = b.len() as u64;
        // The last record, cut.
        b.extend(&header(64)[..20]);
        assert_eq!(
            complete_records_end(&Bytes::Owned(Arc::new(b)), 0),
            complete
        );
    }

    #[test]
    fn an_unfinished_file_is_repaired_up_to_its_last_complete_record() {
        let (a, b) = (record(9, 16), record(9, 24));
        let cut = &record(9, 32)[..10];
        let m = mapped(&file(0, &[&a, &b, cut])).unwrap();
        let e = m.cut.expect("cut");
        assert!(e.message.contains("never finished"), "{}", e.message);
        assert_eq!((m.layout.data_offset, m.layout.data_size), (104, 40));
        // The file itself, mapped (only the header's page is copied).
        assert!(matches!(m.bytes, Bytes::Cut(..)));
        let bytes = m.bytes.as_ref();
        assert_eq!(bytes.len(), 144);
        // No feature sections are claimed any more.
        assert!(bytes[72..104].iter().all(|&x| x == 0));
        assert_eq!(m.size, 154);
    }

    #[test]
    fn a_file_shorter_than_its_header_says_is_cut() {
        let a = record(9, 16);
        let m = mapped(&file(1000, &[&a])).unwrap();
        let e = m.cut.expect("cut");
        assert!(e.message.contains("promises 1104 bytes"), "{}", e.message);
        assert_eq!(m.layout.data_size, 16);
        assert!(mapped(b"PERFILE2").is_err());
    }

    #[test]
    fn a_header_cut_short_or_pointing_outside_the_file_is_an_error() {
        let whole = file(16, &[&record(9, 16)]);
        let e = mapped(&whole[..80]).err().expect("short");
        assert!(
            e.message.contains("has 80 bytes, a header 104"),
            "{}",
            e.message
        );
        for offset in [0u64, 50, 121, u64::MAX - 4] {
            let mut b = whole.clone();
            b[40..48].copy_from_slice(&offset.to_le_bytes());
            let e = mapped(&b).err().expect("outside");
            assert!(
                e.message
                    .contains(&format!("starts at byte {offset}, outside")),
                "{}",
                e.message
            );
        }
        // A size that overflows past the offset is a file cut short.
        let mut b = whole.clone();
        b[48..56].copy_from_slice(&u64::MAX.to_le_bytes());
        assert_eq!(mapped(&b).unwrap().layout.data_size, 16);
    }

    #[test]
    fn thread_names_and_the_commands_thread_come_from_comm_records() {
        // PERF_RECORD_COMM: pid, tid, name; the second one is an exec.
        let comm = |tid: u32, name: &[u8], exec: bool| {
            let mut r = record(3, 32);
            r[4..6].copy_from_slice(&(if exec { 0x2000u16 } else { 0 }).to_le_bytes());
            r[8..12].copy_from_slice(&tid.to_le_bytes());
            r[12..16].copy_from_slice(&tid.to_le_bytes());
            r[16..16 + name.len()].copy_from_slice(name);
            r
        };
        let (a, b) = (comm(5, b"bash", false), comm(6, b"sleep3", true));
        let bytes = file(64, &[&a, &b]);
        let lay = layout(&bytes).unwrap();
        let bytes = Bytes::Owned(Arc::new(bytes));
        use crate::perf::names::{scan_names, Found, Wanted};
        let comm = Some("sleep3");
        let what = (
            Wanted::Exec {
                comm,
                recorder: None,
            },
            true,
        );
        let Found { names, target, .. } = scan_names(&bytes, &lay, what, (0, true));
        assert_eq!(names.get(&5).map(String::as_str), Some("bash"));
        assert_eq!(names.get(&6).map(String::as_str), Some("sleep3"));
        assert_eq!(target, Some((6, 0)));
        let cmd = recorded_command(&["perf", "record", "--", "/tmp/bin/a-very-long-program-name"]);
        assert_eq!(cmd.as_deref(), Some("a-very-long-pro"));
        assert_eq!(recorded_command(&["perf", "record"]), None);
    }

    #[test]
    fn released_pages_read_back_the_same() {
        let dir = std::env::temp_dir().join(format!("critpath-release-{}", std::process::id()));
        let data: Vec<u8> = (0..5 * 4096 + 100).map(|i| (i * 7 % 251) as u8).collect();
        std::fs::write(&dir, &data).unwrap();
        let f = std::fs::File::open(&dir).unwrap();
        // SAFETY: a file of this test's own, not changed while mapped.
        let m = Bytes::Map(Arc::new(unsafe { memmap2::Mmap::map(&f) }.unwrap()));
        assert_eq!(m.as_ref(), &data[..]);
        // Ranges not on page boundaries, past the end, and empty.
        m.release(100, 3 * 4096 + 5);
        m.release(0, usize::MAX);
        m.release(9, 9);
        assert_eq!(m.as_ref(), &data[..]);
        std::fs::remove_file(&dir).unwrap();
    }
}
