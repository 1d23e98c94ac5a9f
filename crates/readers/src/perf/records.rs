//! The records of a perf.data data section in time order, read in place
//! from the mapped file: perf writes each CPU's ring buffer in turns
//! separated by FINISHED_ROUND records, so a round's samples are sorted and
//! released once a later round has begun (perf's own rule: everything up to
//! the greatest time seen before the previous round mark is complete).
//!
//! Only what the OS graph needs is parsed: a sample's time, CPU, thread and
//! raw tracepoint data, and the lost-event counts. Files this reader cannot
//! walk in place (mixed sample layouts, PERF_SAMPLE_READ, compressed data)
//! are left to `linux-perf-data`'s general iterator.
//!
//! A header that cannot be a record's (shorter than a header, or reaching
//! past the data) is damage: reading skips to the next place where records
//! read again ([`next_boundary`]) and counts what it skipped ([`Damage`]).
//!
//! On its way it can hand the names and forks it meets to a [`Gather`], so
//! that the names pre-pass need not walk the file itself.

use super::names::Gather;

/// More CPUs than any Linux kernel supports (its NR_CPUS is at most 8192):
/// a sample naming one beyond (a corrupt record) would size per-CPU tables
/// by it, and is skipped.
pub(crate) const MAX_CPUS: u32 = 1 << 16;

/// PERF_SAMPLE_* bits used here.
const IP: u64 = 1 << 0;
const TID: u64 = 1 << 1;
const TIME: u64 = 1 << 2;
const ADDR: u64 = 1 << 3;
const READ: u64 = 1 << 4;
const CALLCHAIN: u64 = 1 << 5;
const ID: u64 = 1 << 6;
const CPU: u64 = 1 << 7;
const PERIOD: u64 = 1 << 8;
const STREAM_ID: u64 = 1 << 9;
const RAW: u64 = 1 << 10;
const IDENTIFIER: u64 = 1 << 16;

const SAMPLE: u32 = 9;
const LOST: u32 = 2;
const LOST_SAMPLES: u32 = 13;
const FINISHED_ROUND: u32 = 68;
const COMM: u32 = 3;
const FORK: u32 = 7;
/// PERF_RECORD_COMPRESSED and PERF_RECORD_COMPRESSED2: zstd frames of
/// records (`perf record -z`).
const COMPRESSED: [u32; 2] = [81, 83];

/// Where a sample's fixed fields lie (offsets from the record's start).
#[derive(Clone, Copy, Debug)]
struct Layout {
    /// Offset of PERF_SAMPLE_IDENTIFIER (the event id), when there.
    identifier: Option<usize>,
    /// Offset of PERF_SAMPLE_TID's pid; its tid follows.
    pid: Option<usize>,
    time: usize,
    cpu: Option<usize>,
    /// Offset of the callchain's length, when there is a callchain.
    callchain: Option<usize>,
    /// Offset of the raw data's size (after the callchain, if any).
    raw: usize,
}

impl Layout {
    fn new(sample_type: u64) -> Option<Layout> {
        if sample_type & TIME == 0 || sample_type & RAW == 0 || sample_type & READ != 0 {
            return None;
        }
        let mut off = 8;
        let mut field = |bit: u64| -> Option<usize> {
            (sample_type & bit != 0).then(|| {
                off += 8;
                off - 8
            })
        };
        let identifier = field(IDENTIFIER);
        field(IP);
        let pid = field(TID);
        let time = field(TIME)?;
        field(ADDR);
        field(ID);
        field(STREAM_ID);
        let cpu = field(CPU);
        field(PERIOD);
        let callchain = (sample_type & CALLCHAIN != 0).then_some(off);
        Some(Layout {
            identifier,
            pid,
            time,
            cpu,
            callchain,
            raw: off,
        })
    }
}

