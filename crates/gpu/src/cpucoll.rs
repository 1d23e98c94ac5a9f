//! Collectives run by CPUs (gloo, or any backend the profiler records with
//! `record_param_comms`), as a rank's trace shows them:
//!
//! - `gloo:NAME` user annotations on gloo's worker threads: the collective
//!   running, its wait for the other ranks included (the *execution*);
//! - `c10d::NAME` CPU ops on the thread that asked for it (the *issue*):
//!   `c10d::allreduce_` returns at once for an asynchronous collective, and
//!   the thread waits later for its end;
//! - `record_param_comms` CPU ops with the collective's name, process group
//!   and sequence number (`Seq`) in their arguments.
//!
//! A rank's CPU collectives, in the order of preference: its gloo
//! executions, else its `record_param_comms` ops, else its `c10d` ops. They
//! are matched across ranks (see `ranks`) by `Seq` where every member has
//! one, else by order within the process group. Issues and executions of
//! one rank are paired by name, in order (`pass`).

use crate::streams::CollOp;

/// What a CPU event is to collectives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CollKind {
    /// `gloo:*`: the collective running on a worker thread.
    Execution,
    /// `record_param_comms` with its arguments.
    Params,
    /// `c10d::*`: the thread that asked for it.
    Issue,
}

/// One CPU collective event of a rank.
#[derive(Clone, Debug)]
pub struct CpuColl {
    pub kind: CollKind,
    /// The event's name: the state it makes.
    pub state: String,
    pub op: CollOp,
}

/// The collective a CPU event's name stands for, normalised so that issues
/// and executions meet (`c10d::allreduce_` and `gloo:all_reduce` are both
/// `allreduce`), and what kind of event it is.
pub fn classify(name: &str, annotation: bool) -> Option<(CollKind, String)> {
    if let Some(rest) = name.strip_prefix("gloo:") {
        return Some((CollKind::Execution, normalise(rest)));
    }
    if annotation {
        return None;
    }
    if name == "record_param_comms" {
        return Some((CollKind::Params, String::new()));
    }
    let rest = name.strip_prefix("c10d::")?;
    // Not collectives: waits and the plumbing around them.
    let plumbing = ["wait", "_wait", "monitored", "_allgather_base", "recv_any"];
    if plumbing.iter().any(|p| rest.starts_with(p)) || rest.is_empty() {
        return None;
    }
    Some((CollKind::Issue, normalise(rest)))
}

/// `all_reduce`, `allreduce_`, `ALLREDUCE` → `allreduce`.
pub fn normalise(name: &str) -> String {
    name.chars()
        .filter(|c| *c != '_')
        .flat_map(char::to_lowercase)
        .collect()
}

/// The collectives to match across ranks, of one kind: executions if the
/// rank has any, else `record_param_comms`, else issues.
pub fn chosen(all: &[CpuColl]) -> Vec<CollOp> {
    let kind = chosen_kind(all);
    let of = all.iter().filter(|c| Some(c.kind) == kind);
    of.map(|c| c.op.clone()).collect()
}

/// The kind of a rank's events [`chosen`] takes for its collectives: the
/// first of executions, `record_param_comms`, issues that it has.
pub fn chosen_kind(all: &[CpuColl]) -> Option<CollKind> {
    [CollKind::Execution, CollKind::Params, CollKind::Issue]
        .into_iter()
        .find(|&kind| all.iter().any(|c| c.kind == kind))
}

/// Does a trace's `distributedInfo.backend` run collectives on GPUs only
/// (`nccl`, `rccl`, `hccl`, `xccl`), with no CPU backend (`gloo`, `mpi`)?
pub fn gpu_backend(backend: Option<&str>) -> bool {
    backend.is_some_and(|b| {
        let b = b.to_ascii_lowercase();
        b.contains("ccl") && !b.contains("gloo") && !b.contains("mpi")
    })
}

/// The default process group of a trace's `distributedInfo`: its first
/// `pg_config` entry (name and ranks), else `world_size` ranks from 0.
pub fn default_group(pg: Option<(String, Vec<i64>)>, world: Option<i64>) -> (String, Vec<i64>) {
    match pg {
        Some((name, ranks)) if !ranks.is_empty() => (name, ranks),
        _ => ("0".to_string(), (0..world.unwrap_or(0)).collect()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn issues_and_executions_meet_by_name() {
        assert_eq!(
            classify("gloo:all_reduce", true),
            Some((CollKind::Execution, "allreduce".into()))
        );
        assert_eq!(
            classify("c10d::allreduce_", false),
            Some((CollKind::Issue, "allreduce".into()))
        );
        assert_eq!(
            classify("c10d::barrier", false),
            Some((CollKind::Issue, "barrier".into()))
        );
        assert_eq!(classify("c10d::wait", false), None);
        assert_eq!(classify("c10d::allreduce_", true), None);
        assert_eq!(classify("aten::mm", false), None);
        assert_eq!(
            classify("record_param_comms", false).map(|c| c.0),
            Some(CollKind::Params)
        );
    }

    #[test]
    fn executions_are_preferred() {
        let c = |kind, op: u64| CpuColl {
            kind,
            state: String::new(),
            op: CollOp {
                op,
                name: String::new(),
                group: String::new(),
                ranks: Vec::new(),
                start: op,
                end: op,
                launched: op,
                seq: None,
            },
        };
        let all = [c(CollKind::Issue, 1), c(CollKind::Execution, 2)];
        assert_eq!(chosen(&all).iter().map(|o| o.op).collect::<Vec<_>>(), [2]);
        assert_eq!(chosen(&all[..1]).len(), 1);
        assert!(gpu_backend(Some("nccl")) && gpu_backend(Some("NCCL")));
        assert!(!gpu_backend(Some("gloo")) && !gpu_backend(None));
        assert!(!gpu_backend(Some("cpu:gloo,cuda:nccl")));
        assert_eq!(
            default_group(None, Some(3)),
            ("0".to_string(), vec![0, 1, 2])
        );
    }
}
