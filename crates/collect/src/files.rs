//! Rolling request files: each batch of completed requests is one new file
//! `requests-NNNNNN.pb` of length-delimited `ExportTraceServiceRequest`s
//! (one per request), written under a hidden name, synced, and renamed
//! into place, so a reader sees a file whole or not at all. Numbering goes
//! on after the files already in the directory; none is overwritten.

use crate::store::Request;
use prost::Message;
use std::io::Write;
use std::path::{Path, PathBuf};

pub struct Roller {
    dir: PathBuf,
    next: u64,
}

const PREFIX: &str = "requests-";
const SUFFIX: &str = ".pb";

impl Roller {
    pub fn new(dir: &Path) -> std::io::Result<Roller> {
        let next = written(dir)?
            .iter()
            .filter_map(|p| number(p))
            .max()
            .map_or(1, |n| n + 1);
        Ok(Roller {
            dir: dir.to_path_buf(),
            next,
        })
    }

    /// Writes `requests` as the next file; returns its path.
    pub fn write(&mut self, requests: &[Request]) -> std::io::Result<PathBuf> {
        let bytes = encode_all(requests)?;
        let name = format!("{PREFIX}{:06}{SUFFIX}", self.next);
        let (tmp, path) = (self.dir.join(format!(".{name}.tmp")), self.dir.join(&name));
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(&bytes)?;
        f.sync_all()?;
        std::fs::rename(&tmp, &path)?;
        if let Ok(d) = std::fs::File::open(&self.dir) {
            let _ = d.sync_all();
        }
        self.next += 1;
        Ok(path)
    }
}

/// The request files in `dir`, in order.
pub fn written(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| number(p).is_some())
        .collect();
    out.sort();
    Ok(out)
}

fn number(p: &Path) -> Option<u64> {
    let name = p.file_name()?.to_str()?;
    name.strip_prefix(PREFIX)?
        .strip_suffix(SUFFIX)?
        .parse()
        .ok()
}

/// The journal of the requests still open: every export accepted is
/// appended and synced before it is answered, and after each flush the
/// journal is rewritten with what stays open. A receiver killed outright
/// loses nothing it acknowledged: the next one started on the directory
/// takes the journal back before it listens.
pub struct Journal {
    path: PathBuf,
    file: std::fs::File,
}

const JOURNAL: &str = ".open.pb";

impl Journal {
    /// Opens the journal of `dir`, with the exports a previous receiver
    /// left in it.
    pub fn open(dir: &Path) -> std::io::Result<(Journal, Vec<Request>)> {
        let path = dir.join(JOURNAL);
        let left = match std::fs::read(&path) {
            Ok(bytes) => decode_all(&bytes),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
            Err(e) => return Err(e),
        };
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)?;
        Ok((Journal { path, file }, left))
    }

    /// Appends an export, synced.
    pub fn append(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        self.file.write_all(bytes)?;
        self.file.sync_data()
    }

    /// Replaces the journal with the exports still open.
    pub fn rewrite(&mut self, open: &[Request]) -> std::io::Result<()> {
        let tmp = self.path.with_extension("tmp");
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(&encode_all(open)?)?;
        f.sync_all()?;
        std::fs::rename(&tmp, &self.path)?;
        self.file = std::fs::OpenOptions::new().append(true).open(&self.path)?;
        Ok(())
    }

    /// Removes the journal (nothing is open).
    pub fn remove(self) -> std::io::Result<()> {
        std::fs::remove_file(&self.path)
    }
}

/// Length-delimited exports.
pub fn encode_all(requests: &[Request]) -> std::io::Result<Vec<u8>> {
    let mut bytes = Vec::new();
    for r in requests {
        r.encode_length_delimited(&mut bytes)
            .map_err(|e| std::io::Error::other(e.to_string()))?;
    }
    Ok(bytes)
}

/// The whole length-delimited exports of `bytes` (a torn last one, from a
/// kill mid-append, was never acknowledged and is dropped).
fn decode_all(mut bytes: &[u8]) -> Vec<Request> {
    let mut out = Vec::new();
    while !bytes.is_empty() {
        match Request::decode_length_delimited(&mut bytes) {
            Ok(r) => out.push(r),
            Err(_) => break,
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_journal_gives_back_what_was_appended_but_a_torn_end() {
        let dir = tempfile::tempdir().unwrap();
        let (mut j, left) = Journal::open(dir.path()).unwrap();
        assert!(left.is_empty());
        let one = encode_all(&[Request::default()]).unwrap();
        j.append(&one).unwrap();
        j.append(&one).unwrap();
        j.append(&[0x05, 0x0a]).unwrap();
        drop(j);
        let (mut j, left) = Journal::open(dir.path()).unwrap();
        assert_eq!(left.len(), 2);
        j.rewrite(&[]).unwrap();
        assert!(Journal::open(dir.path()).unwrap().1.is_empty());
    }

    #[test]
    fn files_are_numbered_after_those_already_there() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("requests-000007.pb"), b"").unwrap();
        let mut r = Roller::new(dir.path()).unwrap();
        let p = r.write(&[Request::default(), Request::default()]).unwrap();
        assert!(p.ends_with("requests-000008.pb"));
        assert_eq!(std::fs::read(&p).unwrap(), [0, 0], "two empty messages");
        assert_eq!(written(dir.path()).unwrap().len(), 2);
    }
}
