//! The kinds of diagnostic, one variant each: the kebab-case name that JSON
//! output and text tables show, the advice the HTML report gives, how much
//! the kind weighs ([`Severity`]), and whether the kind means the trace
//! itself breaks the event model.

use serde::{Serialize, Serializer};
use std::fmt;

/// What a [`crate::Diagnostic`] is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum DiagnosticKind {
    /// An SM left a waiting state before what it waited for happened.
    WaitAdvancedEarly,
    /// A `recv` with no earlier `send` of its id.
    RecvWithoutSend,
    /// Sends dropped unreceived for the bound on pending sends, and the
    /// `recv`s that came for them later.
    PendingSendDropped,
    /// A `send` of an id whose earlier send was still pending: the earlier
    /// one is dropped unreceived.
    SendIdReused,
    /// A state visit long against its SM's life, with no wait.
    LongState,
    /// No path joins the start to the destination.
    Disconnected,
    /// Pushes and pops, calls and returns, or CPU switches that do not nest.
    StackMismatch,
    /// A reader skipped a bad record and went on.
    InputSkipped,
    /// A reader stopped early; the analysis covers what came before.
    InputCut,
    /// An annotation file ends in the middle of a block.
    CutShort,
    /// An annotation file holds a damaged block.
    DamagedInput,
    /// The annotated program could not write some of its events.
    LostAnnotations,
    /// perf lost events (its buffers overflowed).
    LostEvents,
    /// The tracepoint layouts of the running kernel replaced the recording's.
    TracepointFormats,
    /// The OS graph placed a transition whose events were lost.
    InferredTransition,
    /// A thread was seen running without its switch-in.
    LostSwitchIn,
    /// Threads that existed before recording started.
    PreexistingThread,
    /// Wakeups from no known context.
    UnknownWaker,
    /// Wakeups by interrupts whose cause is not in the trace.
    UncausedWakeup,
    /// Interrupt, softirq or timer runs with no recorded exit.
    UnbalancedInterrupt,
    /// Inferred transitions placed at the start of the reorder window.
    LateTransition,
    /// Clocks of several hosts aligned from their messages.
    ClockOffset,
    /// The cost of annotation events taken out of the states' times.
    OverheadCorrection,
    /// A rank of a distributed job arrived last at its collectives.
    Straggler,
    /// A collective that could not be matched across its process group.
    CollectiveUnmatched,
    /// Two input files of one job name the same rank.
    DuplicateRank,
    /// GPU ops whose correlation id matches no CPU-side launch.
    LaunchUnmatched,
    /// The recorder's own share of the CPUs during a recording.
    RecorderShare,
    /// The recorded command's thread was chosen among namesakes.
    CommandGuessed,
    /// perf recorded only the command's own threads, not the whole system.
    NotSystemWide,
    /// The path is shorter than the time between its ends: waits on it are
    /// charged to no state.
    PathGap,
    /// Spans that ended after the parent span that called them.
    ChildOutlivesParent,
    /// Spans whose context was lost on the way: requests of one service in
    /// a file of several, orphan spans, client spans with no server child.
    SpanContext,
    /// Links between threads inferred from the times of a trace without
    /// flow events (a blocking call and its likely waker).
    InferredLink,
    /// Nothing links the path's thread to the other threads of a trace.
    UnlinkedThreads,
    /// A recording of another kernel, without the kernel function names
    /// saved beside it: timer callbacks are named by address.
    KernelSymbols,
    /// Spans that started after their request's root span had ended: the
    /// request's path ends with its root span, so they are not on it.
    AfterRoot,
    /// Names that are not UTF-8, read with U+FFFD in place of the bytes
    /// that are not.
    LossyNames,
}

use DiagnosticKind::*;

/// How much a kind of diagnostic weighs for the person reading the answer.
/// The text verdict and the report's first screen show one line per kind
/// that [`Severity::ChangesAnswer`]; the others fold into one line.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Severity {
    /// The path or its blame may be wrong: a dependence is missing or
    /// broken, or part of the input was not read.
    ChangesAnswer,
    /// The answer holds, but some of its times are approximate or some
    /// causes are unknown.
    WorthKnowing,
    /// What this kind of input always gives (threads that existed before
    /// recording, clocks aligned, costs corrected): no action needed.
    Routine,
}

