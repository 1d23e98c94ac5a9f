//! Mutation fuzzing of every reader through `critpath_import::open`: valid
//! fixtures of each format (JSONL plain and gzip'd, .cpt plain and zstd,
//! both also with a converted recording's scope and summary,
//! Chrome plain and xz'd, OTLP, Jaeger plain and bzip2'd, SDK annotation
//! blocks, perf.data) with bits flipped, bytes inserted, overwritten or
//! removed, and the file cut. Any input may be refused, but no input may
//! panic, hang, or ask for an unbounded allocation. Each format runs a
//! bounded number of cases (a few seconds); the counts are printed
//! (`--nocapture`).
//!
//! The cases come from a fixed seed, so a run is repeatable and CI sees
//! the same inputs each time. `CRITPATH_FUZZ_SEED=N` (or `random`) picks
//! other inputs and `CRITPATH_FUZZ_SCALE=K` runs K times as many cases; a
//! failure prints the seed that found it.

use critpath_trace::{DiagnosticKind, RecordSource};
use proptest::prelude::*;
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::io::Write;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::time::Duration;

/// The biggest single allocation asked for since the last reset: an input
/// of a few KB must not make a reader ask for gigabytes.
struct Watch;
static BIGGEST: AtomicUsize = AtomicUsize::new(0);
const ALLOC_LIMIT: usize = 256 << 20;

unsafe impl GlobalAlloc for Watch {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        BIGGEST.fetch_max(l.size(), Ordering::Relaxed);
        System.alloc(l)
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        System.dealloc(p, l)
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, n: usize) -> *mut u8 {
        BIGGEST.fetch_max(n, Ordering::Relaxed);
        System.realloc(p, l, n)
    }
}

#[global_allocator]
static WATCH: Watch = Watch;

fn fixture(name: &str) -> Vec<u8> {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../readers/tests/fixtures");
    std::fs::read(p.join(name)).unwrap()
}

fn gzip(b: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    e.write_all(b).unwrap();
    e.finish().unwrap()
}

fn xz(b: &[u8]) -> Vec<u8> {
    let mut e = liblzma::write::XzEncoder::new(Vec::new(), 1);
    e.write_all(b).unwrap();
    e.finish().unwrap()
}

fn bzip2(b: &[u8]) -> Vec<u8> {
    let mut e = bzip2::write::BzEncoder::new(Vec::new(), bzip2::Compression::fast());
    e.write_all(b).unwrap();
    e.finish().unwrap()
}

/// One change to the bytes; positions are fractions of the length.
#[derive(Clone, Debug)]
enum Mutation {
    Flip(f64, u8),
    Insert(f64, Vec<u8>),
    Overwrite(f64, Vec<u8>),
    Remove(f64, usize),
    Cut(f64),
    /// A little-endian u64 written at a byte offset (a header field).
    Word(usize, u64),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    let at = 0.0..1.0f64;
    let junk = prop_oneof![
        prop::collection::vec(any::<u8>(), 1..16),
        // Lengths and counts that readers might trust.
        Just(vec![0xff; 8]),
        Just(0x7fff_ffffu32.to_le_bytes().to_vec()),
        Just(b"]}\"".to_vec()),
        Just(b"1e999".to_vec()),
    ];
    prop_oneof![
        4 => (at.clone(), 0..8u8).prop_map(|(a, b)| Mutation::Flip(a, b)),
        2 => (at.clone(), junk.clone()).prop_map(|(a, j)| Mutation::Insert(a, j)),
        2 => (at.clone(), junk).prop_map(|(a, j)| Mutation::Overwrite(a, j)),
        1 => (at.clone(), 1..64usize).prop_map(|(a, n)| Mutation::Remove(a, n)),
        1 => at.prop_map(Mutation::Cut),
    ]
}

