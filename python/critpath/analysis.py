"""One analysis: :func:`analyze` and the :class:`Analysis` it returns (a
:class:`Requests` for a span file of several requests).

Everything is computed by the native module (``critpath._native``, the
same Rust code as the ``critpath`` command) and crosses into Python as the
CLI's JSON documents (docs/json.md); this module only turns them into
pandas DataFrames.
"""

import html
import json
import os
import warnings

import pandas as pd

from critpath import _native

Error = _native.Error
Error.__module__ = "critpath"

STATE_COLUMNS = ["sys", "sm", "state", "visits", "total_ns", "critical_ns", "criticality"]
PATH_COLUMNS = ["sm", "state", "start_ns", "end_ns", "kind", "sys", "from_sm", "inter"]
# What the JSON's values make of the path's columns, given to an empty path.
PATH_TYPES = {"start_ns": "int64", "end_ns": "int64", "inter": "bool"}
SLACK_COLUMNS = [
    "sys", "sm", "state", "slack_ns", "slack_mean_ns", "visits", "total_ns",
    "critical_ns", "criticality",
]


def path_list(path_or_paths, what):
    """``path_or_paths`` as a list of str paths; else a ``TypeError`` naming
    the function (``what``) and what it got."""
    if isinstance(path_or_paths, (str, bytes, os.PathLike)):
        return [os.fsdecode(path_or_paths)]
    try:
        return [os.fsdecode(p) for p in path_or_paths]
    except TypeError:
        raise TypeError("%s takes a path or a list of paths, got %r"
                        % (what, path_or_paths)) from None


def _paths(path_or_paths):
    paths = path_list(path_or_paths, "analyze")
    if not paths:
        raise Error("no trace given: pass a path or a list of paths")
    return paths


def check_instance(instance, annotation):
    """Raises :class:`critpath.Error` unless ``instance`` is None or the
    index of an annotation's instance (an int, 0 or more) given with
    ``annotation``, as the CLI's ``--instance K`` needs."""
    if instance is None:
        return
    if annotation is None:
        raise Error("instance= needs annotation= (the CLI's --instance requires --annotation)")
    if isinstance(instance, bool) or not isinstance(instance, int) or not 0 <= instance < 2**63:
        raise Error("instance=%r: expected which instance of the annotation, an int from 0 "
                    "(the first)" % (instance,))


def analyze(path_or_paths, *, to=None, from_=None, annotation=None, instance=None, trace=None,
            partial=False):
    """Analyze one trace, or several hosts' traces merged on one clock, as
    ``critpath analyze`` does.

    ``to`` and ``from_`` are the CLI's ``--to SM[:STATE]`` and ``--from SM``;
    ``annotation`` and ``instance`` its ``--annotation NAME --instance K``
    for PyTorch profiler traces. A span file (OTLP/Jaeger) holding several
    trace ids is analyzed request by request, as the CLI does, never as one
    timeline: the result is a :class:`Requests` (per-request lengths and
    the aggregate per state); ``trace`` (the CLI's ``--trace ID``) analyzes
    only that request, as a file holding only it. Raises
    :class:`critpath.Error` with the
    CLI's message when a trace cannot be read or a name does not fit it. A
    damaged trace raises too, even when its readable part could be analyzed
    (the CLI prints those results, then the error, and exits with 2); with
    ``partial=True`` that analysis is returned with a ``RuntimeWarning``
    carrying the message.
    """
    check_instance(instance, annotation)
    paths = _paths(path_or_paths)
    found = None
    if trace is None and annotation is None:
        # annotation= is of PyTorch profiler traces, never span files: the
        # analysis of one trace refuses it on anything else, as the CLI.
        found = _native.requests(paths, from_=from_, to=to)
    if found is not None:
        doc, results, verdict, read_error = found
        result = Requests(doc, results, verdict, paths)
    else:
        native = _native.analyze(paths, from_=from_, to=to, annotation=annotation,
                                 instance=instance or 0, trace=trace)
        read_error = native.read_error
        result = Analysis(native, paths)
    if read_error and not partial:
        raise Error(read_error)
    if read_error:
        warnings.warn("critpath: " + read_error, RuntimeWarning, stacklevel=2)
    return result


def _frame(rows, columns, empty_types=None):
    """``rows`` with ``columns`` first; without rows, the columns typed as
    ``empty_types`` says (else object)."""
    df = pd.DataFrame(rows)
    for c in columns:
        if c not in df.columns:
            df[c] = pd.Series(dtype="object")
    df = df[columns + [c for c in df.columns if c not in columns]]
    return df.astype(empty_types) if empty_types and df.empty else df


def _states(rows):
    # The JSON's columns, the CLI's table's first (blame after them: a list
    # of {sm, ns} per state, empty where no one held what it waited for).
    return _frame(rows, STATE_COLUMNS)


