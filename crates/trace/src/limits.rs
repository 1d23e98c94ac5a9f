//! How much one input may make critpath hold: the longest line of a text
//! trace, the longest name, the most distinct states, the most time
//! windows. Readers and the engine
//! take these as values (never from the environment); an input past a
//! limit is refused with an error that names the limit, where it was met
//! and the value that was over it.

/// The limits on what an input may make critpath read or keep.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// The longest line of a JSONL trace, in bytes (its newline aside).
    pub max_line_bytes: usize,
    /// The longest name (of a system, SM, state, function or id), in bytes.
    pub max_name_bytes: usize,
    /// The most distinct states and state machines together: the table
    /// keeps a row for each (a state is an SM and a state name), and the
    /// engine a few hundred bytes.
    pub max_states: u64,
    /// The most time windows `--window` may break the path into.
    pub max_windows: u64,
}

impl Limits {
    /// What a message about [`Limits::max_states`] advises.
    pub const STATES_ADVICE: &'static str = "critpath keeps a table row for each; names that carry an id (a request, object or address) are best cut to what they have in common";

    /// 16 MiB lines, 64 KiB names, 250,000 states, 10,000 windows.
    pub const DEFAULT: Limits = Limits {
        max_line_bytes: 16 << 20,
        max_name_bytes: 64 << 10,
        max_states: 250_000,
        max_windows: 10_000,
    };
}

impl Default for Limits {
    fn default() -> Self {
        Limits::DEFAULT
    }
}
