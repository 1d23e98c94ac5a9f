"""What runs on a worker (a thread of the local pool, a Dask worker): one
file's per-request results as plain dicts. It imports only the native
module, not pandas, so that a fresh worker starts fast."""

import json
import os

from critpath import _native

# Errors travel back from workers pickled by name: as critpath.Error.
_native.Error.__module__ = "critpath"


def analyze_file(path, options=None):
    """One file's per-request results: a list of dicts with file, trace_id,
    length_ns and states (sys, sm, state, critical_ns, criticality), most
    critical first."""
    return json.loads(_native.analyze_file(os.fsdecode(path), json.dumps(options or {})))


def analyze_chunk(paths, options):
    """Several files' results, in order (one task of an executor)."""
    return [analyze_file(p, options) for p in paths]
