//! What the messages say of an event that could not be read: what was
//! expected of it in the words of the format (an event object, a field of
//! its type) rather than of the parser's types, and where in the file.

use critpath_readers::json::{shown, strip_position};
use serde_json::{Map, Value};

/// Why the bytes `v` of an event that starts at byte `at` of the file
/// could not be decoded, and the byte of the file where: the byte the
/// JSON breaks at, or the event's start when it is JSON but not an event.
pub(crate) fn unparsed(v: &[u8], at: u64, e: &serde_json::Error) -> (u64, String) {
    if !e.is_data() {
        let what = strip_position(&e.to_string());
        let inside = offset_of(v, e.line(), e.column());
        return (at + inside, format!("not a JSON value ({what})"));
    }
    let why = serde_json::from_slice::<Value>(v)
        .ok()
        .and_then(|v| wrong(&v))
        .unwrap_or_else(|| in_words(&strip_position(&e.to_string())));
    (at, why)
}

/// serde's `invalid type: FOUND, expected TYPE` in the format's words:
/// `expected an event object, found FOUND`.
fn in_words(msg: &str) -> String {
    let words = |t: &str| match t {
        "struct RawEvent" => "an event object".to_string(),
        "struct RawArgs" => "an object of arguments".to_string(),
        "f64" => "a number".to_string(),
        t => t.to_string(),
    };
    let said = msg.strip_prefix("invalid type: ").and_then(|m| {
        let (found, expected) = m.rsplit_once(", expected ")?;
        Some(format!("expected {}, found {found}", words(expected)))
    });
    said.unwrap_or_else(|| msg.to_string())
}

/// The offset in `v` of serde_json's 1-based line and column.
fn offset_of(v: &[u8], line: usize, column: usize) -> u64 {
    let start = match line {
        0 | 1 => 0,
        n => memchr::memchr_iter(b'\n', v)
            .nth(n - 2)
            .map_or(v.len(), |i| i + 1),
    };
    (start + column.saturating_sub(1)).min(v.len()) as u64
}

/// Fields, what fits them, and what is said of a value that does not.
type Check<'a> = (&'a [&'a str], fn(&Value) -> bool, &'a str);

/// What is wrong with an event that is JSON: not an object, or a field
/// critpath reads not of its type.
fn wrong(v: &Value) -> Option<String> {
    let Some(m) = v.as_object() else {
        return Some(format!("expected an event object, found {}", shown(v)));
    };
    let is_id = |x: &Value| x.is_number() || x.is_string();
    let checks: [Check; 3] = [
        (&["ph", "cat", "name"], Value::is_string, "is not a string"),
        (
            &["ts", "dur"],
            Value::is_number,
            "is not a time (a non-negative number of microseconds)",
        ),
        (&["pid", "tid", "id"], is_id, "is not a number or a string"),
    ];
    for (keys, fits, why) in checks {
        if let Some(bad) = misfit(m, "", keys, fits, why) {
            return Some(bad);
        }
    }
    let args = m.get("args").filter(|a| !a.is_null())?;
    let Some(a) = args.as_object() else {
        return Some(format!("field `args` = {} is not an object", shown(args)));
    };
    let nums: &[&str] = &[
        "correlation",
        "stream",
        "device",
        "wait_on_stream",
        "wait_on_cuda_event_record_corr_id",
        "Seq",
        "seq",
    ];
    let texts: &[&str] = &[
        "Collective name",
        "Process Group Name",
        "Process Group Ranks",
    ];
    misfit(a, "args.", nums, is_id, "is not a number or a string")
        .or_else(|| misfit(a, "args.", texts, Value::is_string, "is not a string"))
}

/// The first of `keys` in `m` that is neither null nor `fits`, said.
fn misfit(
    m: &Map<String, Value>,
    prefix: &str,
    keys: &[&str],
    fits: fn(&Value) -> bool,
    why: &str,
) -> Option<String> {
    keys.iter().find_map(|&k| {
        let x = m.get(k).filter(|x| !x.is_null() && !fits(x))?;
        Some(format!("field `{prefix}{k}` = {} {why}", shown(x)))
    })
}

/// A time of the trace (µs) as the messages show it: as written up to
/// 10^18, in exponent form past it (1e300 is not 301 digits).
pub(crate) fn readable(us: f64) -> String {
    if us.abs() < 1e18 {
        format!("{us}")
    } else {
        format!("{us:e}")
    }
}
