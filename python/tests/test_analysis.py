"""critpath.analyze against the critpath binary on the same traces: the
same numbers, the same JSON byte for byte, the same HTML report, and the
same messages when something is wrong (raised as critpath.Error, never a
crash)."""

import json
import os
import subprocess
import sys

import pandas as pd
import pytest

import critpath
from conftest import cli, example

NIC = example("nic-fig3.jsonl")


@pytest.fixture(scope="module")
def nic():
    return critpath.analyze(NIC)


def test_nic_fig3_length_and_most_critical_state(nic):
    assert nic.length_ns == 830
    # The JSON's columns, the table's first.
    assert list(nic.states.columns) == [
        "sys", "sm", "state", "visits", "total_ns", "critical_ns", "criticality", "blame"]
    top = nic.states.iloc[0]
    assert (top["sys"], top["sm"], top["state"]) == ("local", "nic.tx", "DMA packet")
    assert top["critical_ns"] == 600


def test_states_are_the_clis_in_its_order(nic):
    doc = json.loads(cli("analyze", "--json", NIC)[1])
    want = pd.DataFrame(doc["states"])[list(nic.states.columns)]
    pd.testing.assert_frame_equal(nic.states, want)


def test_to_json_is_byte_identical_to_analyze_json(nic):
    assert nic.to_json() == cli("analyze", "--json", NIC)[1]


def test_path_is_the_clis_path_with_a_kind(nic):
    doc = json.loads(cli("analyze", "--json", "--path", NIC)[1])
    path = nic.path
    assert list(path.columns) == ["sm", "state", "start_ns", "end_ns", "kind", "sys", "from_sm",
                                  "inter"]
    # Every column of the CLI's --path, with its values.
    assert path.drop(columns="kind").to_dict("records") == [
        {k: s[k] for k in path.columns if k != "kind"} for s in doc["path"]]
    assert set(doc["path"][0]) <= set(path.columns)
    assert path["inter"].dtype == bool
    assert path["kind"].tolist() == ["wait" if s["inter"] else "state" for s in doc["path"]]
    assert path["end_ns"].iloc[-1] == 830


def test_no_path_has_the_path_columns_types(nic, tmp_path):
    # b ends before a starts: no path from b to a. Its empty .path had
    # object columns where a path has int64 and bool.
    trace = tmp_path / "nf.jsonl"
    trace.write_text('{"t":0,"sm":"a","ev":"state","state":"x"}\n'
                     '{"t":10,"sm":"b","ev":"state","state":"x"}\n'
                     '{"t":20,"sm":"b","ev":"end"}\n{"t":100,"sm":"a","ev":"end"}\n')
    a = critpath.analyze(trace, from_="b", to="a")
    assert not a.found and a.path.empty
    pd.testing.assert_series_equal(a.path.dtypes, nic.path.dtypes)
    assert a.path["inter"].dtype == bool and a.path["start_ns"].dtype == "int64"


@pytest.mark.parametrize("name,factor", [("nic.tx:DMA packet", 2), ("nic.txfifo:transmit", 1e9),
                                         ("nic.descfetch:fetch desc", 1.5)])
def test_whatif_predicts_what_the_cli_predicts(nic, name, factor):
    spec = "%s=%s" % (name, factor)
    doc = json.loads(cli("whatif", NIC, "--speedup", spec, "--json")[1])
    got = nic.whatif({name: factor})
    assert got == doc["predicted_length_ns"]
    assert got < 830


