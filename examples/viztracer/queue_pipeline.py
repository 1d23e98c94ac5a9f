"""A producer → queue.Queue → consumer pipeline, for critpath's inference of
waits in traces without flow events.

The producer makes items, the consumer hashes each one (sha256, many rounds:
the bulk of the time), a light logger thread wakes now and then, and the main
thread joins them all. With `--processes` the same work runs in
`multiprocessing` processes (named `producer`, `consumer`, `logger`) joined
over a `multiprocessing.Queue`.

Record it with viztracer and analyze it:

    viztracer -o queue.json examples/viztracer/queue_pipeline.py
    critpath analyze queue.json
"""

import argparse
import hashlib
import multiprocessing
import queue
import threading
import time

ROUNDS = 4
SPREAD = 1024
DONE = None


def produce(q, items):
    for i in range(items):
        q.put(("item-%07d" % i).encode() * 85)
    q.put(DONE)


def digest(item):
    # A few calls, each over the item spread to a megabyte: the work is
    # heavy, the trace stays small and the queue carries little.
    h = b""
    for _ in range(ROUNDS):
        h = hashlib.sha256(h + item * SPREAD).digest()
    return h


def consume(q, out):
    n = 0
    while True:
        item = q.get()
        if item is DONE:
            break
        digest(item)
        n += 1
    out.put(n)


def log(stop, period):
    ticks = 0
    while not stop.wait(period):
        ticks += 1
    return ticks


def threads(items):
    q = queue.Queue(maxsize=8)
    out = queue.Queue()
    stop = threading.Event()
    workers = [
        threading.Thread(target=produce, args=(q, items), name="producer"),
        threading.Thread(target=consume, args=(q, out), name="consumer"),
    ]
    logger = threading.Thread(target=log, args=(stop, 0.02), name="logger")
    logger.start()
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    stop.set()
    logger.join()
    return out.get()


def processes(items):
    q = multiprocessing.Queue(maxsize=8)
    out = multiprocessing.Queue()
    stop = multiprocessing.Event()
    workers = [
        multiprocessing.Process(target=produce, args=(q, items), name="producer"),
        multiprocessing.Process(target=consume, args=(q, out), name="consumer"),
    ]
    logger = multiprocessing.Process(target=log, args=(stop, 0.02), name="logger")
    logger.start()
    for w in workers:
        w.start()
    n = out.get()
    for w in workers:
        w.join()
    stop.set()
    logger.join()
    return n


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--items", type=int, default=40)
    p.add_argument("--processes", action="store_true")
    a = p.parse_args()
    start = time.perf_counter()
    n = processes(a.items) if a.processes else threads(a.items)
    print("%d items in %.0f ms" % (n, (time.perf_counter() - start) * 1e3))


if __name__ == "__main__":
    main()
