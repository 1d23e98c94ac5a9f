//! The items the GPU pipeline sorts on disk past a budget
//! (`critpath_readers::extsort`), each with its order and its encoding:
//! events by correlation ([`ByCorr`]), event records and their lookups by
//! the record's correlation ([`RecordRef`]), GPU ops by stream
//! ([`StreamOp`]) and everything the time-ordered pass reads ([`Pass`]).

use crate::kineto::{Ev, Kind};
use critpath_readers::extsort::{Fields, Spill};
use std::cmp::Ordering;

/// A CUDA stream: (device, stream id).
pub type StreamKey = (i64, i64);

/// Orders an item by its key alone.
macro_rules! ord_by_key {
    ($t:ty) => {
        impl PartialEq for $t {
            fn eq(&self, o: &Self) -> bool {
                self.key() == o.key()
            }
        }
        impl Eq for $t {}
        impl PartialOrd for $t {
            fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
                Some(self.cmp(o))
            }
        }
        impl Ord for $t {
            fn cmp(&self, o: &Self) -> Ordering {
                self.key().cmp(&o.key())
            }
        }
    };
}

fn put_u64(out: &mut Vec<u8>, v: u64) {
    out.extend_from_slice(&v.to_le_bytes());
}

fn put_i64(out: &mut Vec<u8>, v: i64) {
    put_u64(out, v as u64);
}

fn put_u32(out: &mut Vec<u8>, v: u32) {
    out.extend_from_slice(&v.to_le_bytes());
}

fn i64_of(f: &mut Fields) -> i64 {
    f.u64() as i64
}

fn put_key(out: &mut Vec<u8>, k: StreamKey) {
    put_i64(out, k.0);
    put_i64(out, k.1);
}

fn key_of(f: &mut Fields) -> StreamKey {
    (i64_of(f), i64_of(f))
}

fn kind_code(k: Kind) -> u8 {
    match k {
        Kind::CpuOp => 0,
        Kind::Runtime => 1,
        Kind::Annotation => 2,
        Kind::GpuOp => 3,
        Kind::Sync => 4,
    }
}

fn kind_of(c: u8) -> Kind {
    match c {
        0 => Kind::CpuOp,
        1 => Kind::Runtime,
        2 => Kind::Annotation,
        3 => Kind::GpuOp,
        _ => Kind::Sync,
    }
}

fn put_ev(out: &mut Vec<u8>, e: &Ev) {
    out.push(kind_code(e.kind));
    put_u32(out, e.name);
    for v in [e.ts, e.dur] {
        put_u64(out, v);
    }
    for v in [e.pid, e.tid, e.corr, e.stream, e.device] {
        put_i64(out, v);
    }
    put_i64(out, e.wait_stream);
    put_i64(out, e.wait_record_corr);
    for v in [e.coll_name, e.coll_group, e.coll_ranks] {
        put_u32(out, v);
    }
    put_u64(out, e.index);
}

fn ev_of(f: &mut Fields) -> Ev {
    Ev {
        kind: kind_of(f.u8()),
        name: f.u32(),
        ts: f.u64(),
        dur: f.u64(),
        pid: i64_of(f),
        tid: i64_of(f),
        corr: i64_of(f),
        stream: i64_of(f),
        device: i64_of(f),
        wait_stream: i64_of(f),
        wait_record_corr: i64_of(f),
        coll_name: f.u32(),
        coll_group: f.u32(),
        coll_ranks: f.u32(),
        index: f.u64(),
    }
}

/// An event keyed for the join by correlation: within one correlation the
/// `cuda_sync` events come first ([`ByCorr::SYNC`]), then the runtime
/// calls, then the GPU ops, each in file order. Events that join nothing
/// (CPU ops, and what has no correlation) share correlation -1.
#[derive(Clone, Copy, Debug)]
pub struct ByCorr {
    pub corr: i64,
    pub class: u8,
    pub ev: Ev,
}

impl ByCorr {
    pub const SYNC: u8 = 0;
    pub const CALL: u8 = 1;
    pub const GPU: u8 = 2;

