//! Where the engine writes each node as it goes: the node log (the chosen
//! predecessor, for the walk back), when slack is asked for the graph log
//! (every in-edge), and for later what-ifs the re-walk log. Writing never
//! stops the pass: the first I/O error is kept and returned by `finish`.
//! A node-log entry whose inter-SM edge is not known yet (its pass is
//! deferred, see `CGraphBuilder::inter_pass`) waits in a queue, and the
//! entries after it, until the deferred passes are counted.

use super::cgraph::{DEFER, DEFERRED};
use super::rewalk::{LoggedEdge, RewalkLog};
use super::Engine;
use crate::logshare::{LogHelper, LogSender};
use crate::nodelog::{Entry, NodeLog, NO_PRED};
use crate::slack::{GraphLog, InEdge};
use std::io;

/// The node log, the slack graph log, and the first error writing them.
pub(super) struct Logs {
    pub nodes: NodeLog,
    /// All in-edges of every node, for slack.
    pub graph: Option<GraphLog>,
    /// Every node's in-edges, unscaled, for what-ifs after the pass.
    pub rewalk: Option<RewalkLog>,
    pub io_error: Option<io::Error>,
    /// Node-log entries held back behind one whose inter-SM edge is
    /// deferred (see [`Engine::log_entry`]), in node order.
    queued: Vec<Entry>,
    /// Where entries go when another thread encodes them (`nodes` is then
    /// empty until [`Logs::take_back`]).
    sender: Option<LogSender>,
}

impl Logs {
    /// Logs that keep the graph for slack when `slack` is set, and the span
    /// of each node's edge when `timed` (see [`NodeLog::timed`]); written on
    /// the engine's thread when `one_thread`; the re-walk log when
    /// `rewalk`.
    pub fn new(slack: bool, timed: bool, one_thread: bool, rewalk: bool) -> Logs {
        let (graph, io_error) = if slack {
            match GraphLog::new() {
                Ok(g) => (Some(g), None),
                Err(e) => (None, Some(e)),
            }
        } else {
            (None, None)
        };
        let mut nodes = if timed {
            NodeLog::timed()
        } else {
            NodeLog::new()
        };
        if one_thread {
            nodes.write_inline();
        }
        Logs {
            nodes,
            graph,
            rewalk: rewalk.then(|| RewalkLog::new(one_thread)),
            io_error,
            queued: Vec::new(),
            sender: None,
        }
    }

    /// Appends the next node's chosen predecessor.
    #[inline]
    pub fn log(&mut self, e: Entry) {
        if let Err(err) = self.nodes.push(e) {
            self.io_error.get_or_insert(err);
        }
    }

    /// Lets another thread encode the node log (see [`crate::logshare`]).
    fn share(&mut self) -> LogHelper {
        let (sender, helper) = LogSender::new(std::mem::take(&mut self.nodes));
        self.sender = Some(sender);
        helper
    }

    /// The node log encoded to its last entry, on this thread again.
    pub fn take_back(&mut self) {
        if let Some(s) = self.sender.take() {
            let (nodes, err) = s.finish();
            self.nodes = nodes;
            if let Some(err) = err {
                self.io_error.get_or_insert(err);
            }
        }
    }

    /// Appends the next node's entry, or queues it when its edge is a
    /// deferred pass's or entries are queued before it; the entries queued.
    #[inline]
    fn log_or_queue(&mut self, e: Entry) -> usize {
        if let Some(s) = self.sender.as_mut() {
            return s.log_or_hold(e, e.pred != NO_PRED && e.tag & DEFERRED != 0);
        }
        if self.queued.is_empty() && (e.pred == NO_PRED || e.tag & DEFERRED == 0) {
            self.log(e);
            return 0;
        }
        self.queued.push(e);
        self.queued.len()
    }

    /// Appends the queued entries, each deferred pass's tag replaced by
    /// its edge (`edge_of`).
    fn release(&mut self, edge_of: impl Fn(u32) -> u32) {
        let fix = |e: &mut Entry| {
            if e.pred != NO_PRED {
                e.tag = edge_of(e.tag);
            }
        };
        if let Some(s) = self.sender.as_mut() {
            return s.settle(fix);
        }
        let mut queued = std::mem::take(&mut self.queued);
        for mut e in queued.drain(..) {
            if e.pred != NO_PRED {
                e.tag = edge_of(e.tag);
            }
            self.log(e);
        }
        self.queued = queued;
    }

    /// Appends node `node` to the re-walk log, if one is kept: `root` when
    /// a path may start at it, and its in-edges.
    #[inline]
    pub fn rewalk(&mut self, node: u64, root: bool, edges: [Option<LoggedEdge>; 2]) {
        if let Some(r) = self.rewalk.as_mut() {
            r.node(node, root, edges);
        }
    }

    /// Is the slack graph being kept?
    #[inline]
    pub fn keeps_graph(&self) -> bool {
        self.graph.is_some()
    }

    /// Records a node's `L` and all its in-edges for slack.
    pub fn graph_node(&mut self, l: i64, edges: &[InEdge]) {
        if let Some(g) = self.graph.as_mut() {
            if let Err(err) = g.push(l, edges) {
                self.io_error.get_or_insert(err);
            }
        }
    }
}

impl Engine<'_> {
    /// Lets the caller's helper encode the node log while the engine runs
    /// ([`LogHelper::encode_queued`], see [`crate::logshare`]); before the
    /// first record.
    pub(crate) fn share_log(&mut self) -> LogHelper {
        self.logs.share()
    }

    /// Logs the next node's entry. An inter-SM pass past its memo may be
    /// counted later, with others
    /// ([`super::cgraph::CGraphBuilder::inter_pass`]): an entry whose edge
    /// is one waits, and the entries after it, until [`DEFER`] passes or
    /// entries wait, or the pass ends.
    #[inline]
    pub(super) fn log_entry(&mut self, e: Entry) {
        let queued = self.logs.log_or_queue(e);
        if queued >= DEFER || self.g.deferred() >= DEFER {
            self.settle_deferred();
        }
    }

    /// Counts the deferred passes and logs the entries that waited for
    /// their edges.
    pub(super) fn settle_deferred(&mut self) {
        self.g.resolve();
        let g = &self.g;
        self.logs.release(|tag| g.edge_of(tag));
        self.g.clear_deferred();
    }
}
