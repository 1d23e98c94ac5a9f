//! What an input is, from its first bytes: the importer surest of them
//! (`importer.rs`), after the inputs critpath refuses for what they are
//! packed in (an archive, data compressed twice, an old perf.data).

use crate::importer::{sniff, Confidence, Format, Head};
use crate::input::Compression;
use critpath_trace::{Location, ReadError};

/// The traces critpath reads, as messages list them.
const TRACES: &str = "JSONL records (one JSON object per line), a .cpt file (starting with CRITPATH), Chrome/Perfetto trace JSON, OpenTelemetry (JSON or protobuf), Jaeger or Zipkin spans, perf.data (PERFILE2) or an SDK annotation file (CPAB)";

/// What a file's first bytes say it is.
pub fn detect(bytes: &[u8], name: &str) -> Result<Format, ReadError> {
    let fail = |msg: String| Err(ReadError::new(name, Location::File, msg, true));
    if bytes.is_empty() {
        return fail(format!("the file is empty: expected {TRACES}"));
    }
    if let Some(what) = cut_magic(bytes) {
        let msg = format!(
            "cut short: the file ends after {} byte(s), which begin {what}",
            bytes.len()
        );
        let at = Location::Offset(bytes.len() as u64);
        return Err(ReadError::new(name, at, msg, true));
    }
    let head = Head::new(bytes);
    let found = sniff(&head);
    if let Some((Confidence::Certain, i)) = found {
        return Ok(i.format());
    }
    if bytes.starts_with(b"PERFFILE") || bytes.starts_with(b"2ELIFREP") {
        return fail("this is a perf.data file of a format critpath does not read (an old version-1 file, or big-endian); record it again with `critpath record`".into());
    }
    if let Some(c) = Compression::detect(bytes) {
        return fail(format!(
            "this is {} data compressed twice; decompress it once first",
            c.name()
        ));
    }
    if let Some((what, undo)) = packed_otherwise(bytes) {
        return fail(format!(
            "this is {what}: critpath reads a trace as it is or compressed with gzip, zstd, xz or bzip2; {undo} it first"
        ));
    }
    // OTLP protobuf has no magic: its framing and fields are checked.
    if critpath_readers::spans::looks_like_protobuf(bytes, bytes.len() < crate::input::HEAD, name) {
        return Ok(Format::Spans);
    }
    match (found, &head.first_line) {
        (Some((_, i)), _) => Ok(i.format()),
        (None, None) if bytes.len() < 4096 => {
            fail("the file holds no records (only blank lines or comments)".into())
        }
        _ => {
            let shown: String = head
                .text
                .chars()
                .take(40)
                .map(|c| if c.is_control() { '.' } else { c })
                .collect();
            fail(format!(
                "not a trace critpath can read: expected {TRACES}; the file starts with \"{shown}\""
            ))
        }
    }
}

/// What a file too short to hold a binary format's magic, and holding its
/// first bytes, was cut from (each format it may be).
fn cut_magic(bytes: &[u8]) -> Option<String> {
    const MAGICS: [(&[u8], &str); 3] = [
        (b"CRITPATH", "a .cpt file's magic \"CRITPATH\""),
        (b"PERFILE2", "perf.data's magic \"PERFILE2\""),
        (
            critpath_readers::annot::MAGIC,
            "an SDK annotation file's magic \"CPAB\"",
        ),
    ];
    let begun: Vec<&str> = (MAGICS.iter())
        .filter(|(m, _)| bytes.len() < m.len() && m.starts_with(bytes))
        .map(|(_, what)| *what)
        .collect();
    (!begun.is_empty()).then(|| begun.join(" or "))
}

/// Whether a head whose first line starts an object (not a record) is a
/// JSON document rather than JSONL (see [`json_document`]).
pub fn object_document(head: &Head) -> bool {
    json_document(head.goes_on, &head.text)
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::input;

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
    fn a_file_cut_inside_a_binary_formats_magic_is_named_cut_short() {
        let cases: [(&[u8], &str); 4] = [
            (b"CPA", "at byte offset 3: cut short: the file ends after 3 byte(s), which begin an SDK annotation file's magic \"CPAB\""),
            (b"PERF", "perf.data's magic \"PERFILE2\""),
            (b"CRITPAT", "a .cpt file's magic \"CRITPATH\""),
            (b"C", "\"CRITPATH\" or an SDK annotation file's magic \"CPAB\""),
        ];
        for (head, says) in cases {
            let e = refused(head);
            assert!(e.contains(says), "{e}");
        }
        // Anything else names every format read, these among them.
        let e = refused(b"XY");
        assert!(
            e.contains("perf.data (PERFILE2) or an SDK annotation file (CPAB)"),
            "{e}"
        );
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
        // Comments are JSONL's alone: a record cut after them (a file cut
        // short) is JSONL too, whatever the cut leaves of the record.
        for text in ["# c\n{\n", "# c\n\n# d\n{\"t\":1,\"sm\":\"a\",\n", "#\n[\n"] {
            assert!(
                matches!(detect(text.as_bytes(), "t"), Ok(Format::Jsonl)),
                "{text}"
            );
        }
        assert_eq!(
            top_level_keys(r#"{"a":{"b":[1,"c"]},"d\"e":"f:g", "h" : 1"#),
            ["a", "d\\\"e", "h"]
        );
    }
}
