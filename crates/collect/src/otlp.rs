//! OTLP/HTTP bodies: decoding an `ExportTraceServiceRequest` (protobuf or
//! JSON, gzip or not) and encoding the answers the OTLP specification
//! asks for, in the request's own encoding.

use flate2::read::GzDecoder;
use opentelemetry_proto::tonic::collector::trace::v1::{
    ExportTracePartialSuccess, ExportTraceServiceRequest, ExportTraceServiceResponse,
};
use opentelemetry_proto::tonic::trace::v1::{span::SpanKind, status::StatusCode};
use prost::Message;
use serde_json::Value;
use std::io::Read;

/// How a request's body is encoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Encoding {
    Protobuf,
    Json,
}

impl Encoding {
    /// From the `Content-Type` header (`None`: not an OTLP encoding).
    pub fn of(content_type: Option<&str>) -> Option<Encoding> {
        let ct = content_type.unwrap_or("application/x-protobuf");
        let ct = ct.split(';').next().unwrap_or("").trim();
        match ct.to_ascii_lowercase().as_str() {
            "application/x-protobuf" | "application/protobuf" => Some(Encoding::Protobuf),
            "application/json" => Some(Encoding::Json),
            _ => None,
        }
    }

    pub fn content_type(self) -> &'static str {
        match self {
            Encoding::Protobuf => "application/x-protobuf",
            Encoding::Json => "application/json",
        }
    }
}

/// Why a body was refused.
#[derive(Debug)]
pub enum Refused {
    /// Larger than the limit once decompressed (413).
    TooLarge,
    /// Not a request (400), and why.
    Bad(String),
}

/// The body, gunzipped when `gzip`, at most `max` bytes.
pub fn body(raw: &[u8], gzip: bool, max: usize) -> Result<Vec<u8>, Refused> {
    if !gzip {
        return Ok(raw.to_vec());
    }
    let mut out = Vec::new();
    let mut d = GzDecoder::new(raw).take(max as u64 + 1);
    d.read_to_end(&mut out)
        .map_err(|e| Refused::Bad(format!("the gzip body is damaged: {e}")))?;
    if out.len() > max {
        return Err(Refused::TooLarge);
    }
    Ok(out)
}

/// Decodes an `ExportTraceServiceRequest`.
pub fn decode(body: &[u8], enc: Encoding) -> Result<ExportTraceServiceRequest, Refused> {
    match enc {
        Encoding::Protobuf => ExportTraceServiceRequest::decode(body)
            .map_err(|e| Refused::Bad(format!("not an OTLP ExportTraceServiceRequest: {e}"))),
        Encoding::Json => json_request(body)
            .map_err(|e| Refused::Bad(format!("not an OTLP JSON ExportTraceServiceRequest: {e}"))),
    }
}

/// A JSON request. The proto3 JSON mapping lets an enum be written by its
/// name (`"kind": "SPAN_KIND_SERVER"`, `"code": "STATUS_CODE_ERROR"`), as
/// span files `analyze` reads may be; the decoder takes numbers only, so a
/// body it refuses is read again with such names as their numbers. When
/// that does not help, the first error is the answer.
fn json_request(body: &[u8]) -> Result<ExportTraceServiceRequest, serde_json::Error> {
    let first = match serde_json::from_slice(body) {
        Ok(req) => return Ok(req),
        Err(e) => e,
    };
    let Ok(mut doc) = serde_json::from_slice::<Value>(body) else {
        return Err(first);
    };
    if !enums_as_numbers(&mut doc) {
        return Err(first);
    }
    serde_json::from_value(doc).map_err(|_| first)
}

/// Replaces the enum names of the spans' `kind` and `status.code` by
/// their numbers; whether any was replaced.
fn enums_as_numbers(doc: &mut Value) -> bool {
    fn list<'a>(v: &'a mut Value, key: &str) -> impl Iterator<Item = &'a mut Value> {
        v.get_mut(key)
            .and_then(Value::as_array_mut)
            .into_iter()
            .flatten()
    }
    let mut replaced = false;
    let mut number = |v: Option<&mut Value>, of: &dyn Fn(&str) -> Option<i32>| {
        let Some(v) = v else { return };
        if let Some(n) = v.as_str().and_then(of) {
            *v = Value::from(n);
            replaced = true;
        }
    };
    for rs in list(doc, "resourceSpans") {
        for sp in list(rs, "scopeSpans").flat_map(|ss| list(ss, "spans")) {
            number(sp.get_mut("kind"), &|n| {
                SpanKind::from_str_name(n).map(|k| k as i32)
            });
            let code = sp.get_mut("status").and_then(|s| s.get_mut("code"));
            number(code, &|n| StatusCode::from_str_name(n).map(|c| c as i32));
        }
    }
    replaced
}

