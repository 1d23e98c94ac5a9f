//! The native `.cpt` format: compact, streamable and self-describing.
//!
//! ```text
//! file    = header chunk* end
//! header  = "CRITPATH" version:u16le flags:u16le reserved:u32le      (16 bytes)
//! chunk   = 'C' codec:u8 0 0 raw_len:u32le stored_len:u32le crc32:u32le stored
//!           codec 0 = stored raw, 1 = zstd; crc32 covers the stored bytes
//! end     = 'E' 0 0 0 records:u64le reserved:u32le                   (16 bytes)
//! payload = base_t:varint op*
//! op      = 0x0F len:varint utf8         defines the next string symbol
//!                                         (symbol 0 is always "local")
//!         | 0x1F len:varint utf8         what a converted trace carries
//!                                         beside its records (see below)
//!         | kind|flags dt:varint [sys] who fields...
//! ```
//!
//! Records are in time order across the whole file; `dt` is the varint
//! difference from the previous record's time (from `base_t` for a chunk's
//! first). The low nibble of an op byte is the record kind (state, wait,
//! send, recv, end, call, ret, push, pop, switch, then 10 = a `recv` whose
//! state waited for the link, so files without it read as before; 11, 12
//! and 13 = a send, recv and waited recv whose string id follows inline as
//! `len:varint utf8`, so ids never enter the string table and a reader's
//! memory stays flat however many messages the trace holds); bit 0x10 says the subject
//! is a thread, 0x20 a CPU (else an SM), 0x40 that a non-local `sys`
//! follows, 0x80 that a link id is a string (in a `held`, kind 14, that the
//! holder's run ended). A `wait` carries a byte of
//! flags: 1 = `on`, 2 = `on_state`, 4 = `on_sys`. Strings are defined once,
//! before first use, so the file streams in one pass, and a cut file yields
//! every whole chunk before the cut.
//!
//! A converted trace keeps what its source said beside its records
//! ([`crate::meta`]): its scope (a recording's command), in an op before
//! the first record, and its source's summary (diagnostics, the recorded
//! program, links it inferred), in ops after the last, each a JSON object.

use crate::meta::{self, Carried};
use critpath_trace::{
    Event, Interner, LinkId, Location, Pos, ReadError, Record, RecordSource, Scope, Summary, Sym,
    Who,
};
use std::io::{self, Read, Write};

pub const MAGIC: &[u8; 8] = b"CRITPATH";
pub const VERSION: u16 = 1;
/// Payload bytes at which the writer closes a chunk: small enough that
/// decompressing one (a few tenths of a millisecond) is a hitch the
/// reader's lead over the engine absorbs, large enough that zstd
/// compresses as well as with larger ones (1.84 bytes a record on the
/// benchmark trace, 1.83 at 1 MiB).
const CHUNK_RAW: usize = 1 << 18;
const OP_DEFSTR: u8 = 0x0F;
/// A scope or summary object (kind 15 with the thread bit: no record).
const OP_META: u8 = 0x1F;
/// Header flag: the first chunk starts with a scope object.
const H_SCOPE: u16 = 2;
/// Why a scope is ignored: the header does not announce it, or records
/// came before it.
const UNANNOUNCED: &str = "a scope that the file's header does not announce (flag bit 1)";
const AFTER_RECORDS: &str =
    "(a file's scope comes before its first record, and concatenated files have the first one's)";
const F_THREAD: u8 = 0x10;
const F_CPU: u8 = 0x20;
const F_SYS: u8 = 0x40;
const F_STRID: u8 = 0x80;
/// The kind of a `recv` whose state waited for the link.
const K_RECV_WAITED: u8 = 10;
/// A `send` with an inline string id; then `recv`, and waited `recv`.
const K_SEND_INLINE: u8 = 11;
const K_RECV_INLINE: u8 = 12;
const K_RECV_WAITED_INLINE: u8 = 13;
/// A `held` point: the SM held by, then its state (the last kind: 15 is a
/// string definition).
const K_HELD: u8 = 14;
/// The kind of a `recv`.
const K_RECV: u8 = 3;

/// Chunk compression.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Codec {
    None,
    Zstd,
}

