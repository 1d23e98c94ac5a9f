//! perf.data decoding: the file and its repair ([`file`]), the thread names
//! it records ([`names`]), its record
//! stream ([`records`]) without the samples it holds twice
//! ([`repeats`]), the tracepoint layouts stored in it
//! ([`tracefmt`]), tracepoint samples decoded into kernel events
//! ([`decode`], [`kevent`]), kernel function names ([`symbols`]), and all
//! of it together: the kernel events of a file in time order ([`events`]).

pub mod decode;
pub mod events;
pub mod file;
pub mod kevent;
pub mod names;
pub mod records;
pub mod repeats;
pub mod symbols;
pub mod tracefmt;

pub use decode::{CORE_TRACEPOINTS, NET_TRACEPOINTS, SYSCALL_TRACEPOINTS};
pub use events::{recorder_path, recorder_pid, KernelEvents, Step};
pub use kevent::{Comm, KEvent, KRecord};
