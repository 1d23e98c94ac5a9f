//! An event's fields as the collector asks for them ([`View`]): from a
//! typed parse that borrows the event's strings ([`Fast`]: no map, no copy
//! of a string without escapes), or from its `serde_json::Value` where the
//! typed parse does not fit the event (a field of another type or out of
//! range, a repeated field, `M` metadata, an `id2`). The two give the same
//! answers: the typed parse refuses whatever it would read differently,
//! and that event is read as a `Value`, its problems said as before.

use crate::json::shown;
use serde::de::{self, Deserializer, IgnoredAny, Visitor};
use serde::Deserialize;
use serde_json::{Map, Value};
use std::borrow::Cow;
use std::fmt;

/// What the collector reads of an event.
pub(super) trait View {
    /// A string field (`name`, `cat`, `bp`); `None` when absent or not a
    /// string.
    fn text(&self, key: &str) -> Option<&str>;
    /// An id field (`pid`, `tid`, `id`, `bind_id`) as text: a string as it
    /// is, a number in decimal.
    fn id(&self, key: &str) -> Option<String>;
    /// An async slice's id: `id`, else `id2.local`.
    fn async_id(&self) -> Option<String>;
    /// A time field (`ts`, `dur`) in nanoseconds: `None` when absent, what
    /// is wrong with it (the value as shown, and why) when it is not a time.
    fn time(&self, key: &str) -> Option<Result<u64, String>>;
    /// A field present but not a string, as shown in messages (the typed
    /// parse refuses such an event, so only the `Value` reading has one).
    fn not_text(&self, key: &str) -> Option<String>;
    /// A field that is `true`.
    fn flag(&self, key: &str) -> bool;
}

/// Microseconds as integer nanoseconds; `None` unless a non-negative number
/// in range.
fn us(v: &Value) -> Option<u64> {
    if let Some(u) = v.as_u64() {
        return us_whole(u);
    }
    us_float(v.as_f64()?)
}

/// Whole microseconds are exact (past 2^53 a float is not).
fn us_whole(u: u64) -> Option<u64> {
    u.checked_mul(1000).filter(|&ns| ns <= i64::MAX as u64)
}

fn us_float(f: f64) -> Option<u64> {
    let ns = (f * 1000.0).round();
    // i64::MAX as f64 is 2^63, one past i64::MAX: the bound is strict.
    (f.is_finite() && f >= 0.0 && ns < i64::MAX as f64).then_some(ns as u64)
}

/// Why `v` is not a time, as the messages say it: a number past the latest
/// time names the limit.
fn not_time(v: &Value) -> String {
    let shown = shown(v);
    match v.as_f64() {
        Some(f) if f.is_finite() && f >= 0.0 => format!(
            "{shown} is past the latest time ({} ns, {} µs)",
            i64::MAX,
            i64::MAX as f64 / 1000.0
        ),
        _ => format!("{shown} is not a time (a non-negative number of microseconds)"),
    }
}

fn id_text(v: Option<&Value>) -> Option<String> {
    match v? {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

impl View for Map<String, Value> {
    fn text(&self, key: &str) -> Option<&str> {
        self.get(key).and_then(Value::as_str)
    }
    fn id(&self, key: &str) -> Option<String> {
        id_text(self.get(key))
    }
    fn async_id(&self) -> Option<String> {
        id_text(self.get("id")).or_else(|| id_text(self.get("id2").and_then(|v| v.get("local"))))
    }
    fn time(&self, key: &str) -> Option<Result<u64, String>> {
        self.get(key).map(|v| us(v).ok_or_else(|| not_time(v)))
    }
    fn not_text(&self, key: &str) -> Option<String> {
        self.get(key).filter(|v| !v.is_string()).map(shown)
    }
    fn flag(&self, key: &str) -> bool {
        self.get(key) == Some(&Value::Bool(true))
    }
}

/// A field that may be absent; present, it must be of its type (`null` is
/// not absent: the `Value` reading reports it).
pub(super) struct Got<T>(Option<T>);

impl<T> Default for Got<T> {
    fn default() -> Self {
        Got(None)
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Got<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        T::deserialize(d).map(|v| Got(Some(v)))
    }
}

/// A string, borrowed from the event when it has no escapes.
pub(super) struct Text<'a>(Cow<'a, str>);

impl<'de: 'a, 'a> Deserialize<'de> for Text<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Text<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E>(self, s: &'de str) -> Result<Text<'de>, E> {
                Ok(Text(Cow::Borrowed(s)))
            }
            fn visit_str<E>(self, s: &str) -> Result<Text<'de>, E> {
                Ok(Text(Cow::Owned(s.to_string())))
            }
            fn visit_string<E>(self, s: String) -> Result<Text<'de>, E> {
                Ok(Text(Cow::Owned(s)))
            }
        }
        d.deserialize_str(V)
    }
}