#[inline]
fn put_varint(buf: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        buf.push((v as u8) | 0x80);
        v >>= 7;
    }
    buf.push(v as u8);
}

#[inline]
fn put_text(buf: &mut Vec<u8>, text: &str) {
    put_varint(buf, text.len() as u64);
    buf.extend_from_slice(text.as_bytes());
}

/// Writes a `.cpt` file.
pub struct CptWriter<W: Write> {
    out: W,
    codec: Codec,
    buf: Vec<u8>,
    zbuf: Vec<u8>,
    /// Input symbol -> file symbol (u32::MAX when not yet defined).
    map: Vec<u32>,
    next_sym: u32,
    last_t: u64,
    chunk_started: bool,
    records: u64,
}

impl<W: Write> CptWriter<W> {
    pub fn new(out: W, codec: Codec) -> io::Result<Self> {
        Self::with_scope(out, codec, &Scope::default())
    }

    /// A writer whose records have `scope` (a recording's: see
    /// [`crate::meta`]): the header says so, and the scope comes first.
    pub fn with_scope(mut out: W, codec: Codec, scope: &Scope) -> io::Result<Self> {
        let text = meta::scope_text(scope);
        let flags = u16::from(codec == Codec::Zstd) | (u16::from(text.is_some()) * H_SCOPE);
        let mut h = Vec::with_capacity(16);
        h.extend_from_slice(MAGIC);
        h.extend_from_slice(&VERSION.to_le_bytes());
        h.extend_from_slice(&flags.to_le_bytes());
        h.extend_from_slice(&0u32.to_le_bytes());
        out.write_all(&h)?;
        let mut w = CptWriter {
            out,
            codec,
            buf: Vec::with_capacity(CHUNK_RAW + 4096),
            zbuf: Vec::new(),
            map: vec![0],
            next_sym: 1,
            last_t: 0,
            chunk_started: false,
            records: 0,
        };
        if let Some(text) = text {
            w.meta_op(&text)?;
        }
        Ok(w)
    }

    #[inline]
    fn sym(&mut self, s: Sym, strings: &Interner) -> u64 {
        let i = s.index();
        if i >= self.map.len() {
            self.map.resize(i + 1, u32::MAX);
        }
        if self.map[i] == u32::MAX {
            self.buf.push(OP_DEFSTR);
            put_text(&mut self.buf, strings.resolve(s));
            self.map[i] = self.next_sym;
            self.next_sym += 1;
        }
        u64::from(self.map[i])
    }

    /// Writes the summary of the source the records came from and the
    /// links it inferred, after the last record; nothing for none.
    pub fn summary(&mut self, s: &Summary, inferred: &[(String, u64)]) -> io::Result<()> {
        for text in meta::summary_texts(s, inferred) {
            self.meta_op(&text)?;
        }
        Ok(())
    }

    fn meta_op(&mut self, text: &str) -> io::Result<()> {
        if !self.chunk_started {
            put_varint(&mut self.buf, self.last_t);
            self.chunk_started = true;
        }
        self.buf.push(OP_META);
        put_text(&mut self.buf, text);
        if self.buf.len() >= CHUNK_RAW {
            self.flush_chunk()?;
        }
        Ok(())
    }

