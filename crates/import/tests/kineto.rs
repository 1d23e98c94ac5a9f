//! Kineto traces reach critpath-gpu through `open` and the multi-file
//! merge.

use critpath_import::{multi, open, Format};
use critpath_trace::RecordSource;
use std::path::{Path, PathBuf};
use std::process::Command;

#[test]
fn a_gzip_kineto_trace_opens_as_kineto() {
    let crate_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let Some(p) = [
        "../../../shared/data/kineto",
        "../../../../shared/data/kineto",
    ]
    .iter()
    .map(|d| crate_dir.join(d).join("cuda_event_sync.pt.trace.json.gz"))
    .find(|p| p.exists()) else {
        eprintln!("note: the shared Kineto traces are absent; test skipped");
        return;
    };
    let mut src = open(&p).unwrap();
    assert_eq!(src.format(), Format::Kineto);
    let mut n = 0;
    while src.next_record().unwrap().is_some() {
        n += 1;
    }
    assert!(n > 50, "{n}");
}

#[test]
fn kineto_ranks_merge_aligned_on_their_collectives() {
    let dir = tempfile::tempdir().unwrap();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../gpu/tests/gen/gen_kineto.py");
    let ok = Command::new("python3")
        .arg(script)
        .arg(dir.path())
        .args(["--ranks", "2", "--steps", "2", "--offset-us", "500"])
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        eprintln!("note: python3 could not run the generator; test skipped");
        return;
    }
    let paths: Vec<PathBuf> = (0..2)
        .map(|r| dir.path().join(format!("rank{r}.pt.trace.json")))
        .collect();
    let al = multi::align(&paths).unwrap();
    assert_eq!(al.offsets[1].offset_ns, 500_000);
    assert_eq!(al.offsets[1].method, "collectives");
    let mut src = multi::MergedSource::new(&paths, &al).unwrap();
    let mut last = 0;
    while let Some((r, _)) = src.next_record().unwrap() {
        assert!(r.t >= last);
        last = r.t;
    }
    assert!(src.strings().get("rank1/gpu0:stream20").is_some());
}

#[test]
fn more_ranks_than_one_analysis_takes_are_refused_before_they_are_opened() {
    // 65,537 names of one small rank trace (symbolic links): they were all
    // opened at once before the count was checked ("Too many open files"
    // past the descriptors' limit, before the limit of ranks was said).
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("rank.json");
    std::fs::write(
        &trace,
        r#"{"schemaVersion": 1, "deviceProperties": [], "distributedInfo": {"rank": 0}, "traceEvents": [
        {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 0, "dur": 50}]}"#,
    )
    .unwrap();
    let n = critpath_gpu::source::MAX_RANKS + 1;
    let paths: Vec<PathBuf> = (0..n)
        .map(|i| {
            let p = dir.path().join(format!("r{i}.json"));
            std::os::unix::fs::symlink(&trace, &p).unwrap();
            p
        })
        .collect();
    let err = match critpath_import::open_gpu(&paths, &Default::default()) {
        Err(e) => e,
        Ok(_) => panic!("{n} ranks were opened"),
    };
    assert!(
        err.message.contains("at most 65536 ranks together"),
        "{}",
        err.message
    );
    assert!(err.file.ends_with("r0.json"), "{}", err.file);
}
