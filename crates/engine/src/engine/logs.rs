//! Where the engine writes each node as it goes: the node log (the chosen
//! predecessor, for the walk back), when slack is asked for the graph log
//! (every in-edge), and for later what-ifs the re-walk log. Writing never stops the pass: the first I/O error is
//! kept and returned by `finish`.

use super::rewalk::{LoggedEdge, RewalkLog};
use crate::nodelog::{Entry, NodeLog};
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
        }
    }

    /// Appends the next node's chosen predecessor.
    #[inline]
    pub fn log(&mut self, e: Entry) {
        if let Err(err) = self.nodes.push(e) {
            self.io_error.get_or_insert(err);
        }
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
