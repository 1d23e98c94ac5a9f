//! The windows of an annotation found fast: the bytes of a trace are
//! searched for `"user_annotation"` and the event around each hit parsed
//! alone, without splitting the document. It is a guess (an event written
//! another way, with an escaped category or its `{` far before the hit, is
//! missed; a look-alike inside another event's arguments is taken), which
//! the read that follows checks against every annotation it parses
//! (`join::prepare` reads once more when the guess was wrong).

use crate::kineto::{ns, RawEvent};
use critpath_readers::perf::file::{Bytes, TEXT_RELEASE_STEP};
use std::io::Read;

const NEEDLE: &[u8] = b"\"user_annotation\"";
/// How far before a hit its event's `{` is looked for.
const BACK: usize = 512;
/// Bytes held after a hit before its event is parsed: a longer event is
/// not found.
const AHEAD: usize = 64 << 10;
/// Bytes read at a time.
const CHUNK: usize = 1 << 20;

/// Opening braces tried before a hit, nearest first.
const TRIES: usize = 8;

/// The event around the hit at `at`: (start, end) in ns when it is a
/// complete annotation whose name starts with `prefix`. Its `{` is the
/// nearest before the hit from which an annotation holding the hit parses
/// (members such as `args` may come before `cat`).
fn event_around(buf: &[u8], at: usize, prefix: &str) -> Option<(u64, u64)> {
    let lo = at.saturating_sub(BACK);
    let mut braces = memchr::memrchr_iter(b'{', &buf[lo..at]).take(TRIES);
    let e = braces.find_map(|k| {
        let mut events =
            serde_json::Deserializer::from_slice(&buf[lo + k..]).into_iter::<RawEvent>();
        let e = events.next()?.ok()?;
        // The hit is this event's own category, not one before it.
        let holds = lo + k + events.byte_offset() > at;
        let annotation =
            e.ph.as_deref() == Some("X") && e.cat.as_deref() == Some("user_annotation");
        (holds && annotation).then_some(e)
    })?;
    if !e.name.as_deref().unwrap_or_default().starts_with(prefix) {
        return None;
    }
    let ts = ns(e.ts.unwrap_or(0.0));
    Some((ts, ts + ns(e.dur.unwrap_or(0.0))))
}

/// Appends up to [`CHUNK`] bytes of `r` to `buf`, read straight into it;
/// false at the end of the input (or when it cannot be read on).
fn fill(r: &mut impl Read, buf: &mut Vec<u8>) -> bool {
    let old = buf.len();
    buf.resize(old + CHUNK, 0);
    let mut n = 0;
    while n < CHUNK {
        match r.read(&mut buf[old + n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => break,
        }
    }
    buf.truncate(old + n);
    n == CHUNK
}

/// The hits in `buf` from `*from` on whose event lies whole in `buf`
/// (all of them at the end of the input, `eof`): their windows to `out`.
/// `*from` is left at the first hit not taken, or where a hit may start.
fn search(buf: &[u8], from: &mut usize, eof: bool, prefix: &str, out: &mut Vec<(u64, u64)>) {
    let finder = memchr::memmem::Finder::new(NEEDLE);
    loop {
        match finder.find(&buf[*from..]) {
            Some(k) if eof || *from + k + AHEAD <= buf.len() => {
                out.extend(event_around(buf, *from + k, prefix));
                *from += k + NEEDLE.len();
            }
            // Its event may go on past the bytes read so far.
            Some(k) => {
                *from += k;
                return;
            }
            None => {
                *from = (*from).max(buf.len().saturating_sub(NEEDLE.len() - 1));
                return;
            }
        }
    }
}

/// The windows of the annotations whose name starts with `prefix`, in
/// time order (see the module's documentation). Input that cannot be read
/// on (a corrupt compressed stream) ends the search: the read that follows
/// reports it.
pub fn windows(mut r: impl Read, prefix: &str) -> Vec<(u64, u64)> {
    let (mut buf, mut from, mut out) = (Vec::new(), 0usize, Vec::new());
    loop {
        let eof = !fill(&mut r, &mut buf);
        search(&buf, &mut from, eof, prefix, &mut out);
        if eof {
            out.sort_by_key(|w| w.0);
            return out;
        }
        let done = from.saturating_sub(BACK);
        buf.drain(..done);
        from -= done;
    }
}

/// [`windows`] of a mapped document, searched in place: the pages behind
/// the search leave this process's memory every [`TEXT_RELEASE_STEP`]
/// bytes, so a search of a large file holds little of it.
pub fn windows_in(doc: &Bytes, prefix: &str) -> Vec<(u64, u64)> {
    windows_by_steps(doc, prefix, TEXT_RELEASE_STEP)
}

fn windows_by_steps(doc: &Bytes, prefix: &str, step: usize) -> Vec<(u64, u64)> {
    let all = doc.as_ref();
    let (mut from, mut end, mut released, mut out) = (0, 0, 0, Vec::new());
    while end < all.len() {
        end = (end + step).min(all.len());
        search(&all[..end], &mut from, end == all.len(), prefix, &mut out);
        let behind = from.saturating_sub(BACK);
        doc.release(released, behind);
        released = released.max(behind);
    }
    doc.release(released, all.len());
    out.sort_by_key(|w| w.0);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn annotations_are_found_across_chunks_and_in_time_order() {
        let mut doc = String::from("{\"traceEvents\": [\n");
        let pad = "x".repeat(900);
        for i in (0..3000u64).rev() {
            doc += &format!(
                "  {{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"op\", \"ts\": {}, \"dur\": 1, \"args\": {{\"p\": \"{pad}\"}}}},\n",
                i * 10
            );
            if i % 100 == 0 {
                let name = if i % 200 == 0 {
                    "ProfilerStep#"
                } else {
                    "other"
                };
                doc += &format!(
                    "  {{\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": \"{name}{i}\", \"ts\": {}.5, \"dur\": 20}},\n",
                    i * 10
                );
            }
        }
        // A look-alike in a string, and a category that is no annotation.
        doc += "  {\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"\\\"user_annotation\\\"\", \"ts\": 1},\n";
        doc += "  {\"ph\": \"i\", \"cat\": \"user_annotation\", \"name\": \"ProfilerStep#x\", \"ts\": 2}\n]}";
        let got = windows(doc.as_bytes(), "ProfilerStep");
        let bytes = Bytes::Owned(std::sync::Arc::new(doc.clone().into_bytes()));
        assert_eq!(windows_in(&bytes, "ProfilerStep"), got);
        // Hits across the steps of a search in place.
        for step in [1000, 4096, 100_000] {
            assert_eq!(
                windows_by_steps(&bytes, "ProfilerStep", step),
                got,
                "{step}"
            );
        }
        let want: Vec<(u64, u64)> = (0..3000u64)
            .filter(|i| i % 200 == 0)
            .map(|i| (i * 10_000 + 500, i * 10_000 + 20_500))
            .collect();
        assert!(doc.len() > 2 * CHUNK);
        assert_eq!(got, want);
    }
}
