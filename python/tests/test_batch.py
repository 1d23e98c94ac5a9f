"""critpath.analyze_many: the same tables whether the files are analyzed in
this process, on a local process pool, on any executor or on a real Dask
cluster of two worker processes; the aggregate's findings on generated
checkout requests; errors carried back from the workers."""

import concurrent.futures as cf
import json
import multiprocessing
import os
import subprocess
import sys

import pandas as pd
import pytest

import critpath
import critpath.batch as batch
import checkout
from conftest import cli, example

FILES = 6
PER_FILE = 10


@pytest.fixture(scope="module")
def traces(tmp_path_factory):
    return checkout.write(str(tmp_path_factory.mktemp("checkout")), FILES, PER_FILE)


@pytest.fixture(scope="module")
def serial(traces):
    return critpath.analyze_many(traces, client="serial", progress=False)


@pytest.fixture(scope="module")
def dask_client():
    distributed = pytest.importorskip("distributed")
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                       dashboard_address=None)
    client = distributed.Client(cluster)
    yield client
    client.close()
    cluster.close()


def assert_same(a, b):
    pd.testing.assert_frame_equal(a.per_trace, b.per_trace)
    pd.testing.assert_frame_equal(a.states, b.states)
    assert a.results == b.results


def test_one_row_per_request_in_file_order(serial, traces):
    pt = serial.per_trace
    assert list(pt.columns) == ["file", "trace_id", "length_ns", "top_sm", "top_state",
                                "top_criticality"]
    assert len(pt) == FILES * PER_FILE
    assert pt["trace_id"].tolist() == ["req%05d" % i for i in range(FILES * PER_FILE)]
    assert pt["file"].tolist() == [t for t in traces for _ in range(PER_FILE)]


def test_each_request_is_what_analyze_gives_for_it_alone(serial, traces, tmp_path):
    # Request 3 of the first file written alone: the CLI's analysis of it.
    alone = checkout.write(str(tmp_path), 1, 4)[0]
    one = critpath.analyze_many([alone], client="serial", progress=False, trace="req00003")
    row = serial.per_trace.iloc[3]
    assert one.per_trace.iloc[0]["length_ns"] == row["length_ns"]
    with open(alone) as fh:
        spans = json.load(fh)
    for rs in spans["resourceSpans"]:
        for sc in rs["scopeSpans"]:
            sc["spans"] = [x for x in sc["spans"] if x["traceId"] == "req00003"]
    single = tmp_path / "req3.json"
    single.write_text(json.dumps(spans))
    doc = json.loads(cli("analyze", str(single), "--json")[1])
    assert row["length_ns"] == doc["critical_path"]["length_ns"]
    top = doc["states"][0]
    assert (row["top_sm"], row["top_state"]) == (top["sm"], top["state"])
    assert row["top_criticality"] == pytest.approx(top["criticality"])


def test_aggregate_finds_the_cart_then_the_db_in_the_slowest_tenth(serial):
    st = serial.states
    assert list(st.columns) == ["sys", "sm", "state", "traces", "critical_ns_sum",
                                "criticality_mean", "criticality_p50", "criticality_p90",
                                "criticality_p99"]
    assert (st.iloc[0]["sm"], st.iloc[0]["state"]) == ("cart", "load cart")
    assert st.iloc[0]["traces"] == FILES * PER_FILE
    assert st["critical_ns_sum"].is_monotonic_decreasing
    slow = serial.slowest(0.1)
    assert len(slow) == FILES * PER_FILE // 10
    assert set(slow.per_trace["trace_id"]) == {"req%05d" % i for i in range(9, FILES * PER_FILE, 10)}
    assert (slow.states.iloc[0]["sm"], slow.states.iloc[0]["state"]) == ("db", "SELECT orders")
    c = serial.compare(0.1)
    assert c["slow_top"]["state"] == "SELECT orders" and c["rest_top"]["state"] == "load cart"


