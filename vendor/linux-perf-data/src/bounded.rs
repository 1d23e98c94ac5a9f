//! Allocations sized by a count or length read from the file are bounded
//! by the bytes actually there: a damaged header cannot ask for terabytes.

use std::io::Read;

/// The most elements reserved up front for a count read from the file;
/// past it a vector grows as elements are actually read.
const MAX_RESERVE: usize = 1024;

/// A capacity for `count` elements read from the file.
pub fn capacity(count: u64) -> usize {
    usize::try_from(count).unwrap_or(usize::MAX).min(MAX_RESERVE)
}

/// Reads exactly `len` bytes, allocating only as they arrive.
pub fn read_exact_len<R: Read>(reader: R, len: u64) -> std::io::Result<Vec<u8>> {
    let mut data = Vec::with_capacity(capacity(len));
    reader.take(len).read_to_end(&mut data)?;
    if (data.len() as u64) < len {
        return Err(std::io::ErrorKind::UnexpectedEof.into());
    }
    Ok(data)
}
