"""Python threads compute in parallel: forward, backward, updates, saving and loading release the GIL, each
thread builds its own graphs over shared parameters, and a graph used from two threads stays consistent."""
import contextlib
import sys
import threading
import time

import numpy as np
import pytest

import dynet as dy


def _big_graph(pc_dim=384, steps=40):
    """A graph whose forward takes tens of milliseconds: a chain of matrix products."""
    pc = dy.ParameterCollection()
    W = pc.add_parameters((pc_dim, pc_dim), init=dy.NormalInitializer(0, 1.0 / pc_dim))
    x = dy.inputTensor(np.ones((pc_dim, pc_dim)))
    for _ in range(steps):
        x = dy.tanh(W * x)
    return pc, dy.sum_elems(x)


def _on_threads(work, n, meanwhile=None):
    """Runs work(k) for k in range(n), each on its own thread, and meanwhile() (if given) on this one; then
    joins them and returns the exceptions the threads raised."""
    errors = []

    def run(k):
        try:
            work(k)
        except Exception as e:
            errors.append(e)

    threads = [threading.Thread(target=run, args=(k,)) for k in range(n)]
    for t in threads:
        t.start()
    try:
        if meanwhile:
            meanwhile()
    finally:
        for t in threads:
            t.join()
    return errors


def _python_progress_during(call):
    """How often another Python thread ran while `call` ran: with a long switch interval a thread that holds
    the GIL keeps it, so the other thread runs only when the call releases it."""
    ticks, stop = [0], threading.Event()

    def ticker():
        while not stop.is_set():
            ticks[0] += 1
            time.sleep(0.0002)  # releases the GIL, and needs it back to count again

    interval = sys.getswitchinterval()
    t = threading.Thread(target=ticker)
    t.start()
    time.sleep(0.01)
    sys.setswitchinterval(10.0)
    try:
        before = ticks[0]
        call()
        during = ticks[0] - before
    finally:
        sys.setswitchinterval(interval)
        stop.set()
        t.join()
    return during


@pytest.mark.parametrize("what", ["value", "npvalue", "forward", "backward", "update", "save", "inputTensor"])
def test_computing_calls_release_the_gil(what, tmp_path):
    with dy.ComputationGraph():
        pc, loss = _big_graph()
        trainer = dy.AdamTrainer(pc)
        if what == "update":  # a gradient on 4M values: one update takes milliseconds
            big = pc.add_parameters((2000, 2000))
            dy.sum_elems(big * dy.inputVector([1.0] * 2000)).backward()
        path = str(tmp_path / "model")
        big = np.ones((4096, 8192)) if what == "inputTensor" else None
        calls = {
            "value": lambda: loss.value(),
            "npvalue": lambda: loss.npvalue(),
            "forward": lambda: dy.forward([loss]),
            "backward": lambda: loss.backward(),
            "update": lambda: trainer.update(),
            "save": lambda: [pc.save(path) for _ in range(10)],
            # a large array's conversion (strided float64 to float32, 16M values)
            "inputTensor": lambda: dy.inputTensor(big[:, ::2]),
        }
        assert _python_progress_during(calls[what]) >= 3


@pytest.mark.parametrize("mode", ["synchronous", "asynchronous", "asynchronous, a trainer each"])
def test_threads_training_one_model_apply_every_gradient_once(mode):
    """Four threads, each its own graphs, one model (and one trainer, or one each): a loss linear in the
    parameters has gradients that do not depend on the values, so the result is exact whatever the
    interleaving, with updates that stop the other threads' passes or run beside them."""
    pc = dy.ParameterCollection()
    W = pc.add_parameters((8, 16), init=dy.ConstInitializer(0.0))
    E = pc.add_lookup_parameters((10, 8), init=dy.ConstInitializer(0.0))
    trainers = [dy.SimpleSGDTrainer(pc, 0.25) for _ in range(4 if mode.endswith("each") else 1)]
    for t in trainers:
        t.set_clip_threshold(0)  # no clipping: every gradient applied as computed
    steps = 50

    def worker(k):
        trainer = trainers[k % len(trainers)]
        with dy.AsynchronousTraining() if mode != "synchronous" else contextlib.nullcontext():
            for s in range(steps):
                with dy.ComputationGraph():
                    x = dy.inputVector([float((k + j + s) % 3) for j in range(16)])
                    loss = dy.sum_elems(W * x) + dy.sum_elems(E[(k + s) % 10])
                    loss.value()
                    loss.backward()
                    trainer.update()

    assert not _on_threads(worker, 4)
    want_w = np.zeros((8, 16))
    want_e = np.zeros((10, 8))
    for k in range(4):
        for s in range(steps):
            want_w -= 0.25 * np.array([float((k + j + s) % 3) for j in range(16)])[None, :]
            want_e[(k + s) % 10] -= 0.25
    assert np.array_equal(W.as_array(), want_w)
    assert np.array_equal(E.as_array(), want_e)


