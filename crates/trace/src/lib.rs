//! critpath-trace: the vocabulary every stage of critpath shares.
//!
//! A trace is a stream of [`Record`]s (a state machine's transitions, waits,
//! messages and stack changes) whose names are interned in an [`Interner`].
//! Readers implement [`RecordSource`]; the engine consumes one; anything that
//! goes wrong on the way is a [`ReadError`] (the input) or a [`Diagnostic`]
//! (a finding about the model or the data).

pub mod contain;
pub mod diagnostic;
mod diagnostic_kind;
pub mod event;
pub mod hint;
pub mod lanes;
pub mod limits;
pub mod parts;
pub mod scales;
pub mod settings;
pub mod source;
pub mod strings;
mod transients;

pub use contain::contained;
pub use diagnostic::{Diagnostic, DiagnosticKind};
pub use diagnostic_kind::Severity;
pub use event::{At, Event, LinkId, Pos, Record, Who};
pub use limits::{CutNames, Limits};
pub use parts::Parts;
pub use scales::ScalesWith;
pub use settings::Settings;
pub use source::{AnnotationCost, Location, ReadError, RecordSource, Scope, Summary, VecSource};
pub use strings::{Interner, Sym};
pub use transients::TransientTexts;