/// An id: a string, or an integer (shown in decimal, as `Value` shows it).
pub(super) enum Id<'a> {
    Text(Cow<'a, str>),
    Whole(u64),
    Negative(i64),
}

impl<'de: 'a, 'a> Deserialize<'de> for Id<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Id<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string or an integer")
            }
            fn visit_u64<E>(self, v: u64) -> Result<Id<'de>, E> {
                Ok(Id::Whole(v))
            }
            fn visit_i64<E>(self, v: i64) -> Result<Id<'de>, E> {
                Ok(Id::Negative(v))
            }
            fn visit_borrowed_str<E>(self, s: &'de str) -> Result<Id<'de>, E> {
                Ok(Id::Text(Cow::Borrowed(s)))
            }
            fn visit_str<E>(self, s: &str) -> Result<Id<'de>, E> {
                Ok(Id::Text(Cow::Owned(s.to_string())))
            }
        }
        d.deserialize_any(V)
    }
}

impl Id<'_> {
    fn text(&self) -> String {
        match self {
            Id::Text(s) => s.to_string(),
            Id::Whole(v) => v.to_string(),
            Id::Negative(v) => v.to_string(),
        }
    }
}

/// A time in nanoseconds, from microseconds that are a time (anything
/// else is refused, for the `Value` reading to report).
pub(super) struct Time(u64);

impl<'de> Deserialize<'de> for Time {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Time;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a non-negative number of microseconds")
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Time, E> {
                us_whole(v).map(Time).ok_or_else(|| E::custom("not a time"))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Time, E> {
                us_float(v).map(Time).ok_or_else(|| E::custom("not a time"))
            }
        }
        d.deserialize_any(V)
    }
}

/// The fields of an event the typed parse reads; others are skipped.
#[derive(Deserialize)]
pub(super) struct Fast<'a> {
    #[serde(borrow)]
    ph: Text<'a>,
    #[serde(borrow, default)]
    name: Got<Text<'a>>,
    #[serde(borrow, default)]
    cat: Got<Text<'a>>,
    #[serde(borrow, default)]
    bp: Got<Text<'a>>,
    #[serde(borrow, default)]
    pid: Got<Id<'a>>,
    #[serde(borrow, default)]
    tid: Got<Id<'a>>,
    #[serde(borrow, default)]
    id: Got<Id<'a>>,
    #[serde(borrow, default)]
    bind_id: Got<Id<'a>>,
    #[serde(default)]
    ts: Got<Time>,
    #[serde(default)]
    dur: Got<Time>,
    #[serde(default)]
    flow_in: Got<bool>,
    #[serde(default)]
    flow_out: Got<bool>,
    #[serde(default)]
    id2: Got<IgnoredAny>,
}

impl<'a> Fast<'a> {
    /// The event's typed parse, when it fits: not metadata (`M`, whose
    /// names are in `args`), no `id2`.
    pub(super) fn parse(bytes: &'a [u8]) -> Option<Fast<'a>> {
        // An object only: serde fills a struct from an array too, field by
        // field, where the `Value` reading says it is no event.
        let first = bytes.iter().find(|b| !b.is_ascii_whitespace());
        if first != Some(&b'{') {
            return None;
        }
        let f: Fast = serde_json::from_slice(bytes).ok()?;
        (f.ph.0 != "M" && f.id2.0.is_none()).then_some(f)
    }

    pub(super) fn ph(&self) -> &str {
        &self.ph.0
    }

    fn id_field(&self, key: &str) -> Option<&Id<'a>> {
        match key {
            "pid" => self.pid.0.as_ref(),
            "tid" => self.tid.0.as_ref(),
            "id" => self.id.0.as_ref(),
            "bind_id" => self.bind_id.0.as_ref(),
            _ => None,
        }
    }
}

