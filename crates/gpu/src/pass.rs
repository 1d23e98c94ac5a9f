//! One rank's records, made in one pass over its events in time order
//! (`join` sorted them), holding only what is in flight: each thread's
//! open ops, each stream's last op and latest launches, the event records
//! and synchronizations not yet answered.
//!
//! What each synchronization waits for, as HTA reads the `cuda_sync`
//! events of recent profilers:
//! - `Context Sync` (cudaDeviceSynchronize): the last op started on every
//!   stream of the device by the call's end;
//! - `Stream Sync` (cudaStreamSynchronize): the last op started on its
//!   stream by the call's end;
//! - `Event Sync` (cudaEventSynchronize): the op launched on the recorded
//!   stream just before the matching cudaEventRecord;
//! - `Stream Wait Event` (cudaStreamWaitEvent): the next op the thread
//!   launches on the waiting stream waits for that same op;
//! - a synchronous cudaMemcpy: its own copy.
//!
//! Without `cuda_sync` events, cudaDeviceSynchronize waits for every
//! stream and cudaStreamSynchronize for the stream the thread launched on
//! last. A call's waits are settled at its end, when every op that could
//! answer it has started; its thread's records wait until then.

use crate::emit::{class, link, Emitter, Role, BETWEEN_OPS, IDLE};
use crate::items::{CallInfo, Launch, Pass, StreamKey, WaitKind};
use crate::join::Prepared;
use crate::kineto::Ev;
use colls::waits_for_collective;
use critpath_readers::extsort::disk_error;
use critpath_trace::{Event, LinkId, ReadError, Sym, Who};
use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::rc::Rc;

mod colls;

/// GPU ops a CPU call waited for: (end on the aligned clock, op, stream).
type Awaited = Vec<(u64, u64, StreamKey)>;

/// A CPU op on its thread; `awaited` is set once its waits are settled.
struct CallLive {
    name: Sym,
    awaited: RefCell<Option<Awaited>>,
    /// A CPU collective's part across ranks and its issue (`colls`).
    coll: Option<colls::CollCall>,
}

type Call = Rc<CallLive>;

struct ThreadLive {
    /// (pid, tid).
    key: (i64, i64),
    sm: Sym,
    /// Its transitions' group; its launches' sends' is the next one.
    group: u32,
    /// Open ops: (end, op).
    stack: Vec<(u64, Call)>,
    /// Transitions (time, innermost op) not yet made into records: the
    /// last one waits for its successor, the others for their waits.
    queue: VecDeque<(u64, Option<Call>)>,
}

/// A stream's launches, as far back as "launched last before t" reaches:
/// the ops (event index, launching thread) of the latest launch time, and
/// the op launched before them. Ops launched at one time are in file order
/// (event index), the order their stream runs them in.
#[derive(Default)]
struct LaunchLog {
    at: u64,
    ops: Vec<(u64, Option<i64>)>,
    before: Option<u64>,
}

impl LaunchLog {
    fn add(&mut self, t: u64, op: u64, tid: Option<i64>) {
        if self.ops.is_empty() || t > self.at {
            if let Some(last) = self.last_now() {
                self.before = Some(last);
            }
            self.ops.clear();
            self.at = t;
        }
        self.ops.push((op, tid));
    }

    /// The last of the ops launched at the latest time.
    fn last_now(&self) -> Option<u64> {
        self.ops.iter().map(|o| o.0).max()
    }

    /// The op launched last strictly before `t`.
    fn last_before(&self, t: u64) -> Option<u64> {
        match self.last_now() {
            Some(op) if self.at < t => Some(op),
            _ => self.before,
        }
    }

    /// The first op thread `tid` launched at `t`, if `t` is the latest time.
    fn first_by_at(&self, tid: i64, t: u64) -> Option<u64> {
        let now = (self.at == t).then_some(&self.ops).into_iter().flatten();
        now.filter(|o| o.1 == Some(tid)).map(|o| o.0).min()
    }
}