def test_per_request_and_aggregate_numbers_are_the_clis_json_exactly(tmp_path):
    # The results cross Python as JSON and are parsed back in Rust for the
    # aggregate: not one float may move by an ulp on the way (40 checkout
    # requests gave a criticality_p90 of ...088 here, ...087 in the CLI).
    path = checkout.write(str(tmp_path), 1, 40)[0]
    doc = json.loads(cli("analyze", path, "--json")[1])
    b = critpath.analyze_many([path], client="serial", progress=False)
    assert b.states.to_dict("records") == [
        {c: s[c] for c in b.states.columns} for s in doc["states"]]
    assert b.per_trace["top_criticality"].tolist() == [
        p["top_criticality"] for p in doc["per_trace"]]
    assert b.compare(0.1) == doc["slowest"]


@pytest.mark.parametrize("fraction", [0, -0.1, 1.5, float("nan"), "x", None])
def test_slowest_and_compare_take_a_fraction_above_0_and_at_most_1(serial, fraction):
    # 0 used to give an empty Batch and 1.5 all of them, silently; "x" a
    # ValueError of float() and None a TypeError, not critpath.Error.
    for call in (serial.slowest, serial.compare):
        with pytest.raises(critpath.Error, match=r"expected a fraction of the requests, above 0 and "
                                             r"at most 1 \(0.1: the slowest 10%\)"):
            call(fraction)
    with pytest.raises(critpath.Error, match=r"^slowest\(0\): expected"):
        serial.slowest(0)
    assert len(serial.slowest(1)) == len(serial) and len(serial.slowest(0.01)) == 1


def test_local_pool_equals_serial(serial, traces):
    assert_same(critpath.analyze_many(traces, progress=False), serial)


def test_the_default_pool_works_from_a_plain_script_without_a_main_guard(serial, traces,
                                                                         tmp_path):
    # A script as users write it, run as `python script.py`: no
    # `if __name__ == "__main__":` (a spawn process pool re-imports the
    # script in each worker and breaks there).
    script = tmp_path / "plain.py"
    script.write_text(
        "import json, sys\n"
        "import critpath\n"
        "b = critpath.analyze_many(json.loads(sys.argv[1]), progress=False)\n"
        "print(json.dumps(b.results))\n")
    p = subprocess.run([sys.executable, str(script), json.dumps(traces)],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout) == serial.results


def test_the_native_analysis_runs_without_the_gil(tmp_path):
    # What makes the default thread pool parallel: while a file is analyzed
    # on one thread, this one keeps running Python.
    import threading

    from critpath import _work

    big = checkout.write(str(tmp_path), 1, 3000)[0]
    ticks = 0
    t = threading.Thread(target=_work.analyze_file, args=(big,))
    t.start()
    while t.is_alive():
        ticks += 1
    t.join()
    assert ticks > 10000


def test_any_executor_equals_serial(serial, traces):
    with cf.ThreadPoolExecutor(3) as ex:
        assert_same(critpath.analyze_many(traces, client=ex, progress=False), serial)


@pytest.mark.parametrize("pool", [
    lambda: cf.ThreadPoolExecutor(1),
    lambda: cf.ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("spawn")),
])
def test_tasks_of_several_files_keep_their_order(serial, traces, pool):
    # With at least two files per worker, a task holds several files, each
    # analyzed on the worker's thread only: the same results, in order.
    with pool() as ex:
        assert_same(critpath.analyze_many(traces, client=ex, progress=False), serial)


@pytest.mark.parametrize("files,slots", [(0, 2), (1, 2), (3, 2), (4, 2), (9, 2), (200, 2),
                                         (5, None), (7, 1)])
def test_tasks_cover_every_file_once_in_order(files, slots):
    paths = ["f%d" % i for i in range(files)]
    chunks, threads = batch._tasks(paths, slots)
    assert [p for c in chunks for p in c] == paths
    many = slots is not None and files >= 2 * slots
    assert threads is not many
    if many:
        # About four tasks per worker; one file per task otherwise.
        assert 2 * slots <= len(chunks) <= 4 * slots
    else:
        assert all(len(c) == 1 for c in chunks)


def test_a_file_on_one_thread_gives_what_it_gives_on_every_core(traces):
    from critpath import _work

    for p in traces[:2]:
        assert _work.analyze_part(p, None, False) == _work.analyze_part(p)


def test_a_batch_made_of_results_is_the_batch_of_its_parts(serial):
    again = critpath.Batch(serial.results)
    assert_same(again, serial)
    assert len(again) == len(serial)
    pd.testing.assert_frame_equal(again.slowest(0.2).per_trace, serial.slowest(0.2).per_trace)


