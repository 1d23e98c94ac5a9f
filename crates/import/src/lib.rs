//! critpath-import: opens any trace critpath reads, each reader behind
//! [`critpath_trace::RecordSource`], and detection of a file's format from
//! its content (never its name). A trace may come on standard input (`-`)
//! or a pipe, and may be compressed (gzip, zstd, xz): see [`input`].

pub mod input;
mod kineto;
pub use kineto::{all_kineto, is_kineto, open_gpu};
pub mod multi;
mod perfcheck;

use critpath_trace::{Interner, Location, Pos, ReadError, Record, RecordSource};
use std::io::Read;
use std::path::Path;

use critpath_os::{AnnotSource, PerfSource};
use critpath_readers::json::Imported;
use critpath_readers::{annot, chrome, cpt, spans};
use critpath_readers::{CptReader, JsonlReader};
pub use input::{open_input, Compression, Input, Stream};

/// The formats critpath knows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Jsonl,
    Cpt,
    /// Chrome / Perfetto trace JSON.
    Chrome,
    /// OpenTelemetry (OTLP JSON) or Jaeger JSON spans.
    Spans,
    /// perf.data from `perf record` / `critpath record`.
    Perf,
    /// Annotations written by the SDKs (docs/formats.md).
    Annotations,
    /// PyTorch profiler (Kineto) traces, read by critpath-gpu.
    Kineto,
}

/// A reader for any supported format.
pub enum AnySource {
    Jsonl(JsonlReader<Stream>),
    Cpt(CptReader<Stream>),
    /// Imported whole (Chrome / Perfetto JSON, spans), and from which format.
    Memory(Imported, Format),
    /// perf.data, turned into the OS execution graph as it is read.
    Perf(Box<PerfSource>),
    /// SDK annotations alone.
    Annotations(Box<AnnotSource>),
    /// PyTorch profiler (Kineto) traces: one rank or several aligned.
    Gpu(Box<critpath_gpu::GpuSource>),
}

impl AnySource {
    pub fn format(&self) -> Format {
        match self {
            AnySource::Jsonl(_) => Format::Jsonl,
            AnySource::Cpt(_) => Format::Cpt,
            AnySource::Memory(_, f) => *f,
            AnySource::Perf(_) => Format::Perf,
            AnySource::Annotations(_) => Format::Annotations,
            AnySource::Gpu(_) => Format::Kineto,
        }
    }
}

impl RecordSource for AnySource {
    #[inline]
    fn next_record(&mut self) -> Result<Option<(Record, Pos)>, ReadError> {
        match self {
            AnySource::Jsonl(r) => r.next_record(),
            AnySource::Cpt(r) => r.next_record(),
            AnySource::Memory(r, _) => r.next_record(),
            AnySource::Perf(r) => r.next_record(),
            AnySource::Annotations(r) => r.next_record(),
            AnySource::Gpu(r) => r.next_record(),
        }
    }
    fn next_batch(&mut self, out: &mut Vec<(Record, Pos)>, max: usize) -> Result<(), ReadError> {
        match self {
            AnySource::Jsonl(r) => r.next_batch(out, max),
            AnySource::Cpt(r) => r.next_batch(out, max),
            AnySource::Memory(r, _) => r.next_batch(out, max),
            AnySource::Perf(r) => r.next_batch(out, max),
            AnySource::Annotations(r) => r.next_batch(out, max),
            AnySource::Gpu(r) => r.next_batch(out, max),
        }
    }
    fn strings(&self) -> &Interner {
        match self {
            AnySource::Jsonl(r) => r.strings(),
            AnySource::Cpt(r) => r.strings(),
            AnySource::Memory(r, _) => r.strings(),
            AnySource::Perf(r) => r.strings(),
            AnySource::Annotations(r) => r.strings(),
            AnySource::Gpu(r) => r.strings(),
        }
    }
    fn summary(&mut self) -> critpath_trace::Summary {
        match self {
            AnySource::Perf(r) => r.summary(),
            AnySource::Annotations(r) => r.summary(),
            AnySource::Gpu(r) => r.summary(),
            AnySource::Memory(r, _) => r.summary(),
            _ => Default::default(),
        }
    }
    fn inferred_links(&mut self) -> Vec<(String, u64)> {
        match self {
            AnySource::Memory(r, _) => r.inferred_links(),
            _ => Vec::new(),
        }
    }
    fn scope(&mut self) -> critpath_trace::Scope {
        match self {
            AnySource::Perf(r) => r.scope(),
            _ => Default::default(),
        }
    }
    fn prepare(&mut self, late_names: bool) {
        if let AnySource::Perf(r) = self {
            r.prepare(late_names);
        }
    }
    fn restart(&mut self) -> bool {
        match self {
            AnySource::Perf(r) => r.restart(),
            _ => false,
        }
    }
    fn bytes_read(&self) -> u64 {
        match self {
            AnySource::Jsonl(r) => r.bytes_read(),
            AnySource::Cpt(r) => r.bytes_read(),
            AnySource::Memory(r, _) => r.bytes_read(),
            AnySource::Perf(r) => r.bytes_read(),
            AnySource::Annotations(r) => r.bytes_read(),
            AnySource::Gpu(r) => r.bytes_read(),
        }
    }
}

