//! How a what-if on an input's states spreads (docs/path-rules.md,
//! "What-ifs that spread"): a format whose states wait for a resource the
//! SM's own work shares says which state's time scales with which. The
//! OS graph's `runnable` scales with `running`: a thread that asks for
//! less CPU time waits less for a CPU it shares.

use std::borrow::Cow;

/// A state named `state` takes the speed-up of its SM's state `with` when
/// no speed-up names it, and a piece of it charged to a holder (rule 6)
/// shrinks with `with` as well as with the holder. A format's own rules
/// are constants; a `.cpt` or JSONL file that carries a recording's scope
/// reads its rules as it finds them.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScalesWith {
    pub state: Cow<'static, str>,
    pub with: Cow<'static, str>,
}
