//! The first bytes of an input, read as far as they go: a damaged
//! compressed stream still yields what decompressed before the damage, and
//! the error comes after those bytes, where the reader meets it (at its
//! line or offset), not in place of them.

use std::io::{self, Read};

/// Reads up to `n` bytes, stopping early at the end of the input or at an
/// error, which is given beside the bytes read before it.
pub fn read_until_error(r: &mut dyn Read, n: usize) -> (Vec<u8>, Option<io::Error>) {
    let mut head = vec![0; n];
    let mut got = 0;
    while got < n {
        match r.read(&mut head[got..]) {
            Ok(0) => break,
            Ok(k) => got += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => {
                head.truncate(got);
                return (head, Some(e));
            }
        }
    }
    head.truncate(got);
    (head, None)
}

/// A reader whose first read fails with the error it holds, and which
/// ends after that.
pub struct Failing(pub Option<io::Error>);

impl Read for Failing {
    fn read(&mut self, _: &mut [u8]) -> io::Result<usize> {
        self.0.take().map_or(Ok(0), Err)
    }
}
