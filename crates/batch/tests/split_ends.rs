//! A path's end (`--to`, `--from`) in a batch of span files: a request
//! whose spans several files hold needs the end in one of them, not in
//! each; a request none of whose files holds it is an error naming them.

use critpath_batch::{analyze_file, analyze_files, join_split_requests, take_unmatched, Options};
use std::path::{Path, PathBuf};

/// A span: trace id, span id, parent (0: none), start and end (µs).
type Span = (u32, u32, u32, u64, u64);

/// An OTLP JSON span file of `services`, each with its spans.
fn write(path: &Path, services: &[(&str, &[Span])]) -> PathBuf {
    let resource = |(service, spans): &(&str, &[Span])| {
        let spans: Vec<String> = spans
            .iter()
            .map(|&(trace, span, parent, start, end)| {
                let parent = match parent {
                    0 => String::new(),
                    p => format!(r#", "parentSpanId": "{p:016x}""#),
                };
                format!(
                    r#"{{"traceId": "{trace:032x}", "spanId": "{span:016x}", "name": "{service} work", "startTimeUnixNano": "{}", "endTimeUnixNano": "{}", "kind": 2{parent}}}"#,
                    start * 1000,
                    end * 1000
                )
            })
            .collect();
        format!(
            r#"{{"resource": {{"attributes": [{{"key": "service.name", "value": {{"stringValue": "{service}"}}}}]}}, "scopeSpans": [{{"scope": {{"name": "t"}}, "spans": [{}]}}]}}"#,
            spans.join(", ")
        )
    };
    let body: Vec<String> = services.iter().map(resource).collect();
    std::fs::write(
        path,
        format!(r#"{{"resourceSpans": [{}]}}"#, body.join(", ")),
    )
    .unwrap();
    path.to_path_buf()
}

/// Requests 1 and 2: api calls auth, then db; the db spans of request 1
/// in a file of their own (`db.json`), request 3's in another (`lone.json`,
/// whose request no other file holds).
fn files(dir: &Path) -> (PathBuf, PathBuf, PathBuf) {
    let api = write(
        &dir.join("api.json"),
        &[
            ("api", &[(1, 1, 0, 0, 100), (2, 4, 0, 1000, 1100)]),
            ("auth", &[(1, 2, 1, 10, 30), (2, 5, 4, 1010, 1030)]),
            ("db", &[(2, 6, 4, 1030, 1090)]),
        ],
    );
    let db = write(&dir.join("db.json"), &[("db", &[(1, 3, 1, 30, 90)])]);
    let lone = write(&dir.join("lone.json"), &[("db", &[(3, 7, 0, 2000, 2050)])]);
    (api, db, lone)
}

fn to(end: &str) -> Options {
    Options {
        to: Some(end.into()),
        ..Default::default()
    }
}

/// `critpath batch`'s steps: each file, the split requests joined, the
/// still unmatched taken out; the results and the errors' messages.
fn batch(paths: &[PathBuf], opts: &Options) -> (Vec<(String, String)>, Vec<String>) {
    let mut results = Vec::new();
    for outcome in analyze_files(paths, opts, 2, |_| {}) {
        let (rs, problem) = outcome.unwrap();
        assert!(problem.is_none());
        results.extend(rs);
    }
    let (_, unjoined) = join_split_requests(&mut results, opts);
    assert!(unjoined.is_empty());
    let errors = take_unmatched(&mut results);
    assert!(results.iter().all(|r| r.unmatched.is_none()));
    let rows = results.iter().map(|r| (r.file.clone(), r.trace_id.clone()));
    let messages = errors.iter().map(|e| e.to_string()).collect();
    (rows.collect(), messages)
}

#[test]
fn an_end_in_another_file_of_the_request_is_no_error() {
    let dir = tempfile::tempdir().unwrap();
    let (api, db, _) = files(dir.path());
    let name = |p: &PathBuf| p.display().to_string();
    let both = format!("{} + {}", name(&api), name(&db));
    // db.json alone has no auth: its request is completed by api.json.
    let (rows, errors) = batch(&[api.clone(), db.clone()], &to("auth"));
    assert_eq!(errors, Vec::<String>::new());
    let ids: Vec<_> = rows.iter().map(|(f, id)| (f.as_str(), id.len())).collect();
    assert_eq!(ids, [(both.as_str(), 32), (both.as_str(), 32)]);
    // In the other order too.
    let (_, errors) = batch(&[db.clone(), api.clone()], &to("auth"));
    assert_eq!(errors, Vec::<String>::new());
    // An end no file holds: one error, naming the files joined.
    let (rows, errors) = batch(&[api, db], &to("cache"));
    assert!(rows.is_empty());
    assert_eq!(errors.len(), 1);
    assert!(
        errors[0].starts_with(&format!(
            "{both}: --to cache: no state machine of that name"
        )),
        "{errors:?}"
    );
}

#[test]
fn a_request_no_other_file_completes_is_an_error_naming_its_file() {
    let dir = tempfile::tempdir().unwrap();
    let (api, db, lone) = files(dir.path());
    let (rows, errors) = batch(&[api.clone(), db.clone(), lone.clone()], &to("auth"));
    assert_eq!(rows.len(), 2);
    let want = format!(
        "{}: --to auth: no state machine of that name in the trace; nearest: db",
        lone.display()
    );
    assert_eq!(errors, std::slice::from_ref(&want));
    // A file analyzed alone: nothing can complete it.
    let alone = analyze_file(&lone, &to("auth")).unwrap_err().to_string();
    assert_eq!(alone, want);
    assert!(analyze_file(&db, &to("auth")).is_err());
    assert_eq!(analyze_file(&api, &to("auth")).unwrap().len(), 2);
}
