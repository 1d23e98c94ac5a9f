"""Many traces: :func:`analyze_many` and the :class:`Batch` it returns.

Each file is analyzed on its own by the native module (critpath-batch, the
code behind ``critpath batch``); a span file (OTLP/Jaeger) holding several
trace ids gives one result per request. Only the small per-request results
(a path's length and its critical states, plain picklable dicts) travel
from the workers, threads of this process (the native analysis releases
the GIL) or a Dask cluster, back to this process, where they are
aggregated per state. The aggregate does not depend
on the order results arrive in, so a parallel run equals the serial one.
"""

import json
import os
import sys
import uuid
import warnings

import pandas as pd

from critpath import _native
from critpath._work import analyze_file, analyze_part, analyze_parts
from critpath.analysis import Error, check_instance, path_list

# The tables' columns and their types, as `critpath batch -o` writes them:
# (pandas dtype, Arrow type); every column is non-null but NULLABLE's.
_STR, _INT, _FLOAT = ("object", "string"), ("int64", "int64"), ("float64", "float64")
PER_TRACE_TYPES = {"file": _STR, "trace_id": _STR, "length_ns": _INT, "top_sm": _STR,
                   "top_state": _STR, "top_criticality": _FLOAT}
STATES_TYPES = {
    "sys": _STR, "sm": _STR, "state": _STR, "traces": _INT, "critical_ns_sum": _INT,
    "criticality_mean": _FLOAT, "criticality_p50": _FLOAT, "criticality_p90": _FLOAT,
    "criticality_p99": _FLOAT,
}
# Null where a request has no state on its path.
NULLABLE = {"top_sm", "top_state"}
PER_TRACE_COLUMNS = list(PER_TRACE_TYPES)
STATES_COLUMNS = list(STATES_TYPES)
_OPTIONS = {"to": "to", "from_": "from", "annotation": "annotation", "instance": "instance",
            "trace": "trace"}


def _options(analyze_options):
    unknown = sorted(set(analyze_options) - set(_OPTIONS))
    if unknown:
        raise TypeError("analyze_many() got unexpected options: %s (expected %s)"
                        % (", ".join(unknown), ", ".join(_OPTIONS)))
    check_instance(analyze_options.get("instance"), analyze_options.get("annotation"))
    return {_OPTIONS[k]: v for k, v in analyze_options.items() if v is not None}


def table(data, types):
    """A DataFrame of ``data`` with the columns and dtypes of ``types``
    (:data:`PER_TRACE_TYPES` or :data:`STATES_TYPES`), empty ones too."""
    df = pd.DataFrame(data, columns=list(types))
    return df.astype({c: t[0] for c, t in types.items()})


def _arrow_schema(types):
    import pyarrow as pa

    return pa.schema([pa.field(c, t[1], nullable=c in NULLABLE) for c, t in types.items()])


def _write_parquet(df, path, types):
    import pyarrow as pa
    import pyarrow.parquet as pq

    t = pa.Table.from_pandas(df, schema=_arrow_schema(types), preserve_index=False)
    pq.write_table(t.replace_schema_metadata(None), path)


def _cannot_write(path, e):
    """The CLI's message for an output it cannot write."""
    if e.errno is None:
        return "%s: cannot write: %s" % (path, e)
    return "%s: cannot write: %s (os error %d)" % (path, e.strerror, e.errno)


def fraction_of_requests(fraction, what):
    """``fraction`` as a float if it is a fraction of the requests, above 0
    and at most 1 (0.1: the slowest 10%); else :class:`critpath.Error`
    (a ``ValueError``) naming ``what`` (``"slowest(%r)"``), as the CLI's
    ``--slowest`` refuses it."""
    try:
        f = float(fraction)
    except (TypeError, ValueError):
        f = None
    if f is None or not 0.0 < f <= 1.0:
        raise Error((what % (fraction,)) + ": expected a fraction of the requests, above 0 "
                    "and at most 1 (0.1: the slowest 10%)")
    return f


def _bar(total, progress):
    if progress is False:
        return None
    try:
        from tqdm.auto import tqdm
    except ImportError:
        return None
    if progress is None and not sys.stderr.isatty():
        return None
    return tqdm(total=total, unit="file", desc="critpath")


def _serial(paths, options, bar, pending):
    out = []
    for p in paths:
        out.append(analyze_part(p, options, True, pending))
        if bar is not None:
            bar.update(1)
    return out


def _executor(executor, paths, options, bar, slots, pending):
    chunks, threads = _tasks(paths, slots)
    futures = [executor.submit(analyze_parts, c, options, threads, pending) for c in chunks]
    out = []
    for f, c in zip(futures, chunks):
        out.extend(f.result())
        if bar is not None:
            bar.update(len(c))
    return out


def _local_pool(paths, options, bar, pending):
    workers = min(os.cpu_count() or 1, len(paths))
    if workers <= 1:
        return _serial(paths, options, bar, pending)
    import concurrent.futures as cf

    # Threads of this process: the native analysis runs without the GIL, so
    # they analyze files in parallel; unlike a process pool they need no
    # fresh interpreter, so no `if __name__ == "__main__":` guard in the
    # caller's script, and nothing is pickled.
    with cf.ThreadPoolExecutor(max_workers=workers, thread_name_prefix="critpath") as ex:
        return _executor(ex, paths, options, bar, workers, pending)


