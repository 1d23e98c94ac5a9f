"""A three-stage pipeline of threads annotated with critpath.sdk: stage 2
is the bottleneck (10 ms per item against 2 ms in stages 1 and 3; the work
is a sleep, as for a stage that waits on a remote service).

    CRITPATH_OUT=pipeline.annot PYTHONPATH=python python3 examples/annotated/pipeline.py
    critpath analyze pipeline.annot

Each stage is a state machine (``with sdk.sm(...)``). It depends on the
previous stage for its next item (``sdk.recv`` of the id that stage sent),
and waits in ``idle`` only when that item is not there yet.
Usage: pipeline.py [ITEMS] [STAGE2_MS]
"""

import queue
import sys
import threading
import time

from critpath import sdk

ITEMS = int(sys.argv[1]) if len(sys.argv) > 1 else 30
STAGE_MS = [2, float(sys.argv[2]) if len(sys.argv) > 2 else 10, 2]


def handoff(item, stage):
    """Link id of `item` leaving `stage`."""
    return item * 4 + stage + 1


def stage(s, inq, outq):
    with sdk.sm("stage%d" % (s + 1)):
        for i in range(ITEMS):
            item = i
            if inq is not None:
                waited = inq.empty()
                if waited:
                    sdk.wait("idle")
                item = inq.get()
                if waited:
                    sdk.recv(handoff(item, s - 1), "work")
                else:
                    sdk.state("work")
            else:
                sdk.state("work")
            time.sleep(STAGE_MS[s] / 1000)
            if outq is not None:
                sdk.send(handoff(item, s))
                outq.put(item)


def main():
    q12, q23 = queue.Queue(), queue.Queue()
    threads = [
        threading.Thread(target=stage, args=(0, None, q12), name="stage1"),
        threading.Thread(target=stage, args=(1, q12, q23), name="stage2"),
        threading.Thread(target=stage, args=(2, q23, None), name="stage3"),
    ]
    t0 = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    print("pipeline: %d items through 3 stages in %.0f ms (stage 2: %g ms per item)"
          % (ITEMS, (time.monotonic() - t0) * 1000, STAGE_MS[1]))


if __name__ == "__main__":
    main()
