//! Text for a terminal: control characters a trace's names may hold (an
//! escape sequence that sets the window title, clears the screen or
//! recolours; NUL, DEL, a carriage return) are written escaped, as
//! `\u001b`, never raw. Every text that goes to standard output or
//! standard error passes here; newlines and tabs stay as they are. The
//! escape is JSON's own, so that JSON (whose strings may hold DEL and C1
//! controls raw) stays valid and means the same.

use std::borrow::Cow;

/// Whether byte `b` (with `next`, the byte after it) starts a control
/// character: C0 but newline and tab, DEL, or a C1 control (U+0080 to
/// U+009F, 0xC2 0x80..=0x9F in UTF-8).
fn control(b: u8, next: Option<u8>) -> bool {
    match b {
        b'\n' | b'\t' => false,
        0..=0x1f | 0x7f => true,
        0xc2 => next.is_some_and(|n| (0x80..=0x9f).contains(&n)),
        _ => false,
    }
}

/// Does a control character start at `bytes[i]`?
fn control_at(bytes: &[u8], i: usize) -> bool {
    control(bytes[i], bytes.get(i + 1).copied())
}

/// Might byte `b` start a control character ([`control`] without the
/// byte after it)?
fn suspect(b: u8) -> bool {
    (b < 0x20 && b != b'\n' && b != b'\t') | (b == 0x7f) | (b == 0xc2)
}

/// Where the first control character in `bytes` starts: blocks without a
/// suspect byte are passed over whole (a check that vectorises).
fn first_control(bytes: &[u8]) -> Option<usize> {
    let mut base = 0;
    for block in bytes.chunks(64) {
        if block.iter().fold(false, |any, &b| any | suspect(b)) {
            if let Some(k) = (base..base + block.len()).find(|&i| control_at(bytes, i)) {
                return Some(k);
            }
        }
        base += block.len();
    }
    None
}

/// `bytes` with every control character escaped (borrowed when there is
/// none).
pub fn terminal_safe(bytes: &[u8]) -> Cow<'_, [u8]> {
    let Some(first) = first_control(bytes) else {
        return Cow::Borrowed(bytes);
    };
    let mut o = Vec::with_capacity(bytes.len() + 16);
    o.extend_from_slice(&bytes[..first]);
    let mut i = first;
    while i < bytes.len() {
        if control_at(bytes, i) {
            let c = match bytes[i] {
                0xc2 => {
                    i += 1;
                    u32::from(bytes[i])
                }
                b => u32::from(b),
            };
            o.extend_from_slice(format!("\\u{c:04x}").as_bytes());
        } else {
            o.push(bytes[i]);
        }
        i += 1;
    }
    Cow::Owned(o)
}

/// [`terminal_safe`] of a message.
pub fn safe(s: &str) -> Cow<'_, str> {
    match terminal_safe(s.as_bytes()) {
        Cow::Borrowed(_) => Cow::Borrowed(s),
        Cow::Owned(o) => Cow::Owned(String::from_utf8_lossy(&o).into_owned()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn controls_are_escaped_and_the_rest_kept() {
        let s = "a\u{1b}]0;title\u{7}b\0c\u{7f}d\u{9b}e\r\né\tf";
        assert_eq!(
            safe(s),
            "a\\u001b]0;title\\u0007b\\u0000c\\u007fd\\u009be\\u000d\né\tf"
        );
        assert!(matches!(safe("plain é\n"), Cow::Borrowed(_)));
        let once = safe("\u{1b}").into_owned();
        assert_eq!(safe(&once), once);
    }

    /// Controls anywhere in a long text, at and across the edges of the
    /// blocks passed over, are found as a byte-by-byte look finds them.
    #[test]
    fn the_first_control_is_found_in_any_block() {
        let plain = "é name\tof a state\n".repeat(20);
        for at in (0..plain.len()).filter(|&i| plain.is_char_boundary(i)) {
            for c in ["\u{1b}", "\u{85}", "\u{7f}", "\r"] {
                let text = format!("{}{c}{}", &plain[..at], &plain[at..]);
                let want = (0..text.len()).find(|&i| control_at(text.as_bytes(), i));
                assert_eq!(first_control(text.as_bytes()), want, "{c:?} at {at}");
                assert_eq!(want, Some(at));
            }
        }
        assert_eq!(first_control(plain.as_bytes()), None);
    }
}