    /// Appends a record. Records must come in time order.
    pub fn write(&mut self, r: &Record, strings: &Interner) -> io::Result<()> {
        if !self.chunk_started {
            put_varint(&mut self.buf, self.last_t);
            self.chunk_started = true;
        }
        // Define every string this record uses before its op.
        let p = r.ev.parts();
        let kind = if p.waited && p.kind == K_RECV {
            K_RECV_WAITED
        } else {
            p.kind
        };
        // A `held` whose holder's run ended says so in the string-id bit.
        let ended = if p.waited && p.kind == K_HELD {
            F_STRID
        } else {
            0
        };
        let [a, b, c, d] = p.syms;
        let (who, id) = (p.who, p.id);
        let sys = if r.sys != Sym::LOCAL {
            Some(self.sym(r.sys, strings))
        } else {
            None
        };
        let (wflag, w) = match who {
            Some(Who::Sm(s)) => (0, Some(self.sym(s, strings))),
            Some(Who::Thread(s)) => (F_THREAD, Some(self.sym(s, strings))),
            Some(Who::Cpu(s)) => (F_CPU, Some(self.sym(s, strings))),
            None => (0, None),
        };
        let a = a.map(|s| self.sym(s, strings));
        let b = b.map(|s| self.sym(s, strings));
        let c = c.map(|s| self.sym(s, strings));
        let d = d.map(|s| self.sym(s, strings));
        let (idv, inline) = match id {
            Some(LinkId::Num(n)) => (Some(n), None),
            Some(LinkId::Str { sym, .. }) => (None, Some(strings.resolve(sym))),
            None => (None, None),
        };
        // String ids go inline: kinds 2, 3 and 10 become 11, 12 and 13.
        let kind = match (inline.is_some(), kind) {
            (true, 2) => K_SEND_INLINE,
            (true, 3) => K_RECV_INLINE,
            (true, _) => K_RECV_WAITED_INLINE,
            (false, k) => k,
        };
        let dt = r.t.checked_sub(self.last_t).ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "record at t={} comes after t={}: not in time order",
                    r.t, self.last_t
                ),
            )
        })?;
        self.buf
            .push(kind | wflag | ended | if sys.is_some() { F_SYS } else { 0 });
        put_varint(&mut self.buf, dt);
        if let Some(s) = sys {
            put_varint(&mut self.buf, s);
        }
        if let Some(w) = w {
            put_varint(&mut self.buf, w);
        }
        if kind == 1 {
            self.buf.push(
                u8::from(b.is_some()) | (u8::from(c.is_some()) << 1) | (u8::from(d.is_some()) << 2),
            );
        }
        if let Some(text) = inline {
            put_text(&mut self.buf, text);
        }
        for v in [idv, a, b, c, d].into_iter().flatten() {
            put_varint(&mut self.buf, v);
        }
        self.last_t = r.t;
        self.records += 1;
        if self.buf.len() >= CHUNK_RAW {
            self.flush_chunk()?;
        }
        Ok(())
    }

    fn flush_chunk(&mut self) -> io::Result<()> {
        if self.buf.is_empty() {
            return Ok(());
        }
        let (codec, stored): (u8, &[u8]) = match self.codec {
            Codec::None => (0, &self.buf),
            Codec::Zstd => {
                self.zbuf = zstd::bulk::compress(&self.buf, 3)?;
                (1, &self.zbuf)
            }
        };
        let mut h = [0u8; 16];
        h[0] = b'C';
        h[1] = codec;
        h[4..8].copy_from_slice(&(self.buf.len() as u32).to_le_bytes());
        h[8..12].copy_from_slice(&(stored.len() as u32).to_le_bytes());
        h[12..16].copy_from_slice(&crc32fast::hash(stored).to_le_bytes());
        self.out.write_all(&h)?;
        self.out.write_all(stored)?;
        self.buf.clear();
        self.chunk_started = false;
        Ok(())
    }

    /// Writes the last chunk and the end marker.
    pub fn finish(mut self) -> io::Result<W> {
        self.flush_chunk()?;
        let mut e = [0u8; 16];
        e[0] = b'E';
        e[4..12].copy_from_slice(&self.records.to_le_bytes());
        self.out.write_all(&e)?;
        self.out.flush()?;
        Ok(self.out)
    }
}

/// Records read at once, with their places.
type Records = Vec<(Record, Pos)>;

/// Reads a `.cpt` file.
pub struct CptReader<R: Read> {
    input: R,
    name: String,
    offset: u64,
    raw: Vec<u8>,
    stored: Vec<u8>,
    /// The zstd context, made at the first compressed chunk and kept, as
    /// are both buffers: a chunk allocates nothing.
    zstd: Option<zstd::bulk::Decompressor<'static>>,
    pos: usize,
    chunk_at: u64,
    last_t: u64,
    strings: Interner,
    record: u64,
    done: bool,
    /// Files concatenated after the first (`cat a.cpt b.cpt`): each has its
    /// own string symbols, which `map` turns into ours (empty for the
    /// first file, whose symbols are ours).
    map: Vec<Sym>,
    /// Where the file being read starts, and the records read before it
    /// (what its end marker counts is the rest).
    file_at: u64,
    file_first: u64,
    /// The latest time of the files before this one: a record before it
    /// is out of time order.
    floor: u64,
    /// An error to give at the next call (after one given first).
    pending: Option<ReadError>,
    /// What the file carries beside its records (see [`crate::meta`]):
    /// its scope, which the header announces, and its summary.
    announced: bool,
    carried: Carried,
    /// The head was read up to the first record for the scope (see
    /// [`RecordSource::scope`]), and what that read gave, held for the
    /// next.
    head_read: bool,
    held: Option<(Result<(), ReadError>, Records)>,
}

