//! The SDKs' annotations (docs/os-graph.md): an annotation acts on the SM
//! on top of its thread's (or asyncio task's) stack; `begin_sm` and
//! `end_sm` push and pop annotated SMs, linked to the SM below.

use super::{Builder, Derived, Frame, St, Thread, INTERNAL_LINK};
use crate::names::OsSm;
use critpath_readers::annot::{Annot, AnnotRecord};
use critpath_trace::DiagnosticKind;
use critpath_trace::{Diagnostic, Event, LinkId, Sym};
use rustc_hash::FxHashMap;

/// The state of the SM below an annotated SM while it runs: `sm:NAME`.
pub(super) fn annotated_wait(name: &str) -> String {
    format!("sm:{name}")
}

impl Builder {
    /// Builds from annotations alone (no kernel events): every thread runs
    /// from its first annotation on.
    pub fn annotations_only(mut self) -> Self {
        self.annotations_only = true;
        self
    }

    /// The stack key of an annotation's thread or asyncio task, with the
    /// thread created and running.
    pub(super) fn annot_key(&mut self, a: &AnnotRecord) -> Option<u32> {
        if a.task == 0 {
            if self.ignored(a.tid) {
                return None;
            }
            // The thread makes the call: it is running.
            self.alive(a.tid, a.t, None);
            return Some(a.tid);
        }
        let next = 0x8000_0000 | self.tasks.len() as u32;
        let key = *self.tasks.entry((a.tid, a.task)).or_insert(next);
        if !self.threads.contains_key(&key) {
            let thread = self.names.get(&a.tid).map(String::as_str).unwrap_or("?");
            let fallback = format!("task-{}", a.task);
            let task = OsSm::Task {
                comm: thread,
                tid: a.tid,
                task: a.task_name.unwrap_or(&fallback),
            };
            let sm = self.strings.intern(&task.to_string());
            self.threads
                .insert(key, Thread::new(sm, self.s.running, St::Running, a.t, true));
            let running = self.s.running;
            self.state(a.t, sm, running);
        }
        Some(key)
    }

    /// The link of an annotation's id: the number itself below 2^63, where
    /// the builder's own links are not; from 2^63 up its decimal text, a
    /// string id, so that every 64-bit id is the SDK's.
    fn annot_link(&mut self, id: u64) -> LinkId {
        if id & INTERNAL_LINK == 0 {
            LinkId::Num(id)
        } else {
            self.strings.transient_link(&id.to_string())
        }
    }

    pub(super) fn annot_problem(&mut self, d: Diagnostic) {
        self.counts.annot_problems += 1;
        if self.annot_problems.len() < 20 {
            self.annot_problems.push(d);
        }
    }

    /// Applies one annotation, in time order with the kernel events. It
    /// acts on the SM on top of its thread's stack; `begin_sm` and `end_sm`
    /// link the SM below to the one above (a `send` and a wait `sm:NAME`
    /// below, the first node above; the reverse at the end), so the path
    /// runs through the annotated SM while it is begun.
    pub fn feed_annot(&mut self, a: &AnnotRecord) {
        self.horizon = None;
        if a.t > self.now {
            self.now = a.t;
        }
        if a.what == Annot::Exit {
            return self.annot_exit(a.t, a.tid);
        }
        let Some(key) = self.annot_key(a) else {
            return;
        };
        let t = a.t;
        let top = self.threads[&key].sm;
        if self.annotations_only || top != self.threads[&key].base {
            self.annotated.insert(top, a.pid);
        }
        if !matches!(a.what, Annot::Send(_)) {
            self.quiet.remove(&top);
        }
        match a.what {
            Annot::BeginSm(name) => {
                let base = self.strings.intern(name);
                let wait = self.derived(Derived::SmWait, base);
                let (sm, lane) = self.take_lane(base);
                self.annotated.insert(sm, a.pid);
                let l = self.link();
                self.send(t, top, l);
                self.wait(t, top, wait);
                let running = self.s.running;
                self.recv(t, sm, l, running);
                let th = self.threads.get_mut(&key).expect("known");
                th.stack.push(Frame {
                    sm,
                    base,
                    lane,
                    below_run: th.run,
                });
                th.sm = sm;
                th.run = running;
            }
            Annot::EndSm(name) => {
                let th = &self.threads[&key];
                let Some(pos) = th
                    .stack
                    .iter()
                    .rposition(|f| self.strings.resolve(f.base) == name)
                else {
                    let msg = format!(
                        "end_sm(\"{name}\") at t={t} on {} but no SM of that name was begun on that thread; ignored",
                        self.strings.resolve(th.base)
                    );
                    self.annot_problem(Diagnostic::new(DiagnosticKind::StackMismatch, msg).time(t));
                    return;
                };
                if pos + 1 != th.stack.len() {
                    let msg = format!(
                        "end_sm(\"{name}\") at t={t} on {} while {} is on top of its stack; the SMs above it end here too",
                        self.strings.resolve(th.base),
                        self.strings.resolve(th.sm)
                    );
                    self.annot_problem(Diagnostic::new(DiagnosticKind::StackMismatch, msg).time(t));
                }
                while self.threads[&key].stack.len() > pos {
                    let th = self.threads.get_mut(&key).expect("known");
                    let f = th.stack.pop().expect("len > pos");
                    th.sm = th.stack.last().map(|f| f.sm).unwrap_or(th.base);
                    th.run = f.below_run;
                    let below = th.sm;
                    self.end_frame(t, &f, below);
                }
            }
            Annot::State(name) => {
                let s = self.strings.intern(name);
                self.state(t, top, s);
                self.threads.get_mut(&key).expect("known").run = s;
            }
            Annot::Wait {
                state,
                on,
                on_state,
            } => {
                let state = self.strings.intern(state);
                let on = on.map(|s| self.strings.intern(s));
                let on_state = on_state.map(|s| self.strings.intern(s));
                self.emit(t, top, |who| Event::Wait {
                    who,
                    state,
                    on,
                    on_sys: None,
                    on_state,
                });
                self.threads.get_mut(&key).expect("known").run = state;
                self.quiet.insert(top);
            }
            Annot::Send(id) => {
                let id = self.annot_link(id);
                self.emit(t, top, |who| Event::Send { who, id });
            }
            Annot::Recv { id, state } => {
                let s = self.strings.intern(state);
                let id = self.annot_link(id);
                self.emit(t, top, |who| Event::Recv {
                    who,
                    id,
                    state: s,
                    waited: false,
                });
                self.threads.get_mut(&key).expect("known").run = s;
            }
            Annot::Exit => unreachable!("handled above"),
        }
    }

