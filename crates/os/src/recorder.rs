//! The recorder's own share of the CPUs (docs/os-graph.md, "The
//! recorder"). On a small machine perf competes with the program it
//! records: `critpath record` saves perf's pid beside the trace
//! (`OUT.recorder`), and the analysis sums perf's running time from the
//! context switches and reports it against the CPU time of the recording
//! (diagnostic `recorder-share`). Without that file (a recording made with
//! perf directly), every thread named `perf` is taken for the recorder,
//! and the diagnostic says it was inferred.

use critpath_readers::perf::{recorder_path, Comm, KEvent, KRecord};
use critpath_trace::{Diagnostic, DiagnosticKind};
use rustc_hash::FxHashSet;
use std::path::Path;

/// Saves the recorder's pid beside the recording
/// ([`critpath_readers::perf::recorder_path`]).
pub fn save(trace: &Path, pid: u32) -> std::io::Result<()> {
    std::fs::write(recorder_path(trace), format!("{pid}\n"))
}

/// The recorder's running time, tallied from the context switches.
#[derive(Default)]
pub struct Recorder {
    /// The recorder's pid, from the sidecar; without it, threads named
    /// `perf` are the recorder.
    pid: Option<u32>,
    threads: FxHashSet<u32>,
    /// Per CPU: has it switched, and since when a recorder thread runs
    /// there.
    cpus: Vec<(bool, Option<u64>)>,
    ran_ns: u64,
    span: Option<(u64, u64)>,
}

impl Recorder {
    /// The tally for a recording whose recorder's pid is `pid`, when
    /// known ([`critpath_readers::perf::events::Recording::recorder`]).
    pub fn new(pid: Option<u32>) -> Self {
        Recorder {
            pid,
            ..Recorder::default()
        }
    }

    /// One kernel event, in time order.
    #[inline]
    pub fn event(&mut self, k: &KRecord) {
        self.span = Some(self.span.map_or((k.t, k.t), |(a, _)| (a, k.t)));
        if let KEvent::Switch {
            prev,
            prev_comm,
            next,
            next_comm,
            ..
        } = k.ev
        {
            self.switch(k, (prev, &prev_comm), (next, &next_comm));
        }
    }

    /// Is this task the recorder's?
    fn ours(&self, pid: u32, tid: u32, comm: &Comm) -> bool {
        match self.pid {
            Some(p) => pid == p || tid == p || self.threads.contains(&tid),
            None => comm_is(comm, "perf"),
        }
    }

    #[inline(never)]
    fn switch(&mut self, k: &KRecord, prev: (u32, &Comm), next: (u32, &Comm)) {
        let cpu = k.cpu as usize;
        if self.cpus.len() <= cpu {
            self.cpus.resize(cpu + 1, (false, None));
        }
        self.cpus[cpu].0 = true;
        // The sample's task is the one leaving: its pid is known.
        if prev.0 != 0 && self.ours(k.pid, prev.0, prev.1) {
            self.threads.insert(prev.0);
        }
        if let Some(from) = self.cpus[cpu].1.take() {
            self.ran_ns += k.t.saturating_sub(from);
        }
        if next.0 != 0 && self.ours(0, next.0, next.1) {
            self.cpus[cpu].1 = Some(k.t);
        }
    }

    /// What the recorder took: its running time against the CPU time of
    /// the recording (every CPU that ran anything, over the recording).
    pub fn diagnostic(&self) -> Option<Diagnostic> {
        if self.threads.is_empty() {
            return None;
        }
        let (a, b) = self.span?;
        let cpus = self.cpus.iter().filter(|c| c.0).count();
        let cpu_ns = (b - a) as f64 * cpus.max(1) as f64;
        let share = if cpu_ns > 0.0 {
            100.0 * self.ran_ns as f64 / cpu_ns
        } else {
            0.0
        };
        let who = match self.pid {
            Some(pid) => format!("perf, pid {pid}"),
            None => "inferred: the threads named perf; no .recorder file beside the trace".into(),
        };
        Some(Diagnostic::new(
            DiagnosticKind::RecorderShare,
            format!(
                "the recorder ({who}) ran {:.2} ms, {share:.1}% of the CPU time of the recording ({} CPU(s) × {:.2} ms); where a thread on the path waited for a CPU it held, the runnable state's blame names it",
                self.ran_ns as f64 / 1e6,
                cpus,
                (b - a) as f64 / 1e6
            ),
        ))
    }
}

fn comm_is(c: &Comm, name: &str) -> bool {
    let n = c.iter().position(|&b| b == 0).unwrap_or(c.len());
    &c[..n] == name.as_bytes()
}
