"""One analysis: :func:`analyze` and the :class:`Analysis` it returns.

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
PATH_COLUMNS = ["sm", "state", "start_ns", "end_ns", "kind", "sys", "from_sm"]
SLACK_COLUMNS = [
    "sys", "sm", "state", "slack_ns", "slack_mean_ns", "visits", "total_ns",
    "critical_ns", "criticality",
]


def _paths(path_or_paths):
    if isinstance(path_or_paths, (str, bytes, os.PathLike)):
        return [os.fsdecode(path_or_paths)]
    paths = [os.fsdecode(p) for p in path_or_paths]
    if not paths:
        raise Error("no trace given: pass a path or a list of paths")
    return paths


def analyze(path_or_paths, *, to=None, from_=None, annotation=None, instance=None, partial=False):
    """Analyze one trace, or several hosts' traces merged on one clock, as
    ``critpath analyze`` does.

    ``to`` and ``from_`` are the CLI's ``--to SM[:STATE]`` and ``--from SM``;
    ``annotation`` and ``instance`` its ``--annotation NAME --instance K``
    for PyTorch profiler traces. Raises :class:`critpath.Error` with the
    CLI's message when a trace cannot be read or a name does not fit it. A
    damaged trace raises too, even when its readable part could be analyzed
    (the CLI prints those results, then the error, and exits with 2); with
    ``partial=True`` that analysis is returned with a ``RuntimeWarning``
    carrying the message.
    """
    if instance is not None and annotation is None:
        raise Error("instance= needs annotation= (the CLI's --instance requires --annotation)")
    paths = _paths(path_or_paths)
    native = _native.analyze(paths, from_=from_, to=to, annotation=annotation, instance=instance or 0)
    if native.read_error and not partial:
        raise Error(native.read_error)
    if native.read_error:
        warnings.warn("critpath: " + native.read_error, RuntimeWarning, stacklevel=2)
    return Analysis(native, paths)


def _frame(rows, columns):
    df = pd.DataFrame(rows)
    for c in columns:
        if c not in df.columns:
            df[c] = pd.Series(dtype="object")
    return df[columns + [c for c in df.columns if c not in columns]]


def _states(rows):
    # Slack columns and blame appear only where the CLI prints them.
    df = _frame(rows, STATE_COLUMNS)
    return df[STATE_COLUMNS]


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
        """Every state: sys, sm, state, visits, total_ns, critical_ns and
        criticality, most critical first (as the CLI sorts them)."""
        return _states(self._doc["states"])

    @property
    def path(self):
        """The critical path's segments in time order: sm, state, start_ns,
        end_ns and kind (``state``: time in the SM's own state; ``wait``:
        time waiting on the SM ``from_sm``)."""
        rows = [
            dict(seg, kind="wait" if seg.get("inter") else "state")
            for seg in self._doc.get("path") or []
        ]
        df = _frame(rows, PATH_COLUMNS)
        return df[PATH_COLUMNS]

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
        slack_ns and slack_mean_ns."""
        doc = json.loads(self._native.slack())
        df = _frame(doc["states"], SLACK_COLUMNS)
        df["slack_ns"] = df["slack_ns"].astype("Int64")  # None: never on a path
        return df[SLACK_COLUMNS]

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
        cells = "".join(
            "<tr><td>%s</td><td>%s</td><td style='text-align:right'>%d</td>"
            "<td style='text-align:right'>%.1f%%</td></tr>" % (
                html.escape(r["sm"]), html.escape(r["state"]), r["critical_ns"],
                100.0 * r["criticality"])
            for r in rows
        )
        verdict = self.verdict or "no critical path found"
        more = len(self._doc["states"]) - len(rows)
        foot = "<p><small>%d more states in <code>.states</code></small></p>" % more if more > 0 else ""
        return (
            "<div class='critpath'><p><b>%s</b></p>"
            "<table><thead><tr><th>sm</th><th>state</th><th>critical ns</th>"
            "<th>criticality</th></tr></thead><tbody>%s</tbody></table>%s</div>"
            % (html.escape(verdict), cells, foot)
        )