/// Checks the 16-byte header `h` of a file at byte offset `at`, of which
/// `got` bytes were present.
fn check_header(h: &[u8; 16], got: usize, name: &str, at: u64) -> Result<(), ReadError> {
    if got < 16 || &h[..8] != MAGIC {
        return Err(ReadError::new(
            name,
            Location::Offset(at),
            format!("expected a .cpt header (magic CRITPATH, 16 bytes), found {got} bytes"),
            true,
        ));
    }
    let version = u16::from_le_bytes([h[8], h[9]]);
    if version != VERSION {
        return Err(ReadError::new(
            name,
            Location::Offset(at + 8),
            format!(".cpt version {version} is not supported (this build reads version {VERSION})"),
            true,
        ));
    }
    Ok(())
}

impl<R: Read> CptReader<R> {
    /// Reads and checks the header.
    pub fn new(mut input: R, name: &str) -> Result<Self, ReadError> {
        let mut h = [0u8; 16];
        let got = read_full(&mut input, &mut h).map_err(|e| {
            ReadError::new(name, Location::Offset(0), format!("read error: {e}"), true)
        })?;
        check_header(&h, got, name, 0)?;
        let flags = u16::from_le_bytes([h[10], h[11]]);
        Ok(CptReader {
            announced: flags & H_SCOPE != 0,
            input,
            name: name.to_string(),
            offset: 16,
            raw: Vec::new(),
            stored: Vec::new(),
            zstd: None,
            pos: 0,
            chunk_at: 16,
            last_t: 0,
            strings: Interner::new(),
            record: 0,
            done: false,
            map: Vec::new(),
            file_at: 0,
            file_first: 0,
            floor: 0,
            pending: None,
            carried: Carried::default(),
            head_read: false,
            held: None,
        })
    }

    /// The end marker at `at` (its 16 bytes `h`): its count is checked
    /// against the records of the file, and what follows it is another
    /// `.cpt` to read on (true), the end of the input (false), or an error.
    fn end_marker(&mut self, at: u64, h: &[u8; 16]) -> Result<bool, ReadError> {
        let said = u64::from_le_bytes(h[4..12].try_into().unwrap());
        let read = self.record - self.file_first;
        let count = (said != read).then(|| {
            let msg = format!("the end marker says the file holds {said} records, but {read} were read (the file starting at byte offset {}); the records read are analyzed", self.file_at);
            ReadError::new(&self.name, Location::Offset(at), msg, false)
        });
        let next = self.offset;
        let mut head = [0u8; 16];
        let got = read_full(&mut self.input, &mut head)
            .map_err(|e| self.fatal(next, format!("read error: {e}")))?;
        self.offset += got as u64;
        let more = if got == 0 {
            self.done = true;
            false
        } else if got >= 8 && head[..8] == MAGIC[..] {
            // Another file, as `cat a.cpt b.cpt` makes: read on.
            check_header(&head, got, &self.name, next).inspect_err(|_| self.done = true)?;
            self.map = vec![Sym::LOCAL];
            self.file_at = next;
            self.file_first = self.record;
            self.floor = self.floor.max(self.last_t);
            true
        } else {
            let rest = io::copy(&mut self.input, &mut io::sink())
                .map_err(|e| self.fatal(next, format!("read error: {e}")))?;
            self.offset += rest;
            let n = got as u64 + rest;
            let msg = format!("{n} bytes after the end marker at byte offset {at} not read: they do not begin another .cpt file (magic CRITPATH)");
            let junk = self.fatal(next, msg);
            if count.is_none() {
                return Err(junk);
            }
            self.done = false;
            self.pending = Some(junk);
            false
        };
        match count {
            Some(e) => Err(e),
            None => Ok(more),
        }
    }

