//! Requests whose spans several files hold: the spans of one trace id are
//! one request whichever file holds them (docs/json.md, "Many requests").
//! Files are analyzed one by one (on threads, processes or a cluster's
//! workers), so a request split between files comes back as a part of it
//! from each; the files that share requests are then analyzed again as one
//! set, and their results replace the parts. A part that lacks an end the
//! options name (`--to auth` in the file of the database's spans) is no
//! error until the request's files, joined, still lack it.

use crate::analyze::analyze_opened;
use crate::{Error, Options, TraceResult};
use critpath_import::input::file_identity;
use critpath_session::Session;
use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};

/// Joins the requests of `results` that several files hold: each group of
/// files linked by shared trace ids is analyzed as one set of span files,
/// its results (named by the files joined with ` + `, in the order they
/// first appear) replacing those of its files. A group that cannot be
/// analyzed together keeps its per-file results, and its error comes back
/// (a problem reading a file, which its own analysis already met, does
/// not). Returns how many groups were joined, and those errors.
pub fn join_split_requests(results: &mut Vec<TraceResult>, opts: &Options) -> (usize, Vec<Error>) {
    let (mut joined_groups, mut errors) = (0, Vec::new());
    let same = SameFile::of(results);
    for files in linked_files(results, &same) {
        let paths: Vec<PathBuf> = files.iter().map(PathBuf::from).collect();
        let joined = Session::open(&paths, &opts.settings)
            .map_err(Error::from)
            .and_then(|mut s| analyze_opened(&mut s, opts, &mut Vec::new()));
        match joined {
            Ok((found, _)) => {
                // Every name of a file joined: its rows are in the group's.
                let grouped: HashSet<FileKey> = files.iter().map(|f| same.key(f)).collect();
                results.retain(|r| !grouped.contains(&same.key(&r.file)));
                results.extend(found);
                joined_groups += 1;
            }
            Err(e) => errors.push(e),
        }
    }
    (joined_groups, errors)
}

/// Takes out of `results` the requests still unmatched (after
/// [`join_split_requests`]: no file of the batch holds the end the options
/// name in their spans), as `critpath analyze` refuses such a request: one
/// error per file (or group of files), with its first request's message,
/// in the order of `results`.
pub fn take_unmatched(results: &mut Vec<TraceResult>) -> Vec<Error> {
    let (mut errors, mut named) = (Vec::new(), HashSet::new());
    results.retain_mut(|r| {
        let Some(message) = r.unmatched.take() else {
            return true;
        };
        if named.insert(r.file.clone()) {
            let file = std::mem::take(&mut r.file);
            errors.push(Error::Unmatched { file, message });
        }
        false
    });
    errors
}

/// The file each name of the results stands for: two names of one file
/// (`a.json`, `./a.json`, a symbolic or hard link to it) are one file, not
/// two files that share all their requests. A name that cannot be looked
/// at here (a file only a cluster's workers see) is its own file.
struct SameFile(BTreeMap<String, FileKey>);

/// A file by its identity (device, inode), or by its name.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
enum FileKey {
    Id(u64, u64),
    Name(String),
}

impl SameFile {
    fn of(results: &[TraceResult]) -> SameFile {
        let mut keys = BTreeMap::new();
        for r in results {
            if !keys.contains_key(&r.file) {
                let key = file_identity(Path::new(&r.file))
                    .map_or_else(|| FileKey::Name(r.file.clone()), |(d, i)| FileKey::Id(d, i));
                keys.insert(r.file.clone(), key);
            }
        }
        SameFile(keys)
    }

    fn key(&self, name: &str) -> FileKey {
        self.0
            .get(name)
            .cloned()
            .unwrap_or_else(|| FileKey::Name(name.to_string()))
    }
}

/// The groups of two or more files that share a trace id, directly or
/// through other files (span files only: other traces have none), each in
/// the order its files first appear in `results`, a file by the first name
/// it appears under.
fn linked_files(results: &[TraceResult], same: &SameFile) -> Vec<Vec<String>> {
    let mut order: Vec<&str> = Vec::new();
    let mut index: BTreeMap<FileKey, usize> = BTreeMap::new();
    let mut files_of: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for r in results {
        let i = *index.entry(same.key(&r.file)).or_insert_with(|| {
            order.push(&r.file);
            order.len() - 1
        });
        if !r.trace_id.is_empty() {
            let files = files_of.entry(&r.trace_id).or_default();
            if !files.contains(&i) {
                files.push(i);
            }
        }
    }
    // Union-find over the files, one union per id held by several.
    let mut parent: Vec<usize> = (0..order.len()).collect();
    fn root(parent: &mut [usize], mut f: usize) -> usize {
        while parent[f] != f {
            parent[f] = parent[parent[f]];
            f = parent[f];
        }
        f
    }
    for files in files_of.values().filter(|f| f.len() > 1) {
        for &f in &files[1..] {
            let (a, b) = (root(&mut parent, files[0]), root(&mut parent, f));
            parent[b.max(a)] = b.min(a);
        }
    }
    let mut groups: BTreeMap<usize, Vec<String>> = BTreeMap::new();
    for (i, f) in order.iter().enumerate() {
        let r = root(&mut parent, i);
        groups.entry(r).or_default().push(f.to_string());
    }
    groups.into_values().filter(|g| g.len() > 1).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(file: &str, id: &str) -> TraceResult {
        TraceResult {
            file: file.into(),
            trace_id: id.into(),
            length_ns: 1,
            states: Vec::new(),
            unmatched: None,
        }
    }

    #[test]
    fn files_are_grouped_through_shared_ids_in_the_order_they_appear() {
        let results = [
            r("c", "1"),
            r("a", "1"),
            r("b", "2"),
            r("d", "3"),
            r("a", "2"),
            r("e", ""),
            r("f", ""),
        ];
        // c-a through 1, a-b through 2; d alone; traces without ids alone.
        let same = SameFile::of(&results);
        assert_eq!(linked_files(&results, &same), vec![vec!["c", "a", "b"]]);
    }

    #[test]
    fn two_names_of_one_file_are_one_file() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (dir.path().join("a.json"), dir.path().join("b.json"));
        std::fs::write(&a, "").unwrap();
        std::fs::write(&b, "").unwrap();
        let other = dir.path().join(".").join("a.json");
        let hard = dir.path().join("hard.json");
        std::fs::hard_link(&a, &hard).unwrap();
        let name = |p: &std::path::Path| p.display().to_string();
        // The same file twice under two names (a hard link too, which
        // its canonical path did not find): nothing to join.
        for other in [&other, &hard] {
            let results = [r(&name(&a), "1"), r(&name(other), "1")];
            let same = SameFile::of(&results);
            assert!(linked_files(&results, &same).is_empty(), "{other:?}");
        }
        // With a file that shares a request: one group of two files, the
        // first file under its first name.
        let results = [r(&name(&a), "1"), r(&name(&other), "1"), r(&name(&b), "1")];
        let same = SameFile::of(&results);
        assert_eq!(
            linked_files(&results, &same),
            vec![vec![name(&a), name(&b)]]
        );
    }
}