    /// An annotation file's `exit` of thread `tid`: read alone, the thread
    /// ends there, as at a kernel recording's exit; with a recording the
    /// kernel's exit is the one that counts (it comes a moment later).
    /// An exit of a thread that is not running (said twice, or its other
    /// records lost) ends nothing.
    fn annot_exit(&mut self, t: u64, tid: u32) {
        if !self.annotations_only || self.ignored(tid) {
            return;
        }
        if self
            .threads
            .get(&tid)
            .is_some_and(|th| th.st != St::Unknown)
        {
            self.exit_thread(t, tid);
        }
    }

    /// Ends the annotated SM of frame `f` at `t`: the SM below it
    /// (`below`), which waited for its end, goes back to what it ran.
    pub(super) fn end_frame(&mut self, t: u64, f: &Frame, below: Sym) {
        self.quiet.remove(&f.sm);
        let l = self.link();
        self.send(t, f.sm, l);
        self.end(t, f.sm);
        self.free_lane(f.base, f.lane);
        self.recv(t, below, l, f.below_run);
    }

    /// The annotated SMs whose process measured its cost per event.
    pub fn annotation_costs(
        &self,
        calibration: &FxHashMap<u32, (f64, String)>,
    ) -> Vec<critpath_trace::AnnotationCost> {
        let sys = self.strings.resolve(self.sys);
        let mut v: Vec<_> = self
            .annotated
            .iter()
            .filter_map(|(&sm, pid)| {
                calibration
                    .get(pid)
                    .map(|c| critpath_trace::AnnotationCost {
                        sys: sys.to_string(),
                        sm: self.strings.resolve(sm).to_string(),
                        ns_per_event: c.0,
                    })
            })
            .collect();
        v.sort_by(|a, b| a.sm.cmp(&b.sm));
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use critpath_trace::Interner;

    fn at<'a>(t: u64, tid: u32, what: Annot<'a>) -> AnnotRecord<'a> {
        AnnotRecord {
            t,
            pid: 1,
            tid,
            task: 0,
            task_name: None,
            what,
            offset: 0,
        }
    }

    /// What the engine matches a link by: its kind and key.
    type Key = (u8, u64);

    fn key(id: LinkId) -> Key {
        match id {
            LinkId::Num(n) => (0, n),
            LinkId::Str { key, .. } => (1, key),
        }
    }

    /// The link ids of the sends and of the recvs, in time order.
    fn links(annots: &[AnnotRecord]) -> (Vec<Key>, Vec<Key>) {
        let names = FxHashMap::default();
        let mut b = Builder::new(Interner::new(), "local", names, None).annotations_only();
        for a in annots {
            b.feed_annot(a);
        }
        b.finish();
        let (mut sends, mut recvs) = (Vec::new(), Vec::new());
        for r in b.drain_ready(usize::MAX, true) {
            match r.ev {
                Event::Send { id, .. } => sends.push(key(id)),
                Event::Recv { id, .. } => recvs.push(key(id)),
                _ => {}
            }
        }
        (sends, recvs)
    }

    #[test]
    fn ids_from_2_to_the_63_up_are_links_of_their_own() {
        let big = (1u64 << 63) + 5;
        let annots = [
            at(10, 1, Annot::BeginSm("a")),
            at(11, 2, Annot::BeginSm("b")),
            at(20, 1, Annot::Send(big)),
            at(21, 1, Annot::Send(u64::MAX)),
            at(22, 1, Annot::Send(5)),
            at(30, 2, Annot::Recv { id: 5, state: "x" }),
            at(
                31,
                2,
                Annot::Recv {
                    id: big,
                    state: "y",
                },
            ),
            at(
                32,
                2,
                Annot::Recv {
                    id: u64::MAX,
                    state: "z",
                },
            ),
        ];
        let (sends, recvs) = links(&annots);
        // Each SM's begin is a send and a recv of the builder's own links.
        let (own_s, sends) = sends.split_at(2);
        let (own_r, recvs) = recvs.split_at(2);
        assert_eq!(sends.len(), 3, "{sends:?}");
        let [s_big, s_max, s_5] = [sends[0], sends[1], sends[2]];
        assert_eq!(recvs, [s_5, s_big, s_max]);
        assert_ne!(s_big, s_5);
        assert_ne!(s_max, s_5);
        assert_ne!(s_big, s_max);
        assert_eq!(s_5, (0, 5));
        // The builder's own links are apart from every annotation's.
        for own in own_s.iter().chain(own_r) {
            assert!(!sends.contains(own), "{own:?} in {sends:?}");
        }
    }
}
