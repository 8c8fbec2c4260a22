"""dy.profiler(): the --dynet-profiling table and a Chrome trace of a block, at run time; graphviz and the
module's other text output through sys.stdout / sys.stderr (what a notebook shows)."""
import json
import os
import re
import subprocess
import sys
import threading

import pytest

import dynet as dy
from conftest import REPO


@pytest.fixture
def model():
    pc = dy.ParameterCollection()
    return pc, pc.add_parameters((8, 2), name="W"), pc.add_parameters((8,), name="b"), \
        pc.add_lookup_parameters((10, 2), name="E")


def step(model, autobatching=False, n=3, squash=dy.tanh):
    """n independent squash(W·E[i] + b), summed: forward and backward on a fresh graph."""
    _, W, b, E = model
    dy.renew_cg(autobatching=autobatching)
    loss = dy.sum_elems(dy.esum([squash(W * dy.lookup(E, i) + b) for i in range(n)]))
    loss.value()
    loss.backward()


def nodes(p, op):
    return sum(s["nodes"] for s in p.stats() if s["op"] == op)


def test_table_lists_the_ops_of_the_block_only(model):
    step(model, squash=dy.logistic)
    with dy.profiler() as p:
        assert p.running
        step(model)
    assert not p.running
    step(model, squash=dy.logistic)
    table = p.table()
    assert table.startswith("Timing Info:\n") and str(p) == table
    rows = {line.split()[0] for line in table.splitlines()[2:-1]}
    assert {"tanh", "matmul", "lookup", "parameter", "sum_elems"} <= rows
    assert "logistic" not in rows
    assert nodes(p, "tanh") == 3 and nodes(p, "logistic") == 0


def test_stats_per_op_and_dim(model):
    with dy.profiler() as p:
        step(model, n=4)
    stats = p.stats()
    tanh = [s for s in stats if s["op"] == "tanh"]
    assert len(tanh) == 1
    s = tanh[0]
    assert (s["dim"], s["shape"], s["batch"], s["nodes"], s["groups"], s["batched_nodes"]) == ("{8}", (8,), 1, 4, 4, 0)
    assert s["total_ms"] == pytest.approx(s["forward_ms"] + s["backward_ms"])
    assert s["forward_ms"] > 0 and s["backward_ms"] > 0
    assert [x["total_ms"] for x in stats] == sorted((x["total_ms"] for x in stats), reverse=True)
    W = [x for x in stats if x["op"] == "parameter" and x["shape"] == (8, 2)]
    assert len(W) == 1 and W[0]["nodes"] == 1


def test_start_stop_adds_up_and_reset_forgets(model):
    p = dy.profiler()
    step(model)  # not started: nothing
    assert p.stats() == []
    for _ in range(2):
        p.start()
        step(model)
        p.stop()
    assert nodes(p, "tanh") == 6
    p.reset()
    assert p.stats() == [] and "tanh" not in p.table()


def test_nested_profilers_each_see_their_block(model):
    with dy.profiler() as outer:
        step(model, squash=dy.logistic)
        with dy.profiler() as inner:
            step(model)
    assert nodes(inner, "tanh") == 3 and nodes(inner, "logistic") == 0
    assert nodes(outer, "tanh") == 3 and nodes(outer, "logistic") == 3


@pytest.mark.parametrize("autobatching", [False, True])
def test_chrome_trace_names_ops_and_dims(model, tmp_path, autobatching):
    with dy.profiler() as p:
        step(model, autobatching=autobatching)
    path = tmp_path / "trace.json"
    p.export_chrome_trace(path)
    with open(path) as f:
        trace = json.load(f)
    assert trace == json.loads(p.chrome_trace())
    events = trace["traceEvents"]
    assert all(e["ph"] == "X" and e["dur"] >= 0 for e in events)
    ops = [e for e in events if e["cat"] in ("forward", "backward")]
    tanh = {(e["cat"], e["args"]["dim"], e["args"]["members"], e["name"]) for e in ops if e["args"]["op"] == "tanh"}
    if autobatching:  # the three run as one batched group
        assert tanh == {("forward", "{8}", 3, "tanh x3"), ("backward", "{8}", 3, "tanh x3")}
        assert any(e["name"] == "forward pass" and e["args"]["nodes"] > 0 for e in events)
    else:
        assert tanh == {("forward", "{8}", 1, "tanh"), ("backward", "{8}", 1, "tanh")}
    assert {"{8,2}", "{8}"} <= {e["args"]["dim"] for e in ops if e["args"]["op"] == "parameter"}