class NextPath:
    """One of the next most critical paths: its length, how much shorter it
    is than the critical path (a fraction), the states removed to find it
    and its states (a DataFrame like :attr:`Analysis.states`)."""

    def __init__(self, doc):
        self.length_ns = doc["length_ns"]
        self.shorter = doc["shorter"]
        self.removed = list(doc["removed"])
        self.states = _states(doc["states"])

    def __repr__(self):
        return "NextPath(length_ns=%d, shorter=%.3f, removed=%r)" % (
            self.length_ns, self.shorter, self.removed)


class Analysis:
    """The result of :func:`analyze`: the critical path's length, the states'
    criticality, the path's segments and the diagnostics; what-if, next
    paths, slack and the HTML report on demand (each a fresh pass over the
    traces, as with the CLI)."""

    def __init__(self, native, paths):
        self._native = native
        self.paths = list(paths)
        self._doc = json.loads(native.to_json(path=True))

    @property
    def length_ns(self):
        """The critical path's length (ns)."""
        return self._native.length_ns

    @property
    def found(self):
        """Whether a critical path was found."""
        return bool(self._doc["critical_path"]["found"])

    @property
    def critical_path(self):
        """The CLI's ``critical_path`` object: length, start, end, edges."""
        return dict(self._doc["critical_path"])

    @property
    def states(self):
        """Every state with the JSON's columns: sys, sm, state, visits,
        total_ns, critical_ns, criticality, then blame (who held what the
        state waited for: a list of ``{"sm", "ns"}``), most critical first
        (as the CLI sorts them)."""
        return _states(self._doc["states"])

    @property
    def path(self):
        """The critical path's segments in time order: the CLI's ``--path``
        columns (sm, state, start_ns, end_ns, sys, from_sm and inter: True
        for a dependence between SMs; inferred: True for a link the reader
        inferred, in traces that have such links) and kind (``state``: time
        in the SM's own state; ``wait``: time waiting on the SM
        ``from_sm``, where inter is True)."""
        rows = [
            dict(seg, kind="wait" if seg.get("inter") else "state")
            for seg in self._doc.get("path") or []
        ]
        df = _frame(rows, PATH_COLUMNS, PATH_TYPES)
        if "inferred" in df.columns:
            # The JSON has it only where true.
            df["inferred"] = df["inferred"].eq(True)
        return df

    @property
    def diagnostics(self):
        """The diagnostics (dicts with ``kind`` and ``message``, and where
        the CLI gives them ``count`` and more)."""
        return [dict(d) for d in self._doc["diagnostics"]]

    @property
    def verdict(self):
        """The line ``critpath analyze`` opens with (empty when no state is
        on the path)."""
        return self._native.verdict().strip()

    def whatif(self, speedups):
        """The critical path's length (ns) if each state ran FACTOR times
        faster: ``{"SM:STATE": FACTOR}`` (``SYS/SM:STATE`` outside the local
        system; a huge factor such as 1e9 removes the state), as the CLI's
        ``whatif --speedup SM:STATE=FACTOR``."""
        specs = ["%s=%s" % (name, factor) for name, factor in dict(speedups).items()]
        return self._native.whatif(specs)

    def next(self, k=None, *, remove=()):
        """The next most critical path (the CLI's ``--next``), found with the
        most critical state removed, or with the states ``remove`` names
        removed; with ``k``, a list of the next ``k`` paths (``--next K``)."""
        if isinstance(remove, str):
            remove = [remove]
        doc = json.loads(self._native.next(1 if k is None else k, list(remove)))
        paths = [NextPath(p) for p in doc.get("next_critical_paths", [])]
        if k is None:
            return paths[0] if paths else None
        return paths

    def slack(self):
        """How much each state could grow before it joins the critical path,
        least slack first (``critpath slack``): the state columns plus
        slack_ns and slack_mean_ns, then the JSON's others (blame)."""
        doc = json.loads(self._native.slack())
        df = _frame(doc["states"], SLACK_COLUMNS)
        df["slack_ns"] = df["slack_ns"].astype("Int64")  # None: never on a path
        return df

    def to_json(self):
        """The CLI's ``analyze --json`` document, byte for byte."""
        return self._native.to_json()

    def report(self, path):
        """Writes the CLI's HTML report to ``path`` (whole or not at all) and
        returns the path."""
        path = os.fsdecode(path)
        self._native.report(path)
        return path

    def __repr__(self):
        name = " + ".join(self.paths)
        return "<critpath.Analysis of %s: %d ns, %d states>" % (
            name, self.length_ns, len(self._doc["states"]))

    def _repr_html_(self, top=5):
        rows = self._doc["states"][:top]
        verdict = self.verdict or "no critical path found"
        more = len(self._doc["states"]) - len(rows)
        foot = "<p><small>%d more states in <code>.states</code></small></p>" % more if more > 0 else ""
        return _html_table(
            verdict, ("critical ns", "criticality"),
            [(r["sm"], r["state"], r["critical_ns"], r["criticality"]) for r in rows], foot)


