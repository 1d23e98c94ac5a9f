"""Shared by the Python package's tests: the repository's root, the
critpath binary (CRITPATH_BIN, default target/release/critpath) to compare
with, and running it."""

import os
import subprocess

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BIN = os.environ.get("CRITPATH_BIN", os.path.join(ROOT, "target", "release", "critpath"))


def example(*parts):
    return os.path.join(ROOT, "examples", *parts)


def cli(*args, ok=True):
    """Runs the critpath binary; returns (exit code, stdout, the error
    message without its `critpath: error: ` prefix)."""
    if not os.path.exists(BIN):
        pytest.fail("no critpath binary at %s: cargo build --release (or set CRITPATH_BIN)" % BIN)
    p = subprocess.run([BIN, *args], capture_output=True, text=True, timeout=300)
    err = p.stderr.strip()
    if err.startswith("critpath: error: "):
        err = err[len("critpath: error: "):]
    if ok and p.returncode != 0:
        raise AssertionError("critpath %s failed (%d): %s" % (" ".join(args), p.returncode, p.stderr))
    return p.returncode, p.stdout, err