/// One sample, located in the file.
#[derive(Clone, Copy, Debug)]
pub struct Sample {
    pub t: u64,
    pub cpu: u32,
    /// The process (thread group) and thread current on the CPU.
    pub pid: u32,
    pub tid: u32,
    /// Byte range of the raw tracepoint data.
    pub raw: (usize, usize),
}

/// Samples in time order.
pub struct RawRecords {
    layout: Layout,
    /// Ids of events without raw data (perf's sideband `dummy` event):
    /// their samples, if any, are skipped. Sorted: with one id per CPU, a
    /// search is a few comparisons.
    foreign: Vec<u64>,
    at: usize,
    end: usize,
    /// Read but not yet released: (time, record offset), in that order
    /// unless `unsorted`.
    pending: Vec<(u64, usize)>,
    unsorted: bool,
    /// Released, in order; `next` is the cursor.
    ready: Vec<(u64, usize)>,
    next: usize,
    /// Greatest time seen, and the same at the last round mark.
    max_t: u64,
    round_max: u64,
    /// Events perf reported lost.
    pub lost: u64,
    /// Samples read.
    pub samples: u64,
    /// Samples of a traced event that could not be read: an impossible
    /// CPU number, a raw payload or call chain past the record's end.
    pub malformed: u64,
    /// Where the first of them starts, in bytes of the file.
    pub first_malformed: Option<usize>,
    /// Damaged headers skipped over.
    pub damage: Damage,
    /// Where the data starts: records lie at multiples of 8 bytes from it.
    start: usize,
    /// The names pre-pass's findings, gathered on the way when set.
    pub gather: Option<Gather>,
}

/// How far from the start of the records [`compressed`] looks.
const COMPRESSED_WITHIN: usize = 64 << 20;

/// Whether the records of `b[start..end]` are compressed (`perf record
/// -z`): a compressed record comes before the first sample. perf writes
/// the records it makes up for what ran before it started (names,
/// mappings, uncompressed) first, then those of the recording, all
/// compressed with `-z`; a file cut short has lost the header feature that
/// says so.
pub fn compressed(b: &[u8], start: usize, end: usize) -> bool {
    let mut at = start;
    // Past this, whatever came first was not what perf makes up at the
    // start (a few thousand records on a busy machine).
    let end = end.min(start.saturating_add(COMPRESSED_WITHIN));
    while let Some((ty, _, size)) = header(b, at).filter(|_| at + 8 <= end) {
        if COMPRESSED.contains(&ty) {
            return true;
        }
        if ty == SAMPLE || size < 8 {
            return false;
        }
        at += size;
    }
    false
}

/// The record header at `b[at..]`: type, misc and size; `None` when fewer
/// than its 8 bytes are left.
#[inline(always)]
pub(crate) fn header(b: &[u8], at: usize) -> Option<(u32, u16, usize)> {
    let h = b.get(at..at.checked_add(8)?)?;
    let ty = u32::from_le_bytes(h[0..4].try_into().unwrap());
    let misc = u16::from_le_bytes([h[4], h[5]]);
    Some((ty, misc, u16::from_le_bytes([h[6], h[7]]) as usize))
}

/// Headers that must look right in a row for a place to be taken as a
/// record boundary (or as many as reach the end of the data exactly).
const CHAIN: usize = 32;

/// Whether `at` looks like a record boundary: [`CHAIN`] headers in a row
/// from it, or all up to `end` exactly, have a known type, are at least a
/// header long and a multiple of 8 bytes.
fn plausible_boundary(b: &[u8], at: usize, end: usize) -> bool {
    let mut p = at;
    for _ in 0..CHAIN {
        if p == end {
            return p > at;
        }
        let Some((ty, _, size)) = header(b, p).filter(|_| p + 8 <= end) else {
            return false;
        };
        if !((1..128).contains(&ty) && size >= 8 && size.is_multiple_of(8)) {
            return false;
        }
        p += size;
        if p > end {
            return false;
        }
    }
    true
}

