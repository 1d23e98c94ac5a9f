//! The scan inside one value: brackets counted and strings skipped, a
//! block of bytes at a time where the buffer holds one (only the quotes,
//! backslashes and brackets in it visited; in a block without a backslash,
//! only the brackets outside strings), else a byte at a time; both make
//! the same steps (`blocks_and_bytes_split_alike`).

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
        let marks = marks(&buf[i..i + BLOCK]);
        if marks.backslashes == 0 && !self.esc && self.depth > 0 {
            return self.brackets(buf, (i, start, object), marks);
        }
        let mut m = marks.quotes | marks.backslashes | marks.brackets;
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

    /// [`Self::block`] of a block inside a bracket and without a
    /// backslash: each quote opens or closes a string, so the strings are
    /// found all at once (the parity of the quotes up to each byte), and
    /// only the brackets outside them are visited. An event's many quotes
    /// cost a few instructions a block, not a branch each.
    #[inline(always)]
    fn brackets(
        &mut self,
        buf: &[u8],
        (i, start, object): (usize, usize, bool),
        marks: Marks,
    ) -> Result<usize, usize> {
        let carried = if self.in_str { !0 } else { 0 };
        let inside = prefix_xor(marks.quotes) ^ carried;
        // The brackets visited are outside strings.
        self.in_str = false;
        let mut m = marks.brackets & !inside;
        while m != 0 {
            let k = m.trailing_zeros() as usize;
            m &= m - 1;
            self.byte(buf, i + k, start, object)?;
        }
        self.in_str = inside >> (BLOCK - 1) == 1;
        Ok(i + BLOCK)
    }
}

/// Bit `k` set when the bits of `x` up to `k` are odd in number: for the
/// quotes of a block, the bytes from a string's opening quote up to (not
/// including) its closing one.
fn prefix_xor(mut x: u64) -> u64 {
    for shift in [1, 2, 4, 8, 16, 32] {
        x ^= x << shift;
    }
    x
}

/// The quotes, backslashes and brackets of a block, a bit each.
struct Marks {
    quotes: u64,
    backslashes: u64,
    brackets: u64,
}

/// The [`Marks`] of the [`BLOCK`] bytes of `b`.
#[cfg(target_arch = "x86_64")]
fn marks(b: &[u8]) -> Marks {
    use std::arch::x86_64::{
        __m128i, _mm_cmpeq_epi8, _mm_loadu_si128, _mm_movemask_epi8, _mm_or_si128, _mm_set1_epi8,
    };
    assert!(b.len() >= BLOCK);
    let mut m = Marks {
        quotes: 0,
        backslashes: 0,
        brackets: 0,
    };
    for (k, lane) in b[..BLOCK].chunks_exact(16).enumerate() {
        // SAFETY: SSE2 is part of every x86_64 CPU; the load reads the 16
        // bytes of `lane` (unaligned loads allowed).
        let (q, bs, br) = unsafe {
            let v = _mm_loadu_si128(lane.as_ptr().cast::<__m128i>());
            let is = |c: u8| _mm_cmpeq_epi8(v, _mm_set1_epi8(c as i8));
            // `[` and `]` are `{` and `}` but for bit 0x20.
            let folded = _mm_or_si128(v, _mm_set1_epi8(0x20));
            let open = _mm_cmpeq_epi8(folded, _mm_set1_epi8(b'{' as i8));
            let close = _mm_cmpeq_epi8(folded, _mm_set1_epi8(b'}' as i8));
            let bits = |x| u64::from(_mm_movemask_epi8(x) as u16);
            (
                bits(is(b'"')),
                bits(is(b'\\')),
                bits(_mm_or_si128(open, close)),
            )
        };
        m.quotes |= q << (16 * k);
        m.backslashes |= bs << (16 * k);
        m.brackets |= br << (16 * k);
    }
    m
}

/// The [`Marks`] of the [`BLOCK`] bytes of `b`.
#[cfg(not(target_arch = "x86_64"))]
fn marks(b: &[u8]) -> Marks {
    let bits = |f: fn(u8) -> bool| {
        b[..BLOCK]
            .iter()
            .enumerate()
            .fold(0, |m, (k, &c)| m | (u64::from(f(c)) << k))
    };
    Marks {
        quotes: bits(|c| c == b'"'),
        backslashes: bits(|c| c == b'\\'),
        brackets: bits(|c| matches!(c, b'{' | b'}' | b'[' | b']')),
    }
}