    fn fatal(&mut self, at: u64, msg: String) -> ReadError {
        self.done = true;
        ReadError::new(&self.name, Location::Offset(at), msg, true)
    }

    /// Loads the next chunk; false at the end marker.
    fn load_chunk(&mut self) -> Result<bool, ReadError> {
        if let Some(e) = self.pending.take() {
            self.done = e.fatal;
            return Err(e);
        }
        let at = self.offset;
        let mut h = [0u8; 16];
        let got = read_full(&mut self.input, &mut h)
            .map_err(|e| self.fatal(at, format!("read error: {e}")))?;
        if got == 0 {
            return Err(self.fatal(at, format!("truncated: the file ends at byte {at} without its end marker (expected a chunk header or the end marker); {} records read before the cut", self.record)));
        }
        if got < 16 {
            return Err(self.fatal(at, format!("truncated: the file ends inside a chunk header (16 bytes expected, {got} present); {} records read before the cut", self.record)));
        }
        self.offset += 16;
        match h[0] {
            b'E' => return self.end_marker(at, &h),
            b'C' => {}
            other => {
                return Err(self.fatal(at, format!("corrupt: expected a chunk header ('C') or the end marker ('E'), found byte 0x{other:02x}")));
            }
        }
        let codec = h[1];
        let raw_len = u32::from_le_bytes(h[4..8].try_into().unwrap()) as usize;
        let stored_len = u32::from_le_bytes(h[8..12].try_into().unwrap()) as usize;
        let crc = u32::from_le_bytes(h[12..16].try_into().unwrap());
        if codec > 1 || raw_len > 64 << 20 || stored_len > 64 << 20 {
            return Err(self.fatal(at, format!("corrupt chunk header (codec {codec}, raw length {raw_len}, stored length {stored_len})")));
        }
        self.stored.resize(stored_len, 0);
        let got = read_full(&mut self.input, &mut self.stored)
            .map_err(|e| self.fatal(at, format!("read error: {e}")))?;
        if got < stored_len {
            let end = self.offset + got as u64;
            return Err(self.fatal(
                at,
                format!("truncated: the chunk starting here needs {stored_len} bytes but the file ends at byte {end}; {} records read before the cut", self.record),
            ));
        }
        self.offset += stored_len as u64;
        if crc32fast::hash(&self.stored) != crc {
            return Err(self.fatal(at, format!("corrupt: the chunk starting here fails its checksum; {} records read before it", self.record)));
        }
        if codec == 1 {
            self.inflate(at, raw_len)?;
        } else {
            std::mem::swap(&mut self.raw, &mut self.stored);
        }
        if self.raw.len() != raw_len {
            return Err(self.fatal(
                at,
                format!(
                    "corrupt: chunk holds {} bytes, header says {raw_len}",
                    self.raw.len()
                ),
            ));
        }
        self.chunk_at = at;
        self.pos = 0;
        match vint(&self.raw, &mut self.pos) {
            Some(t) => self.last_t = t,
            None => return Err(self.fatal(at, "corrupt: the chunk has no base time".into())),
        }
        Ok(true)
    }

    /// Decompresses the stored zstd chunk at `at` into `raw`, which holds
    /// its `raw_len` bytes after (more or fewer: the caller checks).
    fn inflate(&mut self, at: u64, raw_len: usize) -> Result<(), ReadError> {
        self.raw.clear();
        self.raw.reserve(raw_len);
        let ctx = match &mut self.zstd {
            Some(ctx) => ctx,
            None => {
                let ctx = zstd::bulk::Decompressor::new()
                    .map_err(|e| self.fatal(at, format!("zstd: {e}")))?;
                self.zstd.insert(ctx)
            }
        };
        match ctx.decompress_to_buffer(&self.stored[..], &mut self.raw) {
            Ok(_) => Ok(()),
            Err(e) => Err(self.fatal(at, format!("corrupt: zstd chunk does not decompress: {e}"))),
        }
    }
}

