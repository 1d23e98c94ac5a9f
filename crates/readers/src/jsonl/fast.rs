//! The fast path of the JSONL reader: a hand-written scanner for the common
//! shape of a record line, a flat object of known fields whose values are
//! plain strings (no escapes), non-negative integers and booleans, with any
//! JSON whitespace between tokens. Anything else (escapes, unknown or
//! repeated fields, `null`, floats, negative or huge numbers, nesting, bad
//! syntax) gives `None`, and the line goes to serde_json, which gives the
//! same fields or the error message: the fast path only ever accepts what
//! serde_json reads, and reads it the same.

use super::{Line, NumOrStr};
use std::borrow::Cow;

/// The bytes that end the fast scan of a string: its closing quote, an
/// escape, or a control character (serde_json's to judge).
const STOP: [bool; 256] = {
    let mut t = [false; 256];
    let mut i = 0;
    while i < 0x20 {
        t[i] = true;
        i += 1;
    }
    t[b'"' as usize] = true;
    t[b'\\' as usize] = true;
    t
};

/// A cursor over a line's bytes.
struct Cur<'a> {
    b: &'a [u8],
    i: usize,
}

impl<'a> Cur<'a> {
    #[inline]
    fn ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.b.get(self.i) {
            self.i += 1;
        }
    }

    #[inline]
    fn next(&mut self) -> Option<u8> {
        let c = *self.b.get(self.i)?;
        self.i += 1;
        Some(c)
    }

    #[inline]
    fn peek(&self) -> Option<u8> {
        self.b.get(self.i).copied()
    }

    /// A string without escapes or control characters.
    #[inline]
    fn string(&mut self) -> Option<&'a str> {
        if self.next()? != b'"' {
            return None;
        }
        let start = self.i;
        let rest = &self.b[start..];
        let n = rest.iter().position(|&c| STOP[c as usize])?;
        if rest[n] != b'"' {
            return None;
        }
        self.i = start + n + 1;
        critpath_trace::strings::utf8(&rest[..n])
    }

    /// A non-negative integer that fits in a u64, as JSON writes it (no
    /// leading zeros, no fraction or exponent).
    #[inline]
    fn uint(&mut self) -> Option<u64> {
        let first = self.next()?;
        if !first.is_ascii_digit() {
            return None;
        }
        let mut v = (first - b'0') as u64;
        while let Some(c @ b'0'..=b'9') = self.peek() {
            if v == 0 {
                return None;
            }
            v = v.checked_mul(10)?.checked_add((c - b'0') as u64)?;
            self.i += 1;
        }
        match self.peek() {
            Some(b'.' | b'e' | b'E') => None,
            _ => Some(v),
        }
    }

    #[inline]
    fn boolean(&mut self) -> Option<bool> {
        let rest = &self.b[self.i..];
        if rest.starts_with(b"true") {
            self.i += 4;
            Some(true)
        } else if rest.starts_with(b"false") {
            self.i += 5;
            Some(false)
        } else {
            None
        }
    }

    #[inline]
    fn num_or_str(&mut self) -> Option<NumOrStr<'a>> {
        if self.peek()? == b'"' {
            self.string().map(|s| NumOrStr::Str(Cow::Borrowed(s)))
        } else {
            self.uint().map(NumOrStr::Num)
        }
    }
}

/// The fields of `text`, a whole line, when it has the common shape; `None`
/// sends it to serde_json.
#[cfg(test)]
pub(super) fn line(text: &[u8]) -> Option<Line<'_>> {
    let mut l = Line::default();
    line_into(text, &mut l).map(|()| l)
}

/// [`line`] into `l` (which starts empty): a line's fields are written in
/// place, not moved (they take some 300 bytes). `None` leaves `l` partly
/// filled.
#[inline]
pub(super) fn line_into<'a>(text: &'a [u8], l: &mut Line<'a>) -> Option<()> {
    let mut p = Cur { b: text, i: 0 };
    p.ws();
    if p.next()? != b'{' {
        return None;
    }
    p.ws();
    if p.peek()? == b'}' {
        p.i += 1;
    } else {
        let mut seen = 0u16;
        loop {
            field(&mut p, l, &mut seen)?;
            p.ws();
            match p.next()? {
                b',' => p.ws(),
                b'}' => break,
                _ => return None,
            }
        }
    }
    p.ws();
    (p.i == text.len()).then_some(())
}