/// A map keyed by what the input names (threads, correlations, ops).
type Map<K, V> = HashMap<K, V, ahash::RandomState>;

/// Started ops a stream remembers for event records that name them.
const RECENT: usize = 8;

struct StreamLive {
    sm: Sym,
    group: u32,
    /// The last op started: (op, end on the aligned clock).
    last: Option<(u64, u64)>,
    recent: VecDeque<(u64, u64)>,
    /// The end of the previous op, for the records.
    prev_end: Option<u64>,
    log: LaunchLog,
    /// cudaStreamWaitEvent calls waiting for the thread's next launch here:
    /// (thread, op waited for).
    waits: Vec<(i64, u64)>,
}

/// An op some synchronization will ask about: how many will, and its end
/// and stream once it started.
struct Watch {
    refs: u32,
    seen: Option<(u64, StreamKey)>,
}

/// What a call's waits are settled from at its end.
enum Target {
    Op(Option<u64>),
    Stream(Option<StreamKey>),
    Device(Option<i64>),
}

struct Due {
    call: Call,
    /// The calling thread's index in [`Threads`].
    thread: u32,
    target: Target,
}

/// Where a rank's records go and how they are named and aligned.
pub struct RankCtx<'a> {
    pub prefix: String,
    /// Added to the rank's times to align its clock.
    pub shift: i128,
    /// The rank's input index (link ids are per input).
    pub index: usize,
    pub roles: &'a HashMap<u64, Role>,
    /// The first record group of the rank's SMs.
    pub base: u32,
}

/// The rank's CPU threads in the order the join found them, and their
/// indexes by (pid, tid): a call's thread is looked up once.
#[derive(Default)]
struct Threads {
    live: Vec<ThreadLive>,
    index: Map<(i64, i64), u32>,
}

impl Threads {
    fn add(&mut self, th: ThreadLive) {
        self.index.insert(th.key, self.live.len() as u32);
        self.live.push(th);
    }

    fn get(&self, key: &(i64, i64)) -> Option<&ThreadLive> {
        self.index.get(key).map(|&i| &self.live[i as usize])
    }

    fn index(&self, key: (i64, i64)) -> u32 {
        *self.index.get(&key).expect("threads are known")
    }
}

struct RankPass<'a> {
    out: &'a mut Emitter,
    ctx: RankCtx<'a>,
    prep_names: &'a crate::kineto::Names,
    syms: Vec<u32>,
    threads: Threads,
    streams: BTreeMap<StreamKey, StreamLive>,
    last_stream: Map<i64, StreamKey>,
    /// Event records by correlation: (stream, op launched last before the
    /// record, lookups to come).
    records: Map<i64, Vec<(StreamKey, Option<u64>, u32)>>,
    watch: Map<u64, Watch>,
    /// Ops that wait for other streams' ops before they start.
    dests: Map<u64, Vec<u64>>,
    /// Calls whose waits settle at their end: (end, order) -> call.
    due: BTreeMap<(u64, u64), Due>,
    seq: u64,
    links: u64,
    /// Synchronizations that named an event record the trace does not hold.
    unknown_records: u64,
    /// CPU ops that ended after the op they started in: cut at its end.
    cut_ops: u64,
    /// GPU ops that start before the call their correlation id names.
    late: LateLaunches,
    colls: colls::Issued,
}

/// GPU ops that start before the CUDA call their correlation id names as
/// their launch (an id that several calls have: the last is taken), which
/// cannot have launched them: how many, and the first, described.
#[derive(Debug, Default)]
pub struct LateLaunches {
    pub count: u64,
    pub first: Option<String>,
}

/// What a rank's pass did, beside its records.
pub struct Done {
    /// The next free record group.
    pub group: u32,
    /// Synchronizations (`cudaStreamWaitEvent`, `cudaEventSynchronize`)
    /// that named an event record the trace (or its window) does not hold:
    /// they wait for nothing.
    pub unknown_records: u64,
    /// CPU ops that ended after the op they started in (overlapping it
    /// without nesting in it): each is cut at that op's end.
    pub cut_ops: u64,
    pub late: LateLaunches,
}