    fn key(&self) -> (i64, u8, u64) {
        (self.corr, self.class, self.ev.index)
    }
}
ord_by_key!(ByCorr);

impl Spill for ByCorr {
    fn put(&self, out: &mut Vec<u8>) {
        put_i64(out, self.corr);
        out.push(self.class);
        put_ev(out, &self.ev);
    }
    fn take(b: &[u8]) -> Self {
        let mut f = Fields::new(b);
        ByCorr {
            corr: i64_of(&mut f),
            class: f.u8(),
            ev: ev_of(&mut f),
        }
    }
}

/// A `cudaEventRecord` call's time ([`RecordRef::RECORD`]), or a
/// synchronization that looks the record up ([`RecordRef::LOOKUP`]) with
/// the stream it names, keyed by the record's correlation.
#[derive(Clone, Copy, Debug)]
pub struct RecordRef {
    pub corr: i64,
    pub class: u8,
    pub index: u64,
    pub ts: u64,
    pub stream: StreamKey,
}

impl RecordRef {
    pub const RECORD: u8 = 0;
    pub const LOOKUP: u8 = 1;

    fn key(&self) -> (i64, u8, u64) {
        (self.corr, self.class, self.index)
    }
}
ord_by_key!(RecordRef);

impl Spill for RecordRef {
    fn put(&self, out: &mut Vec<u8>) {
        put_i64(out, self.corr);
        out.push(self.class);
        put_u64(out, self.index);
        put_u64(out, self.ts);
        put_key(out, self.stream);
    }
    fn take(b: &[u8]) -> Self {
        let mut f = Fields::new(b);
        RecordRef {
            corr: i64_of(&mut f),
            class: f.u8(),
            index: f.u64(),
            ts: f.u64(),
            stream: key_of(&mut f),
        }
    }
}

/// The runtime call that launched a GPU op: its start and thread (pid,
/// tid).
pub type Launch = Option<(u64, (i64, i64))>;

fn put_launch(out: &mut Vec<u8>, l: Launch) {
    out.push(u8::from(l.is_some()));
    let (ts, (pid, tid)) = l.unwrap_or((0, (0, 0)));
    put_u64(out, ts);
    put_i64(out, pid);
    put_i64(out, tid);
}

fn launch_of(f: &mut Fields) -> Launch {
    let some = f.u8() != 0;
    let (ts, pid, tid) = (f.u64(), i64_of(f), i64_of(f));
    some.then_some((ts, (pid, tid)))
}

/// A GPU op kept for the analysis, with its launch, in stream order.
#[derive(Clone, Copy, Debug)]
pub struct StreamOp {
    pub ev: Ev,
    pub launch: Launch,
}

impl StreamOp {
    fn key(&self) -> (i64, i64, u64, u64) {
        (self.ev.device, self.ev.stream, self.ev.ts, self.ev.index)
    }
}
ord_by_key!(StreamOp);

impl Spill for StreamOp {
    fn put(&self, out: &mut Vec<u8>) {
        put_ev(out, &self.ev);
        put_launch(out, self.launch);
    }
    fn take(b: &[u8]) -> Self {
        let mut f = Fields::new(b);
        StreamOp {
            ev: ev_of(&mut f),
            launch: launch_of(&mut f),
        }
    }
}

/// What a CPU call waits for on the GPU (see `pass`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WaitKind {
    None,
    /// A synchronous `cudaMemcpy`: its own copy.
    Memcpy,
    /// `Event Sync`: the op the record (by correlation) captured.
    EventSync {
        record: i64,
        stream: StreamKey,
    },
    /// `Stream Sync`: the last op started on the stream.
    StreamSync(StreamKey),
    /// `Context Sync`: the last op started on every stream of the device.
    ContextSync(i64),
    /// `cudaDeviceSynchronize` without a sync event: every stream.
    DeviceAll,
    /// `cudaStreamSynchronize` without a sync event: the stream the thread
    /// launched on last.
    StreamLast,
    /// `cudaStreamWaitEvent`: the next op launched on `dest` by the thread
    /// waits for the op the record captured on `recorded`.
    StreamWait {
        record: i64,
        dest: StreamKey,
        recorded: StreamKey,
    },
}

