"""Threads and processes started and joined in turn, for critpath's
inference of start links in traces without flow events.

The main thread works, starts a thread and joins it, starts a
`multiprocessing` process and joins it, then runs a Python child with
`subprocess.Popen` and waits for it: each child's work is on the critical
path, reached from the call that started it (`_thread.start_new_thread`,
`posix.fork`; viztracer hides `subprocess.Popen.__init__`, so that child is
reached from the `Popen.wait` that joins it).

Record it with viztracer and analyze it:

    viztracer --min_duration 50 -o spawn.json examples/viztracer/spawn.py
    critpath analyze spawn.json --path

The committed spawn.json was recorded so (viztracer 1.1.1, CPython 3.11,
Linux), with viztracer's `file_info` (the traced sources, for its viewer)
removed. Its path is the whole run, 402.1 ms; without start links it was
84.5 ms, the children's work off it.
"""

import multiprocessing
import subprocess
import sys
import threading
import time


def work(seconds):
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


def child():
    work(0.03)


if __name__ == "__main__":
    multiprocessing.set_start_method("fork")
    work(0.01)
    t = threading.Thread(target=child, name="worker")
    t.start()
    t.join()
    p = multiprocessing.Process(target=child, name="forked")
    p.start()
    p.join()
    code = "import time; time.sleep(0.03)"
    subprocess.Popen([sys.executable, "-c", code]).wait()
    work(0.01)
