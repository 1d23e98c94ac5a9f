"""What runs on a worker (a thread of the local pool, a process, a Dask
worker): files' per-request results. It imports only the native module,
not pandas, so that a fresh worker starts fast."""

import json
import os

from critpath import _native

# Errors travel back from workers pickled by name: as critpath.Error.
_native.Error.__module__ = "critpath"


def analyze_file(path, options=None):
    """One file's per-request results: a list of dicts with file, trace_id,
    length_ns and states (sys, sm, state, critical_ns, criticality), most
    critical first."""
    return json.loads(analyze_part(path, options))


def analyze_part(path, options=None, threads=True):
    """One file's per-request results as one JSON text (a part of a
    :class:`~critpath.batch.Batch`): what travels back from a worker.
    ``threads=False``: the file's requests on this thread only."""
    return _native.analyze_file(os.fsdecode(path), json.dumps(options or {}), threads)


def analyze_parts(paths, options, threads=True):
    """Several files' parts, in order (one task of an executor)."""
    return [analyze_part(p, options, threads) for p in paths]