/// What a file's first bytes say it is.
pub fn detect(head: &[u8], name: &str) -> Result<Format, ReadError> {
    let fail = |msg: String| Err(ReadError::new(name, Location::File, msg, true));
    if head.is_empty() {
        return fail("the file is empty: expected trace records (JSONL or .cpt)".into());
    }
    if head.starts_with(cpt::MAGIC) {
        return Ok(Format::Cpt);
    }
    if critpath_os::perf::is_perf_data(head) {
        return Ok(Format::Perf);
    }
    if annot::is_annotations(head) {
        return Ok(Format::Annotations);
    }
    if head.starts_with(b"PERFFILE") || head.starts_with(b"2ELIFREP") {
        return fail("this is a perf.data file of a format critpath does not read (an old version-1 file, or big-endian); record it again with `critpath record`".into());
    }
    if let Some(c) = Compression::detect(head) {
        return fail(format!(
            "this is {} data compressed twice; decompress it once first",
            c.name()
        ));
    }
    if let Some((what, undo)) = packed_otherwise(head) {
        return fail(format!(
            "this is {what}: critpath reads a trace as it is or compressed with gzip, zstd, xz or bzip2; {undo} it first"
        ));
    }
    // Text: the first line that is not blank or a comment.
    let head = head.strip_prefix(b"\xef\xbb\xbf").unwrap_or(head);
    let text = String::from_utf8_lossy(head);
    let first = text
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty() && !l.starts_with('#'));
    // A first line that is a record with `ev` is JSONL; otherwise the Trace
    // Event Format's array or `traceEvents` object, or a JSON document
    // (see `json_document`), is Chrome / Perfetto JSON.
    let parsed = first.map(serde_json::from_str::<serde_json::Value>);
    let first_is_record = matches!(&parsed, Some(Ok(v)) if v.get("ev").is_some());
    // The first line's object goes on past it.
    let goes_on = matches!(&parsed, Some(Err(e)) if e.is_eof());
    if !first_is_record && spans::looks_like(&text) {
        return Ok(Format::Spans);
    }
    if !first_is_record
        && (first.is_some_and(|l| l.starts_with("["))
            || text.contains("\"traceEvents\"")
            || first.is_some_and(|l| l.starts_with("{") && json_document(goes_on, &text)))
    {
        if critpath_gpu::looks_like(head) {
            return Ok(Format::Kineto);
        }
        return Ok(Format::Chrome);
    }
    match first {
        None if head.len() < 4096 => {
            fail("the file holds no records (only blank lines or comments)".into())
        }
        Some(l) if l.starts_with("{") => Ok(Format::Jsonl),
        _ => {
            let shown: String = text
                .chars()
                .take(40)
                .map(|c| if c.is_control() { '.' } else { c })
                .collect();
            fail(format!(
                "not a trace critpath can read: expected JSONL records (one JSON object per line), a .cpt file (starting with CRITPATH), Chrome/Perfetto trace JSON, or OpenTelemetry/Jaeger JSON spans; the file starts with \"{shown}\""
            ))
        }
    }
}

