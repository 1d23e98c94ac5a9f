//! An external sort for the importers that must reorder a whole trace
//! (Chrome / Perfetto JSON writes slices in any order): items pushed in any
//! order come back in order, with memory bounded by a fixed number of items
//! whatever the trace's length.
//!
//! Items gather in memory up to a budget; a full buffer is sorted and
//! written to an anonymous temporary file (a *run*, deleted when closed) in
//! the item's own encoding ([`Spill`]), each item after its length. At the end the runs and what
//! is left in memory are merged with a heap, reading each run through a
//! small buffer. A sort that never reached its budget never touches the
//! disk. Runs are merged by levels, as a log-structured store does: when
//! [`FAN`] runs of one level are on disk they become one run of the next
//! level, so each item is rewritten about log₁₆(items / budget) times and
//! the files open at once stay few (under `FAN` per level).

use crate::ahead::{self, Feed};
use critpath_trace::{Location, ReadError};
use std::fs::File;
use std::io::{self, BufReader, BufWriter, Read, Seek, SeekFrom, Write};
use std::sync::mpsc::SyncSender;

/// Runs of one level merged into one of the next.
pub const FAN: usize = 16;

/// An item with an encoding, for the runs on disk.
pub trait Spill: Ord + Sized + Send + 'static {
    /// Appends the item's bytes to `out`.
    fn put(&self, out: &mut Vec<u8>);
    /// The item encoded in `b` (all the bytes `put` wrote).
    fn take(b: &[u8]) -> Self;
}

/// Writes `item` after its length, as runs hold them ([`Run`] reads them).
pub fn write_item<T: Spill>(w: &mut impl Write, item: &T, bytes: &mut Vec<u8>) -> io::Result<()> {
    bytes.clear();
    bytes.extend_from_slice(&[0; 4]);
    item.put(bytes);
    let len = (bytes.len() - 4) as u32;
    bytes[..4].copy_from_slice(&len.to_le_bytes());
    w.write_all(bytes)
}

/// `items` sorted, as a run in a new temporary file; `items` is left
/// empty.
fn write_run<T: Spill>(items: &mut Vec<T>) -> io::Result<File> {
    items.sort_unstable();
    let mut w = BufWriter::with_capacity(1 << 16, tempfile::tempfile()?);
    let mut bytes = Vec::new();
    for item in items.drain(..) {
        write_item(&mut w, &item, &mut bytes)?;
    }
    w.into_inner().map_err(|e| e.into_error())
}

/// Items in any order in, sorted out.
pub struct ExtSort<T: Spill> {
    buf: Vec<T>,
    budget: usize,
    /// Runs on disk with their levels; levels never grow along the list.
    runs: Vec<(u32, File)>,
    /// Items pushed, kept or not.
    pushed: u64,
    /// The first error writing a run: what is pushed after it is dropped,
    /// so memory stays bounded, and [`ExtSort::finish`] returns it.
    error: Option<io::Error>,
    /// The run being sorted and written on a thread of its own, if one is.
    writing: Option<Feed<io::Result<File>>>,
    /// Items in memory past which the buffer is spilled: the budget, or
    /// half of it when runs are written on a thread of their own while the
    /// next half fills (the two halves within the budget).
    spill_at: usize,
    /// Are runs sorted and written on a thread of their own?
    aside: bool,
}

/// Items to keep in memory when a sort is given no budget: the installed
/// settings' `sort_items`, else `default`.
pub fn sort_budget(default: usize) -> usize {
    critpath_trace::Settings::current()
        .sort_items
        .filter(|&n| n > 0)
        .unwrap_or(default)
}

impl<T: Spill> ExtSort<T> {
    /// A sort holding at most `budget` items in memory (at least one).
    pub fn new(budget: usize) -> Self {
        ExtSort {
            buf: Vec::new(),
            budget: budget.max(1),
            runs: Vec::new(),
            pushed: 0,
            error: None,
            writing: None,
            spill_at: budget.max(1),
            aside: false,
        }
    }

