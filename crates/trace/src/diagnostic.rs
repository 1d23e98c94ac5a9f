//! Diagnostics: findings that help complete a model (a missing dependence,
//! a wait that advanced early) or say what was wrong with the input. Readers,
//! the OS graph and the engine all produce them; every view shows them.

use crate::event::Pos;
use crate::strings::{Interner, Sym};
use serde::Serialize;

pub use crate::diagnostic_kind::DiagnosticKind;

/// A finding that helps complete the model (see docs/path-rules.md) or says
/// what was wrong with the input.
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
pub struct Diagnostic {
    pub kind: DiagnosticKind,
    pub message: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sys: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sm: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub state: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub t: Option<u64>,
    /// Line (JSONL) or record index (binary) of the record concerned.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub record: Option<u64>,
    /// For a summary of diagnostics not shown one by one: how many.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub count: Option<u64>,
    /// Time at stake: trace time the findings may have misplaced.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ns: Option<u64>,
}

impl Diagnostic {
    pub fn new(kind: DiagnosticKind, message: impl Into<String>) -> Self {
        Diagnostic {
            kind,
            message: message.into(),
            sys: None,
            sm: None,
            state: None,
            t: None,
            line: None,
            record: None,
            count: None,
            ns: None,
        }
    }
    pub fn on(mut self, strings: &Interner, sys: Sym, sm: Sym) -> Self {
        self.sys = Some(strings.resolve(sys).to_string());
        self.sm = Some(strings.resolve(sm).to_string());
        self
    }
    pub fn state(mut self, state: &str) -> Self {
        self.state = Some(state.to_string());
        self
    }
    pub fn time(mut self, t: u64) -> Self {
        self.t = Some(t);
        self
    }
    pub fn at(mut self, t: u64, pos: Pos) -> Self {
        self.t = Some(t);
        match pos {
            Pos::Line(n) => self.line = Some(n),
            Pos::Record(n) => self.record = Some(n),
            Pos::None => {}
        }
        self
    }
    pub fn count(mut self, n: u64) -> Self {
        self.count = Some(n);
        self
    }
}