def test_a_batch_pickles_after_its_tables_are_made(serial):
    import pickle

    serial.states, len(serial)
    again = pickle.loads(pickle.dumps(serial))
    assert_same(again, serial)


def test_a_worker_process_starts_without_pandas(tmp_path):
    # What a fresh worker (a spawned process, a Dask worker) imports to run
    # a task: the native module, not pandas; so a process pool starts fast.
    p = subprocess.run([sys.executable, "-c",
                        "import sys, critpath._work; print('pandas' in sys.modules)"],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == "False"


def test_dask_local_cluster_equals_serial(serial, traces, dask_client):
    got = critpath.analyze_many(traces, client=dask_client, progress=False)
    assert_same(got, serial)
    # The work ran on the two worker processes, not in this one.
    assert len(dask_client.scheduler_info()["workers"]) == 2


def test_dask_scheduler_address_equals_serial(serial, traces, dask_client):
    got = critpath.analyze_many(traces, client=dask_client.scheduler.address, progress=False)
    assert_same(got, serial)


def test_a_request_whose_spans_several_files_hold_is_one_request(tmp_path, dask_client):
    # 8 requests, each one's spans shared out between two files, beside a
    # trace of its own: each is one request, as analyze() of the whole
    # file gives it, on any client (the split ones joined where the
    # results come together), and as `critpath batch` gives it.
    whole = checkout.write(str(tmp_path / "whole"), 1, 8)[0]
    halves = checkout.split_by_service(whole, str(tmp_path / "whole"))
    other = example("nic-fig3.jsonl")
    want = critpath.analyze(whole).per_trace
    for client in ("serial", None, dask_client):
        got = critpath.analyze_many(halves + [other], client=client, progress=False)
        split = got.per_trace[got.per_trace["file"] == " + ".join(halves)]
        assert list(split["trace_id"]) == list(want["trace_id"])
        assert list(split["length_ns"]) == list(want["length_ns"])
        assert len(got.per_trace) == 8 + 1
    cli("batch", *halves, other, "-o", str(tmp_path / "cli"))
    table = pd.read_parquet(tmp_path / "cli" / "per_trace.parquet")
    split = table[table["file"] == " + ".join(halves)]
    assert sorted(split["length_ns"]) == sorted(want["length_ns"])
    assert len(table) == 8 + 1


def test_an_end_in_another_file_of_a_split_request_is_no_error(tmp_path, dask_client):
    # The halves share out the services: to="cart" is in the first only.
    # Each file was checked alone, so the second raised "--to cart: no state
    # machine of that name" where analyze() of both analyzes every request.
    whole = checkout.write(str(tmp_path / "whole"), 1, 8)[0]
    halves = checkout.split_by_service(whole, str(tmp_path / "whole"))
    want = critpath.analyze(halves, to="cart").per_trace
    assert list(want["length_ns"]) == list(critpath.analyze(whole, to="cart").per_trace["length_ns"])
    for client in ("serial", None, dask_client):
        got = critpath.analyze_many(halves, client=client, to="cart", progress=False).per_trace
        assert list(got["trace_id"]) == list(want["trace_id"])
        assert list(got["length_ns"]) == list(want["length_ns"])
        assert set(got["file"]) == {" + ".join(halves)}
    code, _, err = cli("batch", *halves, "--to", "cart", "-o", str(tmp_path / "cli"), ok=False)
    assert (code, err) == (0, "")
    table = pd.read_parquet(tmp_path / "cli" / "per_trace.parquet")
    assert list(table["length_ns"]) == list(want["length_ns"])


def test_an_end_no_file_of_a_request_holds_raises_naming_the_file(tmp_path, dask_client):
    # The CLI named the file, analyze_many did not: "--to nic.tx: no state
    # machine of that name ..." with no file.
    whole = checkout.write(str(tmp_path), 1, 4)[0]
    nic = example("nic-fig3.jsonl")
    for end, bad in (("nic.tx", whole), ("cart", nic)):
        _, _, message = cli("batch", nic, whole, "--to", end, ok=False)
        first = message.splitlines()[0]
        assert first.startswith(bad + ": --to %s: no state machine of that name" % end)
        for client in ("serial", None, dask_client):
            with pytest.raises(critpath.Error) as e:
                critpath.analyze_many([nic, whole], client=client, to=end, progress=False)
            assert str(e.value) == first
        # Alone, as one of several files, and through analyze_file.
        for call in (lambda: critpath.analyze_many([bad], to=end, progress=False),
                     lambda: batch.analyze_file(bad, {"to": end})):
            with pytest.raises(critpath.Error) as e:
                call()
            assert str(e.value) == first


def test_split_requests_stay_per_file_with_a_warning_where_the_files_cannot_be_read(tmp_path):
    # The files are gone by the time the results come together (as files
    # only a cluster's workers see): the per-file rows stay, with a warning.
    whole = checkout.write(str(tmp_path / "whole"), 1, 4)[0]
    halves = checkout.split_by_service(whole, str(tmp_path / "whole"))

    done = set()

    class Elsewhere(cf.Executor):
        def submit(self, fn, paths, *args):
            future = cf.Future()
            future.set_result(fn(paths, *args))
            done.update(paths)
            if done == set(halves):
                for h in halves:
                    os.rename(h, h + ".gone")
            return future

    with pytest.warns(RuntimeWarning, match="counted per file"):
        got = critpath.analyze_many(halves, client=Elsewhere(), progress=False)
    assert set(got.per_trace["file"]) == set(halves)
    assert len(got.per_trace) == 8


def test_results_do_not_depend_on_file_order(serial, traces):
    shuffled = critpath.analyze_many(list(reversed(traces)), client="serial", progress=False)
    pd.testing.assert_frame_equal(shuffled.states, serial.states)


def test_options_reach_the_workers(traces, dask_client):
    one = critpath.analyze_many(traces[:1], client=dask_client, trace="req00004", progress=False)
    assert one.per_trace["trace_id"].tolist() == ["req00004"]
    mixed = critpath.analyze_many([example("nic-fig3.jsonl")], client="serial", to="nic.tx",
                                  progress=False)
    assert mixed.per_trace["length_ns"].tolist() == [critpath.analyze(example("nic-fig3.jsonl"),
                                                                       to="nic.tx").length_ns]


def test_an_unreadable_file_raises_the_clis_message_from_any_worker(traces, tmp_path, dask_client):
    missing = str(tmp_path / "gone.json")
    _, _, message = cli("analyze", missing, ok=False)
    for client in ("serial", None, dask_client):
        with pytest.raises(critpath.Error) as e:
            critpath.analyze_many(traces[:2] + [missing], client=client, progress=False)
        assert str(e.value) == message
    with pytest.raises(TypeError, match="unexpected options"):
        critpath.analyze_many(traces, client="serial", speedup=2)


def test_no_top_state_is_none_everywhere(tmp_path):
    # Request a1 is one instant span: no state on its path. Its top_sm and
    # top_state were None in Batch.per_trace but "" in the CLI's Parquet
    # (and so in `critpath batch -o` with or without --scheduler).
    spans = {"resourceSpans": [{
        "resource": {"attributes": [{"key": "service.name", "value": {"stringValue": "svc"}}]},
        "scopeSpans": [{"spans": [
            {"traceId": "a1", "spanId": "s1", "name": "instant",
             "startTimeUnixNano": "1000", "endTimeUnixNano": "1000"},
            {"traceId": "b2", "spanId": "s2", "name": "work",
             "startTimeUnixNano": "1000", "endTimeUnixNano": "5000"}]}]}]}
    path = tmp_path / "spans.json"
    path.write_text(json.dumps(spans))
    want = [{"top_sm": None, "top_state": None, "top_criticality": 0.0},
            {"top_sm": "svc", "top_state": "work", "top_criticality": 1.0}]
    cols = ["top_sm", "top_state", "top_criticality"]
    b = critpath.analyze_many([path], client="serial", progress=False)
    assert b.per_trace[cols].to_dict("records") == want
    assert critpath.analyze(path).per_trace[cols].to_dict("records") == want
    written = b.to_parquet(tmp_path / "py")
    assert pd.read_parquet(written[0])[cols].to_dict("records") == want
    cli("batch", str(path), "-o", str(tmp_path / "cli"))
    assert pd.read_parquet(tmp_path / "cli" / "per_trace.parquet")[cols].to_dict("records") == want


def test_tables_are_critpath_batchs_row_for_row_and_type_for_type(tmp_path):
    # Files given out of order: `critpath batch` lists the requests by
    # (file, trace id) and Batch.per_trace listed them in the order given;
    # the CLI's Parquet had unsigned integers where pandas has int64.
    paths = checkout.write(str(tmp_path), 3, 4)
    given = [paths[2], paths[0], paths[1]]
    cli("batch", *given, "-o", str(tmp_path / "cli"))
    b = critpath.analyze_many(given, client="serial", progress=False)
    for name, table in (("per_trace", b.per_trace), ("states", b.states)):
        written = pd.read_parquet(tmp_path / "cli" / (name + ".parquet"))
        pd.testing.assert_frame_equal(written, table)
    assert list(b.per_trace["file"]) == sorted(paths[i] for i in range(3) for _ in range(4))


def test_a_file_given_twice_raises_as_analyze_does(tmp_path):
    # analyze_many([a, ./a]) or a hard link counted a's requests twice.
    a = checkout.write(str(tmp_path), 1, 4)[0]
    hard = str(tmp_path / "hard.json")
    os.link(a, hard)
    for again in (os.path.join(str(tmp_path), ".", os.path.basename(a)), hard):
        for client in ("serial", None):
            with pytest.raises(critpath.Error) as e:
                critpath.analyze_many([a, again], client=client, progress=False)
            assert str(e.value) == ("%s: the same file as %s, given before it; give each input "
                                    "once (its events would count twice)" % (again, a))
        with pytest.raises(critpath.Error) as e2:
            critpath.analyze([a, again])
        assert str(e2.value) == str(e.value)


def test_to_parquet_and_csv(serial, tmp_path):
    written = serial.to_parquet(tmp_path / "pq")
    assert [os.path.basename(p) for p in written] == ["per_trace.parquet", "states.parquet"]
    pd.testing.assert_frame_equal(pd.read_parquet(written[0]), serial.per_trace)
    pd.testing.assert_frame_equal(pd.read_parquet(written[1]), serial.states)
    csvs = serial.to_csv(tmp_path / "csv")
    assert pd.read_csv(csvs[1])["sm"].tolist() == serial.states["sm"].tolist()


def test_to_parquet_from_several_threads_into_one_directory(serial, tmp_path):
    # The temporary files were named by the process id only: threads
    # writing into one directory renamed each other's (FileNotFoundError,
    # or a half-written file put in place).
    out = tmp_path / "out"
    with cf.ThreadPoolExecutor(max_workers=4) as ex:
        for _ in range(20):
            list(ex.map(lambda _: serial.to_parquet(out), range(4)))
    assert sorted(os.listdir(out)) == ["per_trace.parquet", "states.parquet"]
    pd.testing.assert_frame_equal(pd.read_parquet(out / "per_trace.parquet"), serial.per_trace)
    pd.testing.assert_frame_equal(pd.read_parquet(out / "states.parquet"), serial.states)


def test_tables_into_a_file_raise_the_clis_message(serial, tmp_path):
    # A bare FileExistsError, not critpath.Error naming the file.
    afile = tmp_path / "afile"
    afile.write_text("x")
    _, _, message = cli("batch", example("spans", "otel", "otlp.json"), "-o", str(afile), ok=False)
    assert message == "%s: cannot write: File exists (os error 17)" % afile
    for write in (serial.to_parquet, serial.to_csv):
        with pytest.raises(critpath.Error) as e:
            write(afile)
        assert str(e.value) == message
    assert afile.read_text() == "x"


def test_no_file_raises_as_analyze_does():
    # analyze_many([]) (a glob that matched nothing) gave an empty Batch.
    for client in ("serial", None):
        with pytest.raises(critpath.Error) as e:
            critpath.analyze_many([], client=client, progress=False)
        assert str(e.value) == "no trace given: pass a path or a list of paths"


def test_an_empty_batch_has_the_tables_dtypes(serial):
    # Its columns were float64 (object in states), whatever they hold.
    empty = critpath.Batch([])
    assert len(empty) == 0 and len(empty.slowest(0.5)) == 0
    pd.testing.assert_series_equal(empty.per_trace.dtypes, serial.per_trace.dtypes)
    pd.testing.assert_series_equal(empty.states.dtypes, serial.states.dtypes)


def test_parquet_schemas_are_critpath_batchs(tmp_path):
    # Every column was written nullable where the CLI's are not null but
    # top_sm and top_state; an empty batch's had no types at all.
    pq = pytest.importorskip("pyarrow.parquet")
    path = example("spans", "otel", "otlp.json")
    cli("batch", path, "-o", str(tmp_path / "cli"))
    critpath.analyze_many([path], client="serial", progress=False).to_parquet(tmp_path / "py")
    critpath.Batch([]).to_parquet(tmp_path / "empty")
    for name in ("per_trace", "states"):
        want = pq.read_schema(tmp_path / "cli" / (name + ".parquet"))
        for d in ("py", "empty"):
            got = pq.read_schema(tmp_path / d / (name + ".parquet"))
            assert got.equals(want, check_metadata=True), (d, got, want)


def test_the_slowest_are_longest_path_first(serial):
    # As the docstring says (and critpath-batch gives them); they came back
    # by (file, trace_id).
    slow = serial.slowest(0.5).per_trace
    want = slow.sort_values(["length_ns", "file", "trace_id"], ascending=[False, True, True],
                            kind="stable").reset_index(drop=True)
    pd.testing.assert_frame_equal(slow, want)
    assert len(slow) == len(serial) // 2
    r = critpath.analyze(example("spans", "otel", "otlp.json"))
    assert r.slowest(1).per_trace["length_ns"].tolist() == [132000000, 128000000, 57000000]
    assert [x["trace_id"] for x in r.slowest(1).results] == r.slowest(1).per_trace["trace_id"].tolist()


def test_trace_picks_the_request_in_the_files_that_hold_it(tmp_path):
    # Each file was asked for the request alone: any file without it raised.
    # Now: where its spans are, the files that share it as one request, as
    # analyze(files, trace=ID) gives it.
    whole = checkout.write(str(tmp_path / "whole"), 1, 8)[0]
    halves = checkout.split_by_service(whole, str(tmp_path / "whole"))
    otlp = example("spans", "otel", "otlp.json")
    files = halves + [otlp]
    for tid, file in (("req00003", " + ".join(halves)),
                      ("5b8efff798038103d269b633813f0002", otlp)):
        want = critpath.analyze(files, trace=tid).length_ns
        for client in ("serial", None):
            pt = critpath.analyze_many(files, client=client, trace=tid, progress=False).per_trace
            assert pt[["file", "trace_id", "length_ns"]].values.tolist() == [[file, tid, want]]
    with pytest.raises(critpath.Error) as e:
        critpath.analyze_many(files, client="serial", trace="nope", progress=False)
    assert str(e.value) == "--trace nope: no span of this trace id in any of the 3 files"
    # One file: its own message, as analyze gives it.
    with pytest.raises(critpath.Error) as one:
        critpath.analyze_many([otlp], trace="nope", progress=False)
    assert str(one.value).startswith(otlp + ": --trace nope: no span of this trace id; ")


def test_python_m_critpath_batch_on_a_scheduler(traces, tmp_path, dask_client):
    out = tmp_path / "out"
    p = subprocess.run([sys.executable, "-m", "critpath", "batch", *traces, "--scheduler",
                        dask_client.scheduler.address, "-o", str(out)],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    assert "%d traces from %d files" % (FILES * PER_FILE, FILES) in p.stdout
    assert "db: SELECT orders" in p.stdout
    st = pd.read_parquet(out / "states.parquet")
    assert st["sm"].iloc[0] == "cart"
    bad = subprocess.run([sys.executable, "-m", "critpath", "batch", str(tmp_path / "nope"), "-o",
                          str(out)], capture_output=True, text=True, timeout=300)
    assert bad.returncode == 2 and "cannot open" in bad.stderr
    zero = subprocess.run([sys.executable, "-m", "critpath", "batch", *traces, "--slowest", "0",
                           "-o", str(out)], capture_output=True, text=True, timeout=300)
    assert zero.returncode == 2 and "--slowest 0.0: expected a fraction" in zero.stderr
