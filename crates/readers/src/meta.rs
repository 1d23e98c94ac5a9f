//! What a converted trace carries beside its records (docs/formats.md,
//! "What a conversion keeps"): a recording names the part worth analysing
//! and how its what-ifs spread ([`Scope`], known before the first record),
//! and says at its end what its reader found ([`Summary`]: diagnostics, the
//! recorded program's SMs, annotation costs, links it inferred, wall-clock
//! times). `critpath convert` writes both, as a JSON object each, so that
//! the converted file analyzes as its source does: JSONL as lines of their
//! own (`"ev":"scope"` before the first record, `"ev":"summary"` after the
//! last), `.cpt` in an op of its own (`crate::cpt`).

use critpath_trace::{AnnotationCost, Diagnostic, DiagnosticKind, ScalesWith, Scope, Summary};
use serde::{Deserialize, Serialize};

/// A scope or summary object, as written.
#[derive(Deserialize, Serialize, Default)]
#[serde(deny_unknown_fields)]
struct Line {
    ev: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    from: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    to: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    scales_with: Vec<ScalesWith>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    diagnostics: Vec<Finding>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    program: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    annotation_costs: Vec<AnnotationCost>,
    /// (SM, time) of each receive whose link the source inferred.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    inferred_links: Vec<(String, u64)>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    wall_clock: bool,
}

/// A diagnostic as `analyze --json` writes it (its severity follows from
/// its kind).
#[derive(Deserialize, Serialize)]
struct Finding {
    kind: String,
    message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    sys: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    sm: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    state: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    t: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    line: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    record: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    count: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    ns: Option<u64>,
}

/// What a scope or summary object read gives.
#[derive(Debug)]
enum Meta {
    Scope(Scope),
    /// A source's summary (its `error` and `renamed` are never carried:
    /// the records converted carry the final names) and the links it
    /// inferred.
    Summary(Summary, Vec<(String, u64)>),
}

/// Is `ev` the kind of a scope or summary object?
#[inline]
pub fn is_meta(ev: &str) -> bool {
    ev == "scope" || ev == "summary"
}

/// The object of `scope`, or `None` when there is nothing to carry.
pub fn scope_text(scope: &Scope) -> Option<String> {
    if *scope == Scope::default() {
        return None;
    }
    let line = Line {
        ev: "scope".into(),
        from: scope.from.clone(),
        to: scope.to.clone(),
        scales_with: scope.scales_with.clone(),
        ..Line::default()
    };
    Some(serde_json::to_string(&line).expect("a scope serializes"))
}

/// Inferred links one summary object holds at most: a source's summary
/// goes in as many objects as its links take (each read adds to the
/// ones before), so no object outgrows a `.cpt` chunk.
const LINKS_PER_OBJECT: usize = 1 << 16;

/// The objects of a source's summary and the links it inferred (none
/// when there is nothing to carry).
pub fn summary_texts(s: &Summary, inferred: &[(String, u64)]) -> Vec<String> {
    let mut first = Line {
        ev: "summary".into(),
        diagnostics: s.diagnostics.iter().map(finding).collect(),
        program: s.program.clone(),
        annotation_costs: s.annotation_costs.clone(),
        wall_clock: s.wall_clock,
        ..Line::default()
    };
    let mut links = inferred.chunks(LINKS_PER_OBJECT);
    first.inferred_links = links.next().unwrap_or_default().to_vec();
    let empty = first.diagnostics.is_empty()
        && first.program.is_empty()
        && first.annotation_costs.is_empty()
        && first.inferred_links.is_empty()
        && !first.wall_clock;
    let rest = links.map(|l| Line {
        ev: "summary".into(),
        inferred_links: l.to_vec(),
        ..Line::default()
    });
    let text = |l: &Line| serde_json::to_string(l).expect("a summary serializes");
    match empty {
        true => Vec::new(),
        false => std::iter::once(first)
            .chain(rest)
            .map(|l| text(&l))
            .collect(),
    }
}

/// What the objects read so far carry: the scope, and what the summary
/// objects added up to (each adds to those before).
#[derive(Debug, Default)]
pub struct Carried {
    pub scope: Scope,
    pub summary: Summary,
    pub inferred: Vec<(String, u64)>,
}

impl Carried {
    /// Takes the scope or summary object `text`: a scope unless
    /// `too_late` says why it comes too late; what is wrong with it.
    pub fn take(
        &mut self,
        text: &[u8],
        too_late: impl FnOnce() -> Option<String>,
    ) -> Result<(), String> {
        match parse(text)? {
            Meta::Scope(scope) => match too_late() {
                Some(why) => Err(why),
                None => {
                    self.scope = scope;
                    Ok(())
                }
            },
            Meta::Summary(s, inferred) => {
                self.add(s, inferred);
                Ok(())
            }
        }
    }

    /// Adds summary object `s` and its links.
    fn add(&mut self, s: Summary, inferred: Vec<(String, u64)>) {
        let to = &mut self.summary;
        to.diagnostics.extend(s.diagnostics);
        to.program.extend(s.program);
        to.annotation_costs.extend(s.annotation_costs);
        to.wall_clock |= s.wall_clock;
        self.inferred.extend(inferred);
    }
}

fn finding(d: &Diagnostic) -> Finding {
    Finding {
        kind: d.kind.as_str().to_string(),
        message: d.message.clone(),
        sys: d.sys.clone(),
        sm: d.sm.clone(),
        state: d.state.clone(),
        t: d.t,
        line: d.line,
        record: d.record,
        count: d.count,
        ns: d.ns,
    }
}

/// The scope or summary object `text`, or what is wrong with it.
fn parse(text: &[u8]) -> Result<Meta, String> {
    let line: Line = serde_json::from_slice(text).map_err(|e| {
        // The object is one line: its column is where.
        let why = e.to_string().replace(" at line 1 column ", " at column ");
        format!("a scope or summary object of a converted trace: {why}")
    })?;
    match line.ev.as_str() {
        "scope" => Ok(Meta::Scope(Scope {
            from: line.from,
            to: line.to,
            scales_with: line.scales_with,
        })),
        "summary" => summary(line),
        other => Err(format!(
            "expected a scope or summary object, found \"ev\":{other:?}"
        )),
    }
}

fn summary(line: Line) -> Result<Meta, String> {
    let mut diagnostics = Vec::with_capacity(line.diagnostics.len());
    for f in line.diagnostics {
        let kind = DiagnosticKind::from_name(&f.kind)
            .ok_or_else(|| format!("unknown diagnostic kind {:?} in the summary", f.kind))?;
        let mut d = Diagnostic::new(kind, f.message);
        (d.sys, d.sm, d.state, d.t) = (f.sys, f.sm, f.state, f.t);
        (d.line, d.record, d.count, d.ns) = (f.line, f.record, f.count, f.ns);
        diagnostics.push(d);
    }
    let summary = Summary {
        diagnostics,
        program: line.program,
        annotation_costs: line.annotation_costs,
        wall_clock: line.wall_clock,
        ..Summary::default()
    };
    Ok(Meta::Summary(summary, line.inferred_links))
}