/// Makes one rank's records.
pub fn run(prep: Prepared, out: &mut Emitter, ctx: RankCtx) -> Result<Done, ReadError> {
    let Prepared {
        file,
        names,
        threads,
        streams,
        pass,
        ..
    } = prep;
    let mut p = RankPass {
        out,
        prep_names: &names,
        syms: Vec::new(),
        threads: Threads::default(),
        streams: BTreeMap::new(),
        last_stream: Map::default(),
        records: Map::default(),
        watch: Map::default(),
        dests: Map::default(),
        due: BTreeMap::new(),
        seq: 0,
        links: 0,
        unknown_records: 0,
        cut_ops: 0,
        late: LateLaunches::default(),
        colls: colls::Issued::default(),
        ctx,
    };
    let mut group = p.ctx.base;
    for &(pid, tid) in &threads {
        let sm = p.out.sym(&format!("{}thread:{tid}", p.ctx.prefix));
        let th = ThreadLive {
            key: (pid, tid),
            sm,
            group,
            stack: Vec::new(),
            queue: VecDeque::new(),
        };
        p.threads.add(th);
        group += 2;
    }
    for &(dev, s) in &streams.keys {
        let sm = p.out.sym(&format!("{}gpu{dev}:stream{s}", p.ctx.prefix));
        let live = StreamLive {
            sm,
            group,
            last: None,
            recent: VecDeque::new(),
            prev_end: None,
            log: LaunchLog::default(),
            waits: Vec::new(),
        };
        p.streams.insert((dev, s), live);
        group += 1;
    }
    let disk = |e| disk_error(&file, "read back the trace's events from", e);
    let mut sorted = pass.finish().map_err(disk)?.read_ahead();
    while let Some(item) = sorted.next_item().map_err(disk)? {
        p.item(item);
    }
    p.settle_before(u64::MAX);
    p.flush();
    Ok(Done {
        group,
        unknown_records: p.unknown_records,
        cut_ops: p.cut_ops,
        late: p.late,
    })
}

