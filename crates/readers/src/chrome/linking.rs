//! The inferred links of a Chrome trace as records, and what the reader
//! says about how its threads are linked (docs/event-model.md, "Inferred
//! links").

use super::blocking::Wait;
use super::spawns;
use super::waits::{self, Link};
use super::{Collector, Phase, TrackKey};
use critpath_trace::{Diagnostic, DiagnosticKind, Event, LinkId, Sym, Who};
use std::collections::{BTreeMap, HashMap, HashSet};

impl Collector {
    /// Infers the links between threads from their blocking calls and the
    /// calls that started them, adds them to the records (the waker sends,
    /// the call receives a waited link as it returns; a new thread, as it
    /// begins), and gives the diagnostics about them with the receives, as
    /// (SM, time). `rename` maps placeholder SMs to final ones.
    pub(super) fn link_threads(
        &mut self,
        rename: &HashMap<Sym, Sym>,
    ) -> (Vec<Diagnostic>, Vec<(String, u64)>) {
        let pids: Vec<Option<&str>> = (self.keys.iter())
            .map(|k| match k {
                TrackKey::Thread(p, _) => Some(p.as_str()),
                TrackKey::Async(_) => None,
            })
            .collect();
        let calls = self.calls.finish();
        // Where flows, and the answers of calls, arrived.
        let mut answered = std::mem::take(&mut self.arrived);
        answered.extend(calls.iter().map(|c| (c.0.waiter, c.0.received)));
        answered.sort_unstable();
        let mut links = waits::infer(&mut self.scan, &pids, &answered);
        let scan = &self.scan;
        let starts = spawns::infer(&scan.spawns, &scan.extents, &pids, &scan.waits, &links);
        links.extend(starts);
        let idle = self.records.idle;
        let mut states = vec![idle; links.len()];
        states.extend(calls.iter().map(|c| c.1));
        links.extend(calls.into_iter().map(|c| c.0));
        let placeholders: Vec<Sym> = (self.keys.iter()).map(|k| self.tracks[k].1).collect();
        let final_name = |strings: &critpath_trace::Interner, track: u32| {
            let sm = placeholders[track as usize];
            strings.resolve(*rename.get(&sm).unwrap_or(&sm)).to_string()
        };
        let prefix = self.records.strings.intern("\u{1}inferred:");
        self.records.set_group(0);
        let mut received = Vec::with_capacity(links.len());
        for (n, l) in links.iter().enumerate() {
            let id = LinkId::Num(n as u64);
            let waker = Who::Sm(placeholders[l.waker as usize]);
            let send = Event::Send { who: waker, id };
            self.records
                .push_numbered_link(l.sent, Phase::Send, send, prefix);
            let recv = Event::Recv {
                who: Who::Sm(placeholders[l.waiter as usize]),
                id,
                state: states[n],
                waited: true,
            };
            self.records
                .push_numbered_link(l.received, Phase::Recv, recv, prefix);
            received.push((final_name(&self.records.strings, l.waiter), l.received));
        }
        let mut findings = inferred_diagnostic(&links);
        let unlinked = self.unlinked(&links, |t| final_name(&self.records.strings, t));
        findings.extend(unlinked);
        (findings, received)
    }

    /// When nothing links the track the path most likely ends on (the one
    /// that ends last) to any other while other tracks did work: a
    /// diagnostic naming the busiest of those.
    fn unlinked(&self, links: &[Link], name: impl Fn(u32) -> String) -> Option<Diagnostic> {
        let mut linked: HashSet<u32> = self.linked.clone();
        linked.extend(links.iter().flat_map(|l| [l.waker, l.waiter]));
        let ext = &self.scan.extents;
        let seen = || (0..ext.len() as u32).filter(|&t| ext[t as usize].seen);
        let last = seen().max_by_key(|&t| (ext[t as usize].last, std::cmp::Reverse(t)))?;
        if linked.contains(&last) {
            return None;
        }
        let others = seen().filter(|&t| t != last).count();
        let busiest = seen()
            .filter(|&t| t != last && ext[t as usize].busy > 0)
            .max_by_key(|&t| (ext[t as usize].busy, std::cmp::Reverse(t)))?;
        let busy = ext[busiest as usize].busy;
        let (on, other) = (name(last), name(busiest));
        let msg = format!(
            "nothing links `{on}` to the {others} other threads (no flow events, no recognised \
             blocking call with a waker): the critical path stays on it; the busiest other \
             thread is `{other}`, {:.1} ms in slices outside blocking calls",
            busy as f64 / 1e6
        );
        let mut d = Diagnostic::new(DiagnosticKind::UnlinkedThreads, msg);
        d.sm = Some(on);
        d.ns = Some(busy);
        Some(d)
    }
}

/// The diagnostics of inferred links: blocking calls by kind, and calls.
fn inferred_diagnostic(links: &[Link]) -> Vec<Diagnostic> {
    let (calls, links): (Vec<&Link>, Vec<&Link>) = links.iter().partition(|l| l.kind == Wait::Call);
    let mut out: Vec<Diagnostic> = blocking_diagnostic(&links).into_iter().collect();
    if !calls.is_empty() {
        let msg = format!(
            "{} waits for calls inferred from flow events: a thread whose slice was still open, \
             with nothing nested in it begun, when the slice its flow went to ended was waiting \
             for that slice; the path's edges over them are marked `inferred`",
            calls.len()
        );
        out.push(Diagnostic::new(DiagnosticKind::InferredLink, msg).count(calls.len() as u64));
    }
    out
}

/// The count of links inferred from blocking calls and from the calls that
/// started threads, by kind of call.
fn blocking_diagnostic(links: &[&Link]) -> Option<Diagnostic> {
    if links.is_empty() {
        return None;
    }
    let mut by_kind = BTreeMap::new();
    for l in links {
        *by_kind.entry(l.kind).or_insert(0u64) += 1;
    }
    let kinds: Vec<String> = (by_kind.iter())
        .map(|(k, n)| format!("{n} {}", k.label()))
        .collect();
    let closest = "each call was linked to the other thread whose end or release came closest \
                   before it returned";
    let started = "each new thread or process was linked to the call that started it";
    let (from, how) = match (by_kind.contains_key(&Wait::Start), by_kind.len()) {
        (false, _) => ("blocking calls", closest.to_string()),
        (true, 1) => (
            "the calls that started threads and processes",
            started.to_string(),
        ),
        (true, _) => (
            "blocking calls and the calls that started threads and processes",
            format!("{closest}, and each new thread or process to the call that started it"),
        ),
    };
    let msg = format!(
        "{} links between threads inferred from {from} ({}): the trace has no flow events for \
         them, so {how}; the path's edges over them are marked `inferred`",
        links.len(),
        kinds.join(", ")
    );
    Some(Diagnostic::new(DiagnosticKind::InferredLink, msg).count(links.len() as u64))
}