fn put_wait(out: &mut Vec<u8>, w: WaitKind) {
    let (tag, a, k1, k2) = match w {
        WaitKind::None => (0, 0, (0, 0), (0, 0)),
        WaitKind::Memcpy => (1, 0, (0, 0), (0, 0)),
        WaitKind::EventSync { record, stream } => (2, record, stream, (0, 0)),
        WaitKind::StreamSync(k) => (3, 0, k, (0, 0)),
        WaitKind::ContextSync(d) => (4, d, (0, 0), (0, 0)),
        WaitKind::DeviceAll => (5, 0, (0, 0), (0, 0)),
        WaitKind::StreamLast => (6, 0, (0, 0), (0, 0)),
        WaitKind::StreamWait {
            record,
            dest,
            recorded,
        } => (7, record, dest, recorded),
    };
    out.push(tag);
    put_i64(out, a);
    put_key(out, k1);
    put_key(out, k2);
}

fn wait_of(f: &mut Fields) -> WaitKind {
    let (tag, a, k1, k2) = (f.u8(), i64_of(f), key_of(f), key_of(f));
    match tag {
        1 => WaitKind::Memcpy,
        2 => WaitKind::EventSync {
            record: a,
            stream: k1,
        },
        3 => WaitKind::StreamSync(k1),
        4 => WaitKind::ContextSync(a),
        5 => WaitKind::DeviceAll,
        6 => WaitKind::StreamLast,
        7 => WaitKind::StreamWait {
            record: a,
            dest: k1,
            recorded: k2,
        },
        _ => WaitKind::None,
    }
}

/// What the join learnt about a CPU call: how it waits, and the GPU ops it
/// launched (op index, stream), in file order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CallInfo {
    pub wait: WaitKind,
    pub launched: Vec<(u64, StreamKey)>,
}

/// An item of the time-ordered pass over one rank.
#[derive(Clone, Debug)]
pub enum Pass {
    /// A `cudaEventRecord` that synchronizations look up: at its time, the
    /// op launched last before it on each stream named, with how many
    /// synchronizations will ask.
    Record {
        ts: u64,
        corr: i64,
        streams: Vec<(StreamKey, u32)>,
    },
    /// A CPU op (operator or runtime call) in the window.
    Call { ev: Ev, info: CallInfo },
    /// A GPU op with its effective (start, end) and launch.
    Op {
        ev: Ev,
        start: u64,
        end: u64,
        launch: Launch,
    },
}

impl Pass {
    /// When it happens: a record's call, a CPU op's or GPU op's start.
    pub fn t(&self) -> u64 {
        match self {
            Pass::Record { ts, .. } => *ts,
            Pass::Call { ev, .. } | Pass::Op { ev, .. } => ev.ts,
        }
    }

    /// Time, then records, calls (longer first) and ops, then file order.
    fn key(&self) -> (u64, u8, u64, u64) {
        let t = self.t();
        match self {
            Pass::Record { corr, .. } => (t, 0, 0, *corr as u64),
            Pass::Call { ev, .. } => (t, 1, u64::MAX - ev.dur, ev.index),
            Pass::Op { ev, .. } => (t, 2, 0, ev.index),
        }
    }
}
ord_by_key!(Pass);

impl Spill for Pass {
    fn put(&self, out: &mut Vec<u8>) {
        match self {
            Pass::Record { ts, corr, streams } => {
                out.push(0);
                put_u64(out, *ts);
                put_i64(out, *corr);
                put_u32(out, streams.len() as u32);
                for &(k, n) in streams {
                    put_key(out, k);
                    put_u32(out, n);
                }
            }
            Pass::Call { ev, info } => {
                out.push(1);
                put_ev(out, ev);
                put_wait(out, info.wait);
                put_u32(out, info.launched.len() as u32);
                for &(op, k) in &info.launched {
                    put_u64(out, op);
                    put_key(out, k);
                }
            }
            Pass::Op {
                ev,
                start,
                end,
                launch,
            } => {
                out.push(2);
                put_ev(out, ev);
                put_u64(out, *start);
                put_u64(out, *end);
                put_launch(out, *launch);
            }
        }
    }

