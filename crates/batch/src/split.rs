//! Requests whose spans several files hold: the spans of one trace id are
//! one request whichever file holds them (docs/json.md, "Many requests").
//! Files are analyzed one by one (on threads, processes or a cluster's
//! workers), so a request split between files comes back as a part of it
//! from each; the files that share requests are then analyzed again as one
//! set, and their results replace the parts.

use crate::analyze::analyze_opened;
use crate::{Error, Options, TraceResult};
use critpath_session::Session;
use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

/// Joins the requests of `results` that several files hold: each group of
/// files linked by shared trace ids is analyzed as one set of span files,
/// its results (named by the files joined with ` + `) replacing those of
/// its files. Returns how many requests were split.
pub fn join_split_requests(results: &mut Vec<TraceResult>, opts: &Options) -> Result<usize, Error> {
    let groups = linked_files(results);
    if groups.is_empty() {
        return Ok(0);
    }
    let mut split = 0;
    let mut joined = Vec::new();
    for files in &groups {
        let paths: Vec<PathBuf> = files.iter().map(PathBuf::from).collect();
        let mut session = Session::open(&paths, &opts.settings)?;
        let (found, problem) = analyze_opened(&mut session, opts, &mut Vec::new())?;
        if let Some(e) = problem {
            return Err(e);
        }
        let parts = results.iter().filter(|r| files.contains(&r.file)).count();
        split += parts - found.len();
        joined.extend(found);
    }
    let grouped: BTreeSet<&String> = groups.iter().flatten().collect();
    results.retain(|r| !grouped.contains(&r.file));
    results.extend(joined);
    Ok(split)
}

/// The groups of two or more files that share a trace id, directly or
/// through other files (span files only: other traces have none).
fn linked_files(results: &[TraceResult]) -> Vec<BTreeSet<String>> {
    let mut files_of: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for r in results.iter().filter(|r| !r.trace_id.is_empty()) {
        files_of.entry(&r.trace_id).or_default().insert(&r.file);
    }
    // Union-find over the files, one union per id held by several.
    let mut parent: BTreeMap<&str, &str> = BTreeMap::new();
    fn root<'a>(parent: &mut BTreeMap<&'a str, &'a str>, f: &'a str) -> &'a str {
        let mut r = f;
        while let Some(&p) = parent.get(r).filter(|&&p| p != r) {
            r = p;
        }
        parent.insert(f, r);
        r
    }
    for files in files_of.values().filter(|f| f.len() > 1) {
        let mut it = files.iter();
        let first = *it.next().expect("two or more");
        for &f in it {
            let (a, b) = (root(&mut parent, first), root(&mut parent, f));
            parent.insert(b, a);
        }
    }
    let mut groups: BTreeMap<&str, BTreeSet<String>> = BTreeMap::new();
    for f in parent.keys().copied().collect::<Vec<_>>() {
        let r = root(&mut parent, f);
        groups.entry(r).or_default().insert(f.to_string());
    }
    groups.into_values().filter(|g| g.len() > 1).collect()
}
