//! Zipkin v2 JSON spans: an array of spans with `traceId`, `id`,
//! `parentId`, `name`, `timestamp` and `duration` (microseconds), and the
//! service in `localEndpoint.serviceName`.
//!
//! A server span that shares its id with the client span that called it
//! (`"shared": true`, B3 propagation) becomes the client span's child; the
//! spans that name the shared id as their parent are the server span's
//! ([`super::shared`]).

use super::shared::server_id;
use super::{id_text, At, Collector, Span};
use serde_json::Value;

impl Collector {
    pub(super) fn zipkin_span(&mut self, v: Value, at: At) {
        let Some(sp) = self.object(v, at) else {
            return;
        };
        let keys = ["id", "timestamp", "duration"];
        let (id, start, dur) = self.id_start_duration(&sp, at, keys);
        let parent = self.reference(sp.get("parentId"), at, "parentId");
        let (Some(id), Some(start), Some(dur)) = (id, start, dur) else {
            return;
        };
        let (id, parent) = match sp.get("shared") == Some(&Value::Bool(true)) {
            true => (server_id(&id), Some(id)),
            false => (id, parent),
        };
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
