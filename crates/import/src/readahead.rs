//! Decompression on a thread of its own: a compressed input's decoder runs
//! ahead of the reader that parses its bytes, a few chunks at most, so that
//! both cores work, for the readers that parse on the thread that reads
//! ([`crate::input::Input::ahead`]). A JSON document is split into events on
//! a thread of its own already, which decompresses as it reads.

use critpath_readers::ahead::{self, Feed};
use std::io::{self, Read};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};

/// Bytes decoded at a time.
const CHUNK: usize = 1 << 20;
/// Chunks decoded ahead of the reader at most.
const AHEAD: usize = 4;

/// The bytes of a reader decoded on another thread, in order; its error
/// comes after the bytes before it. Chunks the reader is done with go back
/// to the decoding thread, which fills them again: no memory is cleared or
/// mapped anew for each.
pub struct ReadAhead {
    feed: Feed<io::Result<Chunk>>,
    back: SyncSender<Chunk>,
    cur: Chunk,
    pos: usize,
}

/// [`CHUNK`] bytes of room and how many of them hold decoded bytes.
#[derive(Default)]
struct Chunk {
    room: Vec<u8>,
    len: usize,
}

impl Chunk {
    /// Fills the room from `r`, up to its end (fewer only at the end of
    /// `r`, or before an error, which follows them).
    fn fill(&mut self, r: &mut dyn Read) -> Option<io::Error> {
        self.room.resize(CHUNK, 0);
        self.len = 0;
        while self.len < CHUNK {
            match r.read(&mut self.room[self.len..]) {
                Ok(0) => break,
                Ok(n) => self.len += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Some(e),
            }
        }
        None
    }
}

/// `r` read on a thread of its own; `r` itself when no thread starts, or
/// when the installed settings ask for one thread.
pub fn read_ahead(r: Box<dyn Read + Send>) -> Box<dyn Read + Send> {
    // Room for every chunk there is: the reader never waits to give one back.
    let (back, recycled) = sync_channel::<Chunk>(AHEAD + 2);
    let decoding = ahead::spawn(
        "critpath-decode",
        "decompressing it",
        AHEAD,
        (r, recycled),
        decode,
    );
    match decoding {
        Ok(feed) => Box::new(ReadAhead {
            feed,
            back,
            cur: Chunk::default(),
            pos: 0,
        }),
        Err((r, _)) => r,
    }
}

/// Sends `r`'s bytes in chunks to `tx`, refilling the chunks that come
/// back, an error after the bytes before it, until the end or until the
/// reader is gone.
fn decode(
    (mut r, recycled): (Box<dyn Read + Send>, Receiver<Chunk>),
    tx: &SyncSender<io::Result<Chunk>>,
) {
    loop {
        let mut c = recycled.try_recv().unwrap_or_default();
        let err = c.fill(&mut r);
        let last = c.len < CHUNK;
        // The reader gone: nothing more to decode for.
        if c.len > 0 && tx.send(Ok(c)).is_err() {
            return;
        }
        if let Some(e) = err {
            let _ = tx.send(Err(e));
            return;
        }
        if last {
            return;
        }
    }
}

impl Read for ReadAhead {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        while self.pos == self.cur.len {
            match self.feed.recv()? {
                Some(Ok(c)) => {
                    let done = std::mem::replace(&mut self.cur, c);
                    self.pos = 0;
                    if !done.room.is_empty() {
                        let _ = self.back.try_send(done);
                    }
                }
                Some(Err(e)) => return Err(e),
                // The decoder ended after its last chunk.
                None => return Ok(0),
            }
        }
        let n = out.len().min(self.cur.len - self.pos);
        out[..n].copy_from_slice(&self.cur.room[self.pos..self.pos + n]);
        self.pos += n;
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Gives `data`, `step` bytes at a time, then an error if `fail`.
    struct Slow {
        data: Vec<u8>,
        at: usize,
        step: usize,
        fail: bool,
    }

    impl Read for Slow {
        fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
            if self.at == self.data.len() {
                return match self.fail {
                    true => Err(io::Error::other("corrupt")),
                    false => Ok(0),
                };
            }
            let n = self.step.min(out.len()).min(self.data.len() - self.at);
            out[..n].copy_from_slice(&self.data[self.at..self.at + n]);
            self.at += n;
            Ok(n)
        }
    }

    /// Gives `good` bytes, then panics.
    struct Broken(usize);

    impl Read for Broken {
        fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
            assert!(self.0 > 0, "a decoder's bug");
            let n = self.0.min(out.len());
            out[..n].fill(7);
            self.0 -= n;
            Ok(n)
        }
    }

    #[test]
    fn a_decoder_that_stops_short_is_an_error_not_the_end() {
        let mut got = Vec::new();
        let err = read_ahead(Box::new(Broken(CHUNK + 5)))
            .read_to_end(&mut got)
            .unwrap_err();
        assert!(err.to_string().contains("stopped"), "{err}");
        assert!(got.len() <= CHUNK + 5 && got.iter().all(|&b| b == 7));
    }

    #[test]
    fn the_bytes_come_in_order_and_the_error_after_them() {
        let data: Vec<u8> = (0..3 * CHUNK + 17).map(|i| (i * 7 % 251) as u8).collect();
        for (len, step) in [(0, 1), (5, 2), (CHUNK, 4096), (data.len(), 65_537)] {
            for fail in [false, true] {
                let slow = Slow {
                    data: data[..len].to_vec(),
                    at: 0,
                    step,
                    fail,
                };
                let mut got = Vec::new();
                let res = read_ahead(Box::new(slow)).read_to_end(&mut got);
                assert_eq!(got, data[..len], "{len} bytes, {step} at a time");
                assert_eq!(res.is_err(), fail, "{len} {step}");
            }
        }
    }
}
