//! Zipkin v2 JSON spans: an array of spans with `traceId`, `id`,
//! `parentId`, `name`, `timestamp` and `duration` (microseconds), and the
//! service in `localEndpoint.serviceName`.
//!
//! A server span that shares its id with the client span that called it
//! (`"shared": true`, B3 propagation) becomes the client span's child.

use super::{id_text, At, Collector, Span};
use crate::json::shown;
use serde_json::Value;

impl Collector {
    pub(super) fn zipkin_span(&mut self, v: Value, at: At) {
        let Value::Object(sp) = v else {
            return self.problem(
                at,
                format!("expected a span (a JSON object), found {}", shown(&v)),
            );
        };
        let micros = |v: &Value| v.as_u64().filter(|&us| us <= i64::MAX as u64 / 1000);
        let id = self.need(sp.get("id"), at, "id", "a span id", id_text);
        let start = self.need(
            sp.get("timestamp"),
            at,
            "timestamp",
            "a time in microseconds",
            micros,
        );
        let dur = self.need(
            sp.get("duration"),
            at,
            "duration",
            "a duration in microseconds",
            micros,
        );
        let mut parent = self.reference(sp.get("parentId"), at, "parentId");
        let (Some(mut id), Some(start), Some(dur)) = (id, start, dur) else {
            return;
        };
        if sp.get("shared") == Some(&Value::Bool(true)) {
            parent = Some(id.clone());
            id.push_str(":shared");
        }
        let service = sp
            .get("localEndpoint")
            .and_then(|e| e.get("serviceName"))
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty());
        self.keep(Span {
            trace: sp.get("traceId").and_then(id_text).unwrap_or_default(),
            order: 0,
            id,
            parent,
            follows: Vec::new(),
            service: service.unwrap_or("unknown_service").to_string(),
            name: sp
                .get("name")
                .and_then(Value::as_str)
                .unwrap_or("?")
                .to_string(),
            start: start * 1000,
            end: start.saturating_add(dur).min(i64::MAX as u64 / 1000) * 1000,
            client: sp.get("kind").and_then(Value::as_str) == Some("CLIENT"),
        });
    }
}
