#!/usr/bin/env python3
"""Writes synthetic Kineto (PyTorch profiler) traces of a data-parallel
training job, one file per rank, with a known ground truth.

    python3 gen_kineto.py OUT_DIR [--ranks N] [--steps S] [--layers L]
                         [--gemm-us G] [--slow-rank R] [--slow-factor F]
                         [--offset-us O] [--gz]

The model (times in microseconds; every rank's trace shares one true
clock, then rank r's timestamps are shifted by r * O, its clock offset):

- each step is a `ProfilerStep#k` user annotation on the main thread;
- per layer, the thread runs `aten::linear` (CPU_OP_US) with a
  `cudaLaunchKernel` inside that launches a GEMM kernel on stream 7;
  the kernel starts LAUNCH_US after its launch or when the previous
  kernel ends, whichever is later, and lasts G (G * F on rank R);
- after the layers: `cudaEventRecord` on stream 7, `cudaStreamWaitEvent`
  making stream 20 wait for it (with the `cuda_sync` event recent
  profilers write), and a `nccl:all_reduce` launching
  `ncclKernel_AllReduce...` on stream 20 with the collective's fields;
- the all-reduce starts on each rank when its last GEMM ends (its
  arrival) and ends on every rank COMM_US after the LAST rank arrived;
- `cudaStreamSynchronize` on stream 20 returns SYNC_US after that end,
  and the next step starts.

Ground truth: the CPU launches run ahead of the GPU, so the critical path
of every step runs through the slow rank's GEMMs (L * G * F per step),
the all-reduce, and the synchronization; the slow rank's GEMM leads the
criticality table; each other rank waits L * G * (F - 1) per step for the
straggler; rank r's clock offset is r * O. With --ranks 1 it is a single
large trace (raise --steps/--layers for size).
"""
import argparse
import gzip
import json
import os

CPU_OP_US = 20.0
LAUNCH_CALL_US = 6.0
LAUNCH_US = 5.0
COMM_US = 300.0
SYNC_US = 4.0
GEMM = "sm80_xmma_gemm_f32f32_f32f32_f32_nn_n_tilesize32x32x8_stage3_warpsize1x2x1_ffma_aligna4_alignc4_execute_kernel"
NCCL = "ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)"
PID, TID = 1000, 1000


class Rank:
    """One rank's events as the simulation goes."""

    def __init__(self, rank, args):
        self.rank = rank
        self.args = args
        self.events = []
        self.corr = 1
        self.stream_free = {7: 0.0, 20: 0.0}
        self.gemm_us = args.gemm_us * (args.slow_factor if rank == args.slow_rank else 1.0)

    def x(self, cat, name, ts, dur, pid=PID, tid=TID, **args):
        self.events.append({"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid,
                            "ts": round(ts, 3), "dur": round(dur, 3), "args": args})

    def launch(self, t, stream, name, dur, extra=None):
        """A cudaLaunchKernel at t; returns (kernel start, end, correlation)."""
        c = self.corr
        self.corr += 1
        self.x("cuda_runtime", "cudaLaunchKernel", t, LAUNCH_CALL_US, correlation=c)
        start = max(t + LAUNCH_US, self.stream_free[stream])
        return start, start + dur, c

    def kernel(self, name, start, dur, stream, corr, extra=None):
        args = {"device": 0, "stream": stream, "correlation": corr, "External id": corr}
        args.update(extra or {})
        self.events.append({"ph": "X", "cat": "kernel", "name": name, "pid": 0, "tid": stream,
                            "ts": round(start, 3), "dur": round(dur, 3), "args": args})
        self.stream_free[stream] = start + dur

    def layers(self, t):
        """The forward layers from t; returns the CPU time after them."""
        for _ in range(self.args.layers):
            self.x("cpu_op", "aten::linear", t, CPU_OP_US)
            start, end, c = self.launch(t + 2.0, 7, GEMM, self.gemm_us)
            self.kernel(GEMM, start, end - start, 7, c)
            t += CPU_OP_US + 1.0
        return t

    def before_collective(self, t):
        """Event record + stream wait + the all-reduce launch; returns its
        arrival (kernel start), the launch correlation and the CPU time."""
        rec = self.corr
        self.corr += 1
        self.x("cuda_runtime", "cudaEventRecord", t, 2.0, correlation=rec)
        wait = self.corr
        self.corr += 1
        self.x("cuda_runtime", "cudaStreamWaitEvent", t + 3.0, 2.0, correlation=wait)
        self.x("cuda_sync", "Stream Wait Event", t + 3.0, 0.0, pid=0, tid=20, correlation=wait,
               device=0, stream=20, wait_on_stream=7, wait_on_cuda_event_record_corr_id=rec)
        t += 6.0
        self.x("user_annotation", "nccl:all_reduce", t, 10.0)
        self.x("cpu_op", "c10d::allreduce_", t + 0.5, 9.0)
        c = self.corr
        self.corr += 1
        self.x("cuda_runtime", "cudaLaunchKernel", t + 1.0, LAUNCH_CALL_US, correlation=c)
        arrival = max(t + 1.0 + LAUNCH_US, self.stream_free[7], self.stream_free[20])
        return arrival, c, t + 11.0

    def collective(self, arrival, corr, end, world):
        extra = {"Collective name": "allreduce", "Process Group Name": "0",
                 "Process Group Description": "default_pg",
                 "Process Group Ranks": str(list(range(world)))}
        self.kernel(NCCL, arrival, end - arrival, 20, corr, extra)

    def sync(self, t, end):
        """cudaStreamSynchronize from t until the all-reduce ends."""
        c = self.corr
        self.corr += 1
        ret = max(t, end) + SYNC_US
        self.x("cuda_runtime", "cudaStreamSynchronize", t, ret - t, correlation=c)
        self.x("cuda_sync", "Stream Sync", end, SYNC_US, pid=0, tid=20, correlation=c, device=0, stream=20)
        return ret + 1.0


