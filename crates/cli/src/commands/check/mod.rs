//! `critpath check`: validates a trace and the combined graph's invariants;
//! exit 1 on a violation. A span file of several requests is checked
//! request by request (`--trace ID` checks one).

use crate::error::{CliError, Result};
use crate::flags;
use crate::inputs::{analyze_session, request_session};

mod many;
use crate::output::stdout;
use critpath_engine::check::{trace_errors, violations};
use critpath_engine::Options;
use critpath_trace::DiagnosticKind;
use critpath_views::json::{self, CheckDoc, GraphSize};
use std::path::{Path, PathBuf};

/// Is `trace` a perf.data recording (whose records critpath made)?
fn recording(trace: &Path) -> bool {
    critpath_import::format_of(trace).is_ok_and(|f| f == critpath_import::Format::Perf)
}

#[derive(clap::Args)]
pub struct Args {
    trace: PathBuf,
    #[command(flatten)]
    print: flags::Json,
    #[command(flatten)]
    request: flags::Request,
}

pub fn run(args: Args) -> Result<()> {
    // Opened once: a span file of one request is read by `requests` and
    // kept in the session for its analysis.
    let request = args.request.request.as_deref();
    let mut s = request_session(&args.trace, request)?;
    if request.is_none() {
        if let Some(requests) = s.requests()? {
            return many::check(&requests, &s.name(), args.print.json);
        }
    }
    let (a, err) = analyze_session(&args.trace, &mut s, Options::default())?;
    let violations = violations(&a);
    let mut trace_errors = trace_errors(&a);
    if recording(&args.trace) {
        // A recording's records are the OS graph's, made from kernel
        // events of which some were lost: an open wait left without its
        // wakeup is a finding of the recording (`analyze` shows it), not
        // an error of the trace. A damaged file still fails.
        trace_errors.retain(|d| {
            matches!(
                d.kind,
                DiagnosticKind::InputSkipped | DiagnosticKind::InputCut
            )
        });
    }
    let ok = violations.is_empty() && trace_errors.is_empty();
    let text = if args.print.json {
        json::document(&CheckDoc {
            ok,
            invariant_violations: &violations,
            trace_errors: &trace_errors,
            stats: &a.stats,
            cgraph: GraphSize {
                nodes: a.cgraph.nodes.len(),
                edges: a.cgraph.edges.len(),
            },
        })
    } else {
        let file = critpath_session::display_name(&args.trace);
        critpath_views::check::check(&a, &file, &violations, &trace_errors, ok)
    };
    stdout(text.as_bytes())?;
    if let Some(e) = err {
        return Err(e.into());
    }
    verdict(ok)
}

/// A check's exit: 1 on a violation.
fn verdict(ok: bool) -> Result<()> {
    if ok {
        Ok(())
    } else {
        Err(CliError::Check)
    }
}