impl Severity {
    /// Every severity, weightiest first.
    pub const ALL: [Severity; 3] = [
        Severity::ChangesAnswer,
        Severity::WorthKnowing,
        Severity::Routine,
    ];

    /// The kebab-case name shown in JSON (`changes-answer`).
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::ChangesAnswer => "changes-answer",
            Severity::WorthKnowing => "worth-knowing",
            Severity::Routine => "routine",
        }
    }
}

impl fmt::Display for Severity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for Severity {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl DiagnosticKind {
    /// Every kind, in declaration order.
    pub const ALL: [DiagnosticKind; 38] = [
        WaitAdvancedEarly,
        RecvWithoutSend,
        PendingSendDropped,
        LongState,
        Disconnected,
        StackMismatch,
        InputSkipped,
        InputCut,
        CutShort,
        DamagedInput,
        LostAnnotations,
        LostEvents,
        TracepointFormats,
        InferredTransition,
        LostSwitchIn,
        PreexistingThread,
        UnknownWaker,
        UncausedWakeup,
        UnbalancedInterrupt,
        LateTransition,
        ClockOffset,
        OverheadCorrection,
        Straggler,
        CollectiveUnmatched,
        DuplicateRank,
        LaunchUnmatched,
        RecorderShare,
        CommandGuessed,
        NotSystemWide,
        PathGap,
        ChildOutlivesParent,
        SpanContext,
        InferredLink,
        UnlinkedThreads,
        KernelSymbols,
        AfterRoot,
        LossyNames,
        SendIdReused,
    ];

    /// The kebab-case name shown in JSON and text (`wait-advanced-early`).
    pub fn as_str(self) -> &'static str {
        match self {
            WaitAdvancedEarly => "wait-advanced-early",
            RecvWithoutSend => "recv-without-send",
            PendingSendDropped => "pending-send-dropped",
            LongState => "long-state",
            Disconnected => "disconnected",
            StackMismatch => "stack-mismatch",
            InputSkipped => "input-skipped",
            InputCut => "input-cut",
            CutShort => "cut-short",
            DamagedInput => "damaged-input",
            LostAnnotations => "lost-annotations",
            LostEvents => "lost-events",
            TracepointFormats => "tracepoint-formats",
            InferredTransition => "inferred-transition",
            LostSwitchIn => "lost-switch-in",
            PreexistingThread => "preexisting-thread",
            UnknownWaker => "unknown-waker",
            UncausedWakeup => "uncaused-wakeup",
            UnbalancedInterrupt => "unbalanced-interrupt",
            LateTransition => "late-transition",
            ClockOffset => "clock-offset",
            OverheadCorrection => "overhead-correction",
            Straggler => "straggler",
            CollectiveUnmatched => "collective-unmatched",
            DuplicateRank => "duplicate-rank",
            LaunchUnmatched => "launch-unmatched",
            RecorderShare => "recorder-share",
            CommandGuessed => "command-guessed",
            NotSystemWide => "not-system-wide",
            PathGap => "path-gap",
            ChildOutlivesParent => "child-outlives-parent",
            SpanContext => "span-context",
            InferredLink => "inferred-link",
            UnlinkedThreads => "unlinked-threads",
            KernelSymbols => "kernel-symbols",
            AfterRoot => "after-root",
            LossyNames => "lossy-names",
            SendIdReused => "send-id-reused",
        }
    }

    /// The kind named `name` (the inverse of [`DiagnosticKind::as_str`]).
    pub fn from_name(name: &str) -> Option<DiagnosticKind> {
        Self::ALL.into_iter().find(|k| k.as_str() == name)
    }