    /// The same sort, its runs sorted and written (and their items freed)
    /// on a thread of their own while the caller goes on pushing, each run
    /// half the budget, unless the installed settings ask for one thread:
    /// for a caller whose own work bounds the read (the spans of a file
    /// of many requests), not for one that keeps both cores busy already.
    pub fn with_runs_aside(mut self) -> Self {
        if critpath_trace::Settings::current().threads {
            self.aside = true;
            self.spill_at = (self.budget / 2).max(1);
        }
        self
    }

    /// Items pushed so far (after an error too).
    pub fn len(&self) -> u64 {
        self.pushed
    }

    pub fn is_empty(&self) -> bool {
        self.pushed == 0
    }

    /// Items pushed so far and still in memory.
    pub fn in_memory(&self) -> usize {
        self.buf.len()
    }

    /// Runs written to disk so far (the one being written counted).
    pub fn runs(&self) -> usize {
        self.runs.len() + usize::from(self.writing.is_some())
    }

    /// Adds `item`. After an error writing a run, items are dropped; the
    /// error comes out of [`ExtSort::finish`].
    pub fn push(&mut self, item: T) {
        self.pushed += 1;
        if self.error.is_some() {
            return;
        }
        self.buf.push(item);
        if self.buf.len() >= self.spill_at {
            if let Err(e) = self.spill() {
                self.error = Some(e);
                self.buf = Vec::new();
            }
        }
    }

    /// Sorts the buffer into a new run on disk; with runs aside, on a
    /// thread of its own (which frees the items too) while the caller
    /// fills the next buffer, once the run before it is on disk (on the
    /// caller's thread when no thread starts).
    fn spill(&mut self) -> io::Result<()> {
        if self.aside {
            self.wait_for_run()?;
            let items = std::mem::replace(&mut self.buf, Vec::with_capacity(self.spill_at));
            let writing = ahead::spawn(
                "critpath-sort",
                "writing a run of the sort",
                1,
                items,
                |mut items, tx| {
                    let _ = tx.send(write_run(&mut items));
                },
            );
            match writing {
                Ok(feed) => {
                    self.writing = Some(feed);
                    return Ok(());
                }
                // No thread: written here, as without runs aside.
                Err(items) => self.buf = items,
            }
        }
        // The buffer keeps its room (and its pages) for the next run.
        self.runs.push((0, write_run(&mut self.buf)?));
        self.compact()
    }

    /// The run being written, once on disk, among the runs.
    fn wait_for_run(&mut self) -> io::Result<()> {
        let Some(mut writing) = self.writing.take() else {
            return Ok(());
        };
        let run = writing
            .recv()?
            .ok_or_else(|| io::Error::other("a run of the sort was not written"))?;
        self.runs.push((0, run?));
        self.compact()
    }

    /// While the last [`FAN`] runs share a level, merges them into one run
    /// of the next.
    fn compact(&mut self) -> io::Result<()> {
        while self.runs.len() >= FAN {
            let tail = self.runs.len() - FAN;
            let level = self.runs[tail].0;
            if self.runs[tail..].iter().any(|r| r.0 != level) {
                return Ok(());
            }
            let files = self.runs.drain(tail..).map(|r| r.1).collect();
            let file = Self::write_merged(files, Vec::new())?;
            self.runs.push((level + 1, file));
        }
        Ok(())
    }

    /// One run of the runs in `files` and the sorted items `memory`, merged.
    fn write_merged(files: Vec<File>, memory: Vec<T>) -> io::Result<File> {
        let mut merged = Merge::<T>::new(files, memory)?;
        let mut w = BufWriter::with_capacity(1 << 16, tempfile::tempfile()?);
        let mut bytes = Vec::new();
        while let Some(item) = merged.next_item()? {
            write_item(&mut w, &item, &mut bytes)?;
        }
        w.into_inner().map_err(|e| e.into_error())
    }

    /// Puts everything pushed so far in one run on disk, so that a sort
    /// waiting to be read holds no items in memory and one open file.
    pub fn settle(&mut self) -> io::Result<()> {
        if let Some(e) = self.error.take() {
            return Err(e);
        }
        self.wait_for_run()?;
        if self.runs.is_empty() && self.buf.is_empty() {
            return Ok(());
        }
        self.buf.sort_unstable();
        let files = self.runs.drain(..).map(|r| r.1).collect();
        let file = Self::write_merged(files, std::mem::take(&mut self.buf))?;
        // Of a level of its own: later runs never merge into it.
        self.runs.push((u32::MAX, file));
        Ok(())
    }

