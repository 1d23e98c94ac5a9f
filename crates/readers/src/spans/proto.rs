//! OTLP protobuf span files: `ExportTraceServiceRequest` messages (what
//! every SDK exporter sends), one message or many framed by their lengths
//! ([`Framing`]), decoded with the official definitions
//! (`opentelemetry-proto`).
//!
//! The file is read as a stream, one `ResourceSpans` at a time (memory for
//! the largest one, not the file). A `ResourceSpans` that does not decode
//! is reported with its byte offset and skipped; the framing broken (a
//! length past the end, a field of no wire type) ends the reading with a
//! diagnostic naming the offset, and the spans before it are kept.

use super::ids::hex;
use super::sniff::{varint, Framing};
use super::{Collector, Span};
use critpath_trace::{Location, ReadError};
use opentelemetry_proto::tonic::common::v1::any_value::Value as Any;
use opentelemetry_proto::tonic::trace::v1::ResourceSpans;
use prost::Message;
use std::io::{self, Read};

pub(super) const KIND: &str = "OTLP protobuf spans";

/// The input, with the offset of the next byte.
struct Wire<R> {
    r: R,
    at: u64,
}

/// Why the framing cannot be followed: the input ends early (`true`) or
/// is corrupt, at a byte offset, saying what was expected.
struct Broken(bool, u64, String);

impl<R: Read> Wire<R> {
    fn byte(&mut self) -> io::Result<Option<u8>> {
        let mut b = [0u8];
        loop {
            return match self.r.read(&mut b) {
                Ok(0) => Ok(None),
                Ok(_) => {
                    self.at += 1;
                    Ok(Some(b[0]))
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => Err(e),
            };
        }
    }

    /// A varint; `None` at the end of the input before its first byte.
    fn varint(&mut self, what: &str) -> Result<Option<u64>, Broken> {
        let at = self.at;
        let mut bytes = Vec::with_capacity(10);
        loop {
            match self
                .byte()
                .map_err(|e| Broken(false, self.at, e.to_string()))?
            {
                None if bytes.is_empty() => return Ok(None),
                None => return Err(Broken(true, at, format!("{what} is cut short"))),
                Some(b) => bytes.push(b),
            }
            if bytes.last().is_some_and(|&b| b < 0x80) {
                return Ok(varint(&bytes).map(|v| v.0));
            }
            if bytes.len() == 10 {
                return Err(Broken(false, at, format!("{what} is not a varint")));
            }
        }
    }

    /// `len` bytes, or an error when the input ends first.
    fn bytes(&mut self, len: u64, what: &str) -> Result<Vec<u8>, Broken> {
        let at = self.at;
        let mut buf = Vec::new();
        let got = (&mut self.r).take(len).read_to_end(&mut buf);
        let got = got.map_err(|e| Broken(false, at, e.to_string()))?;
        self.at += got as u64;
        if (got as u64) < len {
            let msg = format!("{what} of {len} bytes is cut short after {got}");
            return Err(Broken(true, at, msg));
        }
        Ok(buf)
    }
}

/// The service named by a resource's `service.name`.
fn service(rs: &ResourceSpans) -> String {
    let attrs = rs.resource.iter().flat_map(|r| &r.attributes);
    let name = attrs.filter(|kv| kv.key == "service.name").find_map(|kv| {
        match kv.value.as_ref()?.value.as_ref()? {
            Any::StringValue(s) => Some(s.clone()),
            _ => None,
        }
    });
    name.unwrap_or_else(|| "unknown_service".into())
}

impl Collector {
    /// The spans of one `ResourceSpans` (message `m`, number `r` in it,
    /// starting at byte `at`).
    fn resource_spans(&mut self, rs: ResourceSpans, m: usize, r: usize, at: u64) {
        self.loc = Location::Offset(at);
        let service = service(&rs);
        for (s, scope) in rs.scope_spans.into_iter().enumerate() {
            for (k, sp) in scope.spans.into_iter().enumerate() {
                let place = format!("message {m}: resourceSpans[{r}].scopeSpans[{s}].spans[{k}]");
                let bad = |v: u64| v == 0 || v > i64::MAX as u64;
                let missing = if sp.span_id.is_empty() {
                    Some("has no span_id")
                } else if bad(sp.start_time_unix_nano) {
                    Some("has no start_time_unix_nano (or one past 2^63)")
                } else if bad(sp.end_time_unix_nano) {
                    Some("has no end_time_unix_nano (or one past 2^63)")
                } else {
                    None
                };
                if let Some(why) = missing {
                    let msg = format!("span {why}; skipped");
                    self.problems.note_at(self.loc.clone(), &place, msg);
                    continue;
                }
                let parent = Some(hex(&sp.parent_span_id)).filter(|p| !p.is_empty());
                let (start, end) = (sp.start_time_unix_nano, sp.end_time_unix_nano);
                let end = self.end_after_start(&place, start, end);
                self.keep(Span {
                    trace: hex(&sp.trace_id),
                    order: 0,
                    id: hex(&sp.span_id),
                    parent,
                    follows: sp.links.iter().map(|l| hex(&l.span_id)).collect(),
                    service: service.clone(),
                    name: if sp.name.is_empty() {
                        "?".into()
                    } else {
                        sp.name
                    },
                    start,
                    end,
                    // SpanKind 3 is SPAN_KIND_CLIENT.
                    client: sp.kind == 3,
                });
            }
        }
    }