impl RankPass<'_> {
    fn at(&self, t: u64) -> u64 {
        (i128::from(t) + self.ctx.shift).max(0) as u64
    }

    fn sym(&mut self, name: u32) -> Sym {
        let i = name as usize;
        if self.syms.len() <= i {
            self.syms.resize(i + 1, u32::MAX);
        }
        if self.syms[i] == u32::MAX {
            self.syms[i] = self.out.sym(self.prep_names.get(name)).0;
        }
        Sym(self.syms[i])
    }

    fn fresh_link(&mut self) -> LinkId {
        self.links += 1;
        link(2, self.ctx.index, self.links)
    }

    fn item(&mut self, item: Pass) {
        self.settle_before(item.t());
        match item {
            Pass::Record { ts, corr, streams } => self.record(corr, ts, streams),
            Pass::Call { ev, info } => self.call(ev, info),
            Pass::Op {
                ev,
                start,
                end,
                launch,
            } => self.op(ev, start, end, launch),
        }
    }

    /// Settles the waits of calls that ended before `t`.
    fn settle_before(&mut self, t: u64) {
        while let Some(entry) = self.due.first_entry() {
            if entry.key().0 >= t {
                break;
            }
            let due = entry.remove();
            self.settle(due);
        }
    }

    /// The end of an op on the aligned clock: a collective's kernel ends no
    /// earlier than the last rank arrives.
    fn gpu_end(&self, op: u64, end: u64) -> u64 {
        let end = self.at(end);
        self.ctx.roles.get(&op).map_or(end, |r| end.max(r.release))
    }

    /// A cudaEventRecord: the op launched last before it on each stream
    /// that synchronizations will name.
    fn record(&mut self, corr: i64, ts: u64, streams: Vec<(StreamKey, u32)>) {
        let mut found = Vec::with_capacity(streams.len());
        for (key, refs) in streams {
            let Some(s) = self.streams.get(&key) else {
                found.push((key, None, refs));
                continue;
            };
            let x = s.log.last_before(ts);
            if let Some(x) = x {
                let seen = s.recent.iter().find(|r| r.0 == x).map(|r| (r.1, key));
                let w = self.watch.entry(x).or_insert(Watch { refs: 0, seen });
                w.refs += refs;
            }
            found.push((key, x, refs));
        }
        self.records.insert(corr, found);
    }

    /// A synchronization's lookup of a record: the op it captured.
    fn take_record(&mut self, corr: i64, stream: StreamKey) -> Option<u64> {
        let Some(list) = self.records.get_mut(&corr) else {
            self.unknown_records += 1;
            return None;
        };
        let pos = list.iter().position(|r| r.0 == stream)?;
        let x = list[pos].1;
        list[pos].2 = list[pos].2.saturating_sub(1);
        if list[pos].2 == 0 {
            list.swap_remove(pos);
            if list.is_empty() {
                self.records.remove(&corr);
            }
        }
        x
    }

    /// One asker of a watched op is answered: its end and stream, once it
    /// started.
    fn take_watch(&mut self, op: u64) -> Option<(u64, StreamKey)> {
        let w = self.watch.get_mut(&op)?;
        let seen = w.seen;
        w.refs = w.refs.saturating_sub(1);
        if w.refs == 0 {
            self.watch.remove(&op);
        }
        seen
    }

    /// Op `op` launched on `key` at `t` (by thread `tid`, if known).
    fn launched(&mut self, key: StreamKey, t: u64, op: u64, tid: Option<i64>) {
        let Some(s) = self.streams.get_mut(&key) else {
            return;
        };
        s.log.add(t, op, tid);
        let Some(tid) = tid else {
            return;
        };
        let mut srcs = Vec::new();
        s.waits.retain(|&(w, x)| {
            let hit = w == tid;
            if hit {
                srcs.push(x);
            }
            !hit
        });
        if !srcs.is_empty() {
            self.dests.entry(op).or_default().extend(srcs);
        }
    }

    /// A cudaStreamWaitEvent at `t`: the next op `tid` launches on `dest`
    /// waits for `x`.
    fn stream_wait(&mut self, dest: StreamKey, t: u64, tid: i64, x: u64) {
        let Some(s) = self.streams.get_mut(&dest) else {
            self.take_watch(x);
            return;
        };
        if let Some(op) = s.log.first_by_at(tid, t) {
            self.dests.entry(op).or_default().push(x);
            return;
        }
        s.waits.push((tid, x));
    }

    fn call(&mut self, ev: Ev, info: CallInfo) {
        let key = self.threads.index((ev.pid, ev.tid));
        let coll = self.coll_call(&ev);
        let call = Rc::new(CallLive {
            name: self.sym(ev.name),
            awaited: RefCell::new(None),
            coll,
        });
        self.nest(key, &ev, &call);
        // The launches' sends are made when their ops start, if they bind.
        for &(g, skey) in &info.launched {
            self.launched(skey, ev.ts, g, Some(ev.tid));
        }
        // Of several ops launched at once, the last stands for them.
        let op_of = info.launched.last().copied();
        if let Some((_, k)) = op_of {
            self.last_stream.insert(ev.tid, k);
        }
        let target = match info.wait {
            WaitKind::None => None,
            WaitKind::Memcpy => op_of.map(|(g, k)| {
                let seen = self
                    .streams
                    .get(&k)
                    .and_then(|s| s.last)
                    .filter(|l| l.0 == g);
                let w = self.watch.entry(g).or_insert(Watch {
                    refs: 0,
                    seen: None,
                });
                w.refs += 1;
                w.seen = w.seen.or(seen.map(|l| (l.1, k)));
                Target::Op(Some(g))
            }),
            WaitKind::EventSync { record, stream } => {
                Some(Target::Op(self.take_record(record, stream)))
            }
            WaitKind::StreamSync(k) => Some(Target::Stream(Some(k))),
            WaitKind::ContextSync(d) => Some(Target::Device(Some(d))),
            WaitKind::DeviceAll => Some(Target::Device(None)),
            WaitKind::StreamLast => Some(Target::Stream(self.last_stream.get(&ev.tid).copied())),
            WaitKind::StreamWait {
                record,
                dest,
                recorded,
            } => {
                if let Some(x) = self.take_record(record, recorded) {
                    self.stream_wait(dest, ev.ts, ev.tid, x);
                }
                None
            }
        };
        match target {
            None => *call.awaited.borrow_mut() = Some(Vec::new()),
            Some(target) => {
                self.seq += 1;
                let due = Due {
                    call,
                    thread: key,
                    target,
                };
                self.due.insert((ev.end(), self.seq), due);
            }
        }
        self.emit_ready(key);
    }

    /// Enters `call` on its thread: ops that ended by its start are left,
    /// and it becomes the innermost op.
    fn nest(&mut self, thread: u32, ev: &Ev, call: &Call) {
        let th = &mut self.threads.live[thread as usize];
        while let Some(&(end, _)) = th.stack.last() {
            if end > ev.ts {
                break;
            }
            th.stack.pop();
            let top = th.stack.last().map(|x| x.1.clone());
            put(th, end, top);
        }
        let end = th.stack.last().map_or(ev.end(), |p| p.0.min(ev.end()));
        th.stack.push((end, call.clone()));
        put(th, ev.ts, Some(call.clone()));
        self.cut_ops += u64::from(end < ev.end());
    }

    /// A call's waits, settled at its end.
    fn settle(&mut self, due: Due) {
        let awaited: Awaited = match due.target {
            Target::Op(x) => x
                .and_then(|x| self.take_watch(x).map(|(e, k)| (e, x, k)))
                .into_iter()
                .collect(),
            Target::Stream(k) => k
                .and_then(|k| {
                    self.streams
                        .get(&k)
                        .and_then(|s| s.last)
                        .map(|l| (l.1, l.0, k))
                })
                .into_iter()
                .collect(),
            Target::Device(d) => self
                .streams
                .iter()
                .filter(|(k, _)| d.is_none_or(|d| k.0 == d))
                .filter_map(|(&k, s)| s.last.map(|l| (l.1, l.0, k)))
                .collect(),
        };
        *due.call.awaited.borrow_mut() = Some(awaited);
        self.emit_ready(due.thread);
    }

    /// Makes records of a thread's transitions whose successor is known
    /// and whose waits are settled.
    fn emit_ready(&mut self, thread: u32) {
        loop {
            let th = &mut self.threads.live[thread as usize];
            if th.queue.len() < 2 {
                return;
            }
            let settled = th.queue[0].1.as_ref();
            if !settled.is_none_or(|c| c.awaited.borrow().is_some()) {
                return;
            }
            let (t, op) = th.queue.pop_front().expect("two");
            let next = th.queue[0].0;
            let (key, sm, group) = (th.key, th.sm, th.group);
            self.transition(key, (sm, group), t, op, next);
        }
    }

    /// At the end: every thread leaves its open ops, and its transitions
    /// are made into records.
    fn flush(&mut self) {
        for thread in 0..self.threads.live.len() as u32 {
            let th = &mut self.threads.live[thread as usize];
            while let Some((end, _)) = th.stack.pop() {
                let top = th.stack.last().map(|x| x.1.clone());
                put(th, end, top);
            }
            self.emit_ready(thread);
            let th = &mut self.threads.live[thread as usize];
            let (key, sm, group) = (th.key, th.sm, th.group);
            if let Some((t, op)) = th.queue.pop_front() {
                self.transition(key, (sm, group), t, op, t);
            }
        }
    }

    /// A thread entering `op` (or no op) at `t` until `next`: a plain
    /// state, or an open wait left by the GPU ops it waits for that end
    /// meanwhile (each sends to it at its end).
    fn transition(
        &mut self,
        key: (i64, i64),
        (sm, group): (Sym, u32),
        t: u64,
        op: Option<Call>,
        next: u64,
    ) {
        let who = Who::Sm(sm);
        let issued = self.take_issued(key, t, next);
        if let Some(c) = op.as_ref().filter(|c| c.coll.is_some()) {
            self.coll_transition((who, group), (t, next), c);
            return;
        }
        let op_waits = |c: &Call| waits_for_collective(self.out.strings.resolve(c.name));
        if let Some(end) = issued.filter(|_| op.as_ref().is_none_or(op_waits)) {
            self.wait_issued((who, group), t, op.as_ref().map(|c| c.name), end);
            return;
        }
        let (t, next) = (self.at(t), self.at(next));
        let Some(op) = op else {
            let state = self.out.sym(BETWEEN_OPS);
            self.out
                .push(t, class::CPU, group, Event::State { who, state });
            return;
        };
        let state = op.name;
        let awaited = op.awaited.borrow();
        let mut ends: Vec<(u64, u64, StreamKey)> = awaited
            .iter()
            .flatten()
            .filter(|a| a.0 > t && a.0 <= next)
            .copied()
            .collect();
        ends.sort_unstable_by_key(|a| (a.0, a.1));
        if ends.is_empty() {
            self.out
                .push(t, class::CPU, group, Event::State { who, state });
            return;
        }
        let wait = Event::Wait {
            who,
            state,
            on: None,
            on_sys: None,
            on_state: None,
        };
        self.out.push(t, class::CPU, group, wait);
        // Every end is waited for: the open wait ends at the first, and the
        // time up to each later one (a device sync's other streams) is a
        // wait on that stream, not the call's own time.
        for (e, _, k) in ends {
            let id = self.fresh_link();
            let recv = Event::Recv {
                who,
                id,
                state,
                waited: true,
            };
            self.out.push(e, class::CPU, group, recv);
            self.send_at_end(k, e, id);
        }
    }

    /// The stream `k`'s op that ended at `e` sends `id` to its waiter.
    fn send_at_end(&mut self, k: StreamKey, e: u64, id: LinkId) {
        let s = &self.streams[&k];
        let send = Event::Send {
            who: Who::Sm(s.sm),
            id,
        };
        self.out.push(e, class::END_SEND, s.group, send);
    }

    /// A GPU op starting: its stream's records, and what it answers.
    fn op(&mut self, ev: Ev, start: u64, end: u64, launch: Launch) {
        let key = (ev.device, ev.stream);
        if launch.is_none() {
            self.launched(key, ev.ts, ev.index, None);
        }
        let op = ev.index;
        let gpu_end = self.gpu_end(op, end);
        let s = self.streams.get_mut(&key).expect("streams are known");
        s.last = Some((op, gpu_end));
        if s.recent.len() == RECENT {
            s.recent.pop_front();
        }
        s.recent.push_back((op, gpu_end));
        let (sm, group, prev_end) = (s.sm, s.group, s.prev_end);
        if let Some(w) = self.watch.get_mut(&op) {
            w.seen = Some((gpu_end, key));
        }
        let who = Who::Sm(sm);
        let idle = self.out.sym(IDLE);
        let start = self.at(start);
        let called = launch.map(|l| l.0);
        let launch = launch.map(|(l, by)| (self.at(l), by));
        let mut since = prev_end;
        if prev_end.is_none() {
            if let Some((l, _)) = launch {
                let init = Event::State { who, state: idle };
                self.out.push(l.min(start), class::STREAM_INIT, group, init);
                since = Some(l.min(start));
            }
        }
        let mut ready = prev_end.unwrap_or(0);
        for x in self.dests.remove(&op).unwrap_or_default() {
            let Some((e, k)) = self.take_watch(x) else {
                continue;
            };
            if since.is_some_and(|p| e > p) && e <= start {
                // The stream was idle waiting for that event: its idle
                // time until then is not its own (a what-if that makes
                // the event earlier starts the op earlier).
                let id = self.fresh_link();
                let recv = Event::Recv {
                    who,
                    id,
                    state: idle,
                    waited: true,
                };
                self.out.push(e, class::STREAM_WAIT, group, recv);
                self.send_at_end(k, e, id);
                ready = ready.max(e);
            }
        }
        // The launch binds only when the stream was ready before it
        // (HTA's launch delay); otherwise the op waited for the stream,
        // and the launch sends nothing.
        let mut binds = launch.filter(|&(l, _)| l >= ready);
        if binds.is_some_and(|(l, _)| l > start) {
            self.late_launch(&ev, called.unwrap_or(0));
            binds = None;
        }
        if let Some((l, by)) = binds {
            self.launch_send(l, by, op);
        }
        let state = self.sym(ev.name);
        self.start(who, group, op, start, binds.map(|b| b.0), state);
        let end_rec = Event::State { who, state: idle };
        self.out.push(gpu_end, class::OP_END, group, end_rec);
        self.streams.get_mut(&key).expect("known").prev_end = Some(gpu_end);
    }

    /// Op `ev` starts before the call its correlation id names, which
    /// starts at `called`: that call did not launch it.
    fn late_launch(&mut self, ev: &Ev, called: u64) {
        self.late.count += 1;
        if self.late.first.is_none() {
            self.late.first = Some(format!(
                "\"{}\" on gpu{}:stream{} at ts {} µs, correlation id {}, whose CUDA call starts at ts {} µs",
                self.prep_names.get(ev.name),
                ev.device,
                ev.stream,
                ev.ts as f64 / 1000.0,
                ev.corr,
                called as f64 / 1000.0
            ));
        }
    }

    /// The launch of `op` by thread `by` at `t` (aligned), which it binds.
    fn launch_send(&mut self, t: u64, by: (i64, i64), op: u64) {
        let Some(th) = self.threads.get(&by) else {
            return;
        };
        let id = link(1, self.ctx.index, op);
        let send = Event::Send {
            who: Who::Sm(th.sm),
            id,
        };
        self.out.push(t, class::CPU, th.group + 1, send);
    }

    /// An op's start: received from its launch. A collective's kernel on a
    /// rank before the last starts in `<collective> wait`, left when the
    /// last rank has arrived (see `colls`).
    fn start(
        &mut self,
        who: Who,
        group: u32,
        op: u64,
        start: u64,
        launch: Option<u64>,
        state: Sym,
    ) {
        let role = self.ctx.roles.get(&op).cloned();
        let first = match role.as_ref().filter(|r| !r.straggler) {
            Some(r) => self.coll_wait_state(r),
            None => state,
        };
        let first = match launch {
            // The idle stream waited for this launch: the gap is the launch
            // delay on the link, not time of the stream's own.
            Some(_) => Event::Recv {
                who,
                id: link(1, self.ctx.index, op),
                state: first,
                waited: true,
            },
            None => Event::State { who, state: first },
        };
        self.out.push(start, class::OP_START, group, first);
        match role {
            Some(r) if r.straggler => self.coll_release((who, group), &r, state),
            Some(r) if r.joins => self.coll_join((who, group), &r, state),
            _ => {}
        }
    }
}

/// A thread's innermost op becomes `op` at `t`; a transition at the same
/// instant replaces the one before.
fn put(th: &mut ThreadLive, t: u64, op: Option<Call>) {
    if th.queue.back().is_some_and(|l| l.0 == t) {
        th.queue.pop_back();
    }
    th.queue.push_back((t, op));
}
