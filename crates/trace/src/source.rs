//! The one trait every trace reader implements, and the error it reports.
//! Readers turn bytes into [`Record`]s in time order; they never analyse.

use crate::diagnostic::Diagnostic;
use crate::event::{Pos, Record};
use crate::strings::Interner;
use std::fmt;

/// Where in a file an error was found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Location {
    /// A whole-file problem (empty, unknown kind).
    File,
    /// 1-based line of a text file.
    Line(u64),
    /// Byte offset in a binary file.
    Offset(u64),
}

/// A problem reading a trace: which file, where, and what was expected.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReadError {
    pub file: String,
    pub location: Location,
    pub message: String,
    /// When false the reader skipped the bad part and can go on; when true
    /// nothing more can be read (the rest is truncated or corrupt).
    pub fatal: bool,
    /// Whether `message` already says what became of the bad part (`...;
    /// skipped`, `...; kept with no length`); when false, a skipped record
    /// is assumed and the analysis says so.
    pub says_outcome: bool,
}

impl ReadError {
    pub fn new(file: &str, location: Location, message: impl Into<String>, fatal: bool) -> Self {
        ReadError {
            file: file.to_string(),
            location,
            message: message.into(),
            fatal,
            says_outcome: false,
        }
    }

    /// The same error, its message saying what became of the bad part.
    pub fn saying_outcome(mut self) -> Self {
        self.says_outcome = true;
        self
    }
}

impl fmt::Display for ReadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.location {
            Location::File => write!(f, "{}: {}", self.file, self.message),
            Location::Line(n) => write!(f, "{}:{}: {}", self.file, n, self.message),
            Location::Offset(n) => {
                write!(f, "{}: at byte offset {}: {}", self.file, n, self.message)
            }
        }
    }
}

impl std::error::Error for ReadError {}

/// A stream of records in time order.
pub trait RecordSource {
    /// The next record and where it came from; `Ok(None)` at the end. A
    /// non-fatal error means the bad record was skipped and reading can go on.
    fn next_record(&mut self) -> Result<Option<(Record, Pos)>, ReadError>;
    /// Appends up to `max` records to `out` (cleared first); stops early at
    /// the end or at an error, which it returns after the records before it.
    /// Readers override it with a tight loop; batches keep the hand-off from
    /// reader to engine cheap.
    fn next_batch(&mut self, out: &mut Vec<(Record, Pos)>, max: usize) -> Result<(), ReadError> {
        out.clear();
        while out.len() < max {
            match self.next_record()? {
                Some(r) => out.push(r),
                None => break,
            }
        }
        Ok(())
    }
    /// The names the records' symbols stand for.
    fn strings(&self) -> &Interner;
    /// How far through the input the reader is, in bytes (for progress bars).
    fn bytes_read(&self) -> u64 {
        0
    }
    /// Called once after the last record: what the reader found about the
    /// input as a whole (events the recorder lost, transitions it had to
    /// infer) and, when the input lacks something it needs, an error to
    /// report beside the analysis.
    fn summary(&mut self) -> Summary {
        Summary::default()
    }
    /// Called once after the last record: the receives whose link the
    /// reader inferred rather than read (a waker guessed from the times of a
    /// trace without flow events), as (SM, time): the path's edges into
    /// them are marked `inferred`.
    fn inferred_links(&mut self) -> Vec<(String, u64)> {
        Vec::new()
    }
    /// The part of the trace worth analysing when the user names none
    /// (`--from`/`--to`): a recording of one command runs from its start to
    /// the exit of its main thread.
    fn scope(&mut self) -> Scope {
        Scope::default()
    }
    /// Called once before the first record. `late_names` true says that
    /// nothing will match SM names while records are read (no `--from`, no
    /// speedups, no observer): a source whose SMs' final names are known
    /// only at its end (a perf.data file names a thread by its latest name)
    /// may then name them as it goes and rename them by [`Self::summary`]
    /// ([`Summary::renamed`]). Without the call, names are final from the
    /// first record.
    fn prepare(&mut self, late_names: bool) {
        let _ = late_names;
    }
    /// After a pass prepared with late names: true when what the source
    /// learned at its end shows that pass was made on a wrong guess (a
    /// perf.data file's recorded command turned out to be another thread);
    /// the source is then ready to be read again, names final first.
    fn restart(&mut self) -> bool {
        false
    }
}

/// See [`RecordSource::summary`].
#[derive(Clone, Debug, Default)]
pub struct Summary {
    pub diagnostics: Vec<Diagnostic>,
    pub error: Option<ReadError>,
    /// SMs whose transitions are annotation events, with the measured cost
    /// of one event in ns (`critpath record --calibrate`), for
    /// the engine's overhead correction.
    pub annotation_costs: Vec<AnnotationCost>,
    /// SMs the source renamed at its end (see [`RecordSource::prepare`]):
    /// each one's name while it was read, and its final name.
    pub renamed: Vec<(String, String)>,
    /// The SMs of the recorded program (a recording of one command: its
    /// threads and those forked from them; empty when the source does not
    /// know). What-ifs count the CPU these held as the program's own, not
    /// as another run's load.
    pub program: Vec<String>,
    /// The times are nanoseconds since the Unix epoch (span files, as
    /// OpenTelemetry, Jaeger and Zipkin give them): a view may name the
    /// wall-clock time of a point.
    pub wall_clock: bool,
}

/// See [`Summary::annotation_costs`] (a converted trace carries them as
/// these fields).
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AnnotationCost {
    pub sys: String,
    pub sm: String,
    pub ns_per_event: f64,
}

/// See [`RecordSource::scope`]: SM names for `--from` and `--to`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Scope {
    pub from: Option<String>,
    pub to: Option<String>,
    /// How what-ifs on the source's states spread (see [`crate::ScalesWith`]);
    /// they apply whatever the start and destination.
    pub scales_with: Vec<crate::ScalesWith>,
}

impl Scope {
    /// The scope after a source's renames (old name, new name; see
    /// [`Summary::renamed`]): an end named by an old name goes by the new.
    pub fn renamed(mut self, renames: &[(String, String)]) -> Scope {
        for spec in [&mut self.from, &mut self.to].into_iter().flatten() {
            if let Some((_, new)) = renames.iter().find(|(old, _)| old == spec) {
                spec.clone_from(new);
            }
        }
        self
    }
}

/// A source over records already in memory (tests, generators, models).
pub struct VecSource {
    records: std::vec::IntoIter<Record>,
    strings: Interner,
    index: u64,
}

impl VecSource {
    pub fn new(records: Vec<Record>, strings: Interner) -> Self {
        VecSource {
            records: records.into_iter(),
            strings,
            index: 0,
        }
    }
}

impl RecordSource for VecSource {
    fn next_record(&mut self) -> Result<Option<(Record, Pos)>, ReadError> {
        self.index += 1;
        Ok(self.records.next().map(|r| (r, Pos::record(self.index))))
    }
    fn strings(&self) -> &Interner {
        &self.strings
    }
}
