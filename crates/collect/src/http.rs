//! The HTTP side: `POST /v1/traces` into the store, `GET /` the live
//! report, a flusher that writes completed requests, and the shutdown on
//! SIGTERM or SIGINT that writes every open request before exit.

use crate::files::{Journal, Roller};
use crate::otlp::{self, Encoding, Refused};
use crate::store::{Stats, Store, Taken};
use crate::{page, Config};
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// What the handlers share.
struct Shared {
    cfg: Config,
    store: Mutex<Store>,
    roller: Mutex<Roller>,
    /// Locked before the store, by whoever changes what is open.
    journal: Mutex<Option<Journal>>,
}

impl Shared {
    /// Writes the requests complete now (all with `all`) as one file.
    /// The file is renamed into place before the journal forgets its
    /// requests: a kill between the two writes them twice, never loses them.
    fn flush(&self, all: bool) -> std::io::Result<()> {
        let mut journal = self.journal.lock().expect("journal");
        let (done, open) = {
            let mut store = self.store.lock().expect("store");
            let done = store.due(Instant::now(), all);
            (done, store.snapshot())
        };
        if !done.is_empty() {
            self.roller.lock().expect("roller").write(&done)?;
            if let Some(j) = journal.as_mut() {
                j.rewrite(&open)?;
            }
        }
        if all {
            if let Some(j) = journal.take() {
                j.remove()?;
            }
        }
        if done.is_empty() {
            return Ok(());
        }
        let mut store = self.store.lock().expect("store");
        store.stats.requests_written += done.len() as u64;
        store.stats.files += 1;
        Ok(())
    }

    fn stats(&self) -> (Stats, usize) {
        let s = self.store.lock().expect("store");
        (s.stats.clone(), s.open_requests())
    }
}

pub async fn run(cfg: Config, ready: impl FnOnce(SocketAddr)) -> std::io::Result<Stats> {
    let listener = tokio::net::TcpListener::bind(cfg.listen).await?;
    // The handlers are in place before anyone is told where to send.
    let stop = stopped()?;
    // What a receiver killed on this directory had acknowledged.
    let (journal, left) = Journal::open(&cfg.dir)?;
    let mut store = Store::new(cfg.quiet, cfg.max_age, cfg.max_open);
    for req in left {
        store.restore(req, Instant::now());
    }
    let shared = Arc::new(Shared {
        store: Mutex::new(store),
        roller: Mutex::new(Roller::new(&cfg.dir)?),
        journal: Mutex::new(Some(journal)),
        cfg: cfg.clone(),
    });
    // Bodies past the limit as sent are refused by the body's extractor
    // (`traces` answers), past it once decompressed by `otlp::body`.
    let app = Router::new()
        .route("/v1/traces", post(traces))
        .route("/", get(report))
        .layer(DefaultBodyLimit::max(cfg.max_body))
        .with_state(shared.clone());
    let flusher = tokio::spawn(flush_every(shared.clone(), tick(&cfg)));
    ready(listener.local_addr()?);
    axum::serve(listener, app)
        .with_graceful_shutdown(stop)
        .await?;
    flusher.abort();
    let s = shared.clone();
    tokio::task::spawn_blocking(move || s.flush(true))
        .await
        .map_err(std::io::Error::other)??;
    Ok(shared.stats().0)
}

/// How often completed requests are looked for.
fn tick(cfg: &Config) -> Duration {
    (cfg.quiet / 4).clamp(Duration::from_millis(20), Duration::from_millis(500))
}

async fn flush_every(shared: Arc<Shared>, every: Duration) {
    let mut t = tokio::time::interval(every);
    loop {
        t.tick().await;
        let s = shared.clone();
        if let Ok(Err(e)) = tokio::task::spawn_blocking(move || s.flush(false)).await {
            eprintln!("critpath collect: cannot write requests: {e}");
        }
    }
}

/// A future that resolves on SIGTERM or SIGINT, its handlers installed
/// now.
fn stopped() -> std::io::Result<impl std::future::Future<Output = ()>> {
    use tokio::signal::unix::{signal, SignalKind};
    let mut term = signal(SignalKind::terminate())?;
    let mut int = signal(SignalKind::interrupt())?;
    Ok(async move {
        tokio::select! {
            _ = term.recv() => {}
            _ = int.recv() => {}
        }
    })
}