/// Reads a varint at `buf[*pos..]`; `None` when it runs off the end or
/// is longer than 64 bits.
#[inline(always)]
fn vint(buf: &[u8], pos: &mut usize) -> Option<u64> {
    let b = *buf.get(*pos)?;
    *pos += 1;
    if b < 0x80 {
        return Some(u64::from(b));
    }
    let mut v = u64::from(b & 0x7f);
    let mut shift = 7;
    loop {
        let b = *buf.get(*pos)?;
        *pos += 1;
        v |= u64::from(b & 0x7f) << shift;
        if b < 0x80 {
            return Some(v);
        }
        shift += 7;
        if shift > 63 {
            return None;
        }
    }
}

/// The text at `buf[*pos..]` (its length, then its UTF-8 bytes).
#[inline(always)]
fn text_at<'b>(buf: &'b [u8], pos: &mut usize) -> Option<&'b str> {
    let len = usize::try_from(vint(buf, pos)?).ok()?;
    let text = buf.get(*pos..pos.checked_add(len)?)?;
    *pos += len;
    critpath_trace::strings::utf8(text)
}

/// The symbol at `buf[*pos..]`: below `direct` the table's own, else one
/// of a concatenated file's, through `map`.
#[inline(always)]
fn sym_at(buf: &[u8], pos: &mut usize, direct: u64, map: &[Sym]) -> Option<Sym> {
    let v = vint(buf, pos)?;
    if v < direct {
        Some(Sym(v as u32))
    } else {
        mapped(map, v)
    }
}

/// Symbol `v` of a concatenated file in the table (`map`), if defined.
#[cold]
#[inline(never)]
fn mapped(map: &[Sym], v: u64) -> Option<Sym> {
    map.get(usize::try_from(v).ok()?).copied()
}

/// Decodes the record op at `buf[*pos..]` (not a string definition).
/// `None` means the bytes are not a valid record: cut, unknown kind, or a
/// string used before its definition.
/// `map` turns the symbols of a concatenated file into the table's (empty:
/// they are the table's).
#[inline(always)]
fn decode(
    buf: &[u8],
    pos: &mut usize,
    last_t: u64,
    strings: &mut Interner,
    map: &[Sym],
) -> Option<Record> {
    // Symbols below `direct` are the table's own; a concatenated file's
    // go through `map`, off the hot path.
    let direct = if map.is_empty() {
        strings.len() as u64
    } else {
        0
    };

    let op = *buf.get(*pos)?;
    *pos += 1;
    let kind = op & 0x0f;
    let t = last_t.checked_add(vint(buf, pos)?)?;
    // Times past i64::MAX are refused, as every reader refuses them.
    if t > i64::MAX as u64 {
        return None;
    }
    let sys = if op & F_SYS != 0 {
        sym_at(buf, pos, direct, map)?
    } else {
        Sym::LOCAL
    };
    let who = if kind <= 6 || (K_RECV_WAITED..=K_HELD).contains(&kind) {
        let s = sym_at(buf, pos, direct, map)?;
        if op & F_THREAD != 0 {
            Who::Thread(s)
        } else if op & F_CPU != 0 {
            Who::Cpu(s)
        } else {
            Who::Sm(s)
        }
    } else {
        Who::Sm(Sym::LOCAL)
    };
    let ev = match kind {
        0 => Event::State {
            who,
            state: sym_at(buf, pos, direct, map)?,
        },
        1 => decode_wait(buf, pos, who, (direct, map))?,
        2 | 3 | K_RECV_WAITED => decode_link(buf, pos, op, who, strings, (direct, map))?,
        K_SEND_INLINE..=K_RECV_WAITED_INLINE => {
            decode_inline(buf, pos, kind, who, strings, (direct, map))?
        }
        K_HELD => Event::Held {
            who,
            on: sym_at(buf, pos, direct, map)?,
            on_state: sym_at(buf, pos, direct, map)?,
            ended: op & F_STRID != 0,
        },
        4 => Event::End { who },
        5 => Event::Call {
            who,
            func: sym_at(buf, pos, direct, map)?,
        },
        6 => Event::Ret {
            who,
            func: sym_at(buf, pos, direct, map)?,
        },
        7 => Event::Push {
            thread: sym_at(buf, pos, direct, map)?,
            sm: sym_at(buf, pos, direct, map)?,
        },
        8 => Event::Pop {
            thread: sym_at(buf, pos, direct, map)?,
            sm: sym_at(buf, pos, direct, map)?,
        },
        9 => Event::Switch {
            cpu: sym_at(buf, pos, direct, map)?,
            thread: sym_at(buf, pos, direct, map)?,
        },
        _ => return None,
    };
    Some(Record { t, sys, ev })
}