/// Whether text whose first line starts an object (not a record) is a
/// JSON document rather than JSONL: the object `goes_on` past that line
/// (pretty-printed, or one line longer than the head), and none of its
/// top-level keys in `text` (the head) is a record's field. Its other keys
/// may be anywhere in the document (`otherData` before `traceEvents`), so
/// they do not decide.
fn json_document(goes_on: bool, text: &str) -> bool {
    let from = text.find('{').unwrap_or(0);
    goes_on
        && !top_level_keys(&text[from..])
            .iter()
            .any(|k| critpath_readers::jsonl::FIELDS.contains(&k.as_str()))
}

/// The keys of the object that `text` starts with, as far as `text` goes
/// (their escapes left as they are).
fn top_level_keys(text: &str) -> Vec<String> {
    let (mut keys, mut depth, mut want_key) = (Vec::new(), 0u32, false);
    let mut key: Option<String> = None;
    let mut bytes = text.char_indices();
    while let Some((_, c)) = bytes.next() {
        match c {
            '"' => {
                let mut s = String::new();
                while let Some((_, c)) = bytes.next() {
                    match c {
                        '\\' => {
                            s.push(c);
                            if let Some((_, e)) = bytes.next() {
                                s.push(e);
                            }
                        }
                        '"' => break,
                        _ => s.push(c),
                    }
                }
                if depth == 1 && want_key {
                    key = Some(s);
                }
            }
            ':' if depth == 1 => {
                keys.extend(key.take());
                want_key = false;
            }
            ',' if depth == 1 => want_key = true,
            '{' | '[' => {
                depth += 1;
                want_key = depth == 1;
            }
            '}' | ']' => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    break;
                }
            }
            _ => {}
        }
    }
    keys
}

/// An archive or a compression critpath does not undo, by its magic bytes,
/// and what to do to it.
fn packed_otherwise(head: &[u8]) -> Option<(&'static str, &'static str)> {
    let magic: [(&[u8], &str, &str); 4] = [
        (b"PK\x03\x04", "a zip archive", "extract the trace from"),
        (
            &[0x04, 0x22, 0x4d, 0x18],
            "lz4-compressed data",
            "decompress",
        ),
        (
            &[b'7', b'z', 0xbc, 0xaf, 0x27, 0x1c],
            "a 7z archive",
            "extract the trace from",
        ),
        (b"Rar!\x1a\x07", "a rar archive", "extract the trace from"),
    ];
    if let Some(&(_, what, undo)) = magic.iter().find(|(m, ..)| head.starts_with(m)) {
        return Some((what, undo));
    }
    // A tar header: a NUL-padded name (no text trace holds a NUL), then
    // "ustar" at 257.
    let tar = head.len() > 262 && head[..100].contains(&0) && &head[257..262] == b"ustar";
    tar.then_some(("a tar archive", "extract the trace from"))
}

pub use critpath_readers::companion;

/// Is this file a trace with nothing in it (no bytes, or only blank lines
/// and `#` comments)? Views that can say so plainly use it. Only a regular
/// file is looked at (a pipe would be used up).
pub fn is_empty_trace(path: &Path) -> bool {
    if !std::fs::metadata(path).is_ok_and(|m| m.is_file()) {
        return false;
    }
    match std::fs::read(path) {
        Ok(b) => {
            b.len() < (1 << 20)
                && String::from_utf8_lossy(&b)
                    .lines()
                    .map(str::trim)
                    .all(|l| l.is_empty() || l.starts_with('#'))
        }
        Err(_) => false,
    }
}

