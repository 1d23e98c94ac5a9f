//! The scan inside one value: brackets counted and strings skipped, a
//! block of bytes at a time where the buffer holds one (only the quotes,
//! backslashes and brackets in it visited), else a byte at a time; both
//! make the same steps (`blocks_and_bytes_split_alike`).

/// Bytes a value is scanned by at a time, once inside it.
pub(super) const BLOCK: usize = 64;

/// Where a scan is inside a value: its bracket depth, in a string, after
/// a backslash in one.
#[derive(Default)]
pub(super) struct Nest {
    pub(super) depth: u32,
    pub(super) in_str: bool,
    esc: bool,
}

/// A `{` or `[` where an object at its own level wants a member name: the
/// `,` before it (white space between), where the object, which lost its
/// end, ends.
fn lost_end(buf: &[u8], start: usize, at: usize) -> Option<usize> {
    let k = buf[start..at]
        .iter()
        .rposition(|b| !matches!(b, b' ' | b'\n' | b'\r' | b'\t'))?;
    (buf[start + k] == b',').then_some(start + k)
}

impl Nest {
    /// The byte at `i` of the value starting at `start`; `Err` with where
    /// the value ends when it does at this byte (after a closing bracket or
    /// quote, or at the `,` of [`lost_end`], or at a bracket that closes
    /// an outer value).
    #[inline(always)]
    pub(super) fn byte(
        &mut self,
        buf: &[u8],
        i: usize,
        start: usize,
        object: bool,
    ) -> Result<(), usize> {
        let b = buf[i];
        if self.in_str {
            if self.esc {
                self.esc = false;
            } else if b == b'\\' {
                self.esc = true;
            } else if b == b'"' {
                self.in_str = false;
                if self.depth == 0 {
                    return Err(i + 1);
                }
            }
            return Ok(());
        }
        match b {
            b'"' => self.in_str = true,
            b'{' | b'[' => {
                if self.depth == 1 && object {
                    if let Some(c) = lost_end(buf, start, i) {
                        return Err(c);
                    }
                }
                self.depth += 1;
            }
            b'}' | b']' if self.depth == 0 => return Err(i),
            b'}' | b']' => {
                self.depth -= 1;
                if self.depth == 0 {
                    return Err(i + 1);
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// [`Self::byte`] for the [`BLOCK`] bytes at `i`, visiting only the
    /// quotes, backslashes and brackets among them; `Ok` with where the
    /// next block starts.
    pub(super) fn block(
        &mut self,
        buf: &[u8],
        i: usize,
        start: usize,
        object: bool,
    ) -> Result<usize, usize> {
        let mut m = marks(&buf[i..i + BLOCK]);
        if self.esc {
            // The block's first byte is escaped.
            self.esc = false;
            m &= !1;
        }
        while m != 0 {
            let k = m.trailing_zeros() as usize;
            m &= m - 1;
            if self.in_str && buf[i + k] == b'\\' {
                // The next byte is escaped, in this block or the next.
                match k + 1 {
                    BLOCK => self.esc = true,
                    n => m &= !(1 << n),
                }
                continue;
            }
            self.byte(buf, i + k, start, object)?;
        }
        Ok(i + BLOCK)
    }
}

/// A bit for each quote, backslash or bracket in the [`BLOCK`] bytes of `b`.
#[cfg(target_arch = "x86_64")]
fn marks(b: &[u8]) -> u64 {
    use std::arch::x86_64::{
        __m128i, _mm_cmpeq_epi8, _mm_loadu_si128, _mm_movemask_epi8, _mm_or_si128, _mm_set1_epi8,
    };
    assert!(b.len() >= BLOCK);
    let mut m = 0u64;
    for (k, lane) in b[..BLOCK].chunks_exact(16).enumerate() {
        // SAFETY: SSE2 is part of every x86_64 CPU; the load reads the 16
        // bytes of `lane` (unaligned loads allowed).
        let bits = unsafe {
            let v = _mm_loadu_si128(lane.as_ptr().cast::<__m128i>());
            let is = |c: u8| _mm_cmpeq_epi8(v, _mm_set1_epi8(c as i8));
            // `[` and `]` are `{` and `}` but for bit 0x20.
            let folded = _mm_or_si128(v, _mm_set1_epi8(0x20));
            let open = _mm_cmpeq_epi8(folded, _mm_set1_epi8(b'{' as i8));
            let close = _mm_cmpeq_epi8(folded, _mm_set1_epi8(b'}' as i8));
            let any = _mm_or_si128(_mm_or_si128(is(b'"'), is(b'\\')), _mm_or_si128(open, close));
            _mm_movemask_epi8(any) as u16
        };
        m |= u64::from(bits) << (16 * k);
    }
    m
}

/// A bit for each quote, backslash or bracket in the [`BLOCK`] bytes of `b`.
#[cfg(not(target_arch = "x86_64"))]
fn marks(b: &[u8]) -> u64 {
    b[..BLOCK].iter().enumerate().fold(0, |m, (k, &c)| {
        let mark = matches!(c, b'"' | b'\\' | b'{' | b'}' | b'[' | b']');
        m | (u64::from(mark) << k)
    })
}