/// The rest of a wait (kind 1): its flags, state and what it waits on.
#[inline(always)]
fn decode_wait(
    buf: &[u8],
    pos: &mut usize,
    who: Who,
    (direct, map): (u64, &[Sym]),
) -> Option<Event> {
    let flags = *buf.get(*pos)?;
    *pos += 1;
    let state = sym_at(buf, pos, direct, map)?;
    let mut opt = |bit: u8| -> Option<Option<Sym>> {
        Some(if flags & bit != 0 {
            Some(sym_at(buf, pos, direct, map)?)
        } else {
            None
        })
    };
    let on = opt(1)?;
    let on_state = opt(2)?;
    let on_sys = opt(4)?;
    Some(Event::Wait {
        who,
        state,
        on,
        on_sys,
        on_state,
    })
}

/// The rest of a send or recv (kinds 2, 3 and 10) whose id is a number or
/// a string of the table.
#[inline(always)]
fn decode_link(
    buf: &[u8],
    pos: &mut usize,
    op: u8,
    who: Who,
    strings: &Interner,
    (direct, map): (u64, &[Sym]),
) -> Option<Event> {
    let kind = op & 0x0f;
    let id = if op & F_STRID != 0 {
        let sym = sym_at(buf, pos, direct, map)?;
        LinkId::Str {
            sym,
            key: critpath_trace::strings::link_key(strings.resolve(sym)),
        }
    } else {
        LinkId::Num(vint(buf, pos)?)
    };
    Some(if kind == 2 {
        Event::Send { who, id }
    } else {
        Event::Recv {
            who,
            id,
            state: sym_at(buf, pos, direct, map)?,
            waited: kind == K_RECV_WAITED,
        }
    })
}

/// The rest of a send or recv whose string id is inline (kinds 11 to 13):
/// the id gets a transient symbol, never a place in the string table.
#[inline(always)]
fn decode_inline(
    buf: &[u8],
    pos: &mut usize,
    kind: u8,
    who: Who,
    strings: &mut Interner,
    (direct, map): (u64, &[Sym]),
) -> Option<Event> {
    let id = strings.transient_link(text_at(buf, pos)?);
    if kind == K_SEND_INLINE {
        return Some(Event::Send { who, id });
    }
    let state = sym_at(buf, pos, direct, map)?;
    Some(Event::Recv {
        who,
        id,
        state,
        waited: kind == K_RECV_WAITED_INLINE,
    })
}

impl<R: Read> CptReader<R> {
    /// Defines the string at `self.pos` (just after its op byte).
    fn define_string(&mut self) -> Result<(), ReadError> {
        let start = self.pos;
        let text = vint(&self.raw, &mut self.pos)
            .and_then(|len| self.raw.get(self.pos..self.pos.checked_add(len as usize)?))
            .and_then(|b| std::str::from_utf8(b).ok())
            .map(str::to_string);
        match text {
            Some(text) => {
                self.pos += text.len();
                if self.map.is_empty() {
                    self.strings.push(&text);
                } else {
                    // A concatenated file's names are ours if we have them.
                    let sym = self.strings.intern(&text);
                    self.map.push(sym);
                }
                Ok(())
            }
            None => {
                let at = self.chunk_at;
                Err(self.fatal(
                    at,
                    format!("corrupt: bad string definition at payload offset {start} of the chunk starting here"),
                ))
            }
        }
    }