/// One `"key": value` into `l`; `seen` holds the fields read so far (a
/// repeated one is serde_json's error to give).
#[inline]
fn field<'a>(p: &mut Cur<'a>, l: &mut Line<'a>, seen: &mut u16) -> Option<()> {
    let key = p.string()?.as_bytes();
    p.ws();
    if p.next()? != b':' {
        return None;
    }
    p.ws();
    let bit = match key {
        b"t" => 0,
        b"ev" => 1,
        b"sm" => 2,
        b"sys" => 3,
        b"state" => 4,
        b"on" => 5,
        b"on_sys" => 6,
        b"on_state" => 7,
        b"fn" => 8,
        b"id" => 9,
        b"thread" => 10,
        b"cpu" => 11,
        b"waited" => 12,
        b"ended" => 13,
        _ => return None,
    };
    if *seen & (1 << bit) != 0 {
        return None;
    }
    *seen |= 1 << bit;
    let s = |p: &mut Cur<'a>| p.string().map(|s| Some(Cow::Borrowed(s)));
    match bit {
        0 => l.t = Some(p.uint()?),
        1 => l.ev = s(p)?,
        2 => l.sm = s(p)?,
        3 => l.sys = s(p)?,
        4 => l.state = s(p)?,
        5 => l.on = s(p)?,
        6 => l.on_sys = s(p)?,
        7 => l.on_state = s(p)?,
        8 => l.func = s(p)?,
        9 => l.id = Some(p.num_or_str()?),
        10 => l.thread = Some(p.num_or_str()?),
        11 => l.cpu = Some(p.num_or_str()?),
        12 => l.waited = Some(p.boolean()?),
        _ => l.ended = Some(p.boolean()?),
    }
    Some(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn serde(text: &[u8]) -> Option<Line<'_>> {
        serde_json::from_slice(text).ok()
    }

    #[test]
    fn the_common_shapes_take_the_fast_path() {
        for text in [
            r#"{"t":5,"ev":"state","sm":"stage0","state":"work"}"#,
            r#"{ "t" : 7 , "ev":"recv","sm":"b","id":"m-1","state":"x","waited":true }"#,
            r#"{"t":0,"ev":"switch","cpu":1,"thread":"w\u00e9"}"#,
            r#"{"t":18446744073709551615,"ev":"send","thread":12,"id":0}"#,
            r#"{"t":3,"ev":"wait","sm":"é","state":"s","on":"o","on_sys":"h","on_state":"z","sys":"h2"}"#,
            "{}",
        ] {
            let fast = line(text.as_bytes());
            let slow = serde(text.as_bytes());
            // The \u escape goes to serde_json.
            if text.contains('\\') {
                assert!(fast.is_none(), "{text}");
                assert!(slow.is_some(), "{text}");
            } else {
                assert!(fast.is_some(), "{text}");
                assert_eq!(fast, slow, "{text}");
            }
        }
    }

    #[test]
    fn unusual_lines_go_to_serde_json() {
        for text in [
            r#"{"t":5,"t":6}"#,
            r#"{"t":null}"#,
            r#"{"t":05}"#,
            r#"{"t":5.0}"#,
            r#"{"t":-5}"#,
            r#"{"t":18446744073709551616}"#,
            r#"{"t":5,}"#,
            r#"{"t":5} x"#,
            r#"{"x":5}"#,
            r#"{"sm":5}"#,
            r#"{"waited":1}"#,
            r#"{"waited":truex}"#,
            r#"{"sm":"a\"b"}"#,
            "{\"sm\":\"a\tb\"}",
            r#"{"id":{"a":1}}"#,
            r#"[1]"#,
            r#"{"t":5"#,
        ] {
            assert!(line(text.as_bytes()).is_none(), "{text}");
        }
        // Bytes that are not UTF-8.
        assert!(line(b"{\"sm\":\"\xff\"}").is_none());
    }

    /// A random line: known and unknown keys, values of every JSON kind
    /// (some of the wrong type), random whitespace, now and then a byte
    /// changed.
    fn random_line() -> impl Strategy<Value = Vec<u8>> {
        let key = prop::sample::select(vec![
            "t", "ev", "sm", "sys", "state", "on", "on_sys", "on_state", "fn", "id", "thread",
            "cpu", "waited", "ended", "x", "T",
        ]);
        let value = prop_oneof![
            4 => "[a-zé\"\\\\ \\t\\x01/]{0,6}".prop_map(|s| format!("{s:?}")),
            3 => any::<u64>().prop_map(|n| n.to_string()),
            2 => (0u64..100).prop_map(|n| n.to_string()),
            1 => "-?[0-9]{1,3}(\\.[0-9])?(e[0-9])?".prop_map(|s| s),
            1 => "\"[a-z]{0,4}\"".prop_map(|s| s),
            2 => prop::sample::select(vec!["\"state\"", "\"send\"", "\"recv\"", "\"end\"", "\"switch\"", "\"push\""])
                .prop_map(String::from),
            1 => prop::sample::select(vec!["true", "false", "null", "{}", "[1]", "tru", "00"])
                .prop_map(String::from),
            // Arrays nested about as deep as serde_json's recursion limit.
            1 => (120usize..135).prop_map(|d| format!("{}{}", "[".repeat(d), "]".repeat(d))),
        ];
        let ws = "[ \\t\\r\\n]{0,2}";
        let field = (key, value, ws, ws).prop_map(|(k, v, a, b)| format!("\"{k}\"{a}:{b}{v}"));
        let fields = prop::collection::vec(field, 0..7);
        let edit = prop::option::weighted(0.2, (any::<prop::sample::Index>(), any::<u8>()));
        (fields, ws, edit).prop_map(|(fs, w, edit)| {
            let mut b = format!("{w}{{{}}}{w}", fs.join(",")).into_bytes();
            if let Some((at, byte)) = edit {
                let i = at.index(b.len());
                b[i] = byte;
            }
            b
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(4000))]
        #[test]
        fn the_fast_path_reads_what_serde_json_reads(text in random_line()) {
            if let Some(fast) = line(&text) {
                prop_assert_eq!(Some(fast), serde(&text));
            }
        }

        /// The reader gives the same record, or the same message, whether a
        /// line takes the fast path or not.
        #[test]
        fn both_paths_give_the_same_records_and_messages(text in random_line()) {
            let reader = || crate::JsonlReader::new(std::io::Cursor::new(Vec::new()), "t");
            let fast = reader().parse(&text, true);
            let slow = reader().parse(&text, false);
            prop_assert_eq!(format!("{fast:?}"), format!("{slow:?}"));
        }
    }
}
