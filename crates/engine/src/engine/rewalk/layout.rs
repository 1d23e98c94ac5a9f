//! The re-walk log's bytes. A node is a header (bit 0: a root; then its
//! edge count), then its edges: most as one word of eight bytes (see
//! [`WORD_BACK`]), the others after the byte [`LONG`] as group varints (a
//! control byte of the four fields' codes, then each field in one, two,
//! four or eight bytes): reading either takes no branch on a field's
//! width. Pieces are padded, so that every read is of whole words.

/// The bytes an edge takes at most: its control byte and four fields of
/// eight bytes.
pub(super) const EDGE: usize = 1 + 4 * 8;

/// Bytes after each piece of the log, so that a field is always read as
/// eight bytes and masked to its length, and an edge's bytes are always
/// its word or its marker and [`EDGE`] (the shortest edge takes six in
/// the long form).
pub(super) const PAD: usize = 1 + EDGE - 6;

/// An edge's word, the short form of most edges: bit 0 clear, the
/// distance back in the next [`WORD_BACK`] bits, the state key whose
/// factor scales it (one more than its index, or 0) in the next
/// [`WORD_KEY`], its weight in the top 32 (no key that it follows). An
/// edge that does not fit is the byte [`LONG`], then its control byte
/// and four fields.
pub(super) const WORD_BACK: u32 = 16;
pub(super) const WORD_KEY: u32 = 15;

/// The marker of an edge in the long form.
pub(super) const LONG: u8 = 1;

/// The edge's word, if it has one (see [`WORD_BACK`]).
#[inline(always)]
fn word([back, w, own, follows]: [u64; 4]) -> Option<u64> {
    let fits = back < 1 << WORD_BACK && own < 1 << WORD_KEY && w <= u64::from(u32::MAX);
    (fits && follows == 0).then_some(back << 1 | own << (1 + WORD_BACK) | w << 32)
}

/// The fields of the edge at the start of `b` (`[back, w, own,
/// follows]`) and the bytes it takes. Inlined, a caller that uses only
/// some fields reads only those.
#[inline(always)]
pub(super) fn read_edge(b: &[u8; 1 + EDGE]) -> ([u64; 4], usize) {
    let word = u64::from_le_bytes(b[..8].try_into().unwrap());
    if word & 1 == 0 {
        let back = word >> 1 & ((1 << WORD_BACK) - 1);
        let own = word >> (1 + WORD_BACK) & ((1 << WORD_KEY) - 1);
        return ([back, word >> 32, own, 0], 8);
    }
    let e: &[u8; EDGE] = b[1..].try_into().unwrap();
    let c = e[0];
    let fields = [
        edge_field(e, c, 0),
        edge_field(e, c, 1),
        edge_field(e, c, 2),
        edge_field(e, c, 3),
    ];
    (fields, 1 + PLACES[c as usize][4] as usize)
}

/// A field's mask by its code.
const MASK: [u64; 4] = [0xff, 0xffff, 0xffff_ffff, u64::MAX];

/// Per control byte: where each of its edge's four fields starts (after
/// the control byte) and where the edge ends.
const PLACES: [[u8; 5]; 256] = places();

const fn places() -> [[u8; 5]; 256] {
    let mut t = [[0u8; 5]; 256];
    let mut c = 0;
    while c < 256 {
        let mut at = 1u8;
        let mut i = 0;
        while i < 4 {
            t[c][i] = at;
            at += 1 << ((c >> (2 * i)) & 3);
            i += 1;
        }
        t[c][4] = at;
        c += 1;
    }
    t
}

/// Field `i` of the edge `e` whose control byte is `c`.
#[inline(always)]
fn edge_field(e: &[u8; EDGE], c: u8, i: usize) -> u64 {
    let at = PLACES[c as usize][i] as usize;
    let v = u64::from_le_bytes(e[at..at + 8].try_into().unwrap());
    v & MASK[(c >> (2 * i)) as usize & 3]
}

/// The code of the fewest bytes that hold `v` (0, 1, 2 or 3: one, two,
/// four or eight bytes), without a branch.
#[inline(always)]
fn code(v: u64) -> u8 {
    u8::from(v > 0xff) + u8::from(v > 0xffff) + u8::from(v > 0xffff_ffff)
}