def test_next_is_the_clis_next_critical_path(nic):
    doc = json.loads(cli("analyze", NIC, "--json", "--next")[1])
    want = doc["next_critical_path"]
    got = nic.next()
    assert (got.length_ns, got.removed) == (want["length_ns"], want["removed"])
    assert got.shorter == pytest.approx(want["shorter"])
    assert got.states[["sm", "state", "critical_ns"]].to_dict("records") == [
        {k: s[k] for k in ("sm", "state", "critical_ns")} for s in want["states"]]
    two = nic.next(2)
    want2 = json.loads(cli("analyze", NIC, "--json", "--next", "2")[1])["next_critical_paths"]
    assert [(p.length_ns, p.removed) for p in two] == [(p["length_ns"], p["removed"]) for p in want2]
    removed = nic.next(remove=["nic.txfifo:transmit"])
    want_r = json.loads(cli("analyze", "--json", "--remove", "nic.txfifo:transmit", NIC)[1])
    assert removed.length_ns == want_r["next_critical_path"]["length_ns"]
    # Under to=, the next paths end at the same SM (Transmit's chain
    # without its DMA, then without fetch desc too).
    to_tx = critpath.analyze(NIC, to="nic.tx").next(2)
    assert [p.length_ns for p in to_tx] == [120, 20]
    want_to = json.loads(cli("analyze", NIC, "--json", "--to", "nic.tx", "--next", "2")[1])
    assert [p.length_ns for p in to_tx] == [
        p["length_ns"] for p in want_to["next_critical_paths"]]


def test_slack_is_the_clis(nic):
    doc = json.loads(cli("slack", "--json", NIC)[1])
    got = nic.slack()
    assert got[["sm", "state"]].to_dict("records") == [
        {"sm": s["sm"], "state": s["state"]} for s in doc["states"]]
    assert [None if pd.isna(v) else int(v) for v in got["slack_ns"]] == [
        s.get("slack_ns") for s in doc["states"]]
    assert got["slack_ns"].iloc[0] == 0
    # Every column of the CLI's rows, blame too.
    assert set(got.columns) == set().union(*(s.keys() for s in doc["states"]))
    assert got["blame"].tolist() == [s["blame"] for s in doc["states"]]


def test_report_is_the_clis_html(nic, tmp_path):
    mine = tmp_path / "mine.html"
    theirs = tmp_path / "cli.html"
    assert nic.report(mine) == str(mine)
    cli("report", NIC, "-o", str(theirs))
    # The graph's SVG lists its font classes in no fixed order (the CLI's
    # own reports differ there from run to run): compare with each <style>
    # block's lines sorted, everything else byte for byte.
    assert canonical_html(mine.read_text()) == canonical_html(theirs.read_text())
    assert "nic.tx" in mine.read_text()
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".partial")] == []


def canonical_html(text):
    out, style = [], None
    for line in text.split("\n"):
        if style is not None:
            style.append(line)
            if "</style>" in line:
                out.extend(sorted(style))
                style = None
        elif line.endswith("<style>"):
            out.append(line)
            style = []
        else:
            out.append(line)
    return out


def test_report_refuses_to_replace_an_input(tmp_path):
    trace = tmp_path / "t.jsonl"
    trace.write_bytes(open(NIC, "rb").read())
    a = critpath.analyze(str(trace))
    with pytest.raises(critpath.Error, match="this is the input"):
        a.report(trace)
    assert trace.read_bytes() == open(NIC, "rb").read()


def test_repr_html_has_the_verdict_and_top_rows(nic):
    h = nic._repr_html_()
    assert nic.verdict.startswith("bound by nic.tx: DMA packet")
    assert nic.verdict in h
    assert "<td>DMA packet</td>" in h and "72.3%" in h
    assert "3 more states" in h


@pytest.mark.parametrize("name", ["nic-fig3.jsonl", "calls.jsonl", "stacks.jsonl"])
def test_verdict_is_the_clis_with_its_whatif(name):
    path = example(name)
    a = critpath.analyze(path)
    line = cli("analyze", path)[1].splitlines()[0]
    assert a.verdict == line
    # The verdict's what-if is the top state twice as fast, as whatif() says.
    assert "; 2× faster → " in line
    top = a.states.iloc[0]
    faster = a.whatif({"%s:%s" % (top["sm"], top["state"]): 2})
    assert 0 < faster < a.length_ns
    ratio = a.length_ns / faster
    want = "%.1f× shorter" % ratio if ratio >= 1.1 else "%.1f%% shorter" % (100 * (1 - 1 / ratio))
    assert want in line


