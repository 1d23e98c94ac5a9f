//! The shared real traces against HTA 0.5.0's results (hta-results.json).

mod common;

use common::{run, shared, top};
use critpath_gpu::{open_with, GpuOptions};

#[test]
fn alexnet_whole_trace() {
    let Some(p) = shared("alexnet.pt.trace.json.gz") else { return };
    let (a, b) = run(open_with(&p, &GpuOptions::default()).unwrap());
    eprintln!("{:?}\n{:?}\n{:?}\n{:?}", a.critical_path, b, top(&a, 8), a.diagnostics);
}

#[test]
fn cuda_event_sync_step() {
    let Some(p) = shared("cuda_event_sync.pt.trace.json.gz") else { return };
    let opts = GpuOptions { annotation: Some("ProfilerStep".into()), instance: 0 };
    let (a, b) = run(open_with(&p, &opts).unwrap());
    eprintln!("{:?}\n{:?}\n{:?}\n{:?}", a.critical_path, b, top(&a, 8), a.diagnostics);
    for s in a.path.as_ref().unwrap() { eprintln!("{:?}", s); }
}

#[test]
fn nccl_rank0() {
    let Some(p) = shared("nccl_rank0.json.gz") else { return };
    let opts = GpuOptions { annotation: Some("ProfilerStep".into()), instance: 0 };
    let (a, b) = run(open_with(&p, &opts).unwrap());
    eprintln!("{:?}\n{:?}\n{:?}\n{:?}", a.critical_path, b, top(&a, 8), a.diagnostics);
}