    fn take(b: &[u8]) -> Self {
        let mut f = Fields::new(b);
        match f.u8() {
            0 => {
                let (ts, corr) = (f.u64(), i64_of(&mut f));
                let n = f.u32();
                let streams = (0..n).map(|_| (key_of(&mut f), f.u32())).collect();
                Pass::Record { ts, corr, streams }
            }
            1 => {
                let ev = ev_of(&mut f);
                let wait = wait_of(&mut f);
                let n = f.u32();
                let launched = (0..n).map(|_| (f.u64(), key_of(&mut f))).collect();
                Pass::Call {
                    ev,
                    info: CallInfo { wait, launched },
                }
            }
            _ => Pass::Op {
                ev: ev_of(&mut f),
                start: f.u64(),
                end: f.u64(),
                launch: launch_of(&mut f),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(kind: Kind, index: u64) -> Ev {
        Ev {
            kind,
            name: 3,
            ts: 1_700_000_000_123_456,
            dur: 42,
            pid: -1,
            tid: 77,
            corr: 9,
            stream: 7,
            device: 0,
            wait_stream: 20,
            wait_record_corr: -1,
            coll_name: crate::kineto::NO_NAME,
            coll_group: 5,
            coll_ranks: 6,
            index,
        }
    }

    fn round<T: Spill>(x: &T) -> T {
        let mut b = Vec::new();
        x.put(&mut b);
        T::take(&b)
    }

    #[test]
    fn every_item_survives_the_disk() {
        let e = ev(Kind::Runtime, 4);
        let j = ByCorr {
            corr: 9,
            class: ByCorr::GPU,
            ev: e,
        };
        assert_eq!(round(&j).ev, e);
        assert_eq!(round(&j).key(), j.key());
        let r = RecordRef {
            corr: 3,
            class: RecordRef::LOOKUP,
            index: 8,
            ts: 5,
            stream: (1, -2),
        };
        assert_eq!((round(&r).ts, round(&r).stream), (5, (1, -2)));
        let s = StreamOp {
            ev: e,
            launch: Some((3, (-4, 5))),
        };
        assert_eq!(round(&s).launch, Some((3, (-4, 5))));
        let waits = [
            WaitKind::None,
            WaitKind::Memcpy,
            WaitKind::EventSync {
                record: 4,
                stream: (0, 7),
            },
            WaitKind::StreamSync((1, 2)),
            WaitKind::ContextSync(3),
            WaitKind::DeviceAll,
            WaitKind::StreamLast,
            WaitKind::StreamWait {
                record: 5,
                dest: (0, 20),
                recorded: (0, 7),
            },
        ];
        for wait in waits {
            let info = CallInfo {
                wait,
                launched: vec![(11, (0, 7)), (12, (0, 20))],
            };
            let p = Pass::Call { ev: e, info };
            match (round(&p), p) {
                (Pass::Call { ev: a, info: x }, Pass::Call { ev: b, info: y }) => {
                    assert_eq!((a, x), (b, y));
                }
                _ => panic!("not a call"),
            }
        }
        let rec = Pass::Record {
            ts: 9,
            corr: 2,
            streams: vec![((0, 7), 2)],
        };
        assert!(
            matches!(round(&rec), Pass::Record { ts: 9, corr: 2, streams } if streams == vec![((0, 7), 2)])
        );
        let op = Pass::Op {
            ev: e,
            start: 1,
            end: 2,
            launch: None,
        };
        assert!(matches!(
            round(&op),
            Pass::Op {
                start: 1,
                end: 2,
                launch: None,
                ..
            }
        ));
    }
}