def test_two_hosts_merged_as_the_cli_merges_them():
    files = [example("rpc", "client.jsonl"), example("rpc", "server.jsonl")]
    a = critpath.analyze(files)
    assert a.to_json() == cli("analyze", "--json", *files)[1]
    assert any(d["kind"] == "clock-offset" for d in a.diagnostics)


def test_to_and_from_are_the_clis(nic):
    a = critpath.analyze(NIC, to="nic.tx", from_="nic.descfetch")
    assert a.to_json() == cli("analyze", "--json", "--to", "nic.tx", "--from", "nic.descfetch", NIC)[1]
    # A path-gap names where its gaps lie only with the path, as the CLI's.
    a = critpath.analyze(NIC, from_="nic.tx")
    assert "path-gap" in a.to_json()
    assert a.to_json() == cli("analyze", "--json", "--from", "nic.tx", NIC)[1]
    assert a.length_ns < nic.length_ns


def test_a_span_file_of_several_requests_is_analyzed_per_request_as_the_cli_does(tmp_path):
    # 40 checkout requests 1 s apart: as one timeline the path spanned the
    # file (39.18 s); each request's is about 57 ms, 133 ms for every tenth.
    import checkout

    path = checkout.write(str(tmp_path), 1, 40)[0]
    a = critpath.analyze(path)
    assert isinstance(a, critpath.Requests) and isinstance(a, critpath.Analysis)
    out = cli("analyze", "--json", path)[1]
    assert a.to_json() == out
    doc = json.loads(out)
    assert a.traces == doc["traces"] == 40
    assert a.per_trace[["trace_id", "length_ns"]].to_dict("records") == [
        {"trace_id": p["trace_id"], "length_ns": p["length_ns"]} for p in doc["per_trace"]]
    assert a.per_trace["length_ns"].max() < 200_000_000
    assert a.states.to_dict("records") == doc["states"]
    assert (a.states.iloc[0]["sm"], a.states.iloc[0]["state"]) == ("cart", "load cart")
    assert a.comparison == doc["slowest"] == a.compare(0.1)
    assert set(a.slowest(0.1).per_trace["trace_id"]) == {"req%05d" % i for i in (9, 19, 29, 39)}
    assert a.verdict == cli("analyze", path)[1].splitlines()[0]
    assert a.verdict.startswith("bound by cart: load cart over 40 requests")
    assert "40 requests" in repr(a) and "load cart" in a._repr_html_()
    for what in (lambda: a.length_ns, lambda: a.path, lambda: a.whatif({"cart:load cart": 2}),
                 lambda: a.next(), lambda: a.slack(), lambda: a.report(tmp_path / "r.html")):
        with pytest.raises(critpath.Error, match=r"holds 40 requests .*trace=ID \(e.g. trace='req00000'\)"):
            what()
    # The same with --to, and a file of one request is an ordinary trace.
    assert critpath.analyze(path, to="db").to_json() == cli("analyze", "--json", "--to", "db", path)[1]
    one = checkout.write(str(tmp_path / "one"), 1, 1)[0]
    assert type(critpath.analyze(one)) is critpath.Analysis


def test_span_files_that_share_requests_are_analyzed_as_one_set_as_the_cli_does(tmp_path):
    import checkout

    # One request whose spans two files share: the request, as whole.
    one = checkout.write(str(tmp_path / "one"), 1, 1)[0]
    halves = checkout.split_by_service(one, str(tmp_path / "one"))
    a = critpath.analyze(halves)
    assert type(a) is critpath.Analysis
    assert a.to_json() == cli("analyze", "--json", *halves)[1]
    assert a.length_ns == critpath.analyze(one).length_ns
    # Several requests: per request, each joined across the files.
    many = checkout.write(str(tmp_path / "many"), 1, 6)[0]
    halves = checkout.split_by_service(many, str(tmp_path / "many"))
    r = critpath.analyze(halves)
    assert isinstance(r, critpath.Requests) and r.traces == 6
    assert r.to_json() == cli("analyze", "--json", *halves)[1]
    assert list(r.per_trace["length_ns"]) == list(critpath.analyze(many).per_trace["length_ns"])
    assert " + ".join(halves) in repr(r)
    # And one of them by its id.
    b = critpath.analyze(halves, trace="req00003")
    assert b.to_json() == cli("analyze", "--json", "--trace", "req00003", *halves)[1]


