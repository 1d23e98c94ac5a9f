//! A synthetic trace generator for benchmarks and tests: a ring of pipeline
//! stages that compute, send, wait on each other and receive, with jittered
//! durations so that the critical path wanders between them. Deterministic
//! for a given seed; generates records on the fly, in time order.
//!
//! With [`Synth::unique_ids`] every message carries a string id that never
//! repeats (`req-STAGE-CYCLE`), as real message, packet and request ids do:
//! the case where a reader or engine that kept ids would grow without bound.

use critpath_trace::{Event, LinkId, Record, Who};
use critpath_trace::{Interner, Sym};

pub struct Synth {
    stages: u32,
    remaining: u64,
    tick: u64,
    stage: u32,
    rng: u64,
    sms: Vec<Sym>,
    work: Sym,
    waiting: Sym,
    process: Sym,
    done: Sym,
    prepare: Sym,
    token: Sym,
    /// String ids that never repeat instead of numbers.
    unique: bool,
}

impl Synth {
    /// A generator of `records` records over `stages` state machines; its
    /// names go into `strings`.
    pub fn new(records: u64, stages: u32, seed: u64, strings: &mut Interner) -> Self {
        let stages = stages.max(2);
        let sms = (0..stages)
            .map(|i| strings.intern(&format!("stage{i}")))
            .collect();
        Synth {
            stages,
            remaining: records,
            tick: 0,
            stage: 0,
            rng: seed | 1,
            sms,
            work: strings.intern("work"),
            waiting: strings.intern("wait input"),
            process: strings.intern("process"),
            done: strings.intern("done"),
            prepare: strings.intern("prepare"),
            token: strings.intern("wait token"),
            unique: false,
        }
    }

    /// The same trace with string ids that never repeat; records must then
    /// be drawn with [`Synth::next_in`], which gives the ids transient
    /// symbols in `strings`.
    pub fn unique_ids(mut self) -> Self {
        self.unique = true;
        self
    }

    /// The next record; string ids (see [`Synth::unique_ids`]) go into
    /// `strings`.
    pub fn next_in(&mut self, strings: &mut Interner) -> Option<Record> {
        self.step(Some(strings))
    }

    fn rand(&mut self) -> u64 {
        xorshift64star(&mut self.rng)
    }
}

/// The next number of the xorshift64* generator whose state is `rng`
/// (never 0): the bench traces' randomness, the same on every machine.
pub(crate) fn xorshift64star(rng: &mut u64) -> u64 {
    *rng ^= *rng >> 12;
    *rng ^= *rng << 25;
    *rng ^= *rng >> 27;
    rng.wrapping_mul(0x2545_F491_4F6C_DD1D)
}

impl Iterator for Synth {
    type Item = Record;

    /// The next record, with numeric ids whatever [`Synth::unique_ids`] says.
    fn next(&mut self) -> Option<Record> {
        self.step(None)
    }
}

impl Synth {
    fn step(&mut self, strings: Option<&mut Interner>) -> Option<Record> {
        if self.remaining == 0 {
            return None;
        }
        self.remaining -= 1;
        let i = self.stage;
        let tick = self.tick;
        let jitter = self.rand() % 10;
        let t = (tick * u64::from(self.stages) + u64::from(i)) * 10 + jitter;
        let who = Who::Sm(self.sms[i as usize]);
        let p = (i + self.stages - 1) % self.stages;
        let prev = self.sms[p as usize];
        let cycle = tick / 6;
        let link = match strings {
            Some(strings) if self.unique && tick % 6 == 1 => {
                strings.transient_link(&format!("req-{i}-{cycle}"))
            }
            Some(strings) if self.unique && tick % 6 == 5 => {
                strings.transient_link(&format!("req-{p}-{cycle}"))
            }
            _ => LinkId::Num(0),
        };
        let id = |stage: u32| match link {
            LinkId::Num(_) => LinkId::Num((u64::from(stage) << 40) | cycle),
            str_id => str_id,
        };
        let ev = match tick % 6 {
            0 => Event::State {
                who,
                state: self.work,
            },
            1 => Event::Send { who, id: id(i) },
            2 if i > 0 => Event::Wait {
                who,
                state: self.waiting,
                on: Some(prev),
                on_sys: None,
                on_state: Some(self.process),
            },
            2 => Event::State {
                who,
                state: self.prepare,
            },
            3 => Event::State {
                who,
                state: self.process,
            },
            4 => Event::Wait {
                who,
                state: self.token,
                on: None,
                on_sys: None,
                on_state: None,
            },
            _ => Event::Recv {
                who,
                id: id(p),
                state: self.done,
                waited: false,
            },
        };
        self.stage += 1;
        if self.stage == self.stages {
            self.stage = 0;
            self.tick += 1;
        }
        Some(Record {
            t,
            sys: Sym::LOCAL,
            ev,
        })
    }
}