    /// Takes the scope or summary object at `self.pos` (just after its op
    /// byte): a scope only before the first record (one after it is an
    /// error, and ignored).
    fn read_meta(&mut self) -> Result<(), ReadError> {
        let start = self.pos;
        let at = self.chunk_at;
        let Some(text) = text_at(&self.raw, &mut self.pos) else {
            let msg = format!("corrupt: a scope or summary object cut short at payload offset {start} of the chunk starting here; {} records read before it", self.record);
            return Err(self.fatal(at, msg));
        };
        let (announced, record) = (self.announced, self.record);
        let too_late = || match (announced, record) {
            (false, _) => Some(UNANNOUNCED.to_string()),
            (true, 0) => None,
            (true, n) => Some(format!("a scope after record {n} {AFTER_RECORDS}")),
        };
        self.carried.take(text.as_bytes(), too_late).map_err(|m| {
            let msg =
                format!("{m} (at payload offset {start} of the chunk starting here); ignored");
            ReadError::new(&self.name, Location::Offset(at), msg, false).saying_outcome()
        })
    }

    /// A record of a concatenated file earlier than the files before it.
    fn before_floor(&self, t: u64) -> ReadError {
        let msg = format!("record {} (t={t}) of the .cpt file concatenated at byte offset {} is before t={}, the latest time of the file before it (records must be in time order); skipped", self.record, self.file_at, self.floor);
        ReadError::new(&self.name, Location::Offset(self.chunk_at), msg, false).saying_outcome()
    }

    fn bad_record(&mut self, start: usize) -> ReadError {
        let at = self.chunk_at;
        let op = self.raw[start];
        let what = if op & 0x0f > K_HELD {
            format!("unknown record kind {}", op & 0x0f)
        } else {
            "a record that is cut short, uses a string before defining it, or has a time past 2^63 - 1 ns".to_string()
        };
        self.fatal(
            at,
            format!("corrupt: {what} at payload offset {start} of the chunk starting here; {} records read before it", self.record),
        )
    }
}

impl<R: Read> RecordSource for CptReader<R> {
    fn next_batch(&mut self, out: &mut Vec<(Record, Pos)>, max: usize) -> Result<(), ReadError> {
        out.clear();
        if let Some((res, first)) = self.held.take() {
            out.extend(first);
            res?;
        }
        while out.len() < max {
            if self.pos >= self.raw.len() {
                if self.done || !self.load_chunk()? {
                    break;
                }
                continue;
            }
            match self.raw[self.pos] {
                OP_DEFSTR => {
                    self.pos += 1;
                    self.define_string()?;
                    continue;
                }
                OP_META => {
                    self.pos += 1;
                    self.read_meta()?;
                    continue;
                }
                _ => {}
            }
            let start = self.pos;
            let map = &self.map;
            match decode(
                &self.raw,
                &mut self.pos,
                self.last_t,
                &mut self.strings,
                map,
            ) {
                Some(r) => {
                    self.last_t = r.t;
                    self.record += 1;
                    if r.t < self.floor {
                        return Err(self.before_floor(r.t));
                    }
                    out.push((r, Pos::record(self.record)));
                }
                None => return Err(self.bad_record(start)),
            }
        }
        Ok(())
    }

    fn next_record(&mut self) -> Result<Option<(Record, Pos)>, ReadError> {
        let mut one = Vec::with_capacity(1);
        self.next_batch(&mut one, 1)?;
        Ok(one.pop())
    }

    fn strings(&self) -> &Interner {
        &self.strings
    }

    fn bytes_read(&self) -> u64 {
        self.offset
    }

    /// The scope a converted trace carries (none for other files).
    fn scope(&mut self) -> Scope {
        // Announced: ops up to the first record are read for it, and that
        // record held for the next read.
        if self.announced && !std::mem::replace(&mut self.head_read, true) && self.record == 0 {
            let mut first = Vec::with_capacity(1);
            let res = self.next_batch(&mut first, 1);
            self.held = Some((res, first));
        }
        self.carried.scope.clone()
    }

    fn summary(&mut self) -> Summary {
        std::mem::take(&mut self.carried.summary)
    }

    fn inferred_links(&mut self) -> Vec<(String, u64)> {
        std::mem::take(&mut self.carried.inferred)
    }
}

fn read_full<R: Read>(r: &mut R, buf: &mut [u8]) -> io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match r.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}
