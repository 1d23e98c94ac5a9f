//! critpath-import: opens any trace critpath reads, each reader behind
//! [`critpath_trace::RecordSource`], and detection of a file's format from
//! its content (never its name). A trace may come on standard input (`-`)
//! or a pipe, and may be compressed (gzip, zstd, xz): see [`input`].
//!
//! Every format is an [`Importer`] of its own module in `formats/`, listed
//! once in [`REGISTRY`]; see docs/architecture.md, "Adding a format".

mod detect;
pub mod formats;
pub mod importer;
pub mod input;
mod kineto;
pub use kineto::{again as kineto_again, all_kineto, is_kineto, open_gpu};
pub mod multi;
mod readahead;
mod source;

use critpath_trace::{Location, ReadError, Settings};
use std::io::Read;
use std::path::{Path, PathBuf};

use critpath_readers::spans;
pub use detect::{detect, object_document};
pub use importer::{importer, Confidence, Format, Head, Importer, REGISTRY};
pub use input::{open_input, Compression, Input, Stream};
pub use source::{AnySource, Source};

pub use critpath_readers::companion;

/// Opens a trace (a path, or `-` for standard input), detecting its
/// format and compression from the content.
pub fn open(path: &Path) -> Result<AnySource, ReadError> {
    let input = open_input(path)?;
    let format = detect(&input.head, &input.name)?;
    open_as(input, format)
}

/// A trace opened for per-request analysis: a span file holding several
/// trace ids is its requests; anything else (a span file of one trace id
/// too) is one trace, opened as [`open`] opens it.
pub enum Opened {
    /// One trace, and its trace id (a span file's; `""` for other traces).
    Trace(Box<AnySource>, String),
    Requests(Box<spans::Requests>),
}

/// Opens a trace as [`open`] does, except that a span file holding several
/// trace ids comes back as its requests, to analyze one by one.
pub fn open_requests(path: &Path) -> Result<Opened, ReadError> {
    let input = open_input(path)?;
    let format = detect(&input.head, &input.name)?;
    requests_of(input, format)
}

/// [`open_requests`] of an input already opened, of format `format`.
pub fn requests_of(input: Input, format: Format) -> Result<Opened, ReadError> {
    if format != Format::Spans {
        return Ok(Opened::Trace(
            Box::new(open_as(input, format)?),
            String::new(),
        ));
    }
    requests_of_all(vec![input])
}

/// The requests of several span files read as one: the spans of one trace
/// id are one request, whichever files hold them (see [`requests_of`]).
pub fn requests_of_all(inputs: Vec<Input>) -> Result<Opened, ReadError> {
    let requests = spans::read_requests_in(streams(inputs))?;
    Ok(if !requests.several() {
        let id = requests.first_id().to_string();
        Opened::Trace(
            Box::new(AnySource::in_memory(requests.merged()?, Format::Spans)),
            id,
        )
    } else {
        Opened::Requests(Box::new(requests))
    })
}

/// The format of the trace at `path` (a regular file: it is read again by
/// whoever opens it), from its content.
pub fn format_of(path: &Path) -> Result<Format, ReadError> {
    let input = open_input(path)?;
    detect(&input.head, &input.name)
}

/// Opens the request of trace id `id` in a span file, as [`open`] opens a
/// file holding only that request (with the file's problems).
pub fn open_request(path: &Path, id: &str) -> Result<AnySource, ReadError> {
    let input = open_input(path)?;
    let format = detect(&input.head, &input.name)?;
    request_of(input, format, id)
}

/// [`open_request`] of an input already opened, of format `format`.
pub fn request_of(input: Input, format: Format, id: &str) -> Result<AnySource, ReadError> {
    let name = input.name.clone();
    let fail = |msg: String| Err(ReadError::new(&name, Location::File, msg, true));
    if format != Format::Spans {
        return fail(format!("--trace {id}: this is not a span file (OpenTelemetry or Jaeger JSON); --trace picks one request of a span file"));
    }
    request_of_all(vec![input], id)
}

/// What [`request_of_all`] says first when the span files hold no span of
/// the trace id `id`.
fn no_span_of(id: &str) -> String {
    format!("--trace {id}: no span of this trace id")
}

/// Whether `e` is [`request_of_all`]'s error for span files that hold other
/// requests but none of trace id `id`.
pub fn lacks_request(e: &ReadError, id: &str) -> bool {
    e.message.starts_with(&no_span_of(id))
}

/// [`request_of`] over several span files read as one.
pub fn request_of_all(inputs: Vec<Input>, id: &str) -> Result<AnySource, ReadError> {
    let name = inputs.first().map_or(String::new(), |i| i.name.clone());
    let fail = |msg: String| Err(ReadError::new(&name, Location::File, msg, true));
    let holds = match inputs.len() {
        1 => "the file holds",
        _ => "the span files hold",
    };
    let requests = spans::read_requests_in(streams(inputs))?;
    match requests.request(id) {
        Some(one) => Ok(AnySource::in_memory(one?, Format::Spans)),
        None => {
            let ids: Vec<&str> = requests.first_ids().take(5).collect();
            let more = if requests.len() > ids.len() {
                ", ..."
            } else {
                ""
            };
            fail(format!(
                "{}; {holds} {} trace ids: {}{more}",
                no_span_of(id),
                requests.len(),
                ids.join(", ")
            ))
        }
    }
}

/// Each input's stream, name and path (a plain file's), for a reader of
/// several.
fn streams(inputs: Vec<Input>) -> Vec<(input::Stream, String, Option<PathBuf>)> {
    inputs
        .into_iter()
        .map(Input::ahead)
        .map(|i| (i.stream, i.name, i.file))
        .collect()
}

/// Opens trace bytes from any reader as [`open`] does a file (tests and
/// fuzzing use it on bytes in memory).
pub fn open_reader(raw: Box<dyn Read + Send>, name: &str) -> Result<AnySource, ReadError> {
    let input = input::from_reader(raw, name, None)?;
    let format = detect(&input.head, &input.name)?;
    open_as(input, format)
}

/// The reader of `format` over an opened input.
pub fn open_as(input: Input, format: Format) -> Result<AnySource, ReadError> {
    open_with(input, format, &Settings::current())
}

/// The reader of `format` over an opened input, with these settings.
pub fn open_with(
    input: Input,
    format: Format,
    settings: &Settings,
) -> Result<AnySource, ReadError> {
    match importer(format) {
        Some(i) => i.open(input, settings),
        None => Err(ReadError::new(
            &input.name,
            Location::File,
            format!("no importer reads the format {:?}", format.0),
            true,
        )),
    }
}