/// Opens a trace (a path, or `-` for standard input), detecting its
/// format and compression from the content.
pub fn open(path: &Path) -> Result<AnySource, ReadError> {
    let input = open_input(path)?;
    let format = detect(&input.head, &input.name)?;
    open_as(input, format)
}

/// A trace opened for per-request analysis: a span file holding several
/// trace ids is its requests; anything else (a span file of one trace id
/// too) is one trace, opened as [`open`] opens it.
pub enum Opened {
    /// One trace, and its trace id (a span file's; `""` for other traces).
    Trace(Box<AnySource>, String),
    Requests(spans::Requests),
}

/// Opens a trace as [`open`] does, except that a span file holding several
/// trace ids comes back as its requests, to analyze one by one.
pub fn open_requests(path: &Path) -> Result<Opened, ReadError> {
    let input = open_input(path)?;
    let format = detect(&input.head, &input.name)?;
    if format != Format::Spans {
        return Ok(Opened::Trace(
            Box::new(open_as(input, format)?),
            String::new(),
        ));
    }
    let requests = spans::read_requests(input.stream, &input.name)?;
    Ok(if requests.len() == 1 {
        let id = requests.first_ids().next().unwrap_or_default().to_string();
        Opened::Trace(Box::new(AnySource::Memory(requests.merged()?, format)), id)
    } else {
        Opened::Requests(requests)
    })
}

/// The format of the trace at `path` (a regular file: it is read again by
/// whoever opens it), from its content.
pub fn format_of(path: &Path) -> Result<Format, ReadError> {
    let input = open_input(path)?;
    detect(&input.head, &input.name)
}

/// Opens the request of trace id `id` in a span file, as [`open`] opens a
/// file holding only that request (with the file's problems).
pub fn open_request(path: &Path, id: &str) -> Result<AnySource, ReadError> {
    let input = open_input(path)?;
    let name = input.name.clone();
    let fail = |msg: String| Err(ReadError::new(&name, Location::File, msg, true));
    let format = detect(&input.head, &input.name)?;
    if format != Format::Spans {
        return fail(format!("--trace {id}: this is not a span file (OpenTelemetry or Jaeger JSON); --trace picks one request of a span file"));
    }
    let requests = spans::read_requests(input.stream, &input.name)?;
    match requests.request(id) {
        Some(one) => Ok(AnySource::Memory(one?, format)),
        None => {
            let ids: Vec<&str> = requests.first_ids().take(5).collect();
            let more = if requests.len() > ids.len() {
                ", ..."
            } else {
                ""
            };
            fail(format!(
                "--trace {id}: no span of this trace id; the file holds {} trace ids: {}{more}",
                requests.len(),
                ids.join(", ")
            ))
        }
    }
}

/// Opens trace bytes from any reader as [`open`] does a file (tests and
/// fuzzing use it on bytes in memory).
pub fn open_reader(raw: Box<dyn Read + Send>, name: &str) -> Result<AnySource, ReadError> {
    let input = input::from_reader(raw, name, None)
        .map_err(|e| ReadError::new(name, Location::File, format!("read error: {e}"), true))?;
    let format = detect(&input.head, &input.name)?;
    open_as(input, format)
}

/// The reader of `format` over an opened input.
fn open_as(input: Input, format: Format) -> Result<AnySource, ReadError> {
    let name = input.name.clone();
    Ok(match format {
        Format::Jsonl => AnySource::Jsonl(JsonlReader::new(input.stream, &name)),
        Format::Cpt => AnySource::Cpt(CptReader::new(input.stream, &name)?),
        Format::Chrome => AnySource::Memory(chrome::read(input.stream, &name)?, format),
        Format::Spans => AnySource::Memory(spans::read(input.stream, &name)?, format),
        Format::Perf => {
            let path = mapped(&input, "perf.data")?;
            perfcheck::check(&path, &name)?;
            AnySource::Perf(Box::new(PerfSource::open(&path)?))
        }
        Format::Annotations => AnySource::Annotations(Box::new(AnnotSource::open(&mapped(
            &input,
            "an annotation trace",
        )?)?)),
        Format::Kineto => AnySource::Gpu(Box::new(critpath_gpu::open_inputs(
            vec![critpath_gpu::KinetoInput {
                name,
                json: Box::new(input.stream),
            }],
            &critpath_gpu::GpuOptions::default(),
        )?)),
    })
}

