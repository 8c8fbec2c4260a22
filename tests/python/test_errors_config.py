"""Error mapping, stale expressions, hostile inputs, configuration and threads."""
import os
import subprocess
import sys
import threading

import numpy as np
import pytest

import dynet as dy


def run_python(code, *args):
    env = dict(os.environ)
    return subprocess.run([sys.executable, "-c", code] + list(args), capture_output=True, text=True, env=env)


def test_shape_errors_are_value_errors_naming_the_op():
    a = dy.inputVector([1.0, 2.0])
    b = dy.inputVector([1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="cwise_sum|broadcast"):
        a + b
    with pytest.raises(ValueError):
        dy.pickneglogsoftmax(a, 7)


def test_stale_expression_raises():
    # dynet.StaleExpressionError: a ValueError as in the original, and a RuntimeError
    assert issubclass(dy.StaleExpressionError, ValueError) and issubclass(dy.StaleExpressionError, RuntimeError)
    x = dy.inputVector([1.0])
    dy.renew_cg()
    with pytest.raises(dy.StaleExpressionError, match="stale"):
        x.value()
    with pytest.raises(ValueError, match="stale"):
        dy.tanh(x)
    with pytest.raises(RuntimeError, match="stale"):
        x + dy.inputVector([2.0])


def test_wrong_types_are_type_errors():
    with pytest.raises(TypeError):
        dy.tanh("hello")
    with pytest.raises(TypeError):
        dy.pick(dy.inputVector([1.0]), "a")
    with pytest.raises((TypeError, ValueError)):
        dy.inputTensor(np.array(["a", "b"]))


def test_bad_shapes_and_indices_name_the_call():
    """Conversions nanobind would report as RuntimeError('std::bad_cast') say what was wrong, and where."""
    pc = dy.ParameterCollection()
    with pytest.raises(ValueError, match=r"add_parameters: -3 is out of range"):
        pc.add_parameters((-3, 2))
    with pytest.raises(ValueError, match=r"add_lookup_parameters: 4294967296 is out of range"):
        pc.add_lookup_parameters((2**32, 10))
    with pytest.raises(TypeError, match="add_parameters: dim must be an int or a sequence of ints, got str"):
        pc.add_parameters("abc")
    assert pc.add_parameters((3.0, np.int64(2))).shape() == (3, 2)  # floats truncated, as Cython did
    assert pc.add_parameters(np.array([4, 1])).shape() == (4, 1)
    table = pc.add_lookup_parameters((5, 2))
    row, rows = dy.lookup(table, 1), dy.lookup_batch(table, [1, 2])
    with pytest.raises(ValueError, match="set: -1 is out of range"):
        row.set(-1)
    with pytest.raises(ValueError, match="set: -2 is out of range"):
        rows.set([1, -2])
    with pytest.raises(TypeError, match="set: expected an int, got str"):
        rows.set(["a", 0])
    rows.set(np.array([0, 4]))
    assert np.allclose(rows.npvalue(), table.as_array()[[0, 4]].T)
    with pytest.raises(ValueError, match="Expression index"):
        dy.inputVector([1.0, 2.0])[2**70]
    dy.renew_cg(autobatching=[1])  # any object by its truth value
    assert dy.inputVector([1.0, 2.0])[True].value() == 2.0
    dy.renew_cg()


def test_numpy_inputs_any_layout_and_dtype():
    m = np.arange(12, dtype=np.float64).reshape(3, 4)
    assert np.allclose(dy.inputTensor(m[:, ::2]).npvalue(), m[:, ::2])
    assert np.allclose(dy.inputTensor(np.asfortranarray(m)).npvalue(), m)
    assert np.allclose(dy.inputTensor(m.astype(np.int32)).npvalue(), m)


def test_negative_index_is_an_error_not_a_crash():
    with pytest.raises(ValueError):
        dy.pick(dy.inputVector([1.0, 2.0]), -1)


def test_keyword_arguments():
    x = dy.inputVector([1.0, 2.0, 3.0])
    assert dy.pick(e=x, index=1).scalar_value() == pytest.approx(2.0)
    assert dy.softmax(x, d=0).dim() == ((3,), 1)
    with pytest.raises(TypeError):
        dy.softmax(x, dim=0)


def test_dynet_flags_in_argv_are_consumed():
    r = run_python("import sys; sys.argv = ['prog', '--dynet-seed', '3', '--other']\n"
                   "import dynet as dy\nprint(sys.argv)")
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "['prog', '--other']"


def test_config_before_import_and_init_twice():
    """As in the original, a second initialization is ignored, with a warning when its settings differ."""
    r = run_python("import sys; sys.argv = sys.argv[:1]\nimport dynet_config\ndynet_config.set(random_seed=7)\n"
                   "import dynet as dy\ndy.DynetParams().init() if False else None\n"
                   "p = dy.DynetParams(); p.set_random_seed(7); p.init()\n"
                   "print(dy._initialized[1])\n")
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "7" and r.stderr == ""  # the same settings again: silent (no banner unless asked)
    r = run_python("import sys; sys.argv = sys.argv[:1]\nimport dynet as dy\n"
                   "p = dy.DynetParams(); p.set_random_seed(8); p.set_mem(2048); p.init()\nprint(dy._initialized[1])\n")
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "0" and "already initialized; these settings are ignored" in r.stderr


def test_the_original_module_name_sets_dynet_up_first():
    """`import _dynet` (the original's compiled module): its first explicit init applies, as the original's did."""
    setup = "p = dy.DynetParams(); p.set_random_seed(5); p.set_autobatch(1); p.init()\n"
    show = "print(dy._initialized[1:3], dy.ParameterCollection().add_parameters((2,)).as_array().tolist())\n"
    r = run_python("import sys; sys.argv = sys.argv[:1]\nimport _dynet as dy\n" + setup + show)
    assert r.returncode == 0, r.stderr
    r2 = run_python("import sys; sys.argv = sys.argv[:1]\nimport dynet_config\n"
                    "dynet_config.set(random_seed=5, autobatch=1)\nimport dynet as dy\n" + show)
    assert r.stdout.startswith("(5, 1)") and r.stdout == r2.stdout
    r = run_python("import sys; sys.argv = sys.argv[:1]\nimport dynet\nimport _dynet as dy\n" + setup + show)
    assert r.returncode == 0 and r.stdout.startswith("(0, 0)")  # `import dynet` initialized first: ignored
    r = run_python("import dynet, _dynet\nprint(dynet is _dynet, _dynet.Expression is dynet.Expression)")
    assert r.stdout.split() == ["True", "True"]


def test_graphs_per_thread():
    pc = dy.ParameterCollection()
    p = pc.add_parameters((3,), init=dy.ConstInitializer(1.0))
    results = {}

    def work(k):
        with dy.ComputationGraph():
            x = dy.inputVector([float(k)] * 3)
            results[k] = dy.dot_product(dy.parameter(p), x).scalar_value()

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == {k: pytest.approx(3.0 * k) for k in range(4)}


AUTOBATCH_PROGRAM = """
import sys; flag = int(sys.argv[-1]); sys.argv = sys.argv[:1]
import dynet_config
dynet_config.set(random_seed=3, autobatch=flag, profiling=2)
import dynet as dy
pc = dy.ParameterCollection()
W = pc.add_parameters((4, 3), init=dy.ConstInitializer(0.5))
def loss(autobatching=None, first=False):
    if not first:
        dy.renew_cg(autobatching=autobatching)
    xs = [dy.inputVector([0.1 * k, -0.2, 0.3 * k]) for k in range(5)]
    total = dy.sum_elems(dy.esum([dy.tanh(W * x) for x in xs]))
    v = total.value()
    total.backward(full=True)
    g = sum(x.gradient().sum() * (k + 1) for k, x in enumerate(xs))
    print("loss %.6f grad %.6f" % (v, g), file=sys.stderr, flush=True)
loss(first=True)
loss(autobatching=False)
loss(autobatching=True)
loss()
"""


def test_autobatching_selects_the_batching_executor():
    # --dynet-profiling 2 prints each autobatched forward's composition; the simple executor prints none.
    for flag in (0, 1):
        r = run_python(AUTOBATCH_PROGRAM, str(flag))
        assert r.returncode == 0, r.stderr
        lines = [l for l in r.stderr.splitlines() if l.startswith("loss") or l.startswith("[dynet] forward")]
        runs, batched = [], False  # for each loss(): whether its forward ran autobatched, and its line
        for l in lines:
            if l.startswith("[dynet] forward"):
                assert " 0 batched groups" not in l, l
                batched = True
            else:
                runs.append((batched, l))
                batched = False
        values = {l for _, l in runs}
        assert len(runs) == 4 and len(values) == 1, r.stderr  # the same loss and gradient every time
        # first graph and renew_cg(): the flag; autobatching=False: simple; True: autobatched
        assert [b for b, _ in runs] == [bool(flag), False, True, bool(flag)], r.stderr


def test_cpp_errors_keep_their_message():
    a, b = dy.inputVector([1.0, 2.0]), dy.inputVector([1.0, 2.0, 3.0])
    with pytest.raises(ValueError) as e:
        dy.cmult(a, b)
    assert "cmult" in str(e.value) and "{2}" in str(e.value) and "{3}" in str(e.value)
    pc = dy.ParameterCollection()
    E = pc.add_lookup_parameters((3, 2))
    with pytest.raises(IndexError, match="row 9"):
        E.row_as_array(9)
    with pytest.raises(IndexError, match="row 5 out of range for 3 rows"):
        E.rows_as_array([0, 5])
    with pytest.raises(ValueError, match="lookup: index 7 out of range"):
        dy.lookup(E, 7).value()
    with pytest.raises(ValueError, match="Didn't recognize initializer 'x'"):
        pc.add_parameters((2,), init="x")
    dy.renew_cg()
    with pytest.raises(RuntimeError, match="stale"):
        dy.sum_elems(a)


def test_numpy_inputs_are_converted_in_one_pass():
    """inputTensor reads any numpy layout and dtype through its strides into the graph's storage: no
    temporary numpy arrays (tracemalloc sees numpy's allocations, not the C++ storage)."""
    import tracemalloc
    big = np.random.RandomState(0).rand(300, 400)  # float64, C order: converted and transposed
    for arr in (big, big.astype(np.float32), np.asfortranarray(big), big[:, ::2], big.astype(np.int32),
                big.astype(">f8")):
        tracemalloc.start()
        x = dy.inputTensor(arr)
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        if arr.dtype.byteorder != ">":  # big-endian data goes through numpy.asarray
            assert peak < arr.size, (arr.dtype, arr.flags, peak)
        assert np.array_equal(x.npvalue(), arr.astype(np.float32))
    assert dy.inputTensor(np.array(True)).value() == 1.0
    assert dy.inputTensor(memoryview(np.arange(4, dtype=np.int16))).vec_value() == [0.0, 1.0, 2.0, 3.0]
    with pytest.raises(TypeError, match="complex"):
        dy.inputTensor(np.ones(2, dtype=np.complex64))
    with pytest.raises(ValueError):
        dy.inputTensor([[1.0, 2.0], [3.0]])
    with pytest.raises(ValueError, match="at most"):
        dy.inputTensor(np.zeros((1,) * 9))