/// How far ahead of the record it reads a walk over a file's records asks
/// for its bytes ([`fetch_ahead`]).
const WALK_AHEAD: usize = 4096;

/// Asks the CPU for the bytes a walk over records reaches soon. Each
/// record's header gives the next one's place, so a walk is a chain of
/// dependent loads; the records lie one after another, so the bytes a few
/// records on (a page ahead, past where the CPU's own prefetcher stops)
/// are known long before the walk needs them.
#[inline(always)]
pub(crate) fn fetch_ahead(b: &[u8], at: usize) {
    critpath_trace::hint::prefetch(b, at + WALK_AHEAD);
}

/// The first place from `from` (rounded up to `start` plus a multiple of
/// 8: records are whole words) and before `limit` that looks like a record
/// boundary.
pub(crate) fn next_boundary(
    b: &[u8],
    start: usize,
    from: usize,
    (limit, end): (usize, usize),
) -> Option<usize> {
    let first = start + from.saturating_sub(start).div_ceil(8) * 8;
    (first..limit.min(end))
        .step_by(8)
        .find(|&at| plausible_boundary(b, at, end))
}

/// Damaged record headers met while reading, and what was skipped.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Damage {
    /// Headers that could not be a record's.
    pub headers: u64,
    /// Bytes skipped from them to where records read again (or the end).
    pub bytes: u64,
    /// Where the first starts, in bytes of the file.
    pub first: Option<usize>,
}

impl Damage {
    /// A damaged header at `at`; reading goes on at `next`.
    pub fn skip(&mut self, at: usize, next: usize) {
        self.headers += 1;
        self.bytes += (next - at) as u64;
        self.first = self.first.or(Some(at));
    }
}

impl RawRecords {
    /// A reader over `b[data_offset..data_end]`, if every event with raw
    /// data has the same sample layout and the others can be told apart
    /// by their id. `events`: each event's sample_type and ids.
    pub fn new(
        b: &[u8],
        data_offset: usize,
        data_end: usize,
        events: &[(u64, Vec<u64>)],
    ) -> Option<RawRecords> {
        let (with_raw, without): (Vec<_>, Vec<_>) =
            events.iter().partition(|(st, _)| st & RAW != 0);
        let first = with_raw.first()?.0;
        if with_raw.iter().any(|(s, _)| *s != first) {
            return None;
        }
        let layout = Layout::new(first)?;
        if !without.is_empty()
            && (layout.identifier != Some(8) || without.iter().any(|(s, _)| s & IDENTIFIER == 0))
        {
            return None;
        }
        let mut foreign: Vec<u64> = without
            .iter()
            .flat_map(|(_, ids)| ids.iter().copied())
            .collect();
        foreign.sort_unstable();
        Some(RawRecords {
            layout,
            foreign,
            at: data_offset,
            end: data_end.min(b.len()),
            pending: Vec::new(),
            unsorted: false,
            ready: Vec::new(),
            next: 0,
            max_t: 0,
            round_max: 0,
            lost: 0,
            samples: 0,
            malformed: 0,
            first_malformed: None,
            damage: Damage::default(),
            start: data_offset,
            gather: None,
        })
    }

