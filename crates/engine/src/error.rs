//! The engine's errors: a request that does not fit the trace (an SM or a
//! state it never mentions, a malformed speed-up), or a failure of the disk
//! the node log spills to. Messages name what is wrong, not the command-line
//! option that asked for it: [`Error::input`] tells the caller which of its
//! inputs was at fault, so that it can say so in its own words.

use std::io;
use thiserror::Error;

/// Which of the caller's requests an [`Error`] is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Input {
    /// [`crate::Options::from`]: the SM where paths start.
    From,
    /// [`crate::Options::to`]: the SM (and state) where the path ends.
    To,
    /// A speed-up of [`crate::Options::speedups`], or one being parsed.
    Speedup,
}

/// What went wrong.
#[derive(Debug, Error)]
pub enum Error {
    /// The node log or the slack graph log could not be written or read.
    #[error("{0}")]
    Io(#[from] io::Error),
    /// The start SM does not occur in the trace.
    #[error("no state machine of that name in the trace{nearest}")]
    UnknownFrom { spec: String, nearest: String },
    /// The destination SM does not occur in the trace.
    #[error("no state machine of that name in the trace{nearest}")]
    UnknownTo { spec: String, nearest: String },
    /// The path's default ends, which the input names (a recording's
    /// command thread), do not occur in it; `why` says what the input's
    /// reading found, if anything.
    #[error("the recorded command's thread {spec}, where the path starts and ends by default, has no records in the trace{why}; choose the path's ends with --from and --to")]
    ScopeNotInTrace { spec: String, why: String },
    /// The start names several SMs.
    #[error("names {count} state machines ({matches}); write the full name, SYS/SM, or NAME:* where every thread of a name is meant")]
    AmbiguousFrom {
        spec: String,
        count: usize,
        matches: String,
    },
    /// The destination names several SMs (in several systems, or threads
    /// named without their id).
    #[error("{sm} names {count} state machines ({matches}); write the full name or SYS/SM")]
    AmbiguousTo {
        spec: String,
        sm: String,
        count: usize,
        matches: String,
    },
    /// The destination SM never enters the state named.
    #[error("{sm} never enters state '{state}'{nearest}")]
    UnknownToState {
        spec: String,
        sm: String,
        state: String,
        nearest: String,
    },
    /// A speed-up names a state the trace never enters.
    #[error("no such state in the trace{nearest}")]
    UnknownSpeedup { spec: String, nearest: String },
    /// A speed-up names threads without their id, and several match.
    #[error("names the threads of several state machines ({matches}); write the thread's full name, or NAME:* for every thread of that name")]
    AmbiguousSpeedup { spec: String, matches: String },
    /// A speed-up that is not `SM:STATE=FACTOR`.
    #[error("{problem}")]
    BadSpeedup { spec: String, problem: &'static str },
    /// A path's length went past i64::MAX ns (about 292 years): a
    /// speed-up below 1 slowed a state that long.
    #[error("a path is longer than {} ns (the most a time can be): a speed-up below 1 slowed a state that is already that long", i64::MAX)]
    TimeOverflow,
    /// Windows so short that the critical path would need more of them
    /// than the limit ([`critpath_trace::Limits::max_windows`]).
    #[error("time windows of {window_ns} ns would break the critical path ({span_ns} ns) into {windows} windows, more than the limit of {max}; give windows of at least {} ns", span_ns.div_ceil(*max.max(&1)))]
    TooManyWindows {
        window_ns: u64,
        span_ns: u64,
        windows: u64,
        max: u64,
    },
    /// More distinct states and SMs than the limit
    /// ([`critpath_trace::Limits::max_states`]).
    #[error("{at}more than {max} distinct states and state machines, the limit ({states} states of {}): {}", if *sms == 1 { "1 state machine".to_string() } else { format!("{sms} state machines") }, critpath_trace::Limits::STATES_ADVICE)]
    TooManyStates {
        /// Where the limit was passed (`by line N: `, `by record N: `), or
        /// empty.
        at: String,
        states: u64,
        sms: u64,
        max: u64,
    },
}

impl Error {
    /// The request at fault and its text as given (`None` for I/O errors).
    pub fn input(&self) -> Option<(Input, &str)> {
        match self {
            Error::Io(_)
            | Error::TimeOverflow
            | Error::TooManyWindows { .. }
            | Error::TooManyStates { .. }
            | Error::ScopeNotInTrace { .. } => None,
            Error::UnknownFrom { spec, .. } | Error::AmbiguousFrom { spec, .. } => {
                Some((Input::From, spec))
            }
            Error::UnknownTo { spec, .. }
            | Error::AmbiguousTo { spec, .. }
            | Error::UnknownToState { spec, .. } => Some((Input::To, spec)),
            Error::UnknownSpeedup { spec, .. }
            | Error::AmbiguousSpeedup { spec, .. }
            | Error::BadSpeedup { spec, .. } => Some((Input::Speedup, spec)),
        }
    }

    /// Is this the user's mistake (as opposed to a failure of the machine)?
    pub fn is_usage(&self) -> bool {
        self.input().is_some()
    }

    /// The message in the command line's terms, as every front end says it
    /// (the CLI, the Python package): the option at fault and its text, then
    /// what is wrong with it.
    pub fn with_option(&self) -> String {
        match self.input() {
            Some((Input::From, spec)) => format!("--from {spec}: {self}"),
            Some((Input::To, spec)) => format!("--to {spec}: {self}"),
            Some((Input::Speedup, spec)) => format!("--speedup {spec}: {self}"),
            None => self.to_string(),
        }
    }
}

/// The engine's results or its error.
pub type Result<T> = std::result::Result<T, Error>;
