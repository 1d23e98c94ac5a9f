//! The aggregate over many requests, per (sys, sm, state): in how many
//! requests the state is critical, its summed critical time, and the mean
//! and percentiles of its criticality over all the requests added (a
//! request where the state is not critical counts as 0).
//!
//! The result does not depend on the order requests were added or
//! aggregates merged: counts and times are integer sums, and the
//! criticalities are kept per state and sorted before they are summed or
//! ranked. Memory: one `f64` per (request, critical state) pair, nothing
//! for states off a request's path (100,000 requests with 10 critical
//! states each: 8 MB).

use crate::TraceResult;
use serde::{Deserialize, Serialize};
use std::borrow::Borrow;
use std::cmp::Ordering;
use std::collections::BTreeMap;

/// One aggregated row (`states` in docs/json.md).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StateAgg {
    pub sys: String,
    pub sm: String,
    pub state: String,
    /// Requests in which the state is on the critical path.
    pub traces: u64,
    /// Its critical time summed over all requests.
    pub critical_ns_sum: u64,
    /// Mean criticality over all requests (0 where it is not critical).
    pub criticality_mean: f64,
    /// Nearest-rank percentiles of the criticality over all requests.
    pub criticality_p50: f64,
    pub criticality_p90: f64,
    pub criticality_p99: f64,
}

impl StateAgg {
    /// The state's name as the CLI accepts it back (`SM: STATE`).
    pub fn name(&self) -> String {
        if self.sys == "local" {
            format!("{}: {}", self.sm, self.state)
        } else {
            format!("{}/{}: {}", self.sys, self.sm, self.state)
        }
    }
}

/// (sys, sm, state).
type Key = (String, String, String);

/// A key as borrowed strings, so that a state already held is found
/// without copying its names (each request adds each of its states).
trait KeyParts {
    fn parts(&self) -> (&str, &str, &str);
}

impl KeyParts for Key {
    fn parts(&self) -> (&str, &str, &str) {
        (&self.0, &self.1, &self.2)
    }
}

impl KeyParts for (&str, &str, &str) {
    fn parts(&self) -> (&str, &str, &str) {
        *self
    }
}

impl<'a> Borrow<dyn KeyParts + 'a> for Key {
    fn borrow(&self) -> &(dyn KeyParts + 'a) {
        self
    }
}

impl PartialEq for dyn KeyParts + '_ {
    fn eq(&self, other: &Self) -> bool {
        self.parts() == other.parts()
    }
}

impl Eq for dyn KeyParts + '_ {}

impl PartialOrd for dyn KeyParts + '_ {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// The order of [`Key`]'s: a string's order is its `str`'s.
impl Ord for dyn KeyParts + '_ {
    fn cmp(&self, other: &Self) -> Ordering {
        self.parts().cmp(&other.parts())
    }
}

/// What is kept of one state.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
struct Cell {
    critical_ns_sum: u64,
    /// The criticality in each request where the state is critical, in
    /// no particular order.
    criticalities: Vec<f64>,
}

/// Per-request results folded per state; see the module's documentation.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(into = "Stored", from = "Stored")]
pub struct Aggregate {
    traces: u64,
    length_ns_sum: u64,
    states: BTreeMap<Key, Cell>,
}

/// An aggregate as serialized: the states as a list (JSON maps need
/// string keys).
#[derive(Serialize, Deserialize)]
struct Stored {
    traces: u64,
    length_ns_sum: u64,
    states: Vec<(Key, Cell)>,
}

impl From<Aggregate> for Stored {
    fn from(a: Aggregate) -> Self {
        Stored {
            traces: a.traces,
            length_ns_sum: a.length_ns_sum,
            states: a.states.into_iter().collect(),
        }
    }
}

impl From<Stored> for Aggregate {
    fn from(s: Stored) -> Self {
        let mut a = Aggregate {
            traces: s.traces,
            length_ns_sum: s.length_ns_sum,
            states: BTreeMap::new(),
        };
        for (k, c) in s.states {
            a.merge_cell(k, c);
        }
        a
    }
}

