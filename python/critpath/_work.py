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


def analyze_part(path, options=None, threads=True, pending=False):
    """One file's per-request results as one JSON text (a part of a
    :class:`~critpath.batch.Batch`): what travels back from a worker.
    ``threads=False``: the file's requests on this thread only.
    ``pending=True``: a request that lacks the ``to``/``from_`` end in this
    file comes back unmatched (the batch's other files may hold the rest of
    its spans) instead of raising."""
    return _native.analyze_file(os.fsdecode(path), json.dumps(options or {}), threads, pending)


def analyze_parts(paths, options, threads=True, pending=False):
    """Several files' parts, in order (one task of an executor)."""
    return [analyze_part(p, options, threads, pending) for p in paths]