    /// Reads up to the next round mark (or the end); false at the end.
    fn fill(&mut self, b: &[u8]) -> bool {
        if self.at >= self.end && self.pending.is_empty() {
            return false;
        }
        loop {
            if self.at + 8 > self.end {
                // The end: everything left is complete.
                self.release(u64::MAX);
                return !self.ready.is_empty();
            }
            fetch_ahead(b, self.at);
            let (ty, misc, size) = header(b, self.at).expect("8 bytes before the end");
            if size < 8 || self.at + size > self.end {
                let next = next_boundary(b, self.start, self.at + 8, (self.end, self.end));
                let next = next.unwrap_or(self.end);
                self.damage.skip(self.at, next);
                self.at = next;
                continue;
            }
            let rec = self.at;
            self.at += size;
            match ty {
                SAMPLE => {
                    if !self.foreign.is_empty() {
                        let id = b
                            .get(rec + 8..rec + 16)
                            .map(|x| u64::from_le_bytes(x.try_into().unwrap()));
                        if id.is_some_and(|id| self.foreign.binary_search(&id).is_ok()) {
                            continue;
                        }
                    }
                    let Some(t) = b.get(rec + self.layout.time..rec + self.layout.time + 8) else {
                        continue;
                    };
                    let t = u64::from_le_bytes(t.try_into().unwrap());
                    self.max_t = self.max_t.max(t);
                    self.hold(t, rec);
                }
                LOST | LOST_SAMPLES => {
                    // LOST: id, count; LOST_SAMPLES: count.
                    let at = rec + if ty == LOST { 16 } else { 8 };
                    if let Some(x) = b.get(at..at + 8) {
                        self.lost += u64::from_le_bytes(x.try_into().unwrap());
                    }
                }
                FINISHED_ROUND => {
                    let limit = self.round_max;
                    self.round_max = self.max_t;
                    self.release(limit);
                    if !self.ready.is_empty() {
                        return true;
                    }
                }
                COMM | FORK => {
                    if let Some(g) = self.gather.as_mut() {
                        g.record(rec, ty, misc, &b[rec + 8..rec + size]);
                    }
                }
                _ => {}
            }
        }
    }

    /// Adds a sample to `pending`, in place if that is near its end (a
    /// round is a few sorted runs, one per CPU buffer, of a few samples
    /// each, after what is left of the one before).
    #[inline]
    fn hold(&mut self, t: u64, rec: usize) {
        let p = &mut self.pending;
        if self.unsorted || p.last().is_none_or(|&(last, _)| last <= t) {
            p.push((t, rec));
            return;
        }
        let back = p
            .iter()
            .rev()
            .take(NEAR)
            .take_while(|&&(x, _)| x > t)
            .count();
        if back == NEAR {
            // Far back: sorted all at once when released.
            self.unsorted = true;
            p.push((t, rec));
        } else {
            p.insert(p.len() - back, (t, rec));
        }
    }

    /// Moves the pending samples at or before `limit` to `ready`, sorted.
    fn release(&mut self, limit: u64) {
        if self.unsorted {
            self.pending.sort();
            self.unsorted = false;
        }
        let k = self.pending.partition_point(|&(t, _)| t <= limit);
        self.ready.clear();
        self.ready.extend(self.pending.drain(..k));
        self.next = 0;
    }

    /// How far the file has been read.
    pub fn read_to(&self) -> usize {
        self.at
    }

    /// The first byte a later sample may still need: bytes before it are
    /// done with.
    pub fn low_water(&self) -> usize {
        let waiting = self.pending.iter().chain(&self.ready[self.next..]);
        waiting.map(|&(_, rec)| rec).min().unwrap_or(self.at)
    }

    /// The next sample in time order.
    pub fn next_sample(&mut self, b: &[u8]) -> Option<Sample> {
        loop {
            if self.next < self.ready.len() {
                let (t, rec) = self.ready[self.next];
                if let Some(&(_, ahead)) = self.ready.get(self.next + PREFETCH) {
                    critpath_trace::hint::prefetch(b, ahead);
                }
                self.next += 1;
                if let Some(s) = self.parse(b, t, rec) {
                    self.samples += 1;
                    return Some(s);
                }
                self.malformed += 1;
                self.first_malformed = self.first_malformed.or(Some(rec));
                continue;
            }
            if !self.fill(b) {
                return None;
            }
        }
    }

