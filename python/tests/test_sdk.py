"""The Python annotation SDK (critpath.sdk) end to end: real programs write
CRITPATH_OUT and the critpath binary analyzes the file.

    python3 -m pytest python/tests/test_sdk.py     (after cargo build --release)

CRITPATH_BIN names the binary (default target/release/critpath)."""

import json
import os
import subprocess
import sys
import tempfile
import textwrap
import unittest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BIN = os.environ.get("CRITPATH_BIN", os.path.join(ROOT, "target", "release", "critpath"))
SDK = os.path.join(ROOT, "python")


def run_py(code_or_path, out, args=(), extra_env=None):
    env = dict(os.environ)
    env.pop("CRITPATH_OUT", None)
    env.pop("CRITPATH_CALIBRATE", None)
    env["PYTHONPATH"] = SDK
    if out is not None:
        env["CRITPATH_OUT"] = out
    env.update(extra_env or {})
    if os.path.exists(code_or_path):
        cmd = [sys.executable, code_or_path, *args]
    else:
        cmd = [sys.executable, "-c", textwrap.dedent(code_or_path), *args]
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)


def analyze(path, *flags):
    p = subprocess.run([BIN, "analyze", path, "--json", *flags], capture_output=True, text=True)
    if p.returncode != 0:
        raise AssertionError("critpath analyze failed (%d): %s" % (p.returncode, p.stderr))
    return json.loads(p.stdout)


def row(v, sm, state):
    for r in v["states"]:
        if r["sm"] == sm and r["state"] == state:
            return r
    raise AssertionError("no %s:%s in %s" % (sm, state, [(r["sm"], r["state"]) for r in v["states"]]))


class SdkTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.out = os.path.join(self.tmp.name, "t.annot")

    def tearDown(self):
        self.tmp.cleanup()

    def test_threaded_pipeline_example_shows_its_bottleneck(self):
        p = run_py(os.path.join(ROOT, "examples", "annotated", "pipeline.py"), self.out, ["20"])
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("20 items", p.stdout)
        v = analyze(self.out)
        self.assertEqual(v["states"][0]["sm"], "stage2")
        self.assertEqual(v["states"][0]["state"], "work")
        self.assertGreater(v["states"][0]["criticality"], 0.8)
        self.assertEqual(row(v, "stage2", "work")["visits"], 20)
        # Each stage's SM sits on its thread, named after the thread.
        self.assertTrue(any(r["sm"].startswith("stage2:") and r["state"] == "sm:stage2"
                            for r in v["states"]))

    def test_asyncio_tasks_have_their_own_stacks(self):
        code = """
            import asyncio, time
            from critpath import sdk

            async def worker(name, ms):
                with sdk.sm(name):
                    with sdk.state("io"):
                        await asyncio.sleep(ms / 1000)
                    sdk.state("done")

            async def main():
                await asyncio.gather(
                    asyncio.create_task(worker("fast", 10), name="fast-task"),
                    asyncio.create_task(worker("slow", 40), name="slow-task"))

            asyncio.run(main())
        """
        p = run_py(code, self.out)
        self.assertEqual(p.returncode, 0, p.stderr)
        v = analyze(self.out)
        slow, fast = row(v, "slow", "io"), row(v, "fast", "io")
        self.assertGreaterEqual(slow["total_ns"], 40_000_000)
        self.assertGreaterEqual(fast["total_ns"], 10_000_000)
        self.assertLess(fast["total_ns"], 40_000_000)
        # Interleaved on one thread, yet neither task's stack disturbed the
        # other's: each SM has its own task base named after the task, and
        # leaving the `with state` block went back to "running".
        bases = {r["sm"] for r in v["states"] if r["state"].startswith("sm:")}
        self.assertTrue(any(b.endswith("/slow-task") for b in bases), bases)
        self.assertTrue(any(b.endswith("/fast-task") for b in bases), bases)
        self.assertEqual(row(v, "slow", "running")["visits"], 2)
        kinds = [d["kind"] for d in v["diagnostics"]]
        self.assertNotIn("stack-mismatch", kinds)
        self.assertGreaterEqual(v["critical_path"]["length_ns"], 40_000_000)

    def test_waits_sends_and_recvs_across_threads(self):
        code = """
            import threading, time
            from critpath import sdk
            # The threads really wait for what their records say they wait
            # for, so the trace is the same however late either one runs.
            ready, sent = threading.Event(), threading.Event()
            def consumer():
                with sdk.sm("consumer"):
                    sdk.wait("idle", "producer", "ready")
                    ready.wait()
                    time.sleep(0.03)
                    sdk.state("use")
                    sent.wait()
                    sdk.wait("for-item")
                    time.sleep(0.01)
                    sdk.recv(1 << 40, "use-item")
                    time.sleep(0.005)
            def producer():
                with sdk.sm("producer"):
                    sdk.state("make")
                    time.sleep(0.02)
                    sdk.state("ready")
                    ready.set()
                    time.sleep(0.015)
                    sdk.send(1 << 40)
                    sent.set()
            ts = [threading.Thread(target=consumer), threading.Thread(target=producer)]
            [t.start() for t in ts]; [t.join() for t in ts]
        """
        p = run_py(code, self.out)
        self.assertEqual(p.returncode, 0, p.stderr)
        v = analyze(self.out)
        self.assertEqual(row(v, "consumer", "use-item")["visits"], 1)
        self.assertGreater(row(v, "consumer", "for-item")["critical_ns"], 0)
        kinds = [d["kind"] for d in v["diagnostics"]]
        self.assertNotIn("recv-without-send", kinds)
        self.assertNotIn("wait-advanced-early", kinds)

    def test_every_64_bit_id_is_a_link_of_its_own_and_others_are_refused(self):
        code = """
            from critpath import sdk
            for bad in (-1, 2**64, 2**64 + 5):
                for verb in (lambda: sdk.send(bad), lambda: sdk.recv(bad, "x")):
                    try:
                        verb()
                    except ValueError:
                        pass
                    else:
                        raise SystemExit("id %d accepted" % bad)
            try:
                sdk.send("5")
            except TypeError:
                pass
            else:
                raise SystemExit("a str id accepted")
            with sdk.sm("a"):
                sdk.send(2**63 + 5)
                sdk.send(2**64 - 1)
                sdk.send(True)
            with sdk.sm("b"):
                sdk.recv(2**64 - 1, "max")
                sdk.recv(1, "one")
                sdk.recv(5, "five")
        """
        p = run_py(code, self.out)
        self.assertEqual(p.returncode, 0, p.stderr + p.stdout)
        v = analyze(self.out)
        recvs = [d for d in v["diagnostics"] if d["kind"] == "recv-without-send"]
        # 2**64-1 and 1 are received; 5 was never sent (2**63+5 is not 5).
        self.assertEqual(len(recvs), 1, v["diagnostics"])
        self.assertIn("recv of id 5 ", recvs[0]["message"])

    def test_a_bad_id_is_refused_whether_recording_or_not(self):
        # A program's bad id shows without CRITPATH_OUT too, not only when
        # it is recorded.
        code = """
            from critpath import sdk
            for bad in (-1, 2**64, 2**64 + 5, "5", 1.0, None):
                want = TypeError if not isinstance(bad, int) else ValueError
                for verb in (lambda: sdk.send(bad), lambda: sdk.recv(bad, "x")):
                    try:
                        verb()
                    except want as e:
                        print(type(e).__name__, e)
                    else:
                        raise SystemExit("id %r accepted" % (bad,))
            for good in (0, 2**64 - 1, True):
                sdk.send(good)
                sdk.recv(good, "x")
        """
        self.same_refusals(code, 12)

    def same_refusals(self, code, lines):
        """Runs ``code`` without and with recording: both exit 0 and print
        the same ``lines`` lines (its refusals, with the same messages), and
        without recording no file is written. Returns what they printed."""
        off = run_py(code, None)
        self.assertEqual(off.returncode, 0, off.stderr + off.stdout)
        self.assertEqual(os.listdir(self.tmp.name), [])
        on = run_py(code, self.out)
        self.assertEqual(on.returncode, 0, on.stderr + on.stdout)
        self.assertEqual(off.stdout, on.stdout)
        self.assertEqual(len(off.stdout.splitlines()), lines)
        return off.stdout

    def test_a_name_that_is_no_str_is_refused_whether_recording_or_not(self):
        # None would be written as "none" where a name must be (losing the
        # rest of the thread's block), 123 and b"raw\xff" as their repr.
        code = """
            from critpath import sdk
            bad = (None, 123, b"raw\\xff")
            calls = [
                (lambda n: sdk.begin_sm(n), bad),
                (lambda n: sdk.end_sm(n), bad),
                (lambda n: sdk.state(n), bad),
                (lambda n: sdk.sm(n), bad),
                (lambda n: sdk.wait(n), bad),
                (lambda n: sdk.recv(1, n), bad),
                (lambda n: sdk.wait("w", n, "z"), bad[1:]),
                (lambda n: sdk.wait("w", "b", n), bad[1:]),
            ]
            with sdk.sm("a"):
                for call, names in calls:
                    for n in names:
                        try:
                            call(n)
                        except TypeError as e:
                            print(e)
                        else:
                            raise SystemExit("name %r accepted" % (n,))
                sdk.state("ok")
        """
        refused = self.same_refusals(code, 22)
        for says in ("state() argument name is a str, not NoneType",
                     "recv() argument state_name is a str, not bytes",
                     "wait() argument on_sm is a str or None, not int"):
            self.assertIn("critpath.sdk: " + says, refused)
        # Nothing of the refused calls was written: the block reads whole.
        v = analyze(self.out)
        self.assertEqual(sorted(r["state"] for r in v["states"] if r["sm"] == "a"),
                         ["ok", "running"])
        kinds = [d["kind"] for d in v["diagnostics"]]
        self.assertNotIn("damaged-input", kinds)
        self.assertNotIn("cut-short", kinds)

    def test_a_long_name_is_cut_at_a_character_boundary(self):
        # 1 + 600 x 2 and 400 x 3 bytes: byte 1024 falls inside a character
        # of each, so each is cut to its first 1023 bytes and stays UTF-8
        # (two different names, not both "?").
        code = """
            from critpath import sdk
            with sdk.sm("long"):
                sdk.state("x" + "\\u00e9" * 600)
                sdk.state("\\u20ac" * 400)
        """
        p = run_py(code, self.out)
        self.assertEqual(p.returncode, 0, p.stderr)
        v = analyze(self.out)
        for name in ("x" + "\u00e9" * 511, "\u20ac" * 341):
            self.assertEqual(len(name.encode()), 1023)
            self.assertEqual(row(v, "long", name)["visits"], 1)

    def test_off_does_nothing_and_costs_little(self):
        code = """
            import time
            from critpath import sdk
            n = 200000
            t0 = time.perf_counter_ns()
            for i in range(n):
                sdk.state("a")
            print("%.0f" % ((time.perf_counter_ns() - t0) / n))
        """
        p = run_py(code, None)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(os.listdir(self.tmp.name), [])
        self.assertLess(float(p.stdout), 2000)

    def test_unwritable_or_full_output_never_stops_the_program(self):
        code = """
            from critpath import sdk
            with sdk.sm("x"):
                for i in range(20000):
                    sdk.state("s%d" % (i % 3))
            print("done")
        """
        for out, says in (("/nonexistent-dir/t.annot", "annotations are off"),
                          ("/dev/full", "cannot write annotations")):
            p = run_py(code, out)
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertEqual(p.stdout, "done\n")
            self.assertIn(says, p.stderr)
            self.assertEqual(len(p.stderr.strip().splitlines()), 1, p.stderr)

    def test_unbalanced_end_sm_is_diagnosed(self):
        code = """
            from critpath import sdk
            sdk.begin_sm("a")
            sdk.state("work")
            sdk.end_sm("b")
            sdk.end_sm("a")
        """
        p = run_py(code, self.out)
        self.assertEqual(p.returncode, 0, p.stderr)
        v = analyze(self.out)
        kinds = [d["kind"] for d in v["diagnostics"]]
        self.assertIn("stack-mismatch", kinds)

    def test_sms_left_begun_end_with_their_thread_or_the_process(self):
        # A thread exits with `job` begun, the process with `main-job`: read
        # alone, the file says when, so the last states keep their time and
        # the name is free for the next begin_sm.
        code = """
            import threading, time
            from critpath import sdk

            def spin(s):
                t = time.monotonic() + s
                while time.monotonic() < t:
                    pass

            def leaves():
                sdk.begin_sm("job")
                sdk.state("a")
                spin(0.010)
                sdk.state("b")
                spin(0.020)

            def ends():
                with sdk.sm("job"):
                    sdk.state("c")
                    spin(0.005)

            for f in (leaves, ends):
                t = threading.Thread(target=f)
                t.start()
                t.join()
            sdk.begin_sm("main-job")
            sdk.state("tail")
            spin(0.015)
        """
        p = run_py(code, self.out)
        self.assertEqual(p.returncode, 0, p.stderr)
        v = analyze(self.out)
        ms = 1000000
        self.assertGreaterEqual(row(v, "job", "b")["total_ns"], 19 * ms)
        self.assertGreaterEqual(row(v, "main-job", "tail")["total_ns"], 14 * ms)
        self.assertGreaterEqual(row(v, "job", "c")["total_ns"], 4 * ms)
        self.assertNotIn("job#2", [r["sm"] for r in v["states"]])

    def test_calibration_and_overhead_correction(self):
        code = """
            from critpath import sdk
            with sdk.sm("x"):
                for i in range(20000):
                    sdk.state("a")
                    sdk.state("b")
        """
        p = run_py(code, self.out, extra_env={"CRITPATH_CALIBRATE": "1"})
        self.assertEqual(p.returncode, 0, p.stderr)
        raw = analyze(self.out)
        fixed = analyze(self.out, "--correct-overhead")
        c = fixed["overhead_correction"]
        self.assertGreater(c["ns_per_event"], 10)
        # Each of the 40,000 visits holds one event's calibrated cost, taken
        # out of the states' totals (never more than a visit lasted). How
        # much of the time that is depends on the machine's load while the
        # loop ran (the calibration ran before it), so the test holds the
        # correction to its arithmetic, not to a share.
        before = row(raw, "x", "a")["total_ns"] + row(raw, "x", "b")["total_ns"]
        after = row(fixed, "x", "a")["total_ns"] + row(fixed, "x", "b")["total_ns"]
        self.assertGreaterEqual(c["events"], 40000)
        self.assertGreater(c["removed_total_ns"], 0)
        # (The SM's other visits, such as its first state, hold a few more.)
        others = c["removed_total_ns"] - (before - after)
        self.assertGreaterEqual(others, 0)
        self.assertLessEqual(others, 4 * c["ns_per_event"] + 1)
        self.assertLessEqual(c["removed_total_ns"], c["ns_per_event"] * c["events"] * 1.001)
        self.assertLess(after, before)


if __name__ == "__main__":
    unittest.main()
