#!/usr/bin/env python3
"""Makes a real PyTorch profiler (Kineto) trace on the CPU: a small
transformer trained with Adam, profiled with `record_shapes` for STEPS
steps after one warm-up step, the shape of trace users bring (hundreds of
thousands of CPU ops with their input shapes, one `ProfilerStep#N`
annotation a step).

    python benches/torch_trace.py OUT.json [--steps 40] [--layers 5]

Needs torch (`pip install torch`; the CPU is enough). The trace's size
grows with --layers: about 5,400 events a step at 5 layers, 217,771 events
and 83 MB for 40 steps. Prints the number of events and steps written;
`gzip -k OUT.json` makes the compressed twin the benchmarks also read.
"""

import argparse
import json

import torch
import torch.nn as nn
from torch.profiler import ProfilerActivity, profile, schedule


def build(layers):
    torch.manual_seed(0)
    layer = nn.TransformerEncoderLayer(d_model=64, nhead=4, dim_feedforward=128, batch_first=True)
    enc = nn.TransformerEncoder(layer, num_layers=layers, enable_nested_tensor=False)
    head = nn.Linear(64, 10)
    return nn.Sequential(enc, nn.Flatten(0, 1), head)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out")
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--layers", type=int, default=5)
    a = ap.parse_args()
    torch.set_num_threads(1)
    model = build(a.layers)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3, foreach=False)
    x = torch.randn(8, 16, 64)
    y = torch.randint(0, 10, (8 * 16,))
    loss_fn = nn.CrossEntropyLoss()
    sched = schedule(wait=0, warmup=1, active=a.steps, repeat=1)
    ready = lambda p: p.export_chrome_trace(a.out)  # noqa: E731
    with profile(activities=[ProfilerActivity.CPU], record_shapes=True, schedule=sched,
                 on_trace_ready=ready) as prof:
        for _ in range(a.steps + 1):
            opt.zero_grad()
            loss = loss_fn(model(x), y)
            loss.backward()
            opt.step()
            prof.step()
    with open(a.out) as f:
        events = json.load(f)["traceEvents"]
    steps = sum(1 for e in events if str(e.get("name", "")).startswith("ProfilerStep#"))
    print(json.dumps({"events": len(events), "steps": steps}))


if __name__ == "__main__":
    main()
