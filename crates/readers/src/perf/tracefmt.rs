//! Tracepoint record layouts: the `format` files of the kernel's tracefs, as
//! perf stores them in a perf.data file's tracing-data section (or, when a
//! damaged file lost that section, as the running kernel offers them).
//! A tracepoint sample's raw bytes are read through these field offsets,
//! never through offsets compiled in, so kernels of other versions work.

use std::collections::HashMap;

/// One field of a tracepoint record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Field {
    pub name: String,
    pub offset: usize,
    pub size: usize,
    pub signed: bool,
    /// `__data_loc` fields hold (length << 16 | offset) of a string stored
    /// later in the record.
    pub data_loc: bool,
}

impl Field {
    /// The field as an unsigned integer (little-endian, as on x86 and arm64).
    #[inline(always)]
    pub fn u64(&self, raw: &[u8]) -> u64 {
        let Some(b) = raw.get(self.offset..self.offset + self.size) else {
            return 0;
        };
        let mut v = match *b {
            [a, b, c, d, e, f, g, h] => u64::from_le_bytes([a, b, c, d, e, f, g, h]),
            [a, b, c, d] => u64::from(u32::from_le_bytes([a, b, c, d])),
            [a, b] => u64::from(u16::from_le_bytes([a, b])),
            [a] => u64::from(a),
            _ => b
                .iter()
                .take(8)
                .enumerate()
                .fold(0, |v, (i, &x)| v | u64::from(x) << (8 * i)),
        };
        if self.signed && self.size < 8 && self.size > 0 && b[self.size - 1] & 0x80 != 0 {
            v |= u64::MAX << (8 * self.size);
        }
        v
    }

    /// The field as a signed integer.
    pub fn i64(&self, raw: &[u8]) -> i64 {
        self.u64(raw) as i64
    }

    /// The field as a string: a fixed `char[N]` or a `__data_loc char[]`,
    /// cut at the first NUL.
    pub fn str<'a>(&self, raw: &'a [u8]) -> &'a [u8] {
        let bytes = if self.data_loc {
            let loc = self.u64(raw);
            let (off, len) = ((loc & 0xffff) as usize, ((loc >> 16) & 0xffff) as usize);
            raw.get(off..off + len).unwrap_or(&[])
        } else {
            raw.get(self.offset..self.offset + self.size).unwrap_or(&[])
        };
        let end = bytes.iter().position(|&c| c == 0).unwrap_or(bytes.len());
        &bytes[..end]
    }
}

/// The layout of one tracepoint.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EventFormat {
    pub system: String,
    pub name: String,
    pub id: u64,
    pub fields: Vec<Field>,
}

impl EventFormat {
    pub fn field(&self, name: &str) -> Option<&Field> {
        self.fields.iter().find(|f| f.name == name)
    }
}

/// Parses one `format` file's text.
pub fn parse_format(system: &str, text: &str) -> Option<EventFormat> {
    let mut name = None;
    let mut id = None;
    let mut fields = Vec::new();
    for line in text.lines() {
        let line = line.trim();
        if let Some(v) = line.strip_prefix("name:") {
            name = Some(v.trim().to_string());
        } else if let Some(v) = line.strip_prefix("ID:") {
            id = v.trim().parse().ok();
        } else if let Some(rest) = line.strip_prefix("field:") {
            let mut decl = "";
            let (mut offset, mut size, mut signed) = (None, None, false);
            for part in rest.split(';') {
                let part = part.trim();
                if let Some(v) = part.strip_prefix("offset:") {
                    offset = v.parse().ok();
                } else if let Some(v) = part.strip_prefix("size:") {
                    size = v.parse().ok();
                } else if let Some(v) = part.strip_prefix("signed:") {
                    signed = v == "1";
                } else if decl.is_empty() {
                    decl = part;
                }
            }
            // "char prev_comm[16]" -> "prev_comm"; "__data_loc char[] name" -> "name".
            let last = decl.rsplit(' ').next().unwrap_or("");
            let fname = last.split('[').next().unwrap_or("").to_string();
            if let (Some(offset), Some(size)) = (offset, size) {
                if !fname.is_empty() {
                    fields.push(Field {
                        name: fname,
                        offset,
                        size,
                        signed,
                        data_loc: decl.starts_with("__data_loc"),
                    });
                }
            }
        }
    }
    Some(EventFormat {
        system: system.to_string(),
        name: name?,
        id: id?,
        fields,
    })
}

