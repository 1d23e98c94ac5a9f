//! `GET /`: the live report of the requests written so far, analyzed as
//! `critpath analyze DIR/requests-*.pb` analyzes them.

use crate::files::written;
use crate::store::Stats;
use critpath_views::report::esc;
use std::path::Path;

/// The page: what was received, then the many-request summary.
pub fn render(dir: &Path, stats: &Stats, open: usize) -> String {
    let head = format!(
        "{} spans received, {} requests written to {} file(s) in {}, {open} open; {} span(s) rejected, {} export(s) refused, {} answered busy",
        stats.spans,
        stats.requests_written,
        stats.files,
        dir.display(),
        stats.rejected_spans,
        stats.refused_bodies,
        stats.busy
    );
    let body = summary(dir).unwrap_or_else(|e| e);
    format!(
        "<!doctype html><meta charset=utf-8><meta http-equiv=refresh content=5><title>critpath collect</title>\
         <style>body{{font:14px system-ui;margin:1.5em}}pre{{font:13px ui-monospace,monospace}}</style>\
         <h1>critpath collect</h1><p>{}</p><pre>{}</pre>",
        esc(&head),
        esc(&body)
    )
}

/// The many-request summary of the files written, or why there is none.
fn summary(dir: &Path) -> Result<String, String> {
    let files = written(dir).map_err(|e| format!("cannot list {}: {e}", dir.display()))?;
    if files.is_empty() {
        return Err("no request completed yet".into());
    }
    let mut inputs = Vec::with_capacity(files.len());
    for f in &files {
        let file = std::fs::File::open(f).map_err(|e| format!("{}: {e}", f.display()))?;
        inputs.push((std::io::BufReader::new(file), f.display().to_string()));
    }
    let requests = critpath_readers::spans::read_requests_of(inputs).map_err(|e| e.to_string())?;
    let what = format!("{}/requests-*.pb", dir.display());
    let opts = critpath_batch::Options::default();
    let (results, _) =
        critpath_batch::analyze_requests(&requests, &what, &opts).map_err(|e| e.to_string())?;
    if results.is_empty() {
        return Err("no request completed yet".into());
    }
    let sum = critpath_views::batch::Summary::new(results, 0.1);
    Ok(sum.text(&what, Some(40), None))
}