def test_frozen_model_gives_each_thread_the_single_thread_values():
    pc = dy.ParameterCollection()
    W = pc.add_parameters((32, 32))
    inputs = [np.random.RandomState(k).randn(32) for k in range(6)]

    def score(v):
        with dy.ComputationGraph():
            h = dy.inputVector(v)
            for _ in range(20):
                h = dy.tanh(W * h)
            return h.npvalue()

    want = [score(v) for v in inputs]
    got = {k: [] for k in range(6)}

    def worker(k):
        for _ in range(30):
            got[k].append(score(inputs[k]))

    assert not _on_threads(worker, 6)
    for k in range(6):
        assert all(np.array_equal(v, want[k]) for v in got[k])


def test_one_graph_shared_by_threads_stays_consistent():
    """Threads reading, extending and renewing one graph (the global one, as a program that never made its
    own): each call sees the graph whole, before or after another thread's change, never half-computed."""
    pc = dy.ParameterCollection()
    W = pc.add_parameters((64, 64), init=dy.NormalInitializer(0, 1.0 / 64))
    stop, reads = threading.Event(), [0]

    def build():
        dy.renew_cg()
        h = dy.inputVector(list(np.linspace(-1, 1, 64)))
        for _ in range(30):
            h = dy.tanh(W * h)
        return dy.sum_elems(h)

    dy.renew_cg()
    want = build().value()

    def reader(_):
        while not stop.is_set():
            try:
                e = build()
                assert e.value() == want
                e.backward()
                reads[0] += 1
            except ValueError as err:  # another thread renewed the graph first: a clean stale error
                assert "stale" in str(err).lower()

    def run_a_second():
        time.sleep(1.0)
        stop.set()

    assert not _on_threads(reader, 3, run_a_second) and reads[0] > 0


def test_graph_dropped_while_another_thread_computes_it():
    """A graph whose last reference goes while another thread computes one of its expressions waits for it."""
    for _ in range(5):
        holder = {}
        with dy.ComputationGraph() as g:
            holder["g"] = g
            _, loss = _big_graph(steps=20)
        result, errors = [], []

        def compute():
            try:
                result.append(loss.value())
            except Exception as e:
                errors.append(e)

        t = threading.Thread(target=compute)
        t.start()
        holder.clear()
        del g
        t.join()
        # computed whole, or refused cleanly when the graph went first
        assert (result and np.isfinite(result[0])) or (errors and "stale" in str(errors[0]).lower())


def test_asynchronous_training_is_left_on_its_own_thread():
    session = dy.AsynchronousTraining()
    session.__enter__()
    errors = []
    t = threading.Thread(target=lambda: errors.append(pytest.raises(RuntimeError, session.__exit__, None, None, None)))
    t.start()
    t.join()
    assert errors and "thread that entered it" in str(errors[0].value)
    with pytest.raises(RuntimeError, match="already entered"):
        session.__enter__()
    session.__exit__(None, None, None)
    # left, the process is back to ordinary (synchronous) training
    pc = dy.ParameterCollection()
    p = pc.add_parameters((2,), init=dy.ConstInitializer(1.0))
    with dy.ComputationGraph():
        assert (p * 1.0).npvalue().tolist() == [1.0, 1.0]


@pytest.mark.parametrize("read", ["Parameters.as_array", "LookupParameters.as_array", "rows_as_array", "row_as_array"])
def test_parameter_reads_are_never_torn_by_another_threads_updates(read):
    """Every value of the parameters moves by the same step at each update (a uniform gradient): a copy
    taken while another thread updates (GIL released) shows them all equal, as between two updates."""
    pc = dy.ParameterCollection()
    W = pc.add_parameters((1000, 1000), init=dy.ConstInitializer(0.0))
    E = pc.add_lookup_parameters((500, 2000), init=dy.ConstInitializer(0.0))
    trainer = dy.SimpleSGDTrainer(pc, 0.001)
    trainer.set_clip_threshold(0)
    stop = threading.Event()

    def train(_):
        while not stop.is_set():
            with dy.ComputationGraph():
                loss = dy.sum_elems(W * dy.inputVector([1.0] * 1000)) + dy.sum_elems(E)  # E: the whole table
                loss.backward()
                trainer.update()

    reads = {
        "Parameters.as_array": lambda: W.as_array(),
        "LookupParameters.as_array": lambda: E.as_array(),
        "rows_as_array": lambda: E.rows_as_array(list(range(500))),
        "row_as_array": lambda: E.row_as_array(7),
    }
    def read_while_training():
        try:
            for _ in range(40):
                a = reads[read]()
                assert np.all(a == a.flat[0]), "a copy mixes values of two updates"
        finally:
            stop.set()

    assert not _on_threads(train, 1, read_while_training)