def _html_table(verdict, columns, rows, foot=""):
    """The notebook view of an analysis: the verdict in bold over a table of
    ``(sm, state, count, share)`` rows, whose last two columns are named by
    ``columns``, then ``foot``."""
    cells = "".join(
        "<tr><td>%s</td><td>%s</td><td style='text-align:right'>%d</td>"
        "<td style='text-align:right'>%.1f%%</td></tr>" % (
            html.escape(sm), html.escape(state), n, 100.0 * share)
        for sm, state, n, share in rows
    )
    return (
        "<div class='critpath'><p><b>%s</b></p>"
        "<table><thead><tr><th>sm</th><th>state</th><th>%s</th>"
        "<th>%s</th></tr></thead><tbody>%s</tbody></table>%s</div>"
        % (html.escape(verdict), columns[0], columns[1], cells, foot)
    )


class Requests(Analysis):
    """The result of :func:`analyze` on a span file holding several requests
    (trace ids): each request analyzed on its own, as ``critpath analyze
    FILE`` does, and the requests aggregated per state (docs/json.md
    "Many requests"). What needs one path (``length_ns``,
    ``path``, ``whatif``, ``next``, ``slack``, ``report``) raises
    :class:`critpath.Error` naming ``trace=ID``, as the CLI refuses
    ``--path`` or ``--next`` there."""

    def __init__(self, doc, results, verdict, paths):
        from critpath.batch import Batch

        self._native = None
        self.paths = list(paths)
        self._json = doc
        self._doc = json.loads(doc)
        self._verdict = verdict
        #: The per-request results as a :class:`~critpath.batch.Batch`
        #: (what :func:`analyze_many` returns for this file), made from the
        #: native results' JSON text without a dict per request.
        self.batch = Batch(parts=[results])

    def _one(self, what, hint=""):
        return Error(
            "%s: %s holds %d requests (trace ids); %s works on one: pick it with trace=ID "
            "(e.g. trace=%r)%s" % (what, " + ".join(self.paths), self.traces, what,
                                   self._doc["per_trace"][0]["trace_id"], hint))

    @property
    def traces(self):
        """How many requests (trace ids) the file holds."""
        return self._doc["traces"]

    @property
    def per_trace(self):
        """One row per request, by trace id: file, trace_id, length_ns and
        its most critical state (top_sm, top_state, top_criticality; None,
        None and 0.0 when no state is on its path, where the JSON of
        :meth:`to_json` has ``""``)."""
        return self.batch.per_trace

    @property
    def states(self):
        """The aggregate per state, the JSON's ``states``: sys, sm, state,
        traces, critical_ns_sum, criticality_mean and its p50, p90, p99;
        most summed critical time first."""
        from critpath.batch import STATES_TYPES, table

        return table(self._doc["states"], STATES_TYPES)

    @property
    def comparison(self):
        """The JSON's ``slowest``: the slowest 10% of the requests against
        the rest (:meth:`compare` for another fraction)."""
        return dict(self._doc["slowest"])

    def slowest(self, fraction):
        """The slowest ``fraction`` of the requests as a Batch
        (:meth:`critpath.Batch.slowest`)."""
        return self.batch.slowest(fraction)

    def compare(self, fraction=0.1):
        """The slowest ``fraction`` against the rest
        (:meth:`critpath.Batch.compare`)."""
        return self.batch.compare(fraction)

    @property
    def verdict(self):
        """The line ``critpath analyze FILE`` opens with: the state that
        bounds the most summed path time over the requests."""
        return self._verdict

    @property
    def length_ns(self):
        raise self._one(".length_ns", "; each request's is in .per_trace['length_ns']")

    @property
    def found(self):
        raise self._one(".found")

    @property
    def critical_path(self):
        raise self._one(".critical_path")

    @property
    def path(self):
        raise self._one(".path")

    def whatif(self, speedups):
        raise self._one(".whatif()")

    def next(self, k=None, *, remove=()):
        raise self._one(".next()")

    def slack(self):
        raise self._one(".slack()")

    def report(self, path):
        raise self._one(".report()")

    def to_json(self):
        """The CLI's ``analyze --json`` document of the file, byte for byte
        (``traces``, ``per_trace``, the aggregated ``states``, ``slowest``,
        ``diagnostics``)."""
        return self._json

    def __repr__(self):
        return "<critpath.Requests of %s: %d requests (trace ids), %d states>" % (
            " + ".join(self.paths), self.traces, len(self._doc["states"]))

    def _repr_html_(self, top=5):
        rows = self._doc["states"][:top]
        return _html_table(
            self.verdict, ("traces", "mean criticality"),
            [(r["sm"], r["state"], r["traces"], r["criticality_mean"]) for r in rows])
