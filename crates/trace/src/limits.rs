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

/// Names cut to [`Limits::max_name_bytes`] by a reader that keeps the
/// record (a span's or a slice's name), counted for one message.
#[derive(Clone, Copy, Debug, Default)]
pub struct CutNames {
    pub count: u64,
    /// The longest name's length before it was cut.
    pub longest: usize,
}

impl CutNames {
    /// `name` cut to the limit at a character boundary, counted, when it
    /// is longer.
    pub fn cut(&mut self, name: &mut String) {
        let max = Limits::DEFAULT.max_name_bytes;
        if name.len() <= max {
            return;
        }
        self.count += 1;
        self.longest = self.longest.max(name.len());
        let mut end = max;
        while !name.is_char_boundary(end) {
            end -= 1;
        }
        name.truncate(end);
    }

    /// What a reader says of the names it cut, if any.
    pub fn message(&self) -> Option<String> {
        (self.count > 0).then(|| {
            let (names, were) = match self.count {
                1 => ("name", "was"),
                _ => ("names", "were"),
            };
            format!(
                "{} {names} longer than the limit of {} bytes (the longest {} bytes) {were} cut to it; kept cut",
                self.count,
                Limits::DEFAULT.max_name_bytes,
                self.longest
            )
        })
    }
}

impl Default for Limits {
    fn default() -> Self {
        Limits::DEFAULT
    }
}
