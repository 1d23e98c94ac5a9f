//! Trace and span ids in one spelling: lowercase hex.
//!
//! OTLP JSON carries ids as hex (the OTLP/JSON encoding) or as base64 (the
//! protobuf JSON mapping, e.g. Python's `MessageToDict`); protobuf carries
//! bytes; Jaeger and Zipkin carry hex, sometimes uppercase. Whatever the
//! input used, an id is shown, compared and looked up (`--trace ID`) in
//! lowercase hex.

use base64::alphabet;
use base64::engine::{DecodePaddingMode, Engine, GeneralPurpose, GeneralPurposeConfig};

/// Base64 of either alphabet, padded or not.
fn engines() -> [GeneralPurpose; 2] {
    let config =
        GeneralPurposeConfig::new().with_decode_padding_mode(DecodePaddingMode::Indifferent);
    [
        GeneralPurpose::new(&alphabet::STANDARD, config),
        GeneralPurpose::new(&alphabet::URL_SAFE, config),
    ]
}

/// Bytes as lowercase hex.
pub fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        s.push(DIGITS[usize::from(b >> 4)] as char);
        s.push(DIGITS[usize::from(b & 15)] as char);
    }
    s
}

/// An id in lowercase hex: hex is lowercased; base64 of 8 or 16 bytes (a
/// span or trace id) is decoded; anything else is kept as it is.
pub fn normalize(id: &str) -> String {
    if id.bytes().all(|b| b.is_ascii_hexdigit()) {
        return id.to_ascii_lowercase();
    }
    // Base64 of 8 bytes is 11 or 12 characters, of 16 bytes 22 or 24.
    if matches!(id.len(), 11 | 12 | 22 | 24) {
        for engine in engines() {
            if let Ok(b) = engine.decode(id) {
                if matches!(b.len(), 8 | 16) {
                    return hex(&b);
                }
            }
        }
    }
    id.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_become_lowercase_hex() {
        let trace = "5b8efff798038103d269b633813fc60c";
        let span = "eee19b7ec3c1b174";
        assert_eq!(normalize("5B8EFFF798038103D269B633813FC60C"), trace);
        assert_eq!(normalize(trace), trace);
        // Base64 as protobuf's JSON mapping writes it, padded or not,
        // standard or URL-safe.
        assert_eq!(normalize("W47/95gDgQPSabYzgT/GDA=="), trace);
        assert_eq!(normalize("W47_95gDgQPSabYzgT_GDA"), trace);
        assert_eq!(normalize("7uGbfsPBsXQ="), span);
        assert_eq!(normalize("7uGbfsPBsXQ"), span);
        // Not an id of 8 or 16 bytes: kept.
        assert_eq!(normalize("my-span"), "my-span");
        assert_eq!(normalize("AAAA"), "aaaa");
        assert_eq!(normalize("AAA="), "AAA=");
        assert_eq!(hex(&[0, 0xab, 0x10]), "00ab10");
    }
}
