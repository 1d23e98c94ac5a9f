//! Helpers shared by the readers' tests: fixtures and draining a source.
#![allow(dead_code)]

use critpath_trace::{ReadError, Record, RecordSource};
use std::path::PathBuf;

/// A fixture of `tests/fixtures/`.
pub fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

pub fn bytes(name: &str) -> Vec<u8> {
    std::fs::read(fixture(name)).unwrap()
}

/// Every record of a source, and every error it reported (reading stops at
/// a fatal one).
pub fn drain(src: &mut dyn RecordSource) -> (Vec<Record>, Vec<ReadError>) {
    let (mut recs, mut errs) = (Vec::new(), Vec::new());
    loop {
        match src.next_record() {
            Ok(Some((r, _))) => recs.push(r),
            Ok(None) => break,
            Err(e) => {
                let fatal = e.fatal;
                errs.push(e);
                if fatal {
                    break;
                }
            }
        }
    }
    (recs, errs)
}

/// Records as text, to compare sources whose symbols differ.
pub fn text(recs: &[Record], src: &dyn RecordSource) -> Vec<String> {
    let mut w = critpath_readers::JsonlWriter::new(Vec::new());
    for r in recs {
        w.write(r, src.strings()).unwrap();
    }
    let out = String::from_utf8(w.finish().unwrap()).unwrap();
    out.lines().map(str::to_string).collect()
}
