//! `critpath collect`: a live OTLP/HTTP receiver (docs/collect.md).
//!
//! Exporters `POST /v1/traces` (protobuf or JSON, gzip or not); the spans
//! are grouped into requests by trace id ([`store`]); a request is complete
//! once its root span has ended and no span of it came for a quiet period,
//! and completed requests go to rolling span files, each written whole and
//! renamed into place ([`files`]), so that `analyze` and `batch` can read
//! the directory while the receiver runs. `GET /` is the live report of
//! what was written ([`page`]); SIGTERM or SIGINT flushes every open request
//! and ends the receiver with exit 0.

mod files;
mod http;
mod otlp;
mod page;
mod store;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

pub use store::Stats;

/// What the receiver is told at start.
#[derive(Clone, Debug)]
pub struct Config {
    pub listen: SocketAddr,
    /// Where the request files go (created if missing).
    pub dir: PathBuf,
    /// A request whose root ended is complete after this long without a
    /// span of it.
    pub quiet: Duration,
    /// A request without a root span is written, incomplete, after this
    /// long.
    pub max_age: Duration,
    /// Requests held open at most; past them new requests are refused
    /// with 503 and `Retry-After` until some complete.
    pub max_open: usize,
    /// The largest body accepted, compressed or not (413 past it).
    pub max_body: usize,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            listen: SocketAddr::from(([127, 0, 0, 1], 4318)),
            dir: PathBuf::from("requests"),
            quiet: Duration::from_secs(2),
            max_age: Duration::from_secs(60),
            max_open: 100_000,
            max_body: 16 << 20,
        }
    }
}

/// Runs the receiver until SIGTERM or SIGINT; `ready` is told the address
/// it listens on (the port the system chose for port 0). Returns what it
/// received and wrote.
pub fn serve(cfg: Config, ready: impl FnOnce(SocketAddr)) -> std::io::Result<Stats> {
    std::fs::create_dir_all(&cfg.dir)?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    rt.block_on(http::run(cfg, ready))
}
