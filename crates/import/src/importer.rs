//! The importer registry: every format critpath reads is one [`Importer`]
//! (its own module of `formats/`) and one line of [`REGISTRY`]. An input's
//! format is the importer that is surest of the input's first bytes
//! ([`Importer::sniff`]); ties go to the one listed first.

use crate::formats;
use crate::input::Input;
use crate::source::AnySource;
use critpath_trace::{ReadError, Settings};

/// A format, by its name in messages. Each format module declares its own
/// (`impl Format { pub const Jsonl: Format = Format("Jsonl"); }`).
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Format(pub &'static str);

impl std::fmt::Debug for Format {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.0)
    }
}

impl Format {
    /// The format in words, as messages name an input of it ("a JSONL
    /// trace").
    pub fn noun(self) -> &'static str {
        importer(self).map_or(self.0, |i| i.noun())
    }
}

/// How sure an importer is that an input is its format.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Confidence {
    No,
    /// Text that could be it, when nothing else claims it (a line that
    /// starts an object).
    Fallback,
    /// The structure says so (a JSON document).
    Maybe,
    /// The structure and keys a writer of the format puts in it.
    Likely,
    /// Keys or records only the format has.
    Surely,
    /// Magic bytes (an input refused for what it is packed in never gets
    /// past these: see `detect.rs`).
    Certain,
}

/// What the first bytes of an input say, computed once for every
/// importer's [`Importer::sniff`].
pub struct Head<'a> {
    /// The first bytes, after decompression.
    pub bytes: &'a [u8],
    /// Them as text (lossy), a byte-order mark taken off.
    pub text: String,
    /// The first line that is neither blank nor a `#` comment, trimmed.
    pub first_line: Option<String>,
    /// That line parses as a JSON object with an `ev` key (a JSONL record).
    pub first_is_record: bool,
    /// That line is the start of a JSON value that goes on past it.
    pub goes_on: bool,
    /// The text starts (after blank lines) with a `#` comment line: JSONL,
    /// the only format of text with comments, whatever follows them.
    pub commented: bool,
}

impl<'a> Head<'a> {
    pub fn new(bytes: &'a [u8]) -> Head<'a> {
        let text = bytes.strip_prefix(b"\xef\xbb\xbf").unwrap_or(bytes);
        let text = String::from_utf8_lossy(text).into_owned();
        let first_line = text
            .lines()
            .map(str::trim)
            .find(|l| !l.is_empty() && !l.starts_with('#'))
            .map(str::to_string);
        let parsed = first_line
            .as_deref()
            .map(serde_json::from_str::<serde_json::Value>);
        let first_is_record = matches!(&parsed, Some(Ok(v)) if v.get("ev").is_some());
        let goes_on = matches!(&parsed, Some(Err(e)) if e.is_eof());
        let commented = text.trim_start().starts_with('#');
        Head {
            bytes,
            text,
            first_line,
            first_is_record,
            goes_on,
            commented,
        }
    }
}

/// One format critpath reads.
pub trait Importer: Sync {
    /// The format's name.
    fn format(&self) -> Format;
    /// The format in words, as messages name an input of it ("a JSONL
    /// trace").
    fn noun(&self) -> &'static str;
    /// How sure this importer is that an input starting with `head` is its
    /// format.
    fn sniff(&self, head: &Head) -> Confidence;
    /// The records of an input of this format.
    fn open(&self, input: Input, settings: &Settings) -> Result<AnySource, ReadError>;
}

/// Every format critpath reads. A new format is a module of `formats/` and
/// one line here.
pub static REGISTRY: &[&dyn Importer] = &[
    &formats::cpt::Cpt,
    &formats::perf::Perf,
    &formats::annotations::Annotations,
    &formats::spans::Spans,
    &formats::kineto::Kineto,
    &formats::chrome::Chrome,
    &formats::jsonl::Jsonl,
];

/// The importer of `format`.
pub fn importer(format: Format) -> Option<&'static dyn Importer> {
    REGISTRY.iter().copied().find(|i| i.format() == format)
}

/// The importer surest of `head` (the first listed of the surest), if any
/// is at all, and how sure it is.
pub fn sniff(head: &Head) -> Option<(Confidence, &'static dyn Importer)> {
    let mut best: Option<(Confidence, &'static dyn Importer)> = None;
    for &i in REGISTRY {
        let c = i.sniff(head);
        if c > Confidence::No && best.is_none_or(|(b, _)| c > b) {
            best = Some((c, i));
        }
    }
    best
}