    /// Everything pushed, in order.
    pub fn finish(mut self) -> io::Result<Sorted<T>> {
        if let Some(e) = self.error.take() {
            return Err(e);
        }
        self.wait_for_run()?;
        self.buf.sort_unstable();
        if self.runs.is_empty() {
            return Ok(Sorted::Memory(self.buf.into_iter()));
        }
        let files = self.runs.into_iter().map(|r| r.1).collect();
        Ok(Sorted::Merge(Merge::new(files, self.buf)?))
    }
}

/// The items of an [`ExtSort`], in order.
pub enum Sorted<T: Spill> {
    Memory(std::vec::IntoIter<T>),
    Merge(Merge<T>),
}

impl<T: Spill> Sorted<T> {
    /// The next item; `Ok(None)` at the end. An error is one reading a run
    /// back from its temporary file.
    pub fn next_item(&mut self) -> io::Result<Option<T>> {
        match self {
            Sorted::Memory(it) => Ok(it.next()),
            Sorted::Merge(m) => m.next_item(),
        }
    }
}

/// Items merged ahead of their reader at most.
const AHEAD_ITEMS: usize = 2048;
/// Batches of them in flight.
const AHEAD_BATCHES: usize = 4;

impl<T: Spill + Send + 'static> Sorted<T> {
    /// The same items, merged on a thread of their own a few batches ahead
    /// of the caller when they come from runs on disk (reading the runs
    /// back and merging them then takes a core of its own); items in
    /// memory stay on the caller's thread, as everything does when the
    /// installed settings ask for one thread.
    pub fn read_ahead(self) -> Ahead<T> {
        let Sorted::Merge(m) = self else {
            return Ahead::Here(self);
        };
        let merging = ahead::spawn(
            "critpath-merge",
            "merging the sort",
            AHEAD_BATCHES,
            m,
            merge_ahead,
        );
        match merging {
            Ok(feed) => Ahead::Thread {
                feed,
                cur: Vec::new().into_iter(),
            },
            Err(m) => Ahead::Here(Sorted::Merge(m)),
        }
    }
}

/// Sends `m`'s items in batches to `tx`, an error after the items before
/// it, until the end or until the reader is gone.
fn merge_ahead<T: Spill>(mut m: Merge<T>, tx: &SyncSender<io::Result<Vec<T>>>) {
    loop {
        let mut batch = Vec::with_capacity(AHEAD_ITEMS);
        let res = loop {
            match m.next_item() {
                Ok(Some(item)) => batch.push(item),
                Ok(None) => break Ok(true),
                Err(e) => break Err(e),
            }
            if batch.len() == AHEAD_ITEMS {
                break Ok(false);
            }
        };
        // The reader gone: nothing more to merge for.
        if !batch.is_empty() && tx.send(Ok(batch)).is_err() {
            return;
        }
        match res {
            Ok(false) => {}
            Ok(true) => return,
            Err(e) => {
                let _ = tx.send(Err(e));
                return;
            }
        }
    }
}

/// The items of a [`Sorted`], merged ahead ([`Sorted::read_ahead`]).
pub enum Ahead<T: Spill> {
    Here(Sorted<T>),
    Thread {
        feed: Feed<io::Result<Vec<T>>>,
        cur: std::vec::IntoIter<T>,
    },
}

impl<T: Spill> Ahead<T> {
    /// The next item; `Ok(None)` at the end. An error is one reading a run
    /// back from its temporary file.
    pub fn next_item(&mut self) -> io::Result<Option<T>> {
        match self {
            Ahead::Here(sorted) => sorted.next_item(),
            Ahead::Thread { feed, cur } => loop {
                if let Some(item) = cur.next() {
                    return Ok(Some(item));
                }
                match feed.recv()? {
                    Some(Ok(batch)) => *cur = batch.into_iter(),
                    Some(Err(e)) => return Err(e),
                    // The merge ended after its last batch.
                    None => return Ok(None),
                }
            },
        }
    }
}

/// Items written by [`write_item`], read back from their file.
pub struct Run {
    r: BufReader<File>,
    bytes: Vec<u8>,
}

