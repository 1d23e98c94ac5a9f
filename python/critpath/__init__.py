"""critpath: full-system critical-path analysis.

    >>> import critpath
    >>> a = critpath.analyze("examples/nic-fig3.jsonl")
    >>> a.length_ns, a.states.head(1)
    >>> a.whatif({"nic.tx:DMA packet": 2})
    >>> b = critpath.analyze_many(paths, client=dask_client)

:func:`analyze` runs the critpath engine (the same code as the ``critpath``
command) on one trace or several hosts' traces and returns an
:class:`~critpath.analysis.Analysis` (for a span file of several trace ids,
a :class:`~critpath.analysis.Requests`: each request analyzed on its own,
then aggregated, as the CLI does); :func:`analyze_many` analyzes many
traces, one request per trace, on threads of this process or a Dask cluster and
returns a :class:`~critpath.batch.Batch`. Failures raise :class:`Error` with
the message the CLI prints.

The annotation SDK is :mod:`critpath.sdk`; importing it needs neither the
native module nor pandas, so ``PYTHONPATH=python`` is enough for annotated
programs.
"""

__all__ = ["analyze", "analyze_many", "Analysis", "Requests", "Batch", "Error"]

_LAZY = {
    "analyze": "critpath.analysis",
    "Analysis": "critpath.analysis",
    "Requests": "critpath.analysis",
    "Error": "critpath.analysis",
    "analyze_many": "critpath.batch",
    "Batch": "critpath.batch",
}


def __getattr__(name):
    # The analysis pulls in pandas and the native module: only on first use,
    # so that `import critpath.sdk` stays light.
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError("module 'critpath' has no attribute %r" % name)
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(list(globals()) + list(_LAZY))
