//! Why a command failed, and the exit code that says so: 2 for bad input or
//! usage (after printing whatever could be analyzed), 1 when `check` finds a
//! violation, or a recorded command's own status (0 when standard output's
//! reader went away). `main` prints every message as `critpath: error:
//! MESSAGE`.

use critpath_trace::ReadError;
use std::io;
use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum CliError {
    /// Bad input or usage, said in words that tell how to fix it.
    #[error("{0}")]
    Input(String),
    /// A trace could not be read (the message names the file and the place).
    #[error("{0}")]
    Read(#[from] ReadError),
    /// A file other than a trace could not be read.
    #[error("{}: cannot read: {source}", path.display())]
    CannotRead { path: PathBuf, source: io::Error },
    /// An output file could not be written.
    #[error("{}: cannot write: {source}", path.display())]
    CannotWrite { path: PathBuf, source: io::Error },
    /// Standard output could not be written (other than a closed pipe).
    #[error("cannot write to standard output: {0}")]
    Stdout(io::Error),
    /// Standard output's reader went away in the middle of an output: the
    /// command ends quietly, as it would after writing everything.
    #[error("standard output was closed")]
    StdoutClosed,
    /// An output would replace one of the command's inputs.
    #[error("{}: this is the input {}; write the output to another file (the input was left as it was)", output.display(), input.display())]
    OverwritesInput { output: PathBuf, input: PathBuf },
    /// The engine gave up (`context` names the file when there is one).
    #[error("{context}analysis failed: {source}")]
    Analysis {
        context: String,
        source: critpath_engine::Error,
    },
    /// `--correct-overhead` on a trace that does not say what an event costs.
    #[error("{}: no annotation in this trace says what an event costs; record it with `critpath record --calibrate -o OUT -- CMD` (or run the annotated program with CRITPATH_CALIBRATE=1)", .0.display())]
    Uncalibrated(PathBuf),
    /// `check` found violations (they were printed).
    #[error("the check found violations")]
    Check,
    /// Exit with this status (a recorded command's).
    #[error("exit status {0}")]
    Exit(u8),
}

impl CliError {
    /// Bad input or usage, in words.
    pub fn input(msg: impl Into<String>) -> Self {
        CliError::Input(msg.into())
    }

    /// The engine failed on a trace with no file to name.
    pub fn analysis(source: critpath_engine::Error) -> Self {
        Self::analysis_of("", source)
    }

    /// The engine failed: a request that does not fit the trace is bad
    /// usage, named by its option; anything else names the trace `context`
    /// (empty when there is none).
    pub fn analysis_of(context: &str, source: critpath_engine::Error) -> Self {
        if source.is_usage() {
            return CliError::Input(engine_error(&source));
        }
        let context = if context.is_empty() {
            String::new()
        } else {
            format!("{context}: ")
        };
        CliError::Analysis { context, source }
    }

    /// The same failure told in terms of `flag`, for options the command
    /// turns into speed-ups (`--remove` removes a state by making it
    /// infinitely fast): a message about `--speedup` names `flag` instead.
    pub fn for_flag(self, flag: &str) -> Self {
        match self {
            CliError::Input(m) => match m.strip_prefix("--speedup ") {
                Some(rest) => CliError::Input(format!("{flag} {rest}")),
                None => CliError::Input(m),
            },
            other => other,
        }
    }

    /// The process's exit code for this failure.
    pub fn exit_code(&self) -> u8 {
        match self {
            CliError::Check => 1,
            CliError::Exit(code) => *code,
            CliError::StdoutClosed => 0,
            _ => 2,
        }
    }

    /// Whether `main` prints the message (the check's findings and a
    /// recorded command's status speak for themselves; a closed standard
    /// output has no one to tell).
    pub fn is_reported(&self) -> bool {
        !matches!(
            self,
            CliError::Check | CliError::Exit(_) | CliError::StdoutClosed
        )
    }
}

pub type Result<T, E = CliError> = std::result::Result<T, E>;

/// An engine error in the command line's terms: the option at fault, then
/// what is wrong with it.
pub fn engine_error(e: &critpath_engine::Error) -> String {
    e.with_option()
}

impl From<critpath_session::Error> for CliError {
    fn from(e: critpath_session::Error) -> Self {
        match e {
            critpath_session::Error::Read(r) => CliError::Read(r),
            critpath_session::Error::Engine { name, source } => {
                CliError::analysis_of(&name, source)
            }
            critpath_session::Error::Input(m) => CliError::Input(m),
        }
    }
}