    /// What to do about it, in a sentence (the HTML report's advice).
    pub fn advice(self) -> &'static str {
        match self {
            WaitAdvancedEarly => "The SM left a waiting state before what it waited for happened: the dependence is wrong or incomplete.",
            RecvWithoutSend => "A message was received that was never sent: record the send, or the link ids differ.",
            PendingSendDropped => "More sends waited for their recv than the bound allows, so the oldest were dropped and their recvs have no dependence: record the missing recvs, or raise CRITPATH_PENDING_SENDS.",
            LongState => "States occupied for extremely long periods are typically waiting on another state machine: a dependence is missing.",
            Disconnected => "No path from the start to the destination: look at the SMs on either side of the disconnect for an overlooked dependence, or at an under-provisioned resource.",
            StackMismatch => "SM entries and exits (or calls and returns) are not properly nested: fix the annotations.",
            ClockOffset => "Clocks of different hosts were aligned from their messages, or spans that started before the parent span that called them (their service's clock disagrees) were moved to their parent's start.",
            OverheadCorrection => "The measured cost of the annotation events was taken out of the states' times (VTRACE's perturbation correction).",
            InputSkipped => "A record could not be read and was skipped: the states around it may be missing or wrong.",
            InputCut => "The input ends early (truncated or damaged): the analysis covers only the records before that point.",
            CutShort => "The annotation file ends in the middle of a block: the program was probably killed while writing it.",
            DamagedInput => "An annotation block is damaged: the states it held are missing.",
            LostAnnotations => "The annotated program could not write all its events: make the output writable and give it room.",
            LostEvents => "perf could not keep up and lost events: record with larger buffers or fewer events.",
            TracepointFormats => "The recording lacks its tracepoint layouts: the running kernel's were used, which is right only on the machine that recorded.",
            InferredTransition => "Some kernel events were lost, so transitions were placed where the surrounding events put them: their times are approximate.",
            LostSwitchIn => "A thread's switch onto a CPU was lost: part of its running time before its next event may be charged to whoever held that CPU.",
            PreexistingThread => "Threads started before the recording: their first state begins at their first event.",
            UnknownWaker => "Some wakeups came from no known context: those dependences are missing from the graph.",
            UncausedWakeup => "Some threads were woken by an interrupt whose cause the trace does not show (a device, a remote peer, a timer armed before recording): their waits are charged to the waiting state itself.",
            UnbalancedInterrupt => "Some interrupt runs had no recorded exit: they were ended at the next sign that they were over.",
            LateTransition => "Some inferred transitions came too late for the reorder window: their times are approximate.",
            Straggler => "One rank arrived last at the collectives and the others waited for it: look at what that rank did before them.",
            CollectiveUnmatched => "A collective has no partner on some rank of its group (a missing rank file, or a trace cut short): its wait is left out.",
            DuplicateRank => "Two input files name the same rank (distributedInfo.rank, or none): the same rank given twice, or files of different jobs; the files were numbered by their place in the list instead. Give one file per rank of one job.",
            LaunchUnmatched => "Some GPU ops (kernels, copies, memsets) have a correlation id that no CUDA runtime call (cudaLaunchKernel, cudaMemcpyAsync, ...) in the trace has, or none: each starts after the previous op on its stream, but what launched it is unknown, so the path cannot reach it from the CPU. The profiler may have started after their launch; profile from before it.",
            PathGap => "Part of the time between the path's ends lies in waits whose waker's own chain is shorter than the wait, so no state is charged for it: a dependence is missing (the work of a device, a thread or a host the trace does not show).",
            InferredLink => "The trace has no flow events between these threads: each recognised blocking call (a join, a lock, a queue get, ...) was linked to the other thread whose end or release came closest before it returned. The links are guesses from the times; record flow events to make them exact.",
            KernelSymbols => "The recording was made on another kernel and its function names were not saved beside it: timer callbacks are named by address, since this machine's symbol table would name the wrong functions. Record with `critpath record` (it saves them as OUT.syms), or analyze on the recording machine.",
            UnlinkedThreads => "Nothing links this thread to the others (no flow events, no recognised blocking call with a waker), so the critical path cannot leave it: the work of the other threads is not on it. Add flow events, or look at the busiest other thread named.",
            CommandGuessed => "Several processes ran the recorded command's program and the recording does not show which one the recorder started: the earliest was taken; if it is another's, choose the path's ends with --from/--to.",
            NotSystemWide => "perf recorded only the command's own threads (no -a): wakeups done from other contexts (interrupts, idle CPUs, other processes) are not in the file, so waits end without their causes. Record the whole system: perf record -a, or critpath record.",
            ChildOutlivesParent => "Some spans ended after the parent span that called them (a server span ends after its response is written): each delayed its parent's end, since the parent waited for it, up to the end of the request's root span, where what went past it was cut, so that no path outlasts the request.",
            LossyNames => "Some names are not UTF-8 (a C program's bytes in another encoding): each was read with U+FFFD in place of the bytes that are not UTF-8, so names that differ only there are one name. Give the SDK UTF-8 names.",
            AfterRoot => "Some spans started after their request's root span had ended (work the request set off and did not wait for: a message handled later, a follows-from span): the request's path ends with its root span, so they are not on it. --to SERVICE ends the path with one of them instead.",
            SpanContext => "Trace context was lost between services (propagation headers not injected or not extracted): requests split into one-service traces, spans whose parent is in no trace, client calls with no server span. Their waits are missing: fix the propagation.",
            SendIdReused => "A message was sent with the id of an earlier one not yet received: the earlier send was dropped unreceived, and a recv of the id depends on the later. Give each message an id of its own (or record the recv the earlier one had).",
            RecorderShare => "The recorder (perf) ran on the CPUs beside the program: where a path thread waited for a CPU it held, the runnable state's blame names it.",
        }
    }

    /// How much a finding of this kind weighs (see [`Severity`]).
    pub fn severity(self) -> Severity {
        match self {
            WaitAdvancedEarly | RecvWithoutSend | PendingSendDropped | Disconnected
            | StackMismatch | InputSkipped | InputCut | CutShort | DamagedInput
            | LostAnnotations | LostEvents | CollectiveUnmatched | DuplicateRank
            | LaunchUnmatched | NotSystemWide | PathGap | SpanContext | UnlinkedThreads
            | SendIdReused => Severity::ChangesAnswer,
            LongState | TracepointFormats | LostSwitchIn | UnknownWaker | UncausedWakeup
            | Straggler | RecorderShare | CommandGuessed | InferredTransition
            | ChildOutlivesParent | InferredLink | KernelSymbols | AfterRoot | LossyNames => {
                Severity::WorthKnowing
            }
            PreexistingThread | UnbalancedInterrupt | LateTransition | ClockOffset
            | OverheadCorrection => Severity::Routine,
        }
    }

    /// Does this kind mean the trace itself breaks the event model (what
    /// `critpath check` reports as an error of the trace)?
    pub fn is_trace_error(self) -> bool {
        matches!(
            self,
            StackMismatch | RecvWithoutSend | WaitAdvancedEarly | InputSkipped | InputCut
        )
    }
}

