//! The verdict's what-if: the most critical state (its first lever) twice
//! as fast.

use crate::{Analysis, Options, Prediction};

/// Traces of more records than this get no verdict what-if when their
/// first pass kept no graph for it (the what-if would run the whole
/// analysis a second time).
pub const TOP_TWICE_MAX_RECORDS: u64 = 2_000_000;

/// The path's length with `a`'s most critical state (its first lever, see
/// [`super::levers`]) twice as fast: from
/// the graph the pass kept ([`Analysis::predict`]), else by `analyze` with
/// `base` and the speed-up when the trace has at most
/// [`TOP_TWICE_MAX_RECORDS`] records; `None` without a path or a state on
/// it, or past that size.
pub fn top_twice<E>(
    a: &Analysis,
    base: Options,
    analyze: impl FnOnce(Options) -> Result<Analysis, E>,
) -> Result<Option<Prediction>, E> {
    let Some(top) = super::levers(a, 1).pop() else {
        return Ok(None);
    };
    let speedups = vec![top.speedup(2.0)];
    if let Some(p) = a.predict(&speedups) {
        return Ok(Some(p));
    }
    if a.stats.records > TOP_TWICE_MAX_RECORDS {
        return Ok(None);
    }
    let b = analyze(Options { speedups, ..base })?;
    Ok(Some(Prediction {
        length_ns: b.critical_path.length_ns,
        scaled_edges: b.stats.scaled_edges,
    }))
}
