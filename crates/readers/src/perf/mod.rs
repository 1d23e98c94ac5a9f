//! perf.data decoding: the record stream of the file ([`records`]) and the
//! tracepoint layouts stored in it ([`tracefmt`]).

pub mod records;
pub mod tracefmt;