/// A little cursor over the tracing-data section.
struct Cur<'a> {
    b: &'a [u8],
    at: usize,
}

impl<'a> Cur<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], String> {
        let s = self
            .b
            .get(self.at..self.at.checked_add(n).ok_or("size overflow")?)
            .ok_or_else(|| format!("tracing data cut at byte {} (wanted {n} more)", self.at))?;
        self.at += n;
        Ok(s)
    }
    fn u32(&mut self) -> Result<u32, String> {
        Ok(u32::from_le_bytes(self.take(4)?.try_into().unwrap()))
    }
    fn u64(&mut self) -> Result<u64, String> {
        Ok(u64::from_le_bytes(self.take(8)?.try_into().unwrap()))
    }
    fn cstr(&mut self) -> Result<&'a str, String> {
        let rest = &self.b[self.at.min(self.b.len())..];
        let n = rest
            .iter()
            .position(|&c| c == 0)
            .ok_or("unterminated string in tracing data")?;
        self.at += n + 1;
        std::str::from_utf8(&rest[..n]).map_err(|_| "tracing data: bad UTF-8".to_string())
    }
    fn sized_text(&mut self) -> Result<&'a str, String> {
        let n = self.u64()? as usize;
        let b = self.take(n)?;
        Ok(std::str::from_utf8(b).unwrap_or(""))
    }
}

/// Parses perf's tracing-data section (tools/perf/util/trace-event-info.c):
/// magic, version, the ftrace formats, then per system its event formats.
pub fn parse_tracing_data(b: &[u8]) -> Result<Vec<EventFormat>, String> {
    let mut c = Cur { b, at: 0 };
    if c.take(3)? != b"\x17\x08\x44" || c.take(7)? != b"tracing" {
        return Err("the tracing-data section does not start with its magic".into());
    }
    let _version = c.cstr()?;
    let big_endian = c.take(1)?[0] != 0;
    if big_endian {
        return Err("big-endian tracing data is not supported".into());
    }
    let _long_size = c.take(1)?;
    let _page_size = c.u32()?;
    // header_page and header_event: a name, then a sized blob.
    for want in ["header_page", "header_event"] {
        let name = c.cstr()?;
        if name != want {
            return Err(format!("tracing data: expected {want}, found {name:?}"));
        }
        let n = c.u64()? as usize;
        c.take(n)?;
    }
    let mut out = Vec::new();
    let ftrace = c.u32()?;
    for _ in 0..ftrace {
        c.sized_text()?;
    }
    let systems = c.u32()?;
    for _ in 0..systems {
        let system = c.cstr()?.to_string();
        let n = c.u32()?;
        for _ in 0..n {
            if let Some(f) = parse_format(&system, c.sized_text()?) {
                out.push(f);
            }
        }
    }
    Ok(out)
}

/// The layouts the running kernel offers for these `system:name`
/// tracepoints (used when a file lost its own copy).
pub fn from_tracefs(names: &[&str]) -> Vec<EventFormat> {
    let roots = [
        "/sys/kernel/tracing/events",
        "/sys/kernel/debug/tracing/events",
    ];
    let mut out = Vec::new();
    for full in names {
        let Some((sys, name)) = full.split_once(':') else {
            continue;
        };
        for root in roots {
            let path = format!("{root}/{sys}/{name}/format");
            if let Ok(text) = std::fs::read_to_string(&path) {
                if let Some(f) = parse_format(sys, &text) {
                    out.push(f);
                    break;
                }
            }
        }
    }
    out
}