def open_rank(r, args):
    """Opens rank r's file and writes everything before its events."""
    name = os.path.join(args.out, f"rank{r}.pt.trace.json" + (".gz" if args.gz else ""))
    f = gzip.open(name, "wt") if args.gz else open(name, "w")
    head = {"schemaVersion": 1,
            "distributedInfo": {"backend": "nccl", "rank": r, "world_size": args.ranks},
            "deviceProperties": [{"id": 0, "name": "synthetic"}],
            "traceName": f"rank{r}"}
    f.write(json.dumps(head)[:-1] + ', "traceEvents": [\n')
    return f


def flush(r, f, args, first):
    """Writes and forgets rank r's events so far, on its own clock."""
    shift = r.rank * args.offset_us
    for i, e in enumerate(r.events):
        e["ts"] = round(e["ts"] + shift, 3)
        f.write(("" if first and i == 0 else ",\n") + json.dumps(e, separators=(",", ":")))
    r.events = []


def simulate(args):
    """Runs the model step by step, writing each step's events as it goes
    (so traces of any size are written in little memory)."""
    ranks = [Rank(r, args) for r in range(args.ranks)]
    files = [open_rank(r, args) for r in range(args.ranks)]
    t = 1000.0
    for step in range(args.steps):
        pend = []
        for r in ranks:
            after = r.layers(t + 2.0)
            pend.append(r.before_collective(after))
        last = max(p[0] for p in pend)
        end = last + COMM_US
        nxt = []
        for r, (arrival, c, cpu_t) in zip(ranks, pend):
            r.collective(arrival, c, end, args.ranks)
            nxt.append(r.sync(cpu_t, end))
        step_end = max(nxt)
        for r, f in zip(ranks, files):
            r.x("user_annotation", f"ProfilerStep#{step}", t, step_end - t)
            flush(r, f, args, step == 0)
        t = step_end + 1.0
    for f in files:
        f.write("\n]}\n")
        f.close()


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("out")
    p.add_argument("--ranks", type=int, default=4)
    p.add_argument("--steps", type=int, default=3)
    p.add_argument("--layers", type=int, default=8)
    p.add_argument("--gemm-us", type=float, default=100.0)
    p.add_argument("--slow-rank", type=int, default=2)
    p.add_argument("--slow-factor", type=float, default=1.5)
    p.add_argument("--offset-us", type=float, default=1234.5)
    p.add_argument("--gz", action="store_true")
    args = p.parse_args()
    os.makedirs(args.out, exist_ok=True)
    simulate(args)
    waited = args.layers * args.gemm_us * (args.slow_factor - 1.0)
    print(json.dumps({"ranks": args.ranks, "steps": args.steps, "slow_rank": args.slow_rank,
                      "others_wait_per_step_us": waited,
                      "offsets_us": [r * args.offset_us for r in range(args.ranks)]}))


if __name__ == "__main__":
    main()