impl Run {
    /// The items of `f`, from its start.
    pub fn new(mut f: File) -> io::Result<Self> {
        f.seek(SeekFrom::Start(0))?;
        Ok(Run {
            r: BufReader::with_capacity(1 << 16, f),
            bytes: Vec::new(),
        })
    }

    /// The next item; `Ok(None)` at the end.
    pub fn next_item<T: Spill>(&mut self) -> io::Result<Option<T>> {
        // The end of the run is only before an item: a length cut short is
        // an error.
        let mut len = [0; 4];
        match self.r.read_exact(&mut len[..1]) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(None),
            Err(e) => return Err(e),
        }
        self.r.read_exact(&mut len[1..])?;
        self.bytes.resize(u32::from_le_bytes(len) as usize, 0);
        self.r.read_exact(&mut self.bytes)?;
        Ok(Some(T::take(&self.bytes)))
    }
}

/// A heap merge of sorted runs and one sorted buffer in memory (source
/// number `runs.len()`). Items stay in their source's slot; the heap
/// orders source numbers (by item, then source), so an item is moved only
/// into its slot and out.
pub struct Merge<T: Spill> {
    runs: Vec<Run>,
    memory: std::vec::IntoIter<T>,
    /// Each source's next item.
    heads: Vec<Option<T>>,
    /// The sources with an item, a binary min-heap by [`Merge::before`].
    heap: Vec<usize>,
    /// An error reading a source, said after the item before it.
    error: Option<io::Error>,
}

impl<T: Spill> Merge<T> {
    fn new(files: Vec<File>, memory: Vec<T>) -> io::Result<Self> {
        let mut m = Merge {
            runs: files.into_iter().map(Run::new).collect::<io::Result<_>>()?,
            memory: memory.into_iter(),
            heads: Vec::new(),
            heap: Vec::new(),
            error: None,
        };
        for src in 0..=m.runs.len() {
            let head = m.pull(src)?;
            m.heads.push(head);
            if m.heads[src].is_some() {
                m.heap.push(src);
                m.sift_up(m.heap.len() - 1);
            }
        }
        Ok(m)
    }

    /// Source `src`'s next item.
    fn pull(&mut self, src: usize) -> io::Result<Option<T>> {
        match self.runs.get_mut(src) {
            Some(run) => run.next_item(),
            None => Ok(self.memory.next()),
        }
    }

    /// Does source `a`'s item come before source `b`'s (the lower source
    /// first among equal items)?
    fn before(&self, a: usize, b: usize) -> bool {
        match self.heads[a].cmp(&self.heads[b]) {
            std::cmp::Ordering::Equal => a < b,
            o => o == std::cmp::Ordering::Less,
        }
    }

    fn sift_up(&mut self, mut i: usize) {
        while i > 0 {
            let parent = (i - 1) / 2;
            if !self.before(self.heap[i], self.heap[parent]) {
                break;
            }
            self.heap.swap(i, parent);
            i = parent;
        }
    }

    fn sift_down(&mut self, mut i: usize) {
        loop {
            let (l, r) = (2 * i + 1, 2 * i + 2);
            let mut first = i;
            if l < self.heap.len() && self.before(self.heap[l], self.heap[first]) {
                first = l;
            }
            if r < self.heap.len() && self.before(self.heap[r], self.heap[first]) {
                first = r;
            }
            if first == i {
                return;
            }
            self.heap.swap(i, first);
            i = first;
        }
    }

    /// The next item; an error reading a source comes after the item
    /// before it, and ends the merge.
    pub fn next_item(&mut self) -> io::Result<Option<T>> {
        if let Some(e) = self.error.take() {
            self.heap.clear();
            return Err(e);
        }
        let Some(&src) = self.heap.first() else {
            return Ok(None);
        };
        let item = self.heads[src].take();
        self.heads[src] = self.pull(src).unwrap_or_else(|e| {
            self.error = Some(e);
            None
        });
        if self.heads[src].is_none() {
            self.heap.swap_remove(0);
        }
        self.sift_down(0);
        Ok(item)
    }
}

