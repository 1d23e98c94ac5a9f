//! Why a session could not answer.

use critpath_trace::ReadError;
use std::fmt;

#[derive(Debug)]
pub enum Error {
    /// An input could not be read (the message names it and the place).
    Read(ReadError),
    /// The engine gave up on the input `name`.
    Engine {
        name: String,
        source: critpath_engine::Error,
    },
    /// The input holds nothing to analyze, or the question does not fit
    /// it, in words.
    Input(String),
}

impl From<ReadError> for Error {
    fn from(e: ReadError) -> Self {
        Error::Read(e)
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Read(e) => write!(f, "{e}"),
            Error::Engine { name, source } => write!(f, "{name}: analysis failed: {source}"),
            Error::Input(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for Error {}

pub type Result<T> = std::result::Result<T, Error>;