    fn parse(&self, b: &[u8], t: u64, rec: usize) -> Option<Sample> {
        let size = u16::from_le_bytes([b[rec + 6], b[rec + 7]]) as usize;
        let r = &b[rec..rec + size];
        let u32_at = |o: usize| {
            r.get(o..o + 4)
                .map(|x| u32::from_le_bytes(x.try_into().unwrap()))
        };
        let l = &self.layout;
        let mut raw = l.raw;
        if let Some(cc) = l.callchain {
            let nr = r.get(cc..cc + 8)?;
            let nr = u64::from_le_bytes(nr.try_into().unwrap()) as usize;
            raw = cc + 8 + nr.checked_mul(8)?;
        }
        let n = u32_at(raw)? as usize;
        let start = raw + 4;
        if start + n > size {
            return None;
        }
        // A CPU number beyond any kernel's (a corrupt record) would size
        // per-CPU tables by it: the sample is skipped.
        let cpu = match l.cpu {
            Some(o) => u32_at(o).filter(|&c| c < MAX_CPUS)?,
            None => 0,
        };
        Some(Sample {
            t,
            cpu,
            // -1 (no task) reads as 0, the idle task, as the general
            // reader has it.
            pid: l
                .pid
                .and_then(u32_at)
                .filter(|&p| p != u32::MAX)
                .unwrap_or(0),
            tid: l
                .pid
                .and_then(|o| u32_at(o + 4))
                .filter(|&t| t != u32::MAX)
                .unwrap_or(0),
            raw: (rec + start, rec + start + n),
        })
    }
}

/// How far back from the end of `pending` a sample is inserted in place;
/// one that goes further back makes the whole sorted at release.
const NEAR: usize = 64;

/// How many samples ahead of the one read the next ones' bytes are
/// fetched: in time order the samples jump about the file, so each would
/// otherwise wait for memory.
const PREFETCH: usize = 16;

#[cfg(test)]
mod tests {
    use super::*;

    /// Headers of `sizes` (type 9), each followed by zeros to its size.
    fn headers(sizes: &[u16]) -> Vec<u8> {
        let mut b = Vec::new();
        for &size in sizes {
            b.extend(9u32.to_le_bytes());
            b.extend(0u16.to_le_bytes());
            b.extend(size.to_le_bytes());
            b.resize(b.len() + (size as usize).max(8) - 8, 0);
        }
        b
    }

    #[test]
    fn a_boundary_is_where_headers_read_as_records() {
        // 40 good records after one damaged header (size 4) at 0: the next
        // boundary is the first good one, at 8.
        let mut sizes = vec![4u16];
        sizes.extend([16u16; 40]);
        let b = headers(&sizes);
        let end = b.len();
        assert_eq!(next_boundary(&b, 0, 8, (end, end)), Some(8));
        // From an unaligned place: the next multiple of 8 from the start.
        assert_eq!(next_boundary(&b, 0, 9, (end, end)), Some(24));
        // A few records that reach the end exactly are enough.
        let b = headers(&[4, 16, 16]);
        assert_eq!(next_boundary(&b, 0, 8, (b.len(), b.len())), Some(8));
        // Nothing that reads as records: no boundary (the end is not one).
        let b = vec![0xffu8; 256];
        assert_eq!(next_boundary(&b, 0, 8, (b.len(), b.len())), None);
        // Damage in the last 8 bytes, and a search past the end.
        let b = headers(&[16, 16, 4]);
        assert_eq!(next_boundary(&b, 0, b.len(), (b.len(), b.len())), None);
        assert_eq!(next_boundary(&b, 0, b.len() + 64, (b.len(), b.len())), None);
        // A chain that runs past the end is none.
        let mut b = headers(&[16; 4]);
        b.truncate(b.len() - 8);
        assert_eq!(next_boundary(&b, 0, 0, (b.len(), b.len())), None);
    }

