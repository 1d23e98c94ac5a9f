//! The JSONL reader's error path: a line that serde_json could not read
//! into a record's fields is read again as plain JSON, field by field, so
//! that a message names the field that is wrong and what it holds, and a
//! field of the wrong type that the record's kind does not use is ignored
//! (docs/formats.md). Only bad lines come here; the cost does not matter.

use super::{quoted, Line, NumOrStr};
use critpath_trace::Event;
use serde::de::{Deserializer, MapAccess, Visitor};
use serde::Deserialize;
use serde_json::Value;
use std::borrow::Cow;
use std::fmt;

/// A field whose value has the wrong type, and what the message says.
#[derive(Debug, PartialEq)]
pub(super) struct BadField {
    pub field: &'static str,
    pub message: String,
}

/// The members of an object in the order they are written, repeated ones
/// too (serde_json's `Map` keeps neither).
struct Members(Vec<(String, Value)>);

impl<'de> Deserialize<'de> for Members {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Members;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<Members, A::Error> {
                let mut all = Vec::new();
                while let Some(kv) = m.next_entry::<String, Value>()? {
                    all.push(kv);
                }
                Ok(Members(all))
            }
        }
        d.deserialize_map(V)
    }
}

/// What a JSON value is, for a message: `the string "5"`, `the number
/// 1.5`, `an object`, ...
fn found(v: &Value) -> String {
    match v {
        Value::Null => "null".into(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => format!("the number {n}"),
        Value::String(s) => format!("the string {}", quoted(s)),
        Value::Array(_) => "an array".into(),
        Value::Object(_) => "an object".into(),
    }
}

/// serde_json's syntax error, with the column only (the line is ours).
fn syntax(e: serde_json::Error) -> String {
    let what = e.to_string();
    if what.starts_with("recursion limit exceeded") {
        // No record nests: this is a JSON document (a Chrome trace on one
        // line?) nested past what critpath reads.
        return format!(
            "values nested more than 128 levels deep (column {}): this is no JSONL record (a record nests at most a few levels), nor any trace format critpath reads",
            e.column()
        );
    }
    let what = match what.rfind(" at line ") {
        Some(i) => {
            let col = what[i..].rsplit(' ').next().unwrap_or("");
            format!("{} (column {col})", &what[..i])
        }
        None => what,
    };
    format!("expected a JSON object with the fields of a record (docs/formats.md): {what}")
}

/// The fields of a line serde_json would not read as a record, and those
/// of the wrong type; `Err` is the message for a line that is not a JSON
/// object, or not JSON, or repeats a field.
pub(super) fn line(text: &[u8]) -> Result<(Line<'static>, Vec<BadField>), String> {
    let v: Value = serde_json::from_slice(text).map_err(syntax)?;
    if !v.is_object() {
        return Err(format!(
            "expected a JSON object (a record, docs/formats.md), found {}",
            found(&v)
        ));
    }
    let Members(members) = serde_json::from_slice(text).map_err(syntax)?;
    let mut l = Line::default();
    let mut bad = Vec::new();
    let mut seen: Vec<&'static str> = Vec::new();
    for (key, v) in members {
        let Some(field) = super::FIELDS.iter().copied().find(|f| *f == key) else {
            continue;
        };
        if seen.contains(&field) {
            return Err(format!("field \"{field}\" appears twice"));
        }
        seen.push(field);
        if v.is_null() {
            continue;
        }
        if let Err(expected) = put(&mut l, field, &v) {
            let message = format!(
                "field \"{field}\": expected {expected}, found {}",
                found(&v)
            );
            bad.push(BadField { field, message });
        }
    }
    Ok((l, bad))
}

/// `v` into `field` of `l`; `Err` says what the field takes.
fn put(l: &mut Line<'static>, field: &str, v: &Value) -> Result<(), String> {
    let text = || v.as_str().map(|s| Cow::Owned(s.to_string()));
    let num_or_str = || match v {
        Value::String(s) => Some(NumOrStr::Str(Cow::Owned(s.clone()))),
        _ => v.as_u64().map(NumOrStr::Num),
    };
    let ok = match field {
        "t" => {
            l.t = v.as_u64();
            l.t.is_some()
        }
        "waited" | "ended" => {
            let slot = match field {
                "waited" => &mut l.waited,
                _ => &mut l.ended,
            };
            *slot = v.as_bool();
            slot.is_some()
        }
        "id" | "thread" | "cpu" => {
            let slot = match field {
                "id" => &mut l.id,
                "thread" => &mut l.thread,
                _ => &mut l.cpu,
            };
            *slot = num_or_str();
            slot.is_some()
        }
        _ => {
            let slot = match field {
                "ev" => &mut l.ev,
                "sm" => &mut l.sm,
                "sys" => &mut l.sys,
                "state" => &mut l.state,
                "on" => &mut l.on,
                "on_sys" => &mut l.on_sys,
                "on_state" => &mut l.on_state,
                _ => &mut l.func,
            };
            *slot = text();
            slot.is_some()
        }
    };
    if ok {
        return Ok(());
    }
    Err(match field {
        "t" => "a non-negative integer (nanoseconds)".into(),
        "waited" | "ended" => "true or false".into(),
        "id" | "thread" | "cpu" => "a non-negative integer or a string".into(),
        "ev" => format!("a string, one of {}", Event::NAMES.join(", ")),
        _ => "a string".into(),
    })
}

/// Whether a record of kind `ev` uses `field`. The subject is the first of
/// `sm`, `thread` and `cpu` the line has (`present` says which it has, of
/// the right type or not); the others are not used.
pub(super) fn uses(ev: &str, field: &str, present: impl Fn(&str) -> bool) -> bool {
    if matches!(field, "t" | "ev" | "sys") {
        return true;
    }
    let subject = ["sm", "thread", "cpu"].into_iter().find(|f| present(f));
    let by_kind: &[&str] = match ev {
        "state" => &["state"],
        "wait" => &["state", "on", "on_sys", "on_state"],
        "send" => &["id"],
        "recv" => &["id", "state", "waited"],
        "held" => &["on", "on_state", "ended"],
        "call" | "ret" => &["fn"],
        "push" | "pop" => return ["thread", "sm"].contains(&field),
        "switch" => return ["cpu", "thread"].contains(&field),
        _ => &[],
    };
    subject == Some(field) || by_kind.contains(&field)
}
