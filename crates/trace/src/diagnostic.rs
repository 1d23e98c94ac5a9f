//! Diagnostics: findings that help complete a model (a missing dependence,
//! a wait that advanced early) or say what was wrong with the input. Readers,
//! the OS graph and the engine all produce them; every view shows them.

use crate::event::{At, Pos};
use crate::strings::{Interner, Sym};
use serde::Serialize;

pub use crate::diagnostic_kind::DiagnosticKind;

/// A finding that helps complete the model (see docs/path-rules.md) or says
/// what was wrong with the input.
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
pub struct Diagnostic {
    /// Serialized as `kind` and, beside it, its `severity`.
    #[serde(flatten, serialize_with = "kind_and_severity")]
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

/// A diagnostic's kind and its kind's severity, as two keys.
fn kind_and_severity<S: serde::Serializer>(k: &DiagnosticKind, s: S) -> Result<S::Ok, S::Error> {
    use serde::ser::SerializeMap;
    let mut m = s.serialize_map(Some(2))?;
    m.serialize_entry("kind", k)?;
    m.serialize_entry("severity", &k.severity())?;
    m.end()
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
        match pos.at() {
            At::Line(n) => self.line = Some(n),
            At::Record(n) => self.record = Some(n),
            At::None => {}
        }
        self
    }
    pub fn count(mut self, n: u64) -> Self {
        self.count = Some(n);
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_gives_the_kind_and_its_severity() {
        let d = Diagnostic::new(DiagnosticKind::LostSwitchIn, "m").count(4);
        let v = serde_json::to_value(&d).unwrap();
        assert_eq!(v["kind"], "lost-switch-in");
        assert_eq!(v["severity"], "worth-knowing");
        assert_eq!(v["count"], 4);
        let d = Diagnostic::new(DiagnosticKind::InputCut, "m");
        let v = serde_json::to_value(&d).unwrap();
        assert_eq!(v["severity"], "changes-answer");
    }
}