    /// A sample record: IDENTIFIER, TID, TIME, CPU, [CALLCHAIN], RAW.
    fn sample(out: &mut Vec<u8>, id: u64, tid: u32, t: u64, cpu: u32, chain: &[u64], raw: &[u8]) {
        let mut body = Vec::new();
        body.extend_from_slice(&id.to_le_bytes());
        body.extend_from_slice(&tid.to_le_bytes()); // pid
        body.extend_from_slice(&tid.to_le_bytes());
        body.extend_from_slice(&t.to_le_bytes());
        body.extend_from_slice(&cpu.to_le_bytes());
        body.extend_from_slice(&0u32.to_le_bytes());
        body.extend_from_slice(&(chain.len() as u64).to_le_bytes());
        for c in chain {
            body.extend_from_slice(&c.to_le_bytes());
        }
        body.extend_from_slice(&(raw.len() as u32).to_le_bytes());
        body.extend_from_slice(raw);
        while body.len() % 8 != 0 {
            body.push(0);
        }
        header(out, SAMPLE, 8 + body.len());
        out.extend_from_slice(&body);
    }

    fn header(out: &mut Vec<u8>, ty: u32, size: usize) {
        out.extend_from_slice(&ty.to_le_bytes());
        out.extend_from_slice(&0u16.to_le_bytes());
        out.extend_from_slice(&(size as u16).to_le_bytes());
    }

    /// A compressed record before the first sample makes a file compressed;
    /// after it, or with none, or past damage, not.
    #[test]
    fn a_compressed_record_before_the_first_sample_says_the_file_is_compressed() {
        let file = |types: &[(u32, usize)]| {
            let mut b = Vec::new();
            for &(ty, size) in types {
                header(&mut b, ty, size);
                b.resize(b.len() + size.max(8) - 8, 0);
            }
            b
        };
        let yes = [
            vec![(3, 40), (7, 48), (81, 100)],
            vec![(83, 30)],
            vec![(10, 64), (81, 9), (9, 24)],
        ];
        for types in yes {
            let b = file(&types);
            assert!(compressed(&b, 0, b.len()), "{types:?}");
        }
        let no = [
            vec![],
            vec![(3, 40), (9, 24), (81, 100)],
            vec![(3, 4), (81, 100)],
            vec![(3, 40)],
        ];
        for types in no {
            let b = file(&types);
            assert!(!compressed(&b, 0, b.len()), "{types:?}");
        }
        // Not past the end of the data.
        let b = file(&[(3, 40), (81, 16)]);
        assert!(!compressed(&b, 0, 40));
    }

    fn round(out: &mut Vec<u8>) {
        header(out, FINISHED_ROUND, 8);
    }

    const ST: u64 = IDENTIFIER | TID | TIME | CPU | CALLCHAIN | RAW;

    #[test]
    fn rounds_of_per_cpu_runs_come_out_in_time_order() {
        let mut b = Vec::new();
        // Round 1: CPU 0 then CPU 1, each sorted; round 2 likewise, with
        // a CPU 1 sample older than round 1's last.
        for t in [10u64, 30, 50] {
            sample(&mut b, 1, 100, t, 0, &[], &[t as u8; 3]);
        }
        for t in [20u64, 40, 60] {
            sample(&mut b, 1, 200, t, 1, &[0xdead], &[t as u8; 5]);
        }
        round(&mut b);
        // A sideband event's sample (id 9) is skipped.
        sample(&mut b, 9, 1, 15, 0, &[], &[]);
        for t in [55u64, 70] {
            sample(&mut b, 1, 100, t, 0, &[], &[t as u8; 2]);
        }
        header(&mut b, LOST_SAMPLES, 16);
        b.extend_from_slice(&7u64.to_le_bytes());
        round(&mut b);
        sample(&mut b, 1, 200, 65, 1, &[1, 2], &[65]);
        let events = [(ST, vec![1]), (IDENTIFIER | TID | TIME, vec![9])];
        let mut r = RawRecords::new(&b, 0, b.len(), &events).expect("in place");
        let mut got = Vec::new();
        while let Some(s) = r.next_sample(&b) {
            let raw = &b[s.raw.0..s.raw.1];
            assert!(raw.iter().all(|&x| x == s.t as u8), "raw data of {}", s.t);
            assert_eq!((s.tid, s.cpu), if s.cpu == 0 { (100, 0) } else { (200, 1) });
            got.push(s.t);
        }
        assert_eq!(got, [10, 20, 30, 40, 50, 55, 60, 65, 70]);
        assert_eq!(r.lost, 7);
        assert_eq!(r.samples, 9);
    }