fn apply(mut b: Vec<u8>, muts: &[Mutation]) -> Vec<u8> {
    for m in muts {
        let at = |f: f64, len: usize| ((f * len as f64) as usize).min(len);
        match m {
            Mutation::Flip(f, bit) if !b.is_empty() => {
                let i = at(*f, b.len() - 1);
                b[i] ^= 1 << bit;
            }
            Mutation::Insert(f, j) => {
                let i = at(*f, b.len());
                b.splice(i..i, j.iter().copied());
            }
            Mutation::Overwrite(f, j) => {
                let i = at(*f, b.len());
                for (k, &x) in j.iter().enumerate() {
                    if let Some(y) = b.get_mut(i + k) {
                        *y = x;
                    }
                }
            }
            Mutation::Remove(f, n) => {
                let i = at(*f, b.len());
                b.drain(i..(i + n).min(b.len()));
            }
            Mutation::Cut(f) => b.truncate(at(*f, b.len())),
            Mutation::Word(i, w) => {
                if let Some(y) = b.get_mut(*i..i + 8) {
                    y.copy_from_slice(&w.to_le_bytes());
                }
            }
            _ => {}
        }
    }
    b
}

/// What reading one input came to.
#[derive(Debug, Default)]
struct Outcome {
    refused: bool,
    records: u64,
    /// Errors from reading, plus one when the summary tells of damage.
    errors: u64,
}

/// How an input is read: as a stream, from a file (the formats that need
/// one), or as one step of a Kineto file (read twice: the window first).
#[derive(Clone, Copy)]
enum How {
    Stream,
    File,
    Step,
}

/// Opens and reads an input to the end.
fn read_all(bytes: Vec<u8>, how: How) -> Outcome {
    let bytes_len = bytes.len();
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("input");
    let src = match how {
        How::Stream => critpath_import::open_reader(Box::new(std::io::Cursor::new(bytes)), "input"),
        How::File => {
            std::fs::write(&p, &bytes).unwrap();
            critpath_import::open(&p)
        }
        How::Step => {
            std::fs::write(&p, &bytes).unwrap();
            let opts = critpath_gpu::GpuOptions {
                annotation: Some("ProfilerStep".into()),
                instance: 1,
            };
            critpath_import::open_gpu(std::slice::from_ref(&p), &opts)
                .map(|s| critpath_import::AnySource::in_memory(s, critpath_import::Format::Kineto))
        }
    };
    let mut out = Outcome::default();
    let Ok(mut src) = src else {
        out.refused = true;
        return out;
    };
    // Half the perf.data inputs with thread names that come late, after a
    // head of a few records: renamed, or read again, at the end.
    if let Some(p) = src.downcast_mut::<critpath_os::PerfSource>() {
        p.names_head(8192);
        p.prepare(bytes_len.is_multiple_of(2));
    }
    // As an analysis does: the scope first (a converted trace's head).
    src.scope();
    let mut batch = Vec::new();
    loop {
        match src.next_batch(&mut batch, 4096) {
            Ok(()) if batch.is_empty() => break,
            Ok(()) => out.records += batch.len() as u64,
            Err(e) => {
                out.records += batch.len() as u64;
                out.errors += 1;
                if e.fatal {
                    break;
                }
            }
        }
        assert!(
            out.records < 50_000_000,
            "a small input yields no end of records"
        );
    }
    // Damage some readers report only at the end (a perf.data record
    // header stepped over, Kineto events skipped) counts as reported.
    let summary = src.summary();
    let said = summary.diagnostics.iter().any(|d| {
        matches!(
            d.kind,
            DiagnosticKind::InputSkipped | DiagnosticKind::InputCut
        )
    });
    out.errors += u64::from(summary.error.is_some() || said);
    // A late-names pass found wrong reads again, to the end.
    if src.restart() {
        while let Ok(()) = src.next_batch(&mut batch, 4096) {
            if batch.is_empty() {
                break;
            }
        }
        src.summary();
    }
    out
}

/// The seed of this run: `CRITPATH_FUZZ_SEED` (a number or `random`),
/// else 0.
fn seed() -> Option<u64> {
    match std::env::var("CRITPATH_FUZZ_SEED") {
        Ok(v) if v == "random" => None,
        Ok(v) => Some(
            v.parse()
                .expect("CRITPATH_FUZZ_SEED is a number or `random`"),
        ),
        Err(_) => Some(0),
    }
}

/// `cases` times `CRITPATH_FUZZ_SCALE` (1 when unset).
fn scaled(cases: u32) -> u32 {
    let k = std::env::var("CRITPATH_FUZZ_SCALE").map_or(1, |v| v.parse().unwrap_or(1));
    cases.saturating_mul(k)
}

