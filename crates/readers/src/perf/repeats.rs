//! Samples a recording holds twice. perf.data files of some kernels hold
//! a tracepoint sample a second time, byte for byte (about one sample in
//! 30,000 of a busy two-CPU recording under Linux 6.x, and in runs): a
//! `softirq_entry` twice makes a softirq that never exits, a `sys_exit`
//! twice a system call that returns twice. Two events of one CPU cannot
//! happen in the same nanosecond with the same thread and payload, so a
//! record equal to one already read at its time on its CPU is such a
//! copy, and is dropped.

use super::kevent::KRecord;

/// Records of one time compared at most: a file of many events at one
/// time costs no more than this each.
const MAX_GROUP: usize = 64;

/// Finds copies among records read in time order: a copy comes before any
/// record of a later time, so it is compared only with the records of its
/// own time, which are the last ones read.
#[derive(Default)]
pub struct Repeats {
    /// The records at the latest time of the batches before.
    carried: Vec<KRecord>,
    /// Copies found.
    pub dropped: u64,
}

impl Repeats {
    /// Is `k` a copy of a record already read? `batch`: the records of the
    /// current batch before it.
    #[inline]
    pub fn repeated(&mut self, k: &KRecord, batch: &[KRecord]) -> bool {
        let latest = batch.last().or(self.carried.last()).map(|l| l.t);
        latest == Some(k.t) && self.same_time(k, batch)
    }

    #[cold]
    fn same_time(&mut self, k: &KRecord, batch: &[KRecord]) -> bool {
        let mut at_t = batch.iter().rev().take_while(|r| r.t == k.t);
        let old = self.carried.iter().filter(|r| r.t == k.t);
        if at_t.by_ref().take(MAX_GROUP).any(|r| r == k) || old.take(MAX_GROUP).any(|r| r == k) {
            self.dropped += 1;
            return true;
        }
        false
    }

    /// A batch is over: its records at its latest time are kept for the
    /// next one.
    pub fn carry(&mut self, batch: &[KRecord]) {
        let Some(last) = batch.last() else { return };
        let at_t = batch.iter().rev().take_while(|r| r.t == last.t);
        if last.t != self.carried.last().map_or(u64::MAX, |c| c.t) {
            self.carried.clear();
        }
        let room = MAX_GROUP.saturating_sub(self.carried.len());
        self.carried.extend(at_t.take(room));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::perf::KEvent;

    fn k(t: u64, cpu: u32, tid: u32, ev: KEvent) -> KRecord {
        KRecord {
            t,
            cpu,
            pid: tid,
            tid,
            ev,
        }
    }

    /// The records kept of `input` read in batches of `n`.
    fn kept(input: &[KRecord], n: usize) -> (Vec<bool>, u64) {
        let mut r = Repeats::default();
        let mut keep = Vec::new();
        for chunk in input.chunks(n) {
            let mut batch = Vec::new();
            for k in chunk {
                let copy = r.repeated(k, &batch);
                keep.push(!copy);
                if !copy {
                    batch.push(*k);
                }
            }
            r.carry(&batch);
        }
        (keep, r.dropped)
    }

    #[test]
    fn only_a_record_equal_to_one_at_its_time_on_its_cpu_is_a_copy() {
        let entry = KEvent::SoftirqEntry { vec: 9 };
        let exit = KEvent::SoftirqExit { vec: 9 };
        let input = [
            k(10, 0, 7, entry),
            k(10, 1, 7, entry), // another CPU
            k(10, 0, 7, exit),  // another event at the same time
            k(10, 0, 7, entry), // a copy, after other records
            k(10, 0, 8, entry), // another thread
            k(11, 0, 7, entry), // a later time
            k(11, 0, 7, entry), // a copy
            k(12, 0, 7, exit),
            k(13, 0, 7, exit),
            k(13, 1, 7, exit),
            k(13, 0, 7, exit), // a copy
        ];
        let want = [
            true, true, true, false, true, true, false, true, true, true, false,
        ];
        // However the records fall into batches.
        for n in 1..=input.len() {
            assert_eq!(kept(&input, n), (want.to_vec(), 3), "batches of {n}");
        }
    }
}