    /// A damaged sample (an impossible CPU, a call chain longer than its
    /// record) is skipped and counted; the samples around it are read.
    #[test]
    fn damaged_samples_are_counted_and_skipped() {
        let mut b = Vec::new();
        sample(&mut b, 1, 100, 10, 0, &[], &[1]);
        sample(&mut b, 1, 100, 20, 1 << 20, &[], &[1]);
        let at = b.len();
        sample(&mut b, 1, 100, 30, 0, &[], &[1]);
        // The call chain's length (after the header, id, pid/tid, time
        // and cpu) says 1000 entries.
        b[at + 40..at + 48].copy_from_slice(&1000u64.to_le_bytes());
        sample(&mut b, 1, 100, 40, 1, &[], &[1]);
        round(&mut b);
        let events = [(ST, vec![1])];
        let mut r = RawRecords::new(&b, 0, b.len(), &events).expect("in place");
        let mut got = Vec::new();
        while let Some(s) = r.next_sample(&b) {
            got.push(s.t);
        }
        assert_eq!(got, [10, 40]);
        assert_eq!((r.samples, r.malformed), (2, 2));
        assert!(r.first_malformed.is_some_and(|at| at > 0 && at < b.len()));
    }

    /// Runs longer than the reach of an insertion in place: the round
    /// is sorted whole; samples of one time keep the file's order.
    #[test]
    fn a_round_of_long_runs_comes_out_in_time_order() {
        for n in [3u64, NEAR as u64 - 1, NEAR as u64, 300] {
            let mut b = Vec::new();
            for cpu in 0..2u32 {
                for i in 0..n {
                    // CPU 0 at even times, CPU 1 at odd ones and at each
                    // tenth even one too.
                    let t = 2 * i + cpu as u64;
                    sample(&mut b, 1, 100 + cpu, t, cpu, &[], &[1]);
                    if cpu == 1 && i % 10 == 0 {
                        sample(&mut b, 1, 100 + cpu, 2 * i, cpu, &[], &[1]);
                    }
                }
            }
            round(&mut b);
            let events = [(ST, vec![1])];
            let mut r = RawRecords::new(&b, 0, b.len(), &events).expect("in place");
            let mut got = Vec::new();
            while let Some(s) = r.next_sample(&b) {
                got.push((s.t, s.cpu));
            }
            let mut want = got.clone();
            // By time, then CPU 0's first (its run is earlier in the file).
            want.sort();
            assert_eq!(got, want, "runs of {n}");
            assert_eq!(got.len() as u64, 2 * n + n.div_ceil(10), "runs of {n}");
        }
    }

    #[test]
    fn layouts_it_cannot_walk_are_left_to_the_general_reader() {
        let b = Vec::new();
        // Mixed layouts among raw events; PERF_SAMPLE_READ; no identifier
        // to tell a non-raw event's samples apart.
        assert!(RawRecords::new(&b, 0, 0, &[(ST, vec![1]), (ST & !CPU, vec![2])]).is_none());
        assert!(RawRecords::new(&b, 0, 0, &[(ST | READ, vec![1])]).is_none());
        assert!(
            RawRecords::new(&b, 0, 0, &[(ST & !IDENTIFIER, vec![1]), (TIME, vec![2])]).is_none()
        );
        assert!(RawRecords::new(&b, 0, 0, &[(ST, vec![1])]).is_some());
    }
}