/// The path of a format read in place (mapped): a regular, uncompressed
/// file; said plainly otherwise.
fn mapped(input: &Input, what: &str) -> Result<std::path::PathBuf, ReadError> {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(head: &[u8]) -> String {
        match detect(head, "t") {
            Err(e) => e.to_string(),
            Ok(f) => panic!("read as {f:?}"),
        }
    }

    #[test]
    fn archives_and_other_compressions_are_named() {
        let mut tar = vec![0u8; 512];
        tar[..7].copy_from_slice(b"t.jsonl");
        tar[257..263].copy_from_slice(b"ustar\0");
        let cases: [(Vec<u8>, &str); 4] = [
            (tar, "this is a tar archive: "),
            (b"PK\x03\x04\x14\0".to_vec(), "this is a zip archive: "),
            (
                vec![0x04, 0x22, 0x4d, 0x18, 0x64],
                "this is lz4-compressed data: ",
            ),
            (
                b"7z\xbc\xaf\x27\x1c\0\x04".to_vec(),
                "this is a 7z archive: ",
            ),
        ];
        for (head, says) in cases {
            let e = refused(&head);
            assert!(e.contains(says), "{e}");
            assert!(e.ends_with(" it first"), "{e}");
        }
        // Text that happens to hold "ustar" where a tar header would is
        // still read as the text it is.
        let mut line = br#"{"t":0,"sm":"a","ev":"state","state":"x"}"#.to_vec();
        line.resize(257, b' ');
        line.extend_from_slice(b"ustar\n");
        assert!(matches!(detect(&line, "t"), Ok(Format::Jsonl)));
    }

    #[test]
    fn a_json_document_is_chrome_json_wherever_its_trace_events_are() {
        let events = r#""traceEvents":[{"ph":"X","ts":1,"dur":2,"pid":1,"tid":1}]"#;
        let other = format!(r#"{{"otherData":{{"pad":"{}"}},"#, "x".repeat(10_000));
        // One line longer than the head, `traceEvents` past it.
        let long = format!("{other}{events}}}");
        // Pretty-printed, `traceEvents` past the head.
        let pretty = format!(
            "{{\n  \"otherData\": {{\n{}  }},\n  {events}\n}}\n",
            "    \"k\": \"v\",\n".repeat(1000)
        );
        for doc in [long, pretty] {
            let head = &doc.as_bytes()[..input::HEAD];
            assert!(matches!(detect(head, "t"), Ok(Format::Chrome)), "{doc:.40}");
        }
        // JSONL whose first record is bad, or cut over lines, is still JSONL.
        for text in [
            "{\"t\":1,\"sm\":\"a\"}\n{\"t\":2,\"sm\":\"a\",\"ev\":\"end\"}\n",
            "{\"t\":1,\n\"ev\":\"end\",\"sm\":\"a\"}\n",
            "{\"t\":1,\"sm\":\"a\",\"ev\":\"end\"\n",
            "{\"x\": 1 2}\n",
        ] {
            assert!(
                matches!(detect(text.as_bytes(), "t"), Ok(Format::Jsonl)),
                "{text}"
            );
        }
        // A record longer than the head is JSONL by its keys.
        let record = format!(
            r#"{{"t":1,"ev":"state","sm":"a","state":"{}"}}"#,
            "s".repeat(10_000)
        );
        let head = &record.as_bytes()[..input::HEAD];
        assert!(matches!(detect(head, "t"), Ok(Format::Jsonl)));
        assert_eq!(
            top_level_keys(r#"{"a":{"b":[1,"c"]},"d\"e":"f:g", "h" : 1"#),
            ["a", "d\\\"e", "h"]
        );
    }
}