fn runner(config: Config) -> TestRunner {
    let Some(seed) = seed() else {
        eprintln!("fuzz seed: random");
        return TestRunner::new(config);
    };
    let mut bytes = [0u8; 32];
    bytes[..8].copy_from_slice(&seed.to_le_bytes());
    let rng = TestRng::from_seed(RngAlgorithm::ChaCha, &bytes);
    eprintln!("fuzz seed: {seed}");
    TestRunner::new_with_rng(config, rng)
}

/// Runs `cases` mutated copies of `base`, each on a thread with a deadline.
fn fuzz(label: &str, base: Vec<u8>, how: How, cases: u32) {
    fuzz_then(label, base, how, cases, |b| b)
}

/// [`fuzz`], each mutated input passed through `then` (compressed) before
/// it is read.
fn fuzz_then(label: &str, base: Vec<u8>, how: How, cases: u32, then: fn(Vec<u8>) -> Vec<u8>) {
    let strategy = prop::collection::vec(mutation(), 1..5).boxed();
    fuzz_with(label, base, how, cases, strategy, then)
}

/// [`fuzz_then`] with the mutations drawn from `strategy`.
fn fuzz_with(
    label: &str,
    base: Vec<u8>,
    how: How,
    cases: u32,
    strategy: BoxedStrategy<Vec<Mutation>>,
    then: fn(Vec<u8>) -> Vec<u8>,
) {
    let cases = scaled(cases);
    let config = Config {
        cases,
        failure_persistence: None,
        max_shrink_iters: 64,
        ..Config::default()
    };
    let (opened, records, errors) = (Cell::new(0u64), Cell::new(0u64), Cell::new(0u64));
    let mut runner = runner(config);
    let result = runner.run(&strategy, |muts| {
        let input = then(apply(base.clone(), &muts));
        BIGGEST.store(0, Ordering::Relaxed);
        let (tx, rx) = mpsc::channel();
        let worker = std::thread::spawn(move || {
            let _ = tx.send(read_all(input, how));
        });
        let got = rx.recv_timeout(Duration::from_secs(10));
        let Ok(o) = got else {
            // The worker panicked (its message is printed) or hangs.
            let what = if worker.is_finished() {
                "panicked"
            } else {
                "hangs"
            };
            return Err(TestCaseError::fail(format!("{label}: the reader {what}")));
        };
        let _ = worker.join();
        let biggest = BIGGEST.load(Ordering::Relaxed);
        prop_assert!(
            biggest < ALLOC_LIMIT,
            "{label}: asked for {biggest} bytes at once"
        );
        opened.set(opened.get() + u64::from(!o.refused));
        records.set(records.get() + o.records);
        errors.set(errors.get() + o.errors);
        Ok(())
    });
    eprintln!(
        "fuzz {label}: {cases} cases, {} opened, {} records, {} errors reported",
        opened.get(),
        records.get(),
        errors.get()
    );
    if let Err(e) = result {
        panic!("{label}: {e}");
    }
}

const CASES: u32 = 300;

#[test]
fn fuzz_jsonl() {
    fuzz("jsonl", fixture("small.jsonl"), How::Stream, CASES);
    // Compressed: the compressed bytes mutated, and mutated text compressed.
    fuzz(
        "jsonl.gz",
        gzip(&fixture("small.jsonl")),
        How::Stream,
        CASES / 3,
    );
    fuzz_then(
        "jsonl then gzip",
        fixture("small.jsonl"),
        How::Stream,
        CASES / 3,
        |b| gzip(&b),
    );
    // A converted recording's scope and summary lines.
    let carried = fixture("small-carried.jsonl");
    fuzz("jsonl carried", carried, How::Stream, CASES / 3);
}

#[test]
fn fuzz_cpt() {
    fuzz("cpt", fixture("small.cpt"), How::Stream, CASES);
    fuzz("cpt zstd", fixture("small-zstd.cpt"), How::Stream, CASES);
    let carried = fixture("small-carried.cpt");
    fuzz("cpt carried", carried, How::Stream, CASES / 3);
}

