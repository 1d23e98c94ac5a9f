//! critpath-os: the OS execution graph. Kernel events decoded from a
//! perf.data recording, and the annotations the SDKs write, become state
//! machines: one per thread (`COMM:TID`), one life per interrupt, softirq
//! and timer expiry, with wakeups, packets and timer arming as causal links.

pub mod annotations;
pub mod names;
pub mod observer;
pub mod osgraph;
pub mod perf;
pub mod recorder;
pub mod syscalls;

pub use annotations::AnnotSource;
pub use names::{OsSm, OsState};
pub use observer::KernelObserver;
pub use perf::PerfSource;
