//! `critpath collect`: the live OTLP/HTTP receiver of `critpath-collect`.

use super::analyze::duration;
use crate::error::{CliError, Result};
use clap::Args as ClapArgs;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

/// Receive OpenTelemetry spans over OTLP/HTTP (`POST /v1/traces`,
/// protobuf or JSON, gzip or not) and write each completed request to
/// rolling span files in DIR, readable by `analyze` and `batch` while it
/// runs; `GET /` is the live report. SIGTERM or Ctrl-C writes every open
/// request and exits 0.
#[derive(ClapArgs)]
pub struct Args {
    /// The address to listen on (port 0: any free port, printed at start).
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:4318")]
    listen: SocketAddr,
    /// The directory of the request files (`requests-NNNNNN.pb`).
    #[arg(short, long, value_name = "DIR")]
    output: PathBuf,
    /// A request is complete once its root span ended and no span of it
    /// came for this long.
    #[arg(long, value_name = "DURATION", default_value = "2s")]
    quiet: String,
    /// A request whose root never ends is written, incomplete, after this
    /// long.
    #[arg(long, value_name = "DURATION", default_value = "60s")]
    max_age: String,
    /// Requests held open at most; past them exports that start new
    /// requests are answered 503 with Retry-After.
    #[arg(long, value_name = "N", default_value_t = 100_000)]
    max_open: usize,
    /// The largest body accepted, decompressed, in bytes (413 past it).
    #[arg(long, value_name = "BYTES", default_value_t = 16 << 20)]
    max_body: usize,
}

pub fn run(args: Args) -> Result<()> {
    let ns = |flag, s: &str| duration(flag, s).map(Duration::from_nanos);
    let cfg = critpath_collect::Config {
        listen: args.listen,
        dir: args.output.clone(),
        quiet: ns("--quiet", &args.quiet)?,
        max_age: ns("--max-age", &args.max_age)?,
        max_open: args.max_open.max(1),
        max_body: args.max_body.max(1),
    };
    let dir = args.output.display().to_string();
    out_dir(&args.output, &dir)?;
    let stats = critpath_collect::serve(cfg, |addr| {
        eprintln!(
            "critpath collect: listening on http://{addr}/v1/traces, writing requests to {dir}"
        );
    })
    .map_err(|e| CliError::input(format!("collect --listen {}: {e}", args.listen)))?;
    eprintln!(
        "critpath collect: {} spans received, {} requests written in {} file(s) ({} without their root span); {} span(s) rejected, {} export(s) refused, {} answered busy",
        stats.spans, stats.requests_written, stats.files, stats.incomplete,
        stats.rejected_spans, stats.refused_bodies, stats.busy
    );
    Ok(())
}

/// The directory of `-o` (named `dir` in messages), made if missing; a
/// path that is something else is refused, naming `-o`.
fn out_dir(path: &std::path::Path, dir: &str) -> Result<()> {
    if path.exists() && !path.is_dir() {
        return Err(CliError::input(format!(
            "-o {dir}: is not a directory: collect writes its request files (requests-NNNNNN.pb) into a directory, made if missing"
        )));
    }
    std::fs::create_dir_all(path)
        .map_err(|e| CliError::input(format!("-o {dir}: cannot make the directory: {e}")))
}
