//! A glance at a Kineto event without parsing it: its `ph`, `cat`, `name`,
//! `pid`, `tid`, `ts` and `dur`, which Kineto writes before the event's
//! `args` (the bulk of an event recorded with shapes). Reading one step of
//! a trace decides from them which events it can pass over unparsed, and a
//! plain CPU op, which needs nothing of its `args`, is decoded from them.

use crate::kineto::Num;

/// The members an event is judged by. Strings are their raw bytes (only
/// strings without escapes are taken). A member the glance did not find
/// is not in the event: it stops early only when it has found them all.
#[derive(Debug, Default, PartialEq)]
pub struct Peek<'a> {
    pub ph: Option<&'a [u8]>,
    pub cat: Option<&'a [u8]>,
    pub name: Option<&'a [u8]>,
    /// In microseconds, parsed as the whole event's parse would.
    pub ts: Option<f64>,
    /// The bytes of `dur`, `pid` and `tid`, read when they are needed
    /// ([`Peek::numbers`]).
    pub dur: Option<&'a [u8]>,
    pub pid: Option<&'a [u8]>,
    pub tid: Option<&'a [u8]>,
}

impl Peek<'_> {
    fn whole(&self) -> bool {
        self.ph.is_some()
            && self.cat.is_some()
            && self.name.is_some()
            && self.ts.is_some()
            && self.dur.is_some()
            && self.pid.is_some()
            && self.tid.is_some()
    }

    /// `dur`, `pid` and `tid` as the whole event's parse reads them (a
    /// member it does not have: `None`); `None` when one cannot be read.
    pub fn numbers(&self) -> Option<Numbers> {
        let id = |v: Option<&[u8]>| -> Option<Option<i64>> {
            v.map_or(Some(None), |v| {
                Some(Some(serde_json::from_slice::<Num>(v).ok()?.0))
            })
        };
        let dur = match self.dur {
            Some(v) => Some(serde_json::from_slice(v).ok()?),
            None => None,
        };
        Some((dur, id(self.pid)?, id(self.tid)?))
    }
}

/// An event's `dur` (µs), `pid` and `tid`, each `None` when it has none.
pub type Numbers = (Option<f64>, Option<i64>, Option<i64>);

/// Sets a member once; a member met twice makes the event not plain (its
/// parse refuses it).
fn once<T>(slot: &mut Option<T>, value: T) -> Option<()> {
    match slot {
        Some(_) => None,
        None => {
            *slot = Some(value);
            Some(())
        }
    }
}

fn ws(v: &[u8], mut i: usize) -> usize {
    while matches!(v.get(i), Some(b' ' | b'\n' | b'\r' | b'\t')) {
        i += 1;
    }
    i
}

/// A string without escapes at `i`: its contents and where it ends.
fn string(v: &[u8], i: usize) -> Option<(&[u8], usize)> {
    if v.get(i) != Some(&b'"') {
        return None;
    }
    let k = memchr::memchr2(b'"', b'\\', &v[i + 1..])?;
    (v[i + 1 + k] == b'"').then(|| (&v[i + 1..i + 1 + k], i + k + 2))
}

/// Where the value at `i` (a string, number, literal, object or array)
/// ends; `None` when it does not.
fn skip_value(v: &[u8], i: usize) -> Option<usize> {
    let mut depth = 0u32;
    let mut i = i;
    loop {
        match *v.get(i)? {
            b'"' => {
                // Escapes: a backslash and the byte after it.
                i += 1;
                loop {
                    let k = memchr::memchr2(b'"', b'\\', &v[i..])?;
                    i += k + 1;
                    if v[i - 1] == b'"' {
                        break;
                    }
                    i += 1;
                }
                if depth == 0 {
                    return Some(i);
                }
                continue;
            }
            b'{' | b'[' => depth += 1,
            b'}' | b']' if depth == 0 => return Some(i),
            b'}' | b']' => {
                depth -= 1;
                if depth == 0 {
                    return Some(i + 1);
                }
            }
            b',' | b' ' | b'\n' | b'\r' | b'\t' if depth == 0 => return Some(i),
            _ => {}
        }
        i += 1;
    }
}

