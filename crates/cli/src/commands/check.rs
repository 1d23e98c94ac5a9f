//! `critpath check`: validates a trace and the combined graph's invariants;
//! exit 1 on a violation.

use crate::error::{CliError, Result};
use crate::flags;
use crate::inputs::run_analysis;
use crate::output::stdout;
use critpath_engine::check::{trace_errors, violations};
use critpath_engine::Options;
use critpath_views::json::{self, CheckDoc, GraphSize};
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct Args {
    trace: PathBuf,
    #[command(flatten)]
    print: flags::Json,
}

pub fn run(args: Args) -> Result<()> {
    let (a, err) = run_analysis(&args.trace, Options::default())?;
    let violations = violations(&a);
    let trace_errors = trace_errors(&a);
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
        let file = args.trace.display().to_string();
        critpath_views::check::check(&a, &file, &violations, &trace_errors, ok)
    };
    stdout(text.as_bytes())?;
    if let Some(e) = err {
        return Err(e.into());
    }
    if ok {
        Ok(())
    } else {
        Err(CliError::Check)
    }
}