#[test]
fn fuzz_chrome() {
    fuzz("chrome", fixture("chrome.json"), How::Stream, CASES);
    fuzz(
        "chrome array",
        fixture("chrome-array.json"),
        How::Stream,
        CASES,
    );
    fuzz(
        "chrome.xz",
        xz(&fixture("chrome.json")),
        How::Stream,
        CASES / 3,
    );
    fuzz_then(
        "chrome then xz",
        fixture("chrome.json"),
        How::Stream,
        CASES / 3,
        |b| xz(&b),
    );
}

#[test]
fn fuzz_spans() {
    fuzz("otlp", fixture("otlp.json"), How::Stream, CASES);
    fuzz("jaeger", fixture("jaeger.json"), How::Stream, CASES);
    // A plain file: read in place when it is one whole document.
    fuzz("otlp file", fixture("otlp.json"), How::File, CASES);
    fuzz("jaeger file", fixture("jaeger.json"), How::File, CASES);
    fuzz(
        "jaeger.bz2",
        bzip2(&fixture("jaeger.json")),
        How::Stream,
        CASES / 3,
    );
    fuzz_then(
        "jaeger then bzip2",
        fixture("jaeger.json"),
        How::Stream,
        CASES / 3,
        |b| bzip2(&b),
    );
}

#[test]
fn fuzz_kineto() {
    // One rank, two steps of crates/gpu/tests/gen/gen_kineto.py.
    fuzz("kineto", fixture("kineto.json"), How::Stream, CASES);
    fuzz("kineto step", fixture("kineto.json"), How::Step, CASES);
    fuzz_then(
        "kineto step then gzip",
        fixture("kineto.json"),
        How::Step,
        CASES / 3,
        |b| gzip(&b),
    );
    fuzz_then(
        "kineto then gzip",
        fixture("kineto.json"),
        How::Stream,
        CASES / 3,
        |b| gzip(&b),
    );
}

#[test]
fn fuzz_annotations() {
    fuzz("annotations", fixture("annot.bin"), How::File, CASES);
}

#[test]
fn fuzz_perf_data() {
    fuzz("perf.data", fixture("perf.data"), How::File, CASES / 2);
    // The sizes, offsets and counts a reader trusts before it reads: the
    // header's fields, the feature table and each feature section's start.
    let base = fixture("perf.data");
    let words = perf_header_words(&base);
    let word = (prop::sample::select(words), extreme()).prop_map(|(i, w)| Mutation::Word(i, w));
    let strategy = prop::collection::vec(word, 1..4).boxed();
    fuzz_with(
        "perf.data header",
        base,
        How::File,
        CASES / 2,
        strategy,
        |b| b,
    );
    // perf's pipe format (`perf record -o -` saved) and a compressed file
    // (`perf record -z`): records standing for the header, zstd frames.
    let os = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../os/tests/fixtures");
    for name in ["rename_pipe.data", "rename_z.data"] {
        let base = std::fs::read(os.join(name)).unwrap();
        fuzz(name, base, How::File, CASES / 4);
    }
}

/// Values a damaged length or count field may hold.
fn extreme() -> impl Strategy<Value = u64> {
    prop_oneof![
        Just(0),
        Just(1),
        Just(u64::MAX),
        Just(u64::from(u32::MAX)),
        Just(0xffff_ffff_0000_0000),
        Just(1 << 40),
        any::<u64>(),
        0..4096u64,
    ]
}

/// The offsets of the 8-byte fields of a perf.data header, its feature
/// table and the first words of each feature section.
fn perf_header_words(b: &[u8]) -> Vec<usize> {
    let u = |at: usize| u64::from_le_bytes(b[at..at + 8].try_into().unwrap()) as usize;
    let mut words: Vec<usize> = (16..72).step_by(8).collect();
    let features: u32 = (72..104).map(|i| b[i].count_ones()).sum();
    let table = u(40) + u(48);
    for k in 0..features as usize {
        let entry = table + 16 * k;
        words.extend([entry, entry + 8]);
        let section = u(entry);
        words.extend([section, section + 4, section + 8]);
    }
    words.retain(|&i| i + 8 <= b.len());
    words
}