impl fmt::Display for DiagnosticKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for DiagnosticKind {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for k in DiagnosticKind::ALL {
            assert_eq!(DiagnosticKind::from_name(k.as_str()), Some(k));
            assert_eq!(k.to_string(), k.as_str());
        }
        assert_eq!(DiagnosticKind::from_name("no-such-kind"), None);
    }

    #[test]
    fn names_are_distinct_kebab_case() {
        let mut names: Vec<&str> = DiagnosticKind::ALL.iter().map(|k| k.as_str()).collect();
        for n in &names {
            assert!(
                n.bytes().all(|b| b.is_ascii_lowercase() || b == b'-'),
                "{n}"
            );
        }
        names.sort();
        names.dedup();
        assert_eq!(names.len(), DiagnosticKind::ALL.len());
    }

    #[test]
    fn serializes_as_its_name() {
        let json = serde_json::to_string(&DiagnosticKind::WaitAdvancedEarly).unwrap();
        assert_eq!(json, "\"wait-advanced-early\"");
    }

    #[test]
    fn what_breaks_the_trace_changes_the_answer() {
        for k in DiagnosticKind::ALL {
            if k.is_trace_error() {
                assert_eq!(k.severity(), Severity::ChangesAnswer, "{k}");
            }
        }
        let names: Vec<&str> = Severity::ALL.iter().map(|s| s.as_str()).collect();
        assert_eq!(names, ["changes-answer", "worth-knowing", "routine"]);
        assert!(
            Severity::ChangesAnswer < Severity::Routine,
            "weightiest first"
        );
    }

    #[test]
    fn every_kind_has_advice() {
        for k in DiagnosticKind::ALL {
            assert!(k.advice().ends_with('.'), "{k}");
        }
    }
}
