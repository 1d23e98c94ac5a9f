//! Zipkin's shared span ids (B3 propagation): the server span of a call
//! may share its id with the client span that called it (`"shared":
//! true`). It is read as the client span's child, its id marked
//! ([`server_id`]). A span that names the shared id as its parent was
//! called by the server half, which is what made the downstream call
//! (zipkin2's `SpanNode` reads it so): it is moved under the server span,
//! so that the server waits for it. A child of the client's service that
//! is not the server's stays on the client span (work of the caller
//! around its call).

use super::Span;
use rustc_hash::FxHashMap;

/// What marks a shared server span's id.
const SHARED: &str = ":shared";

/// The id of the server span that shares `id` with its client span.
pub(super) fn server_id(id: &str) -> String {
    format!("{id}{SHARED}")
}

/// Does a span of `spans` share its id with its client span?
pub(super) fn any_shared(spans: &[Span]) -> bool {
    spans.iter().any(|s| s.id.ends_with(SHARED))
}

/// Moves the children of a shared id from the client span to the server
/// span that shares it, where there is one; `service` gives a span's
/// final service name. Returns how many were moved.
pub(super) fn attach_to_servers(spans: &mut [Span], service: impl Fn(&Span) -> String) -> usize {
    if !any_shared(spans) {
        return 0;
    }
    let index: FxHashMap<&str, usize> = (spans.iter().enumerate())
        .map(|(i, s)| (s.id.as_str(), i))
        .collect();
    let mut moves = Vec::new();
    for (i, s) in spans.iter().enumerate() {
        let Some(p) = s.parent.as_deref().filter(|p| !p.ends_with(SHARED)) else {
            continue;
        };
        let server = server_id(p);
        let Some(&at) = index.get(server.as_str()).filter(|_| s.id != server) else {
            continue;
        };
        let own = service(s);
        let client = index.get(p).map(|&c| service(&spans[c]));
        if client.as_ref() == Some(&own) && service(&spans[at]) != own {
            continue;
        }
        moves.push((i, server));
    }
    for (i, server) in &mut moves {
        spans[*i].parent = Some(std::mem::take(server));
    }
    moves.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn span(id: &str, parent: Option<&str>, service: &str) -> Span {
        Span {
            trace: "t".into(),
            id: id.into(),
            parent: parent.map(Into::into),
            service: service.into(),
            ..Span::default()
        }
    }

    fn parents(spans: &[Span]) -> Vec<Option<&str>> {
        spans.iter().map(|s| s.parent.as_deref()).collect()
    }

    #[test]
    fn children_of_a_shared_id_are_the_server_spans() {
        let mut spans = [
            span("a", None, "gw"),
            span("b", Some("a"), "fe"),
            span("b:shared", Some("b"), "be"),
            span("c", Some("b"), "db"),
            span("d", Some("b"), "be"),
            // The client's own work around its call stays on it.
            span("e", Some("b"), "fe"),
        ];
        let moved = attach_to_servers(&mut spans, |s| s.service.clone());
        assert_eq!(moved, 2);
        let want = [
            None,
            Some("a"),
            Some("b"),
            Some("b:shared"),
            Some("b:shared"),
            Some("b"),
        ];
        assert_eq!(parents(&spans), want);
    }

    #[test]
    fn without_a_server_span_children_stay_on_the_client() {
        let mut spans = [span("b", None, "fe"), span("c", Some("b"), "db")];
        assert_eq!(attach_to_servers(&mut spans, |s| s.service.clone()), 0);
        assert_eq!(parents(&spans), [None, Some("b")]);
    }
}