impl View for Fast<'_> {
    fn text(&self, key: &str) -> Option<&str> {
        let field = match key {
            "name" => &self.name,
            "cat" => &self.cat,
            "bp" => &self.bp,
            _ => return None,
        };
        field.0.as_ref().map(|t| t.0.as_ref())
    }
    fn id(&self, key: &str) -> Option<String> {
        self.id_field(key).map(Id::text)
    }
    fn async_id(&self) -> Option<String> {
        // An event with `id2` is read as a `Value`.
        self.id("id")
    }
    fn time(&self, key: &str) -> Option<Result<u64, String>> {
        let field = match key {
            "ts" => &self.ts,
            "dur" => &self.dur,
            _ => return None,
        };
        field.0.as_ref().map(|t| Ok(t.0))
    }
    fn not_text(&self, _key: &str) -> Option<String> {
        None
    }
    fn flag(&self, key: &str) -> bool {
        let field = match key {
            "flow_in" => &self.flow_in,
            "flow_out" => &self.flow_out,
            _ => return false,
        };
        field.0 == Some(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// A field's value: the types the fast parse reads and the ones it
    /// leaves to the `Value` reading.
    fn value() -> impl Strategy<Value = String> {
        prop_oneof![
            Just("null".to_string()),
            Just("true".to_string()),
            Just("false".to_string()),
            any::<u64>().prop_map(|v| v.to_string()),
            any::<i64>().prop_map(|v| v.to_string()),
            (-1e20f64..1e20).prop_map(|v| format!("{v:?}")),
            Just("1e400".to_string()),
            Just("9223372036854775.807".to_string()),
            "[a-z\\\\\"é]{0,6}".prop_map(|s| serde_json::to_string(&s).unwrap()),
            Just("\"a\\u00e9\\n\"".to_string()),
            Just("{\"local\": 7}".to_string()),
            Just("[1, [2, {}]]".to_string()),
        ]
    }

    const KEYS: [&str; 14] = [
        "ph", "name", "cat", "bp", "pid", "tid", "id", "bind_id", "ts", "dur", "flow_in",
        "flow_out", "id2", "args",
    ];

    fn event() -> impl Strategy<Value = String> {
        let ph = prop_oneof![
            Just("\"X\""),
            Just("\"B\""),
            Just("\"b\""),
            Just("\"s\""),
            Just("\"f\""),
            Just("\"M\""),
            Just("\"\\u0058\""),
            Just("7"),
        ];
        let fields = proptest::collection::vec((0..KEYS.len(), value()), 0..10);
        (ph, fields, any::<bool>(), 0..8u8).prop_map(|(ph, fields, with_ph, shape)| {
            if shape == 0 {
                // An array of the values: no event.
                let values: Vec<String> = fields.into_iter().map(|(_, v)| v).collect();
                return format!("[{ph}, {}]", values.join(", "));
            }
            let mut parts: Vec<String> = fields
                .into_iter()
                .map(|(k, v)| format!("\"{}\": {v}", KEYS[k]))
                .collect();
            if with_ph {
                parts.insert(0, format!("\"ph\": {ph}"));
            }
            format!("{{{}}}", parts.join(", "))
        })
    }

    fn answers(v: &impl View) -> Vec<String> {
        let mut out = Vec::new();
        for k in ["name", "cat", "bp"] {
            out.push(format!("{:?}", v.text(k)));
            out.push(format!("{:?}", v.not_text(k)));
        }
        for k in ["pid", "tid", "id", "bind_id"] {
            out.push(format!("{:?}", v.id(k)));
        }
        out.push(format!("{:?}", v.async_id()));
        for k in ["ts", "dur"] {
            out.push(format!("{:?}", v.time(k)));
        }
        for k in ["flow_in", "flow_out"] {
            out.push(format!("{:?}", v.flag(k)));
        }
        out
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(4000))]
        /// Where the typed parse takes an event, it answers as the
        /// `Value` reading does, phase included. (A field it skips may be
        /// one a `Value` cannot hold, a number past f64 or nested past
        /// serde_json's recursion limit: such an event is read now, where
        /// it was skipped as not JSON.)
        #[test]
        fn the_typed_parse_answers_as_the_value_reading(e in event()) {
            let fast = Fast::parse(e.as_bytes());
            let value: Result<Value, _> = serde_json::from_str(&e);
            if let (Some(_), Ok(v)) = (&fast, &value) {
                prop_assert!(v.is_object(), "the typed parse took {}", e);
            }
            if let (Some(fast), Ok(Value::Object(map))) = (fast, value) {
                prop_assert_eq!(map.get("ph").and_then(Value::as_str), Some(fast.ph()), "{}", e);
                prop_assert_eq!(answers(&fast), answers(&map), "{}", e);
            }
        }
    }

    #[test]
    fn events_of_the_common_shapes_take_the_typed_parse() {
        for e in [
            r#"{"ph":"X","name":"f","pid":1,"tid":2,"ts":1.5,"dur":3,"args":{"a":[1]}}"#,
            r#"{"ph":"s","id":"0x1","cat":"c","pid":"p","tid":-3,"ts":7,"bp":"e"}"#,
            r#"{"ph":"X","name":"g\n","pid":1,"tid":1,"ts":0,"dur":1,"bind_id":4,"flow_out":true}"#,
        ] {
            assert!(Fast::parse(e.as_bytes()).is_some(), "{e}");
        }
        for e in [
            r#"{"ph":"M","name":"thread_name","pid":1,"tid":1,"args":{"name":"t"}}"#,
            r#"{"ph":"b","id2":{"local":"1"},"ts":1}"#,
            r#"{"ph":"X","ts":-1,"dur":1}"#,
            r#"{"ph":"X","ts":null,"dur":1}"#,
            r#"{"ph":"X","ts":1,"ts":2,"dur":1}"#,
            r#"{"name":"no phase"}"#,
            r#"["X","work","c","b",1,1,0,0,10,5]"#,
            r#" ["X"]"#,
        ] {
            assert!(Fast::parse(e.as_bytes()).is_none(), "{e}");
        }
    }
}