def _tasks(paths, slots):
    """How ``paths`` are spread over ``slots`` workers (threads or
    processes; None: unknown): the files of each task, and whether each
    file's requests are spread over the cores too. With at least two files per
    slot the slots are the parallelism and each file runs on its worker's
    thread (no more threads than cores); about four tasks per slot keep
    the cost per task small beside the analysis and still balance the
    last ones. With fewer files (one big span file), or slots unknown, one
    file per task and its requests on every core."""
    n = len(paths)
    chunk, threads = (1, True) if not slots or n < 2 * slots else (-(-n // (4 * slots)), False)
    return [paths[i:i + chunk] for i in range(0, n, chunk)], threads


def _dask(client, paths, options, bar, pending):
    # The cluster's threads are the slots (Dask runs native libraries one
    # thread per task: it starts its workers with OMP_NUM_THREADS=1). What
    # comes back is one JSON text per file.
    chunks, threads = _tasks(paths, sum(client.nthreads().values()))
    futures = client.map(analyze_parts, chunks, options=options, threads=threads,
                         pending=pending, pure=False)
    if bar is not None:
        from distributed import as_completed

        sizes = {f.key: len(c) for f, c in zip(futures, chunks)}
        for f in as_completed(futures):
            bar.update(sizes[f.key])
    return [part for parts in client.gather(futures) for part in parts]


def _is_dask_client(client):
    return type(client).__name__ == "Client" and hasattr(client, "map") and hasattr(client, "gather")


def analyze_many(paths, *, client=None, progress=None, **analyze_options):
    """Analyze many traces, one result per request, and aggregate them.

    ``client`` chooses where the files are analyzed: ``None``, a pool of
    threads of this process, one per core (the native analysis releases
    the GIL, so they run in parallel, and a plain script needs no
    ``if __name__ == "__main__":`` guard); ``"serial"``, this process, one
    file at a time; a
    ``dask.distributed.Client`` or a scheduler address (``"tcp://host:8786"``),
    the cluster's workers (``client.map`` over the files; only the per-request
    results travel back); or any ``concurrent.futures.Executor``. The results
    are the same whichever is used. ``progress``: a tqdm bar when tqdm is
    installed and standard error is a terminal (``True`` always, ``False``
    never). ``analyze_options`` are :func:`critpath.analyze`'s (``to``,
    ``from_``, ``annotation``, ``instance``) and ``trace``: one request
    (trace id) of span files, analyzed where its spans are (the files that
    share it as one request, as ``analyze(paths, trace=ID)``); a file that
    holds none of its spans gives no row, and no file holding it raises.
    No path raises :class:`critpath.Error`, as :func:`critpath.analyze`
    does. A file that cannot be analyzed raises :class:`critpath.Error`
    with the CLI's message, naming the file, and so does a file given twice,
    under one name or two (its requests would count twice). ``to`` and
    ``from_`` are a request's ends: a file that holds a part of a request
    may lack them when another file of the request holds them; a request
    that lacks them in all its files raises.
    """
    paths = path_list(paths, "analyze_many")
    if not paths:
        raise Error("no trace given: pass a path or a list of paths")
    _native.given_once(paths)
    options = _options(analyze_options)
    bar = _bar(len(paths), progress)
    # With other files, a request that lacks the to/from_ end in one file
    # waits for the rest of its spans (joined below); alone, it raises.
    pending = len(paths) > 1
    try:
        if client == "serial":
            parts = _serial(paths, options, bar, pending)
        elif client is None:
            parts = _local_pool(paths, options, bar, pending)
        elif isinstance(client, str):
            from distributed import Client

            with Client(client) as c:
                parts = _dask(c, paths, options, bar, pending)
        elif _is_dask_client(client):
            parts = _dask(client, paths, options, bar, pending)
        elif hasattr(client, "submit"):
            parts = _executor(client, paths, options, bar, getattr(client, "_max_workers", None),
                              pending)
        else:
            raise TypeError("client must be None, 'serial', a dask.distributed.Client, "
                            "a scheduler address or a concurrent.futures.Executor")
    finally:
        if bar is not None:
            bar.close()
    # A request whose spans several files hold is one request: those files
    # are analyzed again here, as one set (where this process cannot read
    # them, a cluster's files, their requests stay per file, with a
    # warning). One that still lacks the to/from_ end raises, naming its
    # files.
    if len(parts) > 1:
        joined, unjoined, unmatched = _native.join_split(parts, json.dumps(options))
        for e in unjoined:
            warnings.warn("critpath: %s; the requests these files share are counted per file" % e,
                          RuntimeWarning, stacklevel=2)
        if unmatched:
            raise Error("\n".join(unmatched))
        if joined is not None:
            parts = [joined]
    if "trace" in options and all(p == "[]" for p in parts):
        raise Error("--trace %s: no span of this trace id in any of the %d files"
                    % (options["trace"], len(paths)))
    return Batch(parts=parts)


class Batch:
    """Per-request results and their aggregate per state."""

    def __init__(self, results=None, *, parts=None):
        # A batch is held as parts: JSON texts of per-request results, one
        # per file, as workers send them back; the tables are made from
        # them natively, and the dicts of ``results`` only when asked for.
        if parts is None:
            self._results = list(results or [])
            self._parts = [json.dumps(self._results)]
        else:
            self._results = None
            self._parts = list(parts)
        self._native = None
        self._agg = None
        self._columns = None
        # Listed by (file, trace_id), as `critpath batch` lists them; the
        # slowest requests keep their order, longest path first.
        self._sorted = True

    @property
    def results(self):
        """The per-request results: a list of dicts with file, trace_id,
        length_ns and states (sys, sm, state, critical_ns, criticality),
        most critical first."""
        if self._results is None:
            self._results = [r for part in self._parts for r in json.loads(part)]
        return self._results

    def __getstate__(self):
        # The parsed results are native: a pickled batch carries its parts.
        return dict(self.__dict__, _native=None)

    def _parsed(self):
        if self._native is None:
            self._native = _native.Results(self._parts, sort=self._sorted)
        return self._native

    def _per_trace_columns(self):
        if self._columns is None:
            self._columns = json.loads(self._parsed().per_trace())
        return self._columns

    def __len__(self):
        return len(self._parsed())

    def __repr__(self):
        return "<critpath.Batch of %d traces>" % len(self)

    @property
    def per_trace(self):
        """One row per request: file, trace_id, length_ns and its most
        critical state (top_sm, top_state, top_criticality); a request with
        no state on its path has None, None and 0.0 (the CLI's JSON has
        ``""``, its Parquet null)."""
        return table(self._per_trace_columns(), PER_TRACE_TYPES)

    @property
    def states(self):
        """Per state: the requests where it is critical, its summed critical
        time, and the mean and p50/p90/p99 of its criticality over all
        requests; most summed critical time first (docs/json.md)."""
        if self._agg is None:
            self._agg = json.loads(self._parsed().aggregate())
        return table(self._agg, STATES_TYPES)

    def slowest(self, fraction):
        """The slowest ``fraction`` of the requests (0.1: the slowest 10%; at
        least one request) as a Batch whose rows are longest path first
        (equal lengths by file, trace_id). ``fraction`` is above 0 and at
        most 1, else :class:`critpath.Error` (a ``ValueError``)."""
        fraction = fraction_of_requests(fraction, "slowest(%r)")
        slow = Batch(parts=[self._parsed().slowest(fraction)])
        slow._sorted = False
        return slow

    def compare(self, fraction=0.1):
        """The slowest ``fraction`` against the rest: how many requests each
        part holds and the state that bounds each (``slow_top``,
        ``rest_top``) with its share of the part's path. ``fraction`` is as
        :meth:`slowest`'s."""
        fraction = fraction_of_requests(fraction, "compare(%r)")
        return json.loads(self._parsed().compare(fraction))

    def to_parquet(self, directory):
        """Writes per_trace.parquet and states.parquet into ``directory``
        (created if missing); needs pyarrow. Returns the two paths."""
        try:
            import pyarrow  # noqa: F401
        except ImportError:
            raise ImportError(
                "Batch.to_parquet needs pyarrow: pip install pyarrow "
                "(or the package's extra: pip install './python[parquet]')"
            ) from None
        return self._write(directory, ".parquet", _write_parquet)

    def to_csv(self, directory):
        """Writes per_trace.csv and states.csv into ``directory``."""
        return self._write(directory, ".csv", lambda df, p, _: df.to_csv(p, index=False))

    def _write(self, directory, ext, write):
        """Writes the two tables into ``directory`` as NAME+ext, each to a
        temporary file of its own beside it (other writers into the
        directory, threads or processes, have theirs), renamed into place
        when complete. A directory or file that cannot be written raises
        :class:`critpath.Error` naming it, as the CLI says it."""
        directory = os.fsdecode(directory)
        try:
            os.makedirs(directory, exist_ok=True)
        except OSError as e:
            raise Error(_cannot_write(directory, e)) from None
        tables = (("per_trace", self.per_trace, PER_TRACE_TYPES),
                  ("states", self.states, STATES_TYPES))
        return [_write_whole(os.path.join(directory, name + ext), df, types, write)
                for name, df, types in tables]


def _write_whole(path, df, types, write):
    """``write(df, tmp, types)`` to a temporary file beside ``path``, named
    uniquely, then renamed onto ``path``; the temporary file is removed if
    that fails. Returns ``path``."""
    d, base = os.path.split(path)
    tmp = os.path.join(d, ".%s.%s.tmp" % (base, uuid.uuid4().hex))
    try:
        write(df, tmp, types)
        os.replace(tmp, path)
    except OSError as e:
        raise Error(_cannot_write(path, e)) from None
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)
    return path


__all__ = ["analyze_many", "analyze_file", "Batch", "Error"]