/// The error of a sort's temporary file while reading the input `name`:
/// `doing` says what ("sort the trace's records in").
pub fn disk_error(name: &str, doing: &str, e: io::Error) -> ReadError {
    let msg = format!("cannot {doing} a temporary file: {e}");
    ReadError::new(name, Location::File, msg, true)
}

/// Little-endian fields written and read back in order.
pub struct Fields<'a> {
    b: &'a [u8],
}

impl<'a> Fields<'a> {
    pub fn new(b: &'a [u8]) -> Self {
        Fields { b }
    }
    pub fn u8(&mut self) -> u8 {
        let v = self.b[0];
        self.b = &self.b[1..];
        v
    }
    pub fn u32(&mut self) -> u32 {
        let (v, rest) = self.b.split_at(4);
        self.b = rest;
        u32::from_le_bytes(v.try_into().unwrap())
    }
    pub fn u64(&mut self) -> u64 {
        let (v, rest) = self.b.split_at(8);
        self.b = rest;
        u64::from_le_bytes(v.try_into().unwrap())
    }
    /// A string written by [`put_str`].
    pub fn str(&mut self) -> String {
        let n = self.u32() as usize;
        let (v, rest) = self.b.split_at(n);
        self.b = rest;
        String::from_utf8_lossy(v).into_owned()
    }
}

