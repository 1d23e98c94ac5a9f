//! An OTLP JSON span as read: only the members critpath uses, each kept as
//! the JSON value it was (for messages about unusable ones); every other
//! member (attributes, events, status, ...) is skipped without being built.
//! A span that is not an object is kept whole, to be reported.

use serde::de::value::SeqAccessDeserializer;
use serde::de::{Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use serde_json::Value;
use std::fmt;

/// The members of an OTLP span critpath reads; a member given twice keeps
/// its last value, as in a JSON object read whole.
#[derive(Default)]
pub(super) struct OtlpSpan {
    pub trace: Option<Value>,
    pub id: Option<Value>,
    pub parent: Option<Value>,
    pub name: Option<Value>,
    pub start: Option<Value>,
    pub end: Option<Value>,
    pub kind: Option<Value>,
    pub links: Option<Value>,
}

/// An element of an OTLP `spans` list.
#[allow(clippy::large_enum_variant)] // one at a time, on the stack
pub(super) enum OtlpNode {
    Span(OtlpSpan),
    /// Not a JSON object.
    Other(Value),
}

/// A member's name, matched without being copied.
enum Key {
    Trace,
    Id,
    Parent,
    Name,
    Start,
    End,
    Kind,
    Links,
    Other,
}

impl<'de> Deserialize<'de> for Key {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_identifier(KeyVisitor)
    }
}

struct KeyVisitor;

impl Visitor<'_> for KeyVisitor {
    type Value = Key;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a member name")
    }
    fn visit_str<E>(self, k: &str) -> Result<Key, E> {
        Ok(match k {
            "traceId" => Key::Trace,
            "spanId" => Key::Id,
            "parentSpanId" => Key::Parent,
            "name" => Key::Name,
            "startTimeUnixNano" => Key::Start,
            "endTimeUnixNano" => Key::End,
            "kind" => Key::Kind,
            "links" => Key::Links,
            _ => Key::Other,
        })
    }
}

impl<'de> Deserialize<'de> for OtlpNode {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(NodeVisitor)
    }
}

struct NodeVisitor;

impl<'de> Visitor<'de> for NodeVisitor {
    type Value = OtlpNode;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a span (a JSON object)")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<OtlpNode, A::Error> {
        let mut s = OtlpSpan::default();
        while let Some(key) = map.next_key::<Key>()? {
            let slot = match key {
                Key::Trace => &mut s.trace,
                Key::Id => &mut s.id,
                Key::Parent => &mut s.parent,
                Key::Name => &mut s.name,
                Key::Start => &mut s.start,
                Key::End => &mut s.end,
                Key::Kind => &mut s.kind,
                Key::Links => &mut s.links,
                Key::Other => {
                    map.next_value::<IgnoredAny>()?;
                    continue;
                }
            };
            *slot = Some(map.next_value()?);
        }
        Ok(OtlpNode::Span(s))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<OtlpNode, A::Error> {
        Value::deserialize(SeqAccessDeserializer::new(seq)).map(OtlpNode::Other)
    }
    fn visit_str<E>(self, v: &str) -> Result<OtlpNode, E> {
        Ok(OtlpNode::Other(Value::from(v)))
    }
    fn visit_string<E>(self, v: String) -> Result<OtlpNode, E> {
        Ok(OtlpNode::Other(Value::from(v)))
    }
    fn visit_bool<E>(self, v: bool) -> Result<OtlpNode, E> {
        Ok(OtlpNode::Other(Value::from(v)))
    }
    fn visit_u64<E>(self, v: u64) -> Result<OtlpNode, E> {
        Ok(OtlpNode::Other(Value::from(v)))
    }
    fn visit_i64<E>(self, v: i64) -> Result<OtlpNode, E> {
        Ok(OtlpNode::Other(Value::from(v)))
    }
    fn visit_f64<E>(self, v: f64) -> Result<OtlpNode, E> {
        Ok(OtlpNode::Other(Value::from(v)))
    }
    fn visit_unit<E>(self) -> Result<OtlpNode, E> {
        Ok(OtlpNode::Other(Value::Null))
    }
}
