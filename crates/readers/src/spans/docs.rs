//! The JSON documents of a span file, one after another: one document
//! (OTLP, Jaeger, Zipkin), or JSON lines of them (the collector's file
//! exporter writes one `{"resourceSpans":…}` per line).
//!
//! A document that is corrupt is reported with its line; when another
//! line starting with `{` or `[` follows, reading goes on there (one bad
//! line of JSON lines loses that line only).

use super::{Collector, Doc};
use critpath_trace::ReadError;
use serde::de::DeserializeSeed;
use std::io::{self, Read};

/// The input under the parser, keeping the last two bytes read.
struct Tail<R> {
    r: R,
    last: [u8; 2],
}

impl<R: Read> Read for Tail<R> {
    #[inline]
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.r.read(buf)?;
        match n {
            0 => {}
            1 => self.last = [self.last[1], buf[0]],
            _ => self.last = [buf[n - 2], buf[n - 1]],
        }
        Ok(n)
    }
}

/// A byte given back to the input, then the rest of it.
struct Resume<'a, R> {
    first: Option<u8>,
    rest: &'a mut Tail<R>,
}

impl<R: Read> Read for Resume<'_, R> {
    #[inline]
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self.first.take() {
            Some(b) if !buf.is_empty() => {
                buf[0] = b;
                Ok(1)
            }
            _ => self.rest.read(buf),
        }
    }
}

/// Does a document start with this byte?
fn starts_doc(b: u8) -> bool {
    b == b'{' || b == b'['
}

/// Reads up to the next line that starts a document; its first byte, or
/// `None` at the end of the input.
fn resync<R: Read>(tail: &mut Tail<R>) -> io::Result<Option<u8>> {
    if tail.last[0] == b'\n' && starts_doc(tail.last[1]) {
        return Ok(Some(tail.last[1]));
    }
    let mut b = [0u8];
    loop {
        if tail.read(&mut b)? == 0 {
            return Ok(None);
        }
        if tail.last[0] == b'\n' && starts_doc(b[0]) {
            return Ok(Some(b[0]));
        }
    }
}

/// Reads every document of `input` into `c` (which held `before` spans);
/// an error when the first one is not span JSON at all.
pub(super) fn read<R: Read>(input: R, c: &mut Collector, before: u64) -> Result<(), ReadError> {
    let first_doc = c.doc;
    let mut tail = Tail {
        r: input,
        last: [b'\n', b'\n'],
    };
    let mut first = None;
    loop {
        let start_line = c.pos.line();
        let rest = Resume {
            first: first.take(),
            rest: &mut tail,
        };
        let mut de = serde_json::Deserializer::from_reader(rest);
        let done = match Doc(&mut *c).deserialize(&mut de) {
            Ok(()) => match de.end() {
                Ok(()) => return Ok(()),
                // Another document follows: its first byte was read.
                Err(e) if !e.is_io() => Ok(()),
                Err(e) => Err(e),
            },
            Err(e) => Err(e),
        };
        drop(de);
        let e = match done {
            Ok(()) => {
                c.doc += 1;
                first = Some(tail.last[1]);
                continue;
            }
            Err(e) => e,
        };
        // Spans of a resource or trace cut short keep the service known.
        c.flush();
        // An error on a line's end (a string cut there: the newline is a
        // control character in it) is given at column 0 of the next line.
        let at = match (e.line(), e.column()) {
            (l, 0) if l > 1 => l - 1,
            (l, _) => l.max(1),
        };
        let line = start_line + at as u64 - 1;
        if c.spans == before && c.problems.count() == 0 && c.doc == first_doc {
            let msg = format!("expected OpenTelemetry, Jaeger or Zipkin JSON spans: {e}");
            return Err(c.problems.fatal(Some(line), msg));
        }
        let next = if e.is_eof() || e.is_io() {
            None
        } else {
            let io = |e: io::Error| c.problems.fatal(Some(line), format!("read error: {e}"));
            resync(&mut tail).map_err(io)?
        };
        let read = match next {
            Some(_) => format!(
                "the rest of this document is skipped; reading goes on at line {}",
                c.pos.line()
            ),
            None => format!("the {} spans before it are read", c.spans - before),
        };
        let err = c.problems.syntax(line, &e, &read);
        c.problems.list.push(err);
        match next {
            Some(b) => {
                c.doc += 1;
                first = Some(b);
            }
            None => return Ok(()),
        }
    }
}