def test_trace_export_errors_name_the_path(model, tmp_path):
    with dy.profiler() as p:
        step(model)
    with pytest.raises(FileNotFoundError, match="no_such_folder"):
        p.export_chrome_trace(str(tmp_path / "no_such_folder" / "t.json"))


def test_profiling_graphs_in_threads(model):
    """One profiler of every thread, one per thread of its own: each counts what it should."""
    rounds, counts = 5, {}

    def work(k):
        with dy.ComputationGraph():
            with dy.profiler(all_threads=False) as mine:
                for _ in range(rounds):
                    step(model, n=k + 1)
        counts[k] = nodes(mine, "tanh")

    with dy.profiler() as everything:
        threads = [threading.Thread(target=work, args=(k,)) for k in range(3)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert counts == {k: rounds * (k + 1) for k in range(3)}
    assert nodes(everything, "tanh") == rounds * (1 + 2 + 3)
    tids = {e["tid"] for e in json.loads(everything.chrome_trace())["traceEvents"]}
    assert len(tids) == 3


def test_graphviz_names_the_parameters(model):
    _, W, b, E = model
    dy.renew_cg()
    dy.tanh(W * dy.lookup(E, 1) + b)
    dot = dy.cg().graphviz()
    assert dot.startswith("digraph G {")
    assert "= parameter(/W) {8,2}" in dot and "= parameter(/b) {8}" in dot and "= lookup(/E) {2}" in dot


def test_graphviz_goes_through_sys_stdout(model, capsys):
    _, W, _, _ = model
    dy.renew_cg()
    dy.tanh(W * dy.inputVector([1, 2]))
    expected = dy.cg().graphviz()
    dy.print_text_graphviz()
    dy.cg().print_graphviz()
    dy.print_graphviz()
    out = capsys.readouterr()
    assert out.out == expected * 3 and "/W" in out.out
    assert out.err == ""


def test_dump_and_trainer_status_go_through_sys_stderr(model, capsys):
    pc, W, _, _ = model
    dy.renew_cg()
    loss = dy.sum_elems(dy.tanh(W * dy.inputVector([1, 2])))
    loss.value()
    loss.backward()
    trainer = dy.SimpleSGDTrainer(pc)
    trainer.update()
    dy.cg().dump("", True, False)
    trainer.status()
    err = capsys.readouterr().err
    assert "N1 = parameter(/W) {8,2} value=" in err
    assert re.search(r"\[lr=0\.1 clips=[01] updates=1\] $", err), err


SCRIPT = """
import sys
sys.argv = sys.argv[:1]
import dynet_config
dynet_config.set(random_seed=1, profiling=%d)
import dynet as dy
def run(f):
    dy.renew_cg()
    dy.sum_elems(f(dy.inputVector([1.0, 2.0]))).value()
run(dy.logistic)
with dy.profiler() as p:
    run(dy.tanh)
assert "tanh" in p.table() and "logistic" not in p.table()
"""


@pytest.mark.parametrize("flag", [0, 1])
def test_the_flags_exit_report_is_unchanged(flag):
    """--dynet-profiling's table at exit: none without the flag, and everything (not only the block) with it."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    env.pop("DYNET_TRACE", None)
    r = subprocess.run([sys.executable, "-c", SCRIPT % flag], capture_output=True, text=True, env=env, cwd=REPO)
    assert r.returncode == 0, r.stderr
    if flag:
        table = r.stderr[r.stderr.index("Timing Info:"):]
        assert "tanh" in table and "logistic" in table
    else:
        assert "Timing Info" not in r.stderr