/// The first `len` bytes of `buf`, then [`PAD`] zeros.
pub(super) fn padded(mut buf: Vec<u8>, len: usize) -> Vec<u8> {
    buf.truncate(len + PAD);
    buf[len..].fill(0);
    buf
}

/// Writes an edge's control byte and its four fields at `at` of `b` (with
/// [`EDGE`] bytes of room), each field in as few bytes as its code says;
/// where the next edge starts.
#[inline(always)]
fn put_edge(b: &mut [u8], at: usize, fields: [u64; 4]) -> usize {
    let e: &mut [u8; EDGE + 7] = (&mut b[at..at + EDGE + 7]).try_into().expect("room");
    let (mut p, mut c) = (1, 0);
    for (i, v) in fields.into_iter().enumerate() {
        let k = code(v);
        e[p..p + 8].copy_from_slice(&v.to_le_bytes());
        c |= k << (2 * i);
        p += 1 << k;
    }
    e[0] = c;
    at + p
}

/// Writes an edge's fields at `at` of `b` (with room for the long form),
/// in its word if it has one; where the next edge starts.
#[inline(always)]
pub(super) fn put_fields(b: &mut [u8], at: usize, fields: [u64; 4]) -> usize {
    match word(fields) {
        Some(word) => {
            b[at..at + 8].copy_from_slice(&word.to_le_bytes());
            at + 8
        }
        None => {
            b[at] = LONG;
            put_edge(b, at + 1, fields)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::RING;
    use super::*;

    #[test]
    fn edges_read_back_from_their_word_or_their_long_form() {
        let backs = [1, 2, 0xffff, 0x1_0000, RING + 5, u64::MAX];
        let ws = [0, 1, u64::from(u32::MAX), 1 << 32, u64::MAX];
        let keys = [
            0,
            1,
            (1 << WORD_KEY) - 1,
            1 << WORD_KEY,
            u64::from(u32::MAX) + 1,
        ];
        for back in backs {
            for w in ws {
                for own in keys {
                    for follows in [0, 1, u64::from(u32::MAX) + 1] {
                        let fields = [back, w, own, follows];
                        let mut b = vec![0xaa; 3 + 1 + EDGE + 7 + PAD];
                        let end = put_fields(&mut b, 3, fields);
                        let e = b[3..4 + EDGE].try_into().unwrap();
                        let (read, len) = read_edge(e);
                        assert_eq!((read, len), (fields, end - 3), "{fields:?}");
                        let short =
                            back <= 0xffff && w <= 0xffff_ffff && own < 1 << 15 && follows == 0;
                        assert_eq!(b[3] & 1 == 0, short, "{fields:?} in a word");
                        assert!(!short || len == 8, "{fields:?}: a word takes eight bytes");
                    }
                }
            }
        }
    }

    #[test]
    fn edges_read_back_in_as_few_bytes_as_they_need() {
        let vals = [
            0,
            1,
            255,
            256,
            65_535,
            65_536,
            u64::from(u32::MAX),
            1 << 32,
            u64::MAX,
        ];
        // Every value in every field, beside every other.
        for (i, &v) in vals.iter().enumerate() {
            for &u in &vals {
                let fields = [v, u, vals[(i + 3) % vals.len()], u ^ v];
                let mut b = vec![0xaa; 3 + EDGE + 7];
                let at = put_edge(&mut b, 3, fields);
                let e: &[u8; EDGE] = b[3..3 + EDGE].try_into().unwrap();
                let c = e[0];
                let width = |v: u64| match v {
                    0..=0xff => 1,
                    0x100..=0xffff => 2,
                    0x1_0000..=0xffff_ffff => 4,
                    _ => 8,
                };
                assert_eq!(at - 3, 1 + fields.map(width).iter().sum::<usize>());
                for (k, f) in fields.into_iter().enumerate() {
                    assert_eq!(edge_field(e, c, k), f, "field {k} of {fields:?}");
                }
                assert_eq!(PLACES[c as usize][4] as usize, at - 3);
            }
        }
    }
}