impl Aggregate {
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds one request's result.
    pub fn add(&mut self, r: &TraceResult) {
        self.traces += 1;
        self.length_ns_sum = self.length_ns_sum.saturating_add(r.length_ns);
        for s in &r.states {
            let parts = (s.sys.as_str(), s.sm.as_str(), s.state.as_str());
            let key: &dyn KeyParts = &parts;
            if !self.states.contains_key(key) {
                let owned = (s.sys.clone(), s.sm.clone(), s.state.clone());
                self.states.insert(owned, Cell::default());
            }
            let cell = self.states.get_mut(key).expect("inserted");
            cell.critical_ns_sum = cell.critical_ns_sum.saturating_add(s.critical_ns);
            cell.criticalities.push(s.criticality);
        }
    }

    /// Adds everything another aggregate holds (from another worker).
    pub fn merge(&mut self, other: Aggregate) {
        self.traces += other.traces;
        self.length_ns_sum = self.length_ns_sum.saturating_add(other.length_ns_sum);
        for (k, c) in other.states {
            self.merge_cell(k, c);
        }
    }

    fn merge_cell(&mut self, k: Key, c: Cell) {
        let cell = self.states.entry(k).or_default();
        cell.critical_ns_sum = cell.critical_ns_sum.saturating_add(c.critical_ns_sum);
        cell.criticalities.extend(c.criticalities);
    }

    /// Requests added.
    pub fn traces(&self) -> u64 {
        self.traces
    }

    /// Their critical paths' lengths summed.
    pub fn length_ns_sum(&self) -> u64 {
        self.length_ns_sum
    }

    /// The aggregated rows, by summed critical time (most first), ties by
    /// (sys, sm, state).
    pub fn finish(&self) -> Vec<StateAgg> {
        let mut rows: Vec<StateAgg> = self.states.iter().map(|(k, c)| self.row(k, c)).collect();
        rows.sort_by(|a, b| {
            b.critical_ns_sum
                .cmp(&a.critical_ns_sum)
                .then_with(|| (&a.sys, &a.sm, &a.state).cmp(&(&b.sys, &b.sm, &b.state)))
        });
        rows
    }

    /// The first row of [`Aggregate::finish`], and only it computed.
    pub fn top(&self) -> Option<StateAgg> {
        // Most critical time first; of equal times the least key (the
        // map's order), as `finish` sorts them.
        let (k, c) = self
            .states
            .iter()
            .rev()
            .max_by_key(|(_, c)| c.critical_ns_sum)?;
        Some(self.row(k, c))
    }

    /// State `key`'s row.
    fn row(&self, (sys, sm, state): &Key, c: &Cell) -> StateAgg {
        let mut v = c.criticalities.clone();
        v.sort_by(f64::total_cmp);
        let n = self.traces.max(v.len() as u64);
        StateAgg {
            sys: sys.clone(),
            sm: sm.clone(),
            state: state.clone(),
            traces: v.len() as u64,
            critical_ns_sum: c.critical_ns_sum,
            criticality_mean: mean(&v, n),
            criticality_p50: percentile(&v, n, 50),
            criticality_p90: percentile(&v, n, 90),
            criticality_p99: percentile(&v, n, 99),
        }
    }
}

/// The mean of `n` values: `sorted` and `n - sorted.len()` zeros. Summed
/// in sorted order, so equal inputs give equal bits.
fn mean(sorted: &[f64], n: u64) -> f64 {
    if n == 0 {
        return 0.0;
    }
    sorted.iter().sum::<f64>() / n as f64
}

/// The nearest-rank `p`th percentile of `n` values: `n - sorted.len()`
/// zeros, then `sorted` (ascending). The value of rank ⌈p·n/100⌉ (at
/// least 1); 0 when there are no values.
fn percentile(sorted: &[f64], n: u64, p: u64) -> f64 {
    if n == 0 {
        return 0.0;
    }
    let rank = (p * n).div_ceil(100).max(1);
    let zeros = n - sorted.len() as u64;
    if rank <= zeros {
        0.0
    } else {
        sorted[(rank - zeros - 1) as usize]
    }
}

#[cfg(test)]
mod tests;