/// The event's judging members, read up to the member after the last of
/// them; `None` when the element is not an object of plain members (it is
/// then parsed in full).
pub fn peek(v: &[u8]) -> Option<Peek<'_>> {
    let mut p = Peek::default();
    let mut i = ws(v, 0);
    if v.get(i) != Some(&b'{') {
        return None;
    }
    i = ws(v, i + 1);
    if v.get(i) == Some(&b'}') {
        return Some(p);
    }
    loop {
        let (key, j) = string(v, ws(v, i))?;
        i = ws(v, j);
        if v.get(i) != Some(&b':') {
            return None;
        }
        i = ws(v, i + 1);
        match key {
            b"ts" | b"dur" | b"pid" | b"tid" => {
                let end = skip_value(v, i)?;
                let num = &v[i..end];
                match key {
                    b"ts" => once(&mut p.ts, serde_json::from_slice(num).ok()?)?,
                    b"dur" => once(&mut p.dur, num)?,
                    b"pid" => once(&mut p.pid, num)?,
                    _ => once(&mut p.tid, num)?,
                }
                i = end;
            }
            // Not a plain string (`null`, escaped): parsed in full.
            b"ph" | b"cat" | b"name" => {
                let (s, j) = string(v, i)?;
                match key {
                    b"ph" => once(&mut p.ph, s)?,
                    b"cat" => once(&mut p.cat, s)?,
                    _ => once(&mut p.name, s)?,
                }
                i = j;
            }
            _ => i = skip_value(v, i)?,
        }
        if p.whole() {
            return Some(p);
        }
        i = ws(v, i);
        match v.get(i) {
            Some(b',') => i += 1,
            Some(b'}') => return Some(p),
            _ => return None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_judging_members_are_read_and_the_rest_passed_over() {
        let e = br#"{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "x": {"a": [1, "}"]}, "tid": "7", "ts": 5027045053556.817, "dur": 2.9, "args": {"#;
        let p = peek(e).expect("peeked");
        assert_eq!(p.ph, Some(&b"X"[..]));
        assert_eq!(p.cat, Some(&b"cpu_op"[..]));
        assert_eq!(p.name, Some(&b"aten::mm"[..]));
        assert_eq!(p.ts, Some(5027045053556.817));
        assert_eq!(p.numbers(), Some((Some(2.9), Some(1), Some(7))));
        // Any order; a member missing; an escaped string elsewhere.
        let p = peek(br#" { "ts":3 , "x":"a\"b\\", "cat":"kernel" } "#).expect("peeked");
        assert_eq!((p.cat, p.ts, p.ph), (Some(&b"kernel"[..]), Some(3.0), None));
        assert_eq!(peek(b"{}"), Some(Peek::default()));
        // Not plain: an escaped judging member, a non-object, damage.
        for bad in [
            &br#"{"name": "a\"b", "ts": 1}"#[..],
            b"[1]",
            br#"{"ts": "#,
            br#"{"ts": 1 "ph": "X"}"#,
            br#"{"ts": 1x}"#,
            br#"{"cat": 7, "ts": 1, "x": "unclosed}"#,
            br#"{"ts": 1, "ts": 2}"#,
            br#"{"ph": null, "cat": "cpu_op", "name": "a", "ph": "X", "ts": 1}"#,
        ] {
            let p = peek(bad);
            assert!(
                p.as_ref().is_none_or(|p| !p.whole()),
                "{:?}: {p:?}",
                String::from_utf8_lossy(bad)
            );
        }
        // A number the parse cannot read: no numbers.
        assert_eq!(peek(br#"{"pid": {}}"#).unwrap().numbers(), None);
        assert_eq!(peek(br#"{"dur": "1"}"#).unwrap().numbers(), None);
        assert_eq!(peek(b"{}").unwrap().numbers(), Some((None, None, None)));
    }

    /// The members as a whole parse reads them (an event with a member
    /// twice, or of another type, does not parse).
    #[derive(serde::Deserialize)]
    struct Judged {
        ph: Option<String>,
        cat: Option<String>,
        name: Option<String>,
        ts: Option<f64>,
        dur: Option<f64>,
        pid: Option<Num>,
        tid: Option<Num>,
    }

    proptest::proptest! {
        /// A real event with bytes changed, inserted or removed: the glance
        /// never panics, and what it reads of an event that parses is what
        /// the parse reads.
        #[test]
        fn a_glance_agrees_with_the_parse(
            muts in proptest::collection::vec((0usize..400, 0u8..4, proptest::num::u8::ANY), 0..6)
        ) {
            let mut v = br#"{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 12480, "tid": 12480,
                "ts": 5027045053556.817, "dur": 2.974, "args": {"External id": 4222, "Input Dims": [[8, 16], []],
                "Concrete Inputs": ["", "6", "a\"b"]}}"#.to_vec();
            for (at, how, b) in muts {
                let at = at % (v.len() + 1);
                match how {
                    0 if at < v.len() => v[at] = b,
                    1 => v.insert(at, b),
                    2 if at < v.len() => { v.remove(at); }
                    _ => v.insert(at, b"\"{},: 9"[b as usize % 7]),
                }
            }
            let glance = peek(&v);
            if let (Some(p), Ok(f)) = (glance, serde_json::from_slice::<Judged>(&v)) {
                let s = |x: Option<&[u8]>| x.map(|x| String::from_utf8_lossy(x).into_owned());
                if p.ph.is_some() { proptest::prop_assert_eq!(s(p.ph), f.ph); }
                if p.cat.is_some() { proptest::prop_assert_eq!(s(p.cat), f.cat); }
                if p.name.is_some() { proptest::prop_assert_eq!(s(p.name), f.name); }
                proptest::prop_assert_eq!(p.ts, f.ts);
                let read = (f.dur, f.pid.map(|n| n.0), f.tid.map(|n| n.0));
                proptest::prop_assert_eq!(p.numbers(), Some(read));
            }
        }
    }
}