/// Formats by tracepoint id.
pub fn by_id(formats: Vec<EventFormat>) -> HashMap<u64, EventFormat> {
    formats.into_iter().map(|f| (f.id, f)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const SWITCH: &str = "name: sched_switch\nID: 372\nformat:\n\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\tfield:char prev_comm[16];\toffset:8;\tsize:16;\tsigned:0;\n\tfield:pid_t prev_pid;\toffset:24;\tsize:4;\tsigned:1;\n\tfield:long prev_state;\toffset:32;\tsize:8;\tsigned:1;\n\tfield:__data_loc char[] name;\toffset:40;\tsize:4;\tsigned:0;\n\nprint fmt: \"x\"\n";

    #[test]
    fn parses_a_format_and_reads_fields() {
        let f = parse_format("sched", SWITCH).unwrap();
        assert_eq!(
            (f.name.as_str(), f.id, f.fields.len()),
            ("sched_switch", 372, 5)
        );
        let mut raw = vec![0u8; 64];
        raw[8..12].copy_from_slice(b"bash");
        raw[24..28].copy_from_slice(&(-1i32).to_le_bytes());
        raw[32] = 2;
        raw[40..44].copy_from_slice(&((3u32 << 16) | 48).to_le_bytes());
        raw[48..51].copy_from_slice(b"eth");
        assert_eq!(f.field("prev_comm").unwrap().str(&raw), b"bash");
        assert_eq!(f.field("prev_pid").unwrap().i64(&raw), -1);
        assert_eq!(f.field("prev_state").unwrap().u64(&raw), 2);
        assert!(f.field("name").unwrap().data_loc);
        assert_eq!(f.field("name").unwrap().str(&raw), b"eth");
        // Out-of-range reads give nothing, never a panic.
        assert_eq!(f.field("name").unwrap().str(&raw[..20]), b"");
    }

    /// Every width, signed or not, reads as the bytes say (two's
    /// complement for the signed ones), and fields past the end read 0.
    #[test]
    fn integers_of_every_width_read_little_endian() {
        let raw: Vec<u8> = (0..16u8).map(|i| 0x81 + i * 7).collect();
        for size in 1..=10 {
            for signed in [false, true] {
                let f = Field {
                    name: "x".into(),
                    offset: 3,
                    size,
                    signed,
                    data_loc: false,
                };
                let n = size.min(8);
                let mut want = [0u8; 8];
                want[..n].copy_from_slice(&raw[3..3 + n]);
                let mut want = u64::from_le_bytes(want);
                if signed && size < 8 && raw[3 + size - 1] & 0x80 != 0 {
                    want |= u64::MAX << (8 * size);
                }
                assert_eq!(f.u64(&raw), want, "{size} bytes, signed {signed}");
                assert_eq!(f.u64(&raw[..3 + size - 1]), 0, "{size} bytes cut");
            }
        }
    }

    #[test]
    fn parses_a_tracing_data_section() {
        let mut b = b"\x17\x08\x44tracing0.6\0".to_vec();
        b.extend_from_slice(&[0, 8]);
        b.extend_from_slice(&4096u32.to_le_bytes());
        for name in ["header_page", "header_event"] {
            b.extend_from_slice(name.as_bytes());
            b.push(0);
            b.extend_from_slice(&3u64.to_le_bytes());
            b.extend_from_slice(b"abc");
        }
        b.extend_from_slice(&0u32.to_le_bytes());
        b.extend_from_slice(&1u32.to_le_bytes());
        b.extend_from_slice(b"sched\0");
        b.extend_from_slice(&1u32.to_le_bytes());
        b.extend_from_slice(&(SWITCH.len() as u64).to_le_bytes());
        b.extend_from_slice(SWITCH.as_bytes());
        let f = parse_tracing_data(&b).unwrap();
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].system, "sched");
        assert!(parse_tracing_data(&b[..b.len() - 10]).is_err());
        assert!(parse_tracing_data(b"nonsense").is_err());
    }
}
