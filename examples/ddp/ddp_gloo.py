"""Two CPU ranks training a small model with DistributedDataParallel over
gloo; rank 1 does more compute per step than rank 0 (the straggler).

    python ddp_gloo.py OUTDIR [--extra 2.6] [--steps 4] [--no-profile]
                              [--then-half N]

Rank 0 runs the model's forward and backward (one unit of work); rank 1
does the same plus EXTRA units more, as `aten::bmm` calls before its
forward (by default 2.6: 3.6 times rank 0's compute). With the profiler on,
each rank writes OUTDIR/rank{R}.pt.trace.json (PyTorch profiler / Kineto
JSON) of STEPS steps after one warm-up step. Every run writes
OUTDIR/steps.json: each step's wall time on rank 0 (from one barrier to the
next), in ns.

With --then-half N, the same processes then run N more steps without the
profiler and with rank 1's extra work halved, and write their times to
OUTDIR/steps-half-extra.json: the real run a what-if halving the extra work
predicts, measured right after the traced one (on a shared machine, load
drifts between runs made minutes apart).

Needs torch (CPU is enough); each rank uses one thread.
"""

import argparse
import json
import os
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.nn.parallel import DistributedDataParallel as DDP

WIDTH = 512
BATCH = 256
LAYERS = 3


def model():
    torch.manual_seed(0)
    layers = []
    for _ in range(LAYERS):
        layers += [torch.nn.Linear(WIDTH, WIDTH), torch.nn.ReLU()]
    return torch.nn.Sequential(*layers)


def extra_work(units, a, b):
    """About `units` times the model's forward+backward compute, as bmm."""
    # forward + backward of LAYERS linears: ~3 * LAYERS matmuls of
    # BATCH x WIDTH x WIDTH; one bmm of 1 x BATCH x WIDTH x WIDTH is one.
    n = round(units * 3 * LAYERS)
    acc = a
    for _ in range(n):
        acc = torch.bmm(a, b)
    return acc


def step(ddp, opt, x, extra, a, b):
    if extra > 0:
        extra_work(extra, a, b)
    opt.zero_grad()
    loss = ddp(x).square().mean()
    loss.backward()
    opt.step()


def run(rank, args):
    torch.set_num_threads(1)
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", str(args.port))
    dist.init_process_group("gloo", rank=rank, world_size=2)
    ddp = DDP(model())
    opt = torch.optim.SGD(ddp.parameters(), lr=1e-3)
    x = torch.randn(BATCH, WIDTH)
    a = torch.randn(1, BATCH, WIDTH)
    b = torch.randn(1, WIDTH, WIDTH)
    extra = args.extra if rank == 1 else 0.0
    times = []

    def timed_step():
        dist.barrier()
        t0 = time.perf_counter_ns()
        step(ddp, opt, x, extra, a, b)
        dist.barrier()
        times.append(time.perf_counter_ns() - t0)

    timed_step()  # warm-up
    if args.profile:
        acts = [torch.profiler.ProfilerActivity.CPU]
        with torch.profiler.profile(activities=acts) as prof:
            for _ in range(args.steps):
                with torch.profiler.record_function(f"ProfilerStep#{len(times)}"):
                    timed_step()
        prof.export_chrome_trace(os.path.join(args.out, f"rank{rank}.pt.trace.json"))
    else:
        for _ in range(args.steps):
            timed_step()
    if rank == 0:
        with open(os.path.join(args.out, args.steps_file), "w") as f:
            json.dump({"extra": args.extra, "profiled": args.profile,
                       "step_ns": times[1:]}, f, indent=1)
    if args.then_half:
        extra = args.extra / 2 if rank == 1 else 0.0
        del times[:]
        for _ in range(args.then_half):
            timed_step()
        if rank == 0:
            with open(os.path.join(args.out, "steps-half-extra.json"), "w") as f:
                json.dump({"extra": args.extra / 2, "profiled": False,
                           "step_ns": times}, f, indent=1)
    dist.destroy_process_group()


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("out")
    p.add_argument("--extra", type=float, default=2.6)
    p.add_argument("--steps", type=int, default=4)
    p.add_argument("--port", type=int, default=29517)
    p.add_argument("--no-profile", dest="profile", action="store_false")
    p.add_argument("--steps-file", default="steps.json")
    p.add_argument("--then-half", type=int, default=0)
    args = p.parse_args()
    os.makedirs(args.out, exist_ok=True)
    mp.spawn(run, args=(args,), nprocs=2)


if __name__ == "__main__":
    main()