    /// The fields of message `m`: to `end` (an offset), or to the end of
    /// the input.
    fn message<R: Read>(
        &mut self,
        w: &mut Wire<R>,
        m: usize,
        end: Option<u64>,
    ) -> Result<(), Broken> {
        let mut r = 0;
        while end.is_none_or(|e| w.at < e) {
            let at = w.at;
            let Some(tag) = w.varint("a field's tag")? else {
                return match end {
                    None => Ok(()),
                    Some(e) => Err(Broken(
                        true,
                        at,
                        format!(
                            "message {m} is cut short ({} of its bytes are missing)",
                            e - at
                        ),
                    )),
                };
            };
            let len = match tag & 7 {
                0 => w.varint("a varint field").map(|_| 0)?,
                1 => 8,
                5 => 4,
                2 => match w.varint("a field's length")? {
                    Some(len) => len,
                    None => return Err(Broken(true, w.at, "a field's length is missing".into())),
                },
                t => {
                    let msg = format!("field {} has wire type {t}, which no field of `ExportTraceServiceRequest` has", tag >> 3);
                    return Err(Broken(false, at, msg));
                }
            };
            if end.is_some_and(|e| w.at.saturating_add(len) > e) {
                let msg = format!(
                    "field {} of {len} bytes runs past the end of message {m}",
                    tag >> 3
                );
                return Err(Broken(false, at, msg));
            }
            let body = w.bytes(len, "a field")?;
            if tag == 0x0a {
                match ResourceSpans::decode(&body[..]) {
                    Ok(rs) => self.resource_spans(rs, m, r, at),
                    Err(e) => {
                        let place = format!("message {m}: resourceSpans[{r}]");
                        let msg = format!("expected an OTLP `ResourceSpans` ({e}); skipped");
                        self.problems.note_at(Location::Offset(at), &place, msg);
                    }
                }
                r += 1;
            }
        }
        Ok(())
    }

    /// Every message of the input.
    fn messages<R: Read>(&mut self, w: &mut Wire<R>, framing: Framing) -> Result<(), Broken> {
        if framing == Framing::Single {
            return self.message(w, 0, None);
        }
        for m in 0.. {
            let len = match framing {
                Framing::Varint => w.varint("a message's length")?,
                _ => match w.byte().map_err(|e| Broken(false, w.at, e.to_string()))? {
                    None => None,
                    Some(first) => {
                        let rest = w.bytes(3, "a message's length")?;
                        Some(u64::from(u32::from_be_bytes([
                            first, rest[0], rest[1], rest[2],
                        ])))
                    }
                },
            };
            let Some(len) = len else {
                break;
            };
            let end = w.at.saturating_add(len);
            self.message(w, m, Some(end))?;
        }
        Ok(())
    }
}

/// Reads OTLP protobuf into `c`, framed as `framing`; a broken framing is
/// a problem (the spans before it are kept), or an error when no span was
/// read.
pub(super) fn read<R: Read>(
    input: R,
    framing: Framing,
    c: &mut Collector,
) -> Result<(), ReadError> {
    let before = c.spans;
    let mut w = Wire { r: input, at: 0 };
    if let Err(Broken(eof, at, what)) = c.messages(&mut w, framing) {
        let read = format!("the {} spans before it are read", c.spans - before);
        let msg = if eof {
            format!("the {KIND} end early at byte {at} ({what}); {read}")
        } else {
            format!("corrupt {KIND} at byte {at} ({what}); {read}")
        };
        let none = c.spans == before;
        let err = ReadError::new(c.problems.name(), Location::Offset(at), msg, none);
        if none {
            return Err(err);
        }
        c.problems.list.push(err);
    }
    Ok(())
}