def test_trace_analyzes_one_request_as_the_clis_trace(tmp_path):
    import checkout

    path = checkout.write(str(tmp_path), 1, 20)[0]
    a = critpath.analyze(path, trace="req00009")
    assert type(a) is critpath.Analysis
    assert a.to_json() == cli("analyze", "--json", "--trace", "req00009", path)[1]
    assert a.length_ns == critpath.analyze(path).per_trace["length_ns"].iloc[9]
    assert a.states.iloc[0]["state"] == "SELECT orders"
    doc = json.loads(cli("whatif", path, "--trace", "req00009", "--speedup", "db:SELECT orders=2",
                         "--json")[1])
    assert a.whatif({"db:SELECT orders": 2}) == doc["predicted_length_ns"]
    with pytest.raises(critpath.Error) as e:
        critpath.analyze(path, trace="nope")
    assert str(e.value) == cli("analyze", path, "--trace", "nope", ok=False)[2]
    with pytest.raises(critpath.Error) as e:
        critpath.analyze([path, NIC], trace="req00001")
    assert str(e.value) == cli("analyze", path, NIC, "--trace", "req00001", ok=False)[2]


def test_kineto_annotation_instance_is_the_clis(tmp_path):
    gen = os.path.join(os.path.dirname(NIC), "..", "crates", "gpu", "tests", "gen", "gen_kineto.py")
    subprocess.run([sys.executable, gen, str(tmp_path), "--ranks", "1", "--steps", "3"], check=True,
                   capture_output=True)
    trace = str(sorted(tmp_path.iterdir())[0])
    a = critpath.analyze(trace, annotation="ProfilerStep", instance=1)
    want = cli("analyze", "--json", "--annotation", "ProfilerStep", "--instance", "1", trace)[1]
    assert a.to_json() == want
    assert "gpu" in json.loads(want)
    whole = critpath.analyze(trace)
    assert 0 < a.length_ns < whole.length_ns
    # An instance is an int from 0, given with annotation=, for analyze and
    # analyze_many alike.
    for bad in (-1, 10**30, 1.5, True):
        for call in (critpath.analyze, lambda *a, **k: critpath.analyze_many(*a, client="serial", **k)):
            with pytest.raises(critpath.Error, match=r"instance=.*expected which instance"):
                call(trace, annotation="ProfilerStep", instance=bad)
    with pytest.raises(critpath.Error, match="instance= needs annotation="):
        critpath.analyze_many([trace], client="serial", instance=1)


def test_an_annotation_of_a_trace_that_is_not_a_pytorch_profiler_one_is_refused():
    # Not the whole trace analyzed as if annotation= were not given: the
    # CLI's message, for analyze and analyze_many alike.
    with pytest.raises(critpath.Error) as e:
        critpath.analyze(NIC, annotation="ProfilerStep")
    assert_same_error(e, "analyze", NIC, "--annotation", "ProfilerStep")
    assert "applies only to PyTorch profiler (Kineto) GPU traces, and this is a JSONL trace" in str(e.value)
    with pytest.raises(critpath.Error, match=r"applies only to PyTorch profiler \(Kineto\)"):
        critpath.analyze_many([NIC], client="serial", annotation="ProfilerStep")


