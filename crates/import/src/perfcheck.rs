//! A check of a perf.data file's header before it is handed to the perf
//! reader: every feature section it lists must lie inside the file, and the
//! counts of the event description section must fit in it. (The perf.data
//! parser, `linux-perf-data`, allocates what a section or count claims
//! before reading it, so one corrupt number would ask for terabytes.)

use critpath_trace::{Location, ReadError};
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

/// The first feature section that does not fit in the file, if any, as
/// (feature number, offset, size).
fn misfit(f: &mut File, len: u64) -> std::io::Result<Option<(usize, u64, u64)>> {
    let mut h = [0u8; 104];
    f.read_exact(&mut h)?;
    if critpath_readers::perf::file::is_pipe(&h) {
        // perf's pipe format: no sections, no sizes.
        return Ok(None);
    }
    let data_size = u64_at(&h, 48);
    let data_end = u64_at(&h, 40).saturating_add(data_size);
    if data_size == 0 || data_end > len {
        // A cut file (or one perf never finished: killed, it left the
        // size 0 and the feature bits it meant to write): the perf
        // reader ignores its feature sections.
        return Ok(None);
    }
    let features: Vec<usize> = (0..256)
        .filter(|&i| h[72 + i / 8] & (1 << (i % 8)) != 0)
        .collect();
    let mut table = vec![0u8; 16 * features.len()];
    f.seek(SeekFrom::Start(data_end))?;
    if f.read_exact(&mut table).is_err() {
        return Ok(Some((features[0], data_end, table.len() as u64)));
    }
    for (k, &feature) in features.iter().enumerate() {
        let (off, size) = (u64_at(&table, 16 * k), u64_at(&table, 16 * k + 8));
        if off.checked_add(size).is_none_or(|end| end > len) {
            return Ok(Some((feature, off, size)));
        }
        if feature == EVENT_DESC {
            let mut section = vec![0u8; size as usize];
            f.seek(SeekFrom::Start(off))?;
            f.read_exact(&mut section)?;
            if event_desc_fits(&section).is_none() {
                return Ok(Some((feature, off, size)));
            }
        }
    }
    Ok(None)
}

/// The feature number of the event descriptions (perf's HEADER_EVENT_DESC).
const EVENT_DESC: usize = 12;

/// Walks the event description section: `nr`, `attr_size`, then per event
/// the attribute, `nr_ids`, a string (`len` and bytes) and the ids; `None`
/// when a count runs past the section's end.
fn event_desc_fits(b: &[u8]) -> Option<()> {
    let u32_at = |at: usize| -> Option<usize> {
        Some(u32::from_le_bytes(b.get(at..at.checked_add(4)?)?.try_into().ok()?) as usize)
    };
    let (nr, attr_size) = (u32_at(0)?, u32_at(4)?);
    let mut at = 8usize;
    for _ in 0..nr {
        at = at.checked_add(attr_size)?;
        let ids = u32_at(at)?;
        let text = u32_at(at + 4)?;
        at = (at + 8)
            .checked_add(text)?
            .checked_add(ids.checked_mul(8)?)?;
        if at > b.len() {
            return None;
        }
    }
    Some(())
}

/// Refuses a perf.data file whose header lists a feature section beyond
/// its end.
pub fn check(path: &Path, name: &str) -> Result<(), ReadError> {
    let Ok(mut f) = File::open(path) else {
        return Ok(()); // the perf reader says why
    };
    let len = f.metadata().map(|m| m.len()).unwrap_or(0);
    match misfit(&mut f, len) {
        Ok(Some((feature, off, size))) => Err(ReadError::new(
            name,
            Location::Offset(off),
            format!("corrupt perf.data: feature section {feature} ({size} bytes at byte {off}) does not fit in the file ({len} bytes) or is damaged"),
            true,
        )),
        _ => Ok(()),
    }
}