/// A 200's body: the partial success when spans were rejected.
pub fn success(enc: Encoding, rejected: i64, message: &str) -> Vec<u8> {
    let resp = ExportTraceServiceResponse {
        partial_success: (rejected > 0).then(|| ExportTracePartialSuccess {
            rejected_spans: rejected,
            error_message: message.to_string(),
        }),
    };
    match enc {
        Encoding::Protobuf => resp.encode_to_vec(),
        Encoding::Json => serde_json::to_vec(&resp).unwrap_or_else(|_| b"{}".to_vec()),
    }
}

/// `google.rpc.Status`, the body of an OTLP error answer.
#[derive(Clone, PartialEq, prost::Message)]
struct Status {
    #[prost(int32, tag = "1")]
    code: i32,
    #[prost(string, tag = "2")]
    message: String,
}

/// An error answer's body: a `Status` with gRPC code `code` (3: invalid
/// argument, 8: resource exhausted, 14: unavailable).
pub fn status(enc: Encoding, code: i32, message: &str) -> Vec<u8> {
    match enc {
        Encoding::Protobuf => Status {
            code,
            message: message.to_string(),
        }
        .encode_to_vec(),
        Encoding::Json => serde_json::json!({"code": code, "message": message})
            .to_string()
            .into_bytes(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_types_pick_the_encoding() {
        assert_eq!(Encoding::of(None), Some(Encoding::Protobuf));
        assert_eq!(
            Encoding::of(Some("application/json; charset=utf-8")),
            Some(Encoding::Json)
        );
        assert_eq!(Encoding::of(Some("text/plain")), None);
    }

    #[test]
    fn a_gzip_bomb_is_too_large_and_junk_is_bad() {
        use flate2::write::GzEncoder;
        use std::io::Write;
        let mut e = GzEncoder::new(Vec::new(), flate2::Compression::best());
        e.write_all(&vec![0u8; 1 << 20]).unwrap();
        let gz = e.finish().unwrap();
        assert!(matches!(body(&gz, true, 1000), Err(Refused::TooLarge)));
        assert_eq!(body(&gz, true, 2 << 20).unwrap().len(), 1 << 20);
        assert!(matches!(body(b"junk", true, 10), Err(Refused::Bad(_))));
        assert!(matches!(
            decode(b"\xff\xff", Encoding::Protobuf),
            Err(Refused::Bad(_))
        ));
        assert!(matches!(decode(b"{", Encoding::Json), Err(Refused::Bad(_))));
    }

    #[test]
    fn enums_by_name_are_read_as_their_numbers() {
        let span = |kind: &str, code: &str| {
            format!(
                r#"{{"resourceSpans":[{{"scopeSpans":[{{"spans":[{{"traceId":"0102030405060708090a0b0c0d0e0f10","spanId":"0102030405060708","name":"a","kind":{kind},"startTimeUnixNano":"1","endTimeUnixNano":"2","status":{{"code":{code}}}}}]}}]}}]}}"#
            )
        };
        let by_name = span("\"SPAN_KIND_CLIENT\"", "\"STATUS_CODE_ERROR\"");
        let by_number = span("3", "2");
        let a = decode(by_name.as_bytes(), Encoding::Json).unwrap();
        let b = decode(by_number.as_bytes(), Encoding::Json).unwrap();
        assert_eq!(a, b);
        assert_eq!(a.resource_spans[0].scope_spans[0].spans[0].kind, 3);
        // An unknown name is refused with the decoder's own message.
        let Err(Refused::Bad(why)) = decode(span("\"SIDEWAYS\"", "2").as_bytes(), Encoding::Json)
        else {
            panic!("an unknown kind was read")
        };
        assert!(
            why.contains("kind") || why.contains("invalid type"),
            "{why}"
        );
    }
}
