//! A dependence-heavy synthetic trace for `critpath bench` (`-deps`
//! formats): 256 state machines (services), each record from one drawn at
//! random. A service goes round eight states, one or two steps at a time;
//! it waits on one of its three peers (for a state, or any transition),
//! sends messages to them whose string ids never repeat (`m-N`), and the
//! peer receives them, some as waited receives, some tied (at the time of
//! the send: time advances by 0 to 3 ns a record). Unlike the pipeline of
//! [`crate::synth`], dependences cross between many SMs and no id repeats,
//! as in the traces of real services; like theirs, each service talks to a
//! few others, so the combined graph stays bounded. Deterministic for a
//! seed; records come in time order. Messages are received oldest first
//! or among the latest 64, so at most a few thousand are in flight.

use crate::synth::xorshift64star;
use critpath_trace::{Event, Interner, Record, Sym, Who};
use std::collections::VecDeque;

/// State machines in the trace.
const SMS: usize = 256;
/// States each can be in.
const STATES: usize = 8;
/// Messages in flight past which the oldest is received next.
const IN_FLIGHT: usize = 4096;

pub struct Deps {
    remaining: u64,
    t: u64,
    rng: u64,
    sms: Vec<Sym>,
    states: Vec<Sym>,
    /// Each service's state (an index into `states`).
    cur: Vec<u8>,
    /// Sent, not yet received: the message's number and its receiver.
    sent: VecDeque<(u64, usize)>,
    next_id: u64,
}

/// The three services service `i` sends to and waits on.
fn peers(i: usize) -> [usize; 3] {
    [(i + 1) % SMS, (i + 17) % SMS, (i * 7 + 3) % SMS]
}

impl Deps {
    /// A generator of `records` records; its names go into `strings`.
    pub fn new(records: u64, seed: u64, strings: &mut Interner) -> Deps {
        Deps {
            remaining: records,
            t: 0,
            rng: seed | 1,
            sms: (0..SMS)
                .map(|i| strings.intern(&format!("svc{i}")))
                .collect(),
            states: (0..STATES)
                .map(|i| strings.intern(&format!("s{i}")))
                .collect(),
            cur: vec![0; SMS],
            sent: VecDeque::new(),
            next_id: 0,
        }
    }

    fn rand(&mut self) -> u64 {
        xorshift64star(&mut self.rng)
    }

    /// The next record; message ids get transient symbols in `strings`.
    pub fn next_in(&mut self, strings: &mut Interner) -> Option<Record> {
        self.remaining = self.remaining.checked_sub(1)?;
        let r = self.rand();
        self.t += r & 3;
        let i = (r >> 8) as usize % SMS;
        let peer = peers(i)[(r >> 24) as usize % 3];
        let ev = match (r >> 32) % 20 {
            8..=10 => {
                let n = self.next_id;
                self.next_id += 1;
                self.sent.push_back((n, peer));
                Event::Send {
                    who: Who::Sm(self.sms[i]),
                    id: strings.transient_link(&format!("m-{n}")),
                }
            }
            11..=14 if !self.sent.is_empty() => {
                let (n, to) = self.take(r >> 40);
                Event::Recv {
                    who: Who::Sm(self.sms[to]),
                    id: strings.transient_link(&format!("m-{n}")),
                    state: self.advance(to, r),
                    waited: r & (1 << 63) != 0,
                }
            }
            15..=17 => Event::Wait {
                who: Who::Sm(self.sms[i]),
                state: self.advance(i, r),
                on: Some(self.sms[peer]),
                on_sys: None,
                on_state: (r & (1 << 62) != 0).then(|| self.states[(r >> 44) as usize % STATES]),
            },
            _ => Event::State {
                who: Who::Sm(self.sms[i]),
                state: self.advance(i, r),
            },
        };
        Some(Record {
            t: self.t,
            sys: Sym::LOCAL,
            ev,
        })
    }

    /// Service `i`'s next state, one or two steps round.
    fn advance(&mut self, i: usize, r: u64) -> Sym {
        let next = (self.cur[i] + 1 + u8::from(r & (1 << 61) != 0)) % STATES as u8;
        self.cur[i] = next;
        self.states[next as usize]
    }

    /// A message to receive: the oldest when many are in flight, else one
    /// of the latest 64.
    fn take(&mut self, pick: u64) -> (u64, usize) {
        if self.sent.len() > IN_FLIGHT {
            return self.sent.pop_front().expect("in flight");
        }
        let back = (pick as usize % 64).min(self.sent.len() - 1);
        let i = self.sent.len() - 1 - back;
        self.sent.remove(i).expect("in range")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use critpath_trace::LinkId;
    use std::collections::HashSet;

    /// In time order, every id sent once and received at most once, after
    /// its send; some receives tied to their send's time.
    #[test]
    fn messages_go_to_peers_once_and_in_order() {
        let mut s = Interner::new();
        let mut g = Deps::new(200_000, 7, &mut s);
        let (mut last, mut sent, mut got, mut ties) = (0, HashSet::new(), HashSet::new(), 0);
        let mut sent_at = std::collections::HashMap::new();
        let mut n = 0;
        while let Some(r) = g.next_in(&mut s) {
            n += 1;
            assert!(r.t >= last);
            last = r.t;
            match r.ev {
                Event::Send { id, .. } => {
                    let text = s.resolve(id_sym(id)).to_string();
                    assert!(sent.insert(text.clone()), "{text} sent twice");
                    sent_at.insert(text, r.t);
                }
                Event::Recv { id, .. } => {
                    let text = s.resolve(id_sym(id)).to_string();
                    assert!(sent.contains(&text), "{text} received before its send");
                    assert!(got.insert(text.clone()), "{text} received twice");
                    ties += u64::from(sent_at[&text] == r.t);
                }
                _ => {}
            }
        }
        assert_eq!(n, 200_000);
        assert!(
            got.len() > 20_000 && ties > 0,
            "{} received, {ties} ties",
            got.len()
        );
    }

    fn id_sym(id: LinkId) -> Sym {
        match id {
            LinkId::Str { sym, .. } => sym,
            LinkId::Num(_) => panic!("string ids"),
        }
    }
}
