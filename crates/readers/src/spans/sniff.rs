//! Is this OTLP protobuf, and how are its messages framed? A protobuf
//! message has no magic bytes, so the first bytes are parsed against the
//! shape of `ExportTraceServiceRequest` (the official definitions): the
//! request, its `ResourceSpans`, `ScopeSpans` and `Span` may hold only
//! their own fields, each of its wire type, lengths nest, span ids are 8
//! bytes and trace ids 16. Text never passes: its bytes are tags of fields
//! these messages do not have.

/// How the messages of a file follow each other.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Framing {
    /// One message: the whole file.
    Single,
    /// Each message after its length as a varint (protobuf's
    /// `writeDelimitedTo`).
    Varint,
    /// Each message after its length as 4 bytes, big-endian (the
    /// collector's file exporter with `format: proto`).
    BigEndian32,
}

/// The messages whose fields are checked; `Opaque` is any valid message.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Msg {
    Request,
    ResourceSpans,
    ScopeSpans,
    Span,
    Opaque,
}

const VARINT: u64 = 0;
const I64: u64 = 1;
const LEN: u64 = 2;
const I32: u64 = 5;

/// The wire type and contents of a field of `msg`; `None` for a field it
/// cannot have. `Span`'s fields past the official ones are let through
/// (later versions may add some).
fn field(msg: Msg, number: u64) -> Option<(u64, Msg)> {
    use Msg::*;
    Some(match (msg, number) {
        (Request, 1) => (LEN, ResourceSpans),
        (ResourceSpans, 1) => (LEN, Opaque),
        (ResourceSpans, 2) => (LEN, ScopeSpans),
        (ResourceSpans, 3) => (LEN, Opaque),
        (ScopeSpans, 1) => (LEN, Opaque),
        (ScopeSpans, 2) => (LEN, Span),
        (ScopeSpans, 3) => (LEN, Opaque),
        (Span, 1..=5 | 9 | 11 | 13 | 15) => (LEN, Opaque),
        (Span, 6 | 10 | 12 | 14) => (VARINT, Opaque),
        (Span, 7 | 8) => (I64, Opaque),
        (Span, 16) => (I32, Opaque),
        (Span | Opaque, n) if n > 0 => (u64::MAX, Opaque),
        _ => return None,
    })
}

/// A varint at the start of `b` and its length; `None` when `b` ends
/// first or it is longer than 10 bytes.
pub fn varint(b: &[u8]) -> Option<(u64, usize)> {
    let mut v = 0u64;
    for (i, &byte) in b.iter().take(10).enumerate() {
        v |= u64::from(byte & 0x7f) << (7 * i);
        if byte < 0x80 {
            return Some((v, i + 1));
        }
    }
    None
}

/// What a check of some bytes found.
struct Check {
    /// The bytes end where the head was cut (so a field may run past them).
    cut: bool,
    /// A span was seen.
    spans: bool,
}

/// Whether `b` is (the start of, when `ck.cut`) a valid `msg`.
fn valid(b: &[u8], msg: Msg, ck: &mut Check, depth: u32) -> bool {
    let mut i = 0;
    while i < b.len() {
        let Some((tag, n)) = varint(&b[i..]) else {
            return ck.cut;
        };
        i += n;
        let (number, wire) = (tag >> 3, tag & 7);
        let Some((want, inner)) = field(msg, number) else {
            return false;
        };
        if want != u64::MAX && want != wire {
            return false;
        }
        let size = match wire {
            VARINT => match varint(&b[i..]) {
                Some((_, n)) => n,
                None => return ck.cut,
            },
            I64 => 8,
            I32 => 4,
            LEN => {
                let Some((len, n)) = varint(&b[i..]) else {
                    return ck.cut;
                };
                i += n;
                let len = usize::try_from(len).unwrap_or(usize::MAX);
                let id = match (msg, number) {
                    (Msg::Span, 1) => Some(16),
                    (Msg::Span, 2) => Some(8),
                    (Msg::Span, 4) => Some(8),
                    _ => None,
                };
                if id.is_some_and(|want| len != want && !(number == 4 && len == 0)) {
                    return false;
                }
                let end = i.saturating_add(len);
                if end > b.len() && !ck.cut {
                    return false;
                }
                let body = &b[i..end.min(b.len())];
                let inner_cut = end > b.len() && ck.cut;
                let whole = std::mem::replace(&mut ck.cut, inner_cut);
                // Strings and bytes are not looked into, nor messages
                // that are not part of the shape.
                let ok = inner == Msg::Opaque || depth > 8 || valid(body, inner, ck, depth + 1);
                ck.cut = whole;
                if !ok {
                    return false;
                }
                ck.spans |= inner == Msg::Span && !body.is_empty();
                len
            }
            _ => return false,
        };
        i = i.saturating_add(size);
        if i > b.len() && !ck.cut {
            return false;
        }
    }
    true
}

