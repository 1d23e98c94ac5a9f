//! The end of the pass: pick the destination, walk the node log back,
//! compute slack when asked, and assemble the [`Analysis`].

use super::rewalk::{Names, PathEnd, Rewalk};
use super::{Engine, NodeRef};
use crate::error::{Error, Result};
use crate::results::{Analysis, Stats};
use critpath_trace::Interner;

impl Engine<'_> {
    /// Ends the pass: picks the destination, walks the node log back, and
    /// builds the results.
    pub fn finish(mut self, strings: &Interner) -> Result<Analysis> {
        self.settle_deferred();
        self.logs.take_back();
        if let Some(e) = self.logs.io_error.take() {
            return Err(e.into());
        }
        self.logs.nodes.seal()?;
        let (dest, disconnected) = self.destination(strings)?;
        if self.scaling.overflow {
            return Err(Error::TimeOverflow);
        }
        self.g.seal();
        self.add_cnode_visits();
        let rewalk = self.seal_rewalk(dest.map(|d| d.0), strings);
        let walked = self.walk(dest, strings)?;
        if let Some(e) = walked.windows.as_ref().and_then(|w| w.too_many()) {
            return Err(e);
        }
        let length = walked.path.length_ns;
        // Toward a named destination, only what reaches it has slack (none
        // when it has no node).
        let to = (self.opts.to.as_ref()).map(|_| dest.map_or(u64::MAX, |d| d.0.id));
        let slack = match self.logs.graph.take() {
            Some(g) => Some(g.slack(length as i64, self.m.keys.len(), to)?),
            None => None,
        };
        self.add_totals();
        self.count_open_held();
        let states = self.state_rows(length, (&slack, &walked.blame.sums), strings);
        let mut findings: Vec<_> = disconnected.into_iter().collect();
        findings.extend(self.long_states(strings));
        findings.extend(self.pending_dropped());
        findings.extend(self.path_gap(&walked, strings));
        let diagnostics = self.diags.take_all(findings, strings);
        let cgraph = match self.opts.no_cgraph {
            true => crate::results::CGraph::default(),
            false => self.cgraph_rows(strings),
        };
        let path = self
            .opts
            .keep_path
            .then(|| self.segment_rows(walked.segments, strings));
        let windows = walked.windows.map(|w| self.window_rows(w, strings));
        let path_overhead = self.path_overhead(&walked.cut, strings);
        Ok(Analysis {
            windows,
            critical_path: walked.path,
            states,
            diagnostics,
            stats: self.stats(),
            cgraph,
            path,
            annotation_costs: Vec::new(),
            path_overhead,
            program: Vec::new(),
            wall_clock: false,
            overhead_correction: None,
            rewalk,
        })
    }

    /// The re-walk log, sealed with the names a what-if matches, if one was
    /// kept; `dest` is the path's last node (the length of the path; and
    /// under `--to` where a what-if's path ends, else wherever its greatest
    /// `L` is).
    fn seal_rewalk(&mut self, dest: Option<NodeRef>, strings: &Interner) -> Option<Rewalk> {
        let log = self.logs.rewalk.take()?;
        let names = Names {
            keys: (self.m.keys.iter())
                .map(|k| (k.sm, strings.resolve(k.state).to_string()))
                .collect(),
            sms: (self.m.sms.iter())
                .map(|s| {
                    (
                        strings.resolve(s.sys).into(),
                        strings.resolve(s.name).into(),
                    )
                })
                .collect(),
            scales_with: self.opts.scales_with.clone(),
        };
        let end = match (self.opts.to.is_some(), dest) {
            (false, _) => PathEnd::Greatest,
            (true, Some(n)) => PathEnd::Node(n.id),
            (true, None) => PathEnd::Nowhere,
        };
        log.seal(names, end, dest.map_or(0, |n| n.l.max(0) as u64))
    }

    /// Counts of the pass.
    fn stats(&self) -> Stats {
        Stats {
            records: self.records,
            nodes: self.next_node,
            state_machines: self.m.sms.iter().filter(|s| s.nodes > 0).count() as u64,
            node_log_bytes: self.logs.nodes.disk_bytes(),
            scaled_edges: self.scaling.edges,
        }
    }
}