/// Appends `s` after its length, for [`Fields::str`].
pub fn put_str(out: &mut Vec<u8>, s: &str) {
    out.extend_from_slice(&(s.len() as u32).to_le_bytes());
    out.extend_from_slice(s.as_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[derive(PartialEq, Eq, PartialOrd, Ord, Debug, Clone, Copy)]
    struct Item(u64, u32);

    impl Spill for Item {
        fn put(&self, out: &mut Vec<u8>) {
            out.extend_from_slice(&self.0.to_le_bytes());
            out.extend_from_slice(&self.1.to_le_bytes());
        }
        fn take(b: &[u8]) -> Self {
            let mut f = Fields::new(b);
            Item(f.u64(), f.u32())
        }
    }

    fn drain(mut s: Sorted<Item>) -> Vec<Item> {
        let mut out = Vec::new();
        while let Some(i) = s.next_item().unwrap() {
            out.push(i);
        }
        out
    }

    fn drain_ahead(mut s: Ahead<Item>) -> Vec<Item> {
        let mut out = Vec::new();
        while let Some(i) = s.next_item().unwrap() {
            out.push(i);
        }
        out
    }

    #[test]
    fn merged_ahead_a_runs_damage_comes_after_the_items_before_it() {
        let n = AHEAD_ITEMS as u64 * 2 + 3;
        let mut f = tempfile::tempfile().unwrap();
        let mut bytes = Vec::new();
        for i in 0..n {
            write_item(&mut f, &Item(i, 0), &mut bytes).unwrap();
        }
        // A length cut short.
        f.write_all(&[12, 0]).unwrap();
        let merge = Merge::<Item>::new(vec![f], Vec::new()).unwrap();
        let mut ahead = Sorted::Merge(merge).read_ahead();
        assert!(matches!(ahead, Ahead::Thread { .. }));
        let mut got = 0;
        let err = loop {
            match ahead.next_item() {
                Ok(Some(item)) => {
                    assert_eq!(item, Item(got, 0));
                    got += 1;
                }
                Ok(None) => panic!("the damage went unsaid"),
                Err(e) => break e,
            }
        };
        assert_eq!((got, err.kind()), (n, io::ErrorKind::UnexpectedEof));
    }

    /// An item that cannot be read back when it is 13.
    #[derive(PartialEq, Eq, PartialOrd, Ord, Debug)]
    struct Touchy(u64);

    impl Spill for Touchy {
        fn put(&self, out: &mut Vec<u8>) {
            out.extend_from_slice(&self.0.to_le_bytes());
        }
        fn take(b: &[u8]) -> Self {
            let n = Fields::new(b).u64();
            assert_ne!(n, 13, "unreadable");
            Touchy(n)
        }
    }

    #[test]
    fn merged_ahead_a_thread_that_stops_short_is_an_error() {
        // Four runs on disk: 13 is read back only on the merging thread.
        let mut s = ExtSort::new(4);
        for i in 0..16 {
            s.push(Touchy(i));
        }
        assert_eq!(s.runs(), 4);
        let mut ahead = s.finish().unwrap().read_ahead();
        let mut got = Vec::new();
        let err = loop {
            match ahead.next_item() {
                Ok(Some(Touchy(n))) => got.push(n),
                Ok(None) => panic!("the end of a merge that stopped short"),
                Err(e) => break e,
            }
        };
        assert!(got.iter().all(|&n| n < 13), "{got:?}");
        assert!(err.to_string().contains("stopped"), "{err}");
    }

    #[test]
    fn a_sort_within_its_budget_stays_in_memory() {
        let mut s = ExtSort::new(10);
        for i in [3u64, 1, 2] {
            s.push(Item(i, 0));
        }
        assert_eq!(s.runs(), 0);
        let out = drain(s.finish().unwrap());
        assert!(matches!(out[..], [Item(1, 0), Item(2, 0), Item(3, 0)]));
    }

    #[test]
    fn runs_are_merged_by_levels_so_few_files_stay_open() {
        let n = (FAN * FAN * 3 + 5) as u64;
        let mut s = ExtSort::new(1);
        for i in (0..n).rev() {
            s.push(Item(i, 7));
            assert!(s.runs() < 3 * FAN, "{} runs", s.runs());
        }
        // 773 runs of one item: 3 of level 2, 5 of level 0.
        assert_eq!(s.runs(), 8);
        let out = drain(s.finish().unwrap());
        let want: Vec<Item> = (0..n).map(|i| Item(i, 7)).collect();
        assert_eq!(out, want);
    }

    #[test]
    fn runs_written_aside_are_merged_by_levels_too() {
        let n = (FAN * FAN + 3) as u64;
        let mut s = ExtSort::new(2).with_runs_aside();
        for i in (0..n).rev() {
            s.push(Item(i, 7));
            assert!(s.runs() < 3 * FAN, "{} runs", s.runs());
        }
        // 259 runs of one item: 1 of level 2, 3 of level 0.
        assert_eq!(s.runs(), 4);
        s.settle().unwrap();
        assert_eq!((s.runs(), s.in_memory()), (1, 0));
        let out = drain(s.finish().unwrap());
        assert_eq!(out, (0..n).map(|i| Item(i, 7)).collect::<Vec<_>>());
    }

    #[test]
    fn a_settled_sort_holds_one_file_and_nothing_in_memory() {
        let mut s = ExtSort::new(3);
        for i in [9u64, 2, 7, 4, 1, 8, 3] {
            s.push(Item(i, 0));
        }
        assert_eq!((s.runs(), s.in_memory()), (2, 1));
        s.settle().unwrap();
        assert_eq!((s.runs(), s.in_memory()), (1, 0));
        for i in [5u64, 6, 0, 10] {
            s.push(Item(i, 1));
        }
        let out: Vec<u64> = drain(s.finish().unwrap()).iter().map(|x| x.0).collect();
        assert_eq!(out, (0..=10).collect::<Vec<_>>());
    }

    proptest! {
        #[test]
        fn any_budget_gives_the_sorted_items(
            items in proptest::collection::vec((0u64..50, any::<u32>()), 0..400),
            budget in 1usize..40,
        ) {
            let mut s = ExtSort::new(budget);
            for &(a, b) in &items {
                s.push(Item(a, b));
            }
            prop_assert!(s.in_memory() < budget);
            let mut want: Vec<Item> = items.iter().map(|&(a, b)| Item(a, b)).collect();
            want.sort();
            let mut twin = ExtSort::new(budget);
            for &(a, b) in &items {
                twin.push(Item(a, b));
            }
            // Runs written on a thread of their own, half the budget each.
            let mut aside = ExtSort::new(budget).with_runs_aside();
            for &(a, b) in &items {
                aside.push(Item(a, b));
            }
            prop_assert!(aside.in_memory() < budget.div_ceil(2).max(1));
            prop_assert_eq!(drain(s.finish().unwrap()), want.clone());
            prop_assert_eq!(drain(aside.finish().unwrap()), want.clone());
            // Merged on a thread of its own, the same items in the same order.
            prop_assert_eq!(drain_ahead(twin.finish().unwrap().read_ahead()), want);
        }
    }
}