/// The framing under which `head` (the first bytes; `whole`: the whole
/// file) is valid OTLP protobuf, and whether a span was seen in it.
fn framings(head: &[u8], whole: bool) -> Vec<(Framing, bool)> {
    let mut found = Vec::new();
    let mut try_as = |framing, body: &[u8], prefix: usize, len: Option<u64>| {
        let len = len.map_or(body.len(), |l| usize::try_from(l).unwrap_or(usize::MAX));
        let end = prefix.saturating_add(len);
        let cut = end > head.len();
        if cut && whole {
            return;
        }
        let mut ck = Check {
            cut: cut || (!whole && len == body.len()),
            spans: false,
        };
        if !body.is_empty() && valid(&body[..len.min(body.len())], Msg::Request, &mut ck, 0) {
            found.push((framing, ck.spans));
        }
    };
    if head.len() > 4 && head[0] == 0 {
        let len = u32::from_be_bytes([head[0], head[1], head[2], head[3]]);
        try_as(Framing::BigEndian32, &head[4..], 4, Some(u64::from(len)));
    }
    try_as(Framing::Single, head, 0, None);
    if let Some((len, n)) = varint(head) {
        try_as(Framing::Varint, &head[n..], n, Some(len));
    }
    found
}

/// The framing of OTLP protobuf that `head` starts with, if it does (a
/// span is in it); `whole`: `head` is the whole file.
pub fn sniff(head: &[u8], whole: bool) -> Option<Framing> {
    let found = framings(head, whole);
    let spans = found.iter().find(|f| f.1).map(|f| f.0);
    // A whole file cut short inside a field is still told from its
    // content, as the start of one (its reading then says where it ends).
    spans.or_else(|| whole.then(|| sniff(head, false)).flatten())
}

/// The framing of a file named as protobuf: the first valid one, else a
/// single message (whose reading then says what is wrong, and where).
pub fn framing_of_named(head: &[u8], whole: bool) -> Framing {
    let found = framings(head, whole);
    let seen = found.iter().find(|f| f.1).or(found.first());
    seen.map_or(Framing::Single, |f| f.0)
}

/// Is this the name of an OTLP protobuf file?
pub fn named_protobuf(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    let lower = [".gz", ".zst", ".xz", ".bz2"]
        .iter()
        .find_map(|c| lower.strip_suffix(c))
        .unwrap_or(&lower);
    [".pb", ".binpb", ".otlp", ".protobuf"]
        .iter()
        .any(|ext| lower.ends_with(ext))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_whole_file_cut_inside_a_field_is_told_from_its_content() {
        let request = wrap(0x0a, &wrap(0x12, &wrap(0x12, &span())));
        for cut in [request.len() - 1, request.len() - 5] {
            assert_eq!(
                sniff(&request[..cut], true),
                Some(Framing::Single),
                "cut at {cut}"
            );
        }
        assert_eq!(sniff(&request, true), Some(Framing::Single));
    }

    #[test]
    fn text_is_never_protobuf() {
        for text in [
            "\n{\n \"resourceSpans\": []\n}\n",
            "\n\n{\"t\":1}",
            "{\"resourceSpans\":[]}",
            "[{\"traceId\":\"ab\"}]",
            "\n",
            "",
        ] {
            assert_eq!(sniff(text.as_bytes(), true), None, "{text:?}");
            assert_eq!(sniff(text.as_bytes(), false), None, "{text:?}");
        }
    }

    /// A span message: trace id, span id, name.
    fn span() -> Vec<u8> {
        let mut s = vec![0x0a, 16];
        s.extend([0xab; 16]);
        s.extend([0x12, 8]);
        s.extend([0xcd; 8]);
        s.extend([0x2a, 1, b'x']);
        s
    }

    fn wrap(tag: u8, body: &[u8]) -> Vec<u8> {
        let mut m = vec![tag, body.len() as u8];
        m.extend(body);
        m
    }

    #[test]
    fn each_framing_is_found() {
        let request = wrap(0x0a, &wrap(0x12, &wrap(0x12, &span())));
        assert_eq!(sniff(&request, true), Some(Framing::Single));
        let mut delimited = vec![request.len() as u8];
        delimited.extend(&request);
        delimited.extend(delimited.clone());
        assert_eq!(sniff(&delimited, true), Some(Framing::Varint));
        let mut be = (request.len() as u32).to_be_bytes().to_vec();
        be.extend(&request);
        assert_eq!(sniff(&be, true), Some(Framing::BigEndian32));
        // The head of a longer file: cut anywhere, still found.
        for cut in 30..request.len() {
            assert_eq!(
                sniff(&request[..cut], false),
                Some(Framing::Single),
                "{cut}"
            );
        }
        // A span id of 7 bytes is not a span.
        let mut bad = span();
        bad[19] = 7;
        assert_eq!(
            sniff(&wrap(0x0a, &wrap(0x12, &wrap(0x12, &bad))), true),
            None
        );
        assert!(named_protobuf("x/Trace.BINPB") && !named_protobuf("a.json"));
    }
}
