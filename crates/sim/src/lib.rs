//! critpath-sim: the discrete-event model behind `critpath demo`, and the
//! synthetic traces of `critpath bench` ([`synth`], [`deps`]).
//!
//! A sending host runs a UDP stream: the application's send loop, the
//! kernel's UDP and IP layers and the e1000 driver as software state
//! machines at function granularity (with netfilter hooks when enabled, and
//! IP fragmentation plus a software checksum when the payload exceeds the
//! MTU), all on one CPU. The driver posts descriptors into a transmit ring
//! that blocks it when full. The NIC is the paper's three state machines
//! (Descriptor Fetch, Transmit with its "DMA packet" state, TX FIFO onto a
//! 10 Gb/s link), sharing one I/O bus (PCI or PCI-X) with arbitration
//! overhead for descriptor reads, packet DMA and descriptor write-backs.
//!
//! Every component records through critpath's event model (`state`, `wait`,
//! `send`, `recv`), as the paper's `begin`/`wait` calls in M5 did, and the
//! records stream straight into a sink (the engine, a trace file). The model
//! knows nothing of critical paths.

pub mod deps;
mod params;
mod sim;
pub mod synth;

pub use params::{ParamInfo, Params};
pub use sim::{simulate, Bus, Config, Outcome};