@pytest.mark.parametrize("instance", [None, 5])
def test_an_annotation_of_a_span_file_of_several_requests_is_refused(instance):
    # It was ignored there (the requests analyzed as without it) while the
    # CLI, a span file of one request and analyze_many refuse it.
    spans = example("spans", "otel", "otlp.json")
    args = ["--instance", str(instance)] if instance is not None else []
    with pytest.raises(critpath.Error) as e:
        critpath.analyze(spans, annotation="ProfilerStep", instance=instance)
    assert_same_error(e, "analyze", spans, "--annotation", "ProfilerStep", *args)
    assert str(e.value).endswith("and this is a span file (OpenTelemetry, Jaeger or Zipkin)")
    with pytest.raises(critpath.Error) as many:
        critpath.analyze_many([spans], client="serial", annotation="ProfilerStep")
    assert str(many.value) == str(e.value)


# Bad input: the CLI's message, raised as critpath.Error (a ValueError).

def assert_same_error(exc, *cli_args):
    code, _, message = cli(*cli_args, ok=False)
    assert code == 2
    assert str(exc.value) == message
    assert isinstance(exc.value, ValueError)


def test_missing_file(tmp_path):
    missing = str(tmp_path / "nope.jsonl")
    with pytest.raises(critpath.Error) as e:
        critpath.analyze(missing)
    assert_same_error(e, "analyze", missing)


def test_a_file_given_twice_is_refused_as_the_cli_refuses_it():
    spans = example("spans/checkout-otlp.json")
    again = os.path.join(os.path.dirname(spans), ".", os.path.basename(spans))
    with pytest.raises(critpath.Error) as e:
        critpath.analyze([spans, again])
    assert "the same file as" in str(e.value)
    assert_same_error(e, "analyze", spans, again)


def test_traces_no_link_joins_are_refused_with_what_to_do_instead():
    # The CLI prints one analysis per file; one Analysis has one path.
    files = [example("nic-fig3.jsonl"), example("calls.jsonl")]
    with pytest.raises(critpath.Error) as e:
        critpath.analyze(files)
    message = str(e.value)
    assert message.startswith("no send/recv link joins"), message
    assert "critpath.analyze_many(paths)" in message, message
    assert "each trace is analyzed on its own" not in message, message


def test_not_a_trace(tmp_path):
    junk = tmp_path / "junk.bin"
    junk.write_bytes(bytes(range(256)) * 8)
    with pytest.raises(critpath.Error) as e:
        critpath.analyze(str(junk))
    assert_same_error(e, "analyze", str(junk))


def test_damaged_jsonl_raises_unless_partial_results_are_asked_for(tmp_path):
    lines = open(NIC).read().splitlines()
    lines[4] = '{"t": oops'
    bad = tmp_path / "damaged.jsonl"
    bad.write_text("\n".join(lines) + "\n")
    with pytest.raises(critpath.Error) as e:
        critpath.analyze(str(bad))
    assert_same_error(e, "analyze", "--json", str(bad))
    with pytest.warns(RuntimeWarning, match="damaged.jsonl:5"):
        a = critpath.analyze(str(bad), partial=True)
    assert a.to_json() == cli("analyze", "--json", str(bad), ok=False)[1]


def test_truncated_jsonl(tmp_path):
    cut = tmp_path / "cut.jsonl"
    cut.write_bytes(open(NIC, "rb").read()[:-7])
    code, out, message = cli("analyze", "--json", str(cut), ok=False)
    if code == 0:
        assert critpath.analyze(str(cut)).to_json() == out
    else:
        with pytest.raises(critpath.Error) as e:
            critpath.analyze(str(cut))
        assert str(e.value) == message


@pytest.mark.parametrize("speedup", [{"nope:x": 2}, {"nic.tx:DMA packet": 0}, {"nope": 2},
                                     {"nic.tx:DMA packet": "fast"}])
def test_bad_whatif_names_and_factors(nic, speedup):
    (name, factor), = speedup.items()
    with pytest.raises(critpath.Error) as e:
        nic.whatif(speedup)
    assert_same_error(e, "whatif", NIC, "--speedup", "%s=%s" % (name, factor))


def test_bad_to_and_remove(nic):
    with pytest.raises(critpath.Error) as e:
        critpath.analyze(NIC, to="nic.nothing")
    assert_same_error(e, "analyze", NIC, "--to", "nic.nothing")
    with pytest.raises(critpath.Error) as e:
        nic.next(remove=["nic.tx:nothing"])
    assert_same_error(e, "analyze", NIC, "--remove", "nic.tx:nothing")


