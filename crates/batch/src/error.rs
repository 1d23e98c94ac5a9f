//! Why a file could not be analyzed, in the command line's words: the
//! message names the file (or the option at fault), so the CLI and the
//! Python package print the same text.

use critpath_trace::ReadError;
use std::path::Path;

/// What went wrong with one file.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The trace could not be read (the message names the file and the
    /// place).
    #[error("{0}")]
    Read(#[from] ReadError),
    /// A request that does not fit the trace (`--to`, `--from`, `--trace`,
    /// `--annotation`), said as the CLI says it.
    #[error("{0}")]
    Usage(String),
    /// A request none of whose spans, in the file or in the files that
    /// share it, hold an end the options name (`--to`, `--from`): the file
    /// (or the files joined with ` + `) and the CLI's message.
    #[error("{file}: {message}")]
    Unmatched { file: String, message: String },
    /// The engine failed on the file (its node log could not be written).
    #[error("{file}: analysis failed: {source}")]
    Analysis {
        file: String,
        source: critpath_engine::Error,
    },
}

impl From<critpath_session::Error> for Error {
    fn from(e: critpath_session::Error) -> Self {
        match e {
            critpath_session::Error::Read(r) => Error::Read(r),
            critpath_session::Error::Engine { name, source } => Error::engine(&name, source),
            critpath_session::Error::Input(m) => Error::Usage(m),
        }
    }
}

impl Error {
    /// The engine's error on `file`: a request that does not fit the trace
    /// is usage, named by its option, as `critpath analyze` names it.
    pub fn engine(file: &str, source: critpath_engine::Error) -> Self {
        if source.is_usage() {
            return Error::Usage(engine_message(&source));
        }
        Error::Analysis {
            file: file.to_string(),
            source,
        }
    }

    /// Is this the user's mistake or bad input (as opposed to a failure
    /// of the machine)? The CLI exits with 2 for both.
    pub fn is_usage(&self) -> bool {
        !matches!(self, Error::Analysis { .. })
    }

    /// The message about `file`, naming it first unless it already does,
    /// as `critpath batch` and `analyze_many` say which file failed.
    pub fn naming(&self, file: &Path) -> String {
        let (file, msg) = (critpath_session::display_name(file), self.to_string());
        if msg.starts_with(&file) {
            msg
        } else {
            format!("{file}: {msg}")
        }
    }
}

/// An engine error in the command line's terms: the option at fault, then
/// what is wrong with it.
pub fn engine_message(e: &critpath_engine::Error) -> String {
    use critpath_engine::Input;
    match e.input() {
        Some((Input::From, spec)) => format!("--from {spec}: {e}"),
        Some((Input::To, spec)) => format!("--to {spec}: {e}"),
        Some((Input::Speedup, spec)) => format!("--speedup {spec}: {e}"),
        None => e.to_string(),
    }
}

/// Is `e` an end of the path (`--to`, `--from`) that the spans analyzed do
/// not hold? Other spans of the same request may.
pub(crate) fn unmatched_end(e: &critpath_engine::Error) -> bool {
    use critpath_engine::Error as E;
    matches!(
        e,
        E::UnknownFrom { .. } | E::UnknownTo { .. } | E::UnknownToState { .. }
    )
}