async fn traces(
    State(shared): State<Arc<Shared>>,
    headers: HeaderMap,
    raw: Result<Bytes, BytesRejection>,
) -> Response {
    let text = |name| headers.get(name).and_then(|v| v.to_str().ok());
    let Some(enc) = Encoding::of(text(header::CONTENT_TYPE)) else {
        shared.store.lock().expect("store").stats.refused_bodies += 1;
        let msg = "expected Content-Type application/x-protobuf or application/json";
        return answer(StatusCode::UNSUPPORTED_MEDIA_TYPE, Encoding::Json, 3, msg);
    };
    let coding =
        (headers.get(header::CONTENT_ENCODING)).map(|v| v.to_str().unwrap_or("(not text)"));
    let Some(gzip) = gzipped(coding) else {
        shared.store.lock().expect("store").stats.refused_bodies += 1;
        let msg = format!(
            "Content-Encoding {} is not supported: send the body as is or gzipped",
            coding.unwrap_or_default()
        );
        return answer(StatusCode::UNSUPPORTED_MEDIA_TYPE, enc, 3, &msg);
    };
    let max = shared.cfg.max_body;
    // A body past the limit as sent is refused as one past it once
    // decompressed: in the OTLP form, counted.
    let decoded = match raw {
        Ok(raw) => otlp::body(&raw, gzip, max).and_then(|b| otlp::decode(&b, enc)),
        Err(r) if r.status() == StatusCode::PAYLOAD_TOO_LARGE => Err(Refused::TooLarge),
        Err(r) => Err(Refused::Bad(format!(
            "cannot read the body: {}",
            r.body_text()
        ))),
    };
    let req = match decoded {
        Ok(r) => r,
        Err(refused) => {
            shared.store.lock().expect("store").stats.refused_bodies += 1;
            return match refused {
                Refused::TooLarge => {
                    let msg =
                        format!("the body is over {max} bytes (as sent or once decompressed)");
                    answer(StatusCode::PAYLOAD_TOO_LARGE, enc, 8, &msg)
                }
                Refused::Bad(why) => answer(StatusCode::BAD_REQUEST, enc, 3, &why),
            };
        }
    };
    let journaled = prost::Message::encode_length_delimited_to_vec(&req);
    let mut journal = shared.journal.lock().expect("journal");
    let taken = shared
        .store
        .lock()
        .expect("store")
        .take(req, Instant::now());
    let kept = match (&taken, journal.as_mut()) {
        (Taken::Accepted { .. }, Some(j)) => j.append(&journaled),
        _ => Ok(()),
    };
    drop(journal);
    if let Err(e) = kept {
        let msg = format!("cannot keep the spans on disk: {e}");
        return answer(StatusCode::SERVICE_UNAVAILABLE, enc, 14, &msg);
    }
    match taken {
        Taken::Accepted { rejected, why } => {
            let body = otlp::success(enc, rejected, &why);
            ([(header::CONTENT_TYPE, enc.content_type())], body).into_response()
        }
        Taken::Busy => {
            let msg = "too many requests open; retry after some complete";
            let mut r = answer(StatusCode::SERVICE_UNAVAILABLE, enc, 14, msg);
            r.headers_mut()
                .insert(header::RETRY_AFTER, header::HeaderValue::from_static("1"));
            r
        }
    }
}

/// Whether a body of this `Content-Encoding` is gzipped; `None` for a
/// coding critpath does not decode (OTLP/HTTP asks for gzip or none).
fn gzipped(coding: Option<&str>) -> Option<bool> {
    match coding.map(str::trim) {
        None => Some(false),
        Some(c) if c.is_empty() || c.eq_ignore_ascii_case("identity") => Some(false),
        Some(c) if c.eq_ignore_ascii_case("gzip") || c.eq_ignore_ascii_case("x-gzip") => Some(true),
        Some(_) => None,
    }
}

fn answer(status: StatusCode, enc: Encoding, code: i32, msg: &str) -> Response {
    let body = otlp::status(enc, code, msg);
    (status, [(header::CONTENT_TYPE, enc.content_type())], body).into_response()
}

async fn report(State(shared): State<Arc<Shared>>) -> Response {
    let s = shared.clone();
    let page = tokio::task::spawn_blocking(move || {
        let (stats, open) = s.stats();
        page::render(&s.cfg.dir, &stats, open)
    })
    .await
    .unwrap_or_else(|e| format!("the report failed: {e}"));
    Html(page).into_response()
}