def test_a_report_into_a_directory_and_a_json_file_of_no_trace(nic, tmp_path):
    # Two messages that were not the CLI's: "Not a directory" for a
    # directory, and a JSON file of no trace without "(no record could be
    # read before it: nothing to analyze)".
    d = tmp_path / "d"
    d.mkdir()
    with pytest.raises(critpath.Error) as e:
        nic.report(str(d) + "/")
    assert_same_error(e, "report", NIC, "-o", str(d) + "/")
    other = tmp_path / "other.json"
    other.write_text('{"hello": [1,2,3]}\n')
    with pytest.raises(critpath.Error) as e:
        critpath.analyze(other)
    assert_same_error(e, "analyze", str(other))
    assert str(e.value).endswith("(no record could be read before it: nothing to analyze)")


def test_no_paths_and_instance_without_annotation():
    with pytest.raises(critpath.Error, match="no trace given"):
        critpath.analyze([])
    with pytest.raises(critpath.Error, match="needs annotation"):
        critpath.analyze(NIC, instance=1)


@pytest.mark.parametrize("given", [None, 5, [None]])
def test_what_is_not_a_path_is_named_in_a_type_error(given):
    # analyze(None) said "'NoneType' object is not iterable".
    for call in (critpath.analyze, critpath.analyze_many):
        with pytest.raises(TypeError) as e:
            call(given)
        assert str(e.value) == "%s takes a path or a list of paths, got %r" % (
            call.__name__, given)


def test_the_sdk_imports_without_the_native_module_or_pandas():
    code = ("import sys; import critpath.sdk; "
            "assert 'pandas' not in sys.modules and 'critpath._native' not in sys.modules")
    pkg = os.path.dirname(os.path.dirname(os.path.abspath(critpath.__file__)))
    subprocess.run([sys.executable, "-c", code], check=True, cwd=pkg)


def _viztracer_join(tmp_path):
    """A join and a queue hand-off, as viztracer writes them (no flow
    events: the links are inferred)."""
    def x(tid, ts, dur, name):
        return {"ph": "X", "pid": 1, "tid": tid, "ts": ts, "dur": dur, "name": name}

    names = {1: "MainThread", 2: "producer", 3: "consumer"}
    events = [{"ph": "M", "pid": 1, "tid": t, "name": "thread_name", "args": {"name": n}}
              for t, n in names.items()]
    events += [
        x(1, 0, 1000, "main"), x(1, 10, 985, "Thread.join (threading.py:1087)"),
        x(1, 11, 983, "_thread.lock.acquire"),
        x(2, 5, 95, "make"), x(2, 100, 10, "Queue.put (queue.py:122)"),
        x(3, 5, 107, "Queue.get (queue.py:154)"), x(3, 6, 105, "Condition.wait (threading.py:295)"),
        x(3, 7, 104, "_thread.lock.acquire"), x(3, 112, 878, "digest"),
    ]
    p = tmp_path / "q.json"
    p.write_text(json.dumps(events))
    return str(p)


def test_frames_have_the_jsons_columns(tmp_path):
    trace = _viztracer_join(tmp_path)
    a = critpath.analyze(trace)
    doc = json.loads(cli("analyze", "--json", "--path", trace)[1])
    # Every column of the JSON's states (blame among them), the table's first.
    assert set(doc["states"][0]) == set(a.states.columns)
    assert a.states["blame"].tolist() == [s["blame"] for s in doc["states"]]
    # The path marks the links the reader inferred (the JSON has the key
    # only where true).
    path = a.path
    assert set().union(*doc["path"]) <= set(path.columns)
    assert path["inferred"].dtype == bool
    assert path["inferred"].tolist() == [s.get("inferred", False) for s in doc["path"]]
    assert path.loc[path["inferred"], ["from_sm", "sm"]].values.tolist() == [
        ["producer", "consumer"], ["consumer", "MainThread"]]
