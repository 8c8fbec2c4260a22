"""DyNet 2.1's Python API beyond the op functions: Tensor, Parameters as expressions, updatable lookups
and picks, initializers by name, ClassFactoredSoftmaxBuilder, builder methods, low-level graph methods."""
import numpy as np
import pytest

import dynet as dy


# ---- Tensor (Expression.tensor_value) ----
def test_tensor_value_and_tools_match_numpy():
    a = np.array([[1.0, 5.0, 3.0], [4.0, 2.0, 6.0]], dtype=np.float32)
    t = dy.inputTensor(a).tensor_value()
    assert isinstance(t, dy.Tensor)
    assert np.array_equal(t.as_numpy(), a)
    assert np.array_equal(np.asarray(t), a)
    assert t.argmax().as_numpy().tolist() == [[1, 0, 1]]          # dim 0: one index per column
    assert t.argmax(1).as_numpy().tolist() == [[1], [2]]
    values, idx = t.topk(1, 2)
    assert values.as_numpy().tolist() == [[5.0, 3.0], [6.0, 4.0]]
    assert idx.as_numpy().tolist() == [[1, 2], [2, 0]]
    assert idx.as_numpy().dtype == np.int64
    with pytest.raises(ValueError):
        t.topk(1, 4)  # more than the 3 columns
    with pytest.raises(ValueError):
        idx.argmax()  # an index tensor has no values to compare
    values = t.as_numpy()
    assert values.dtype == np.float64  # as DyNet's
    values[0, 0] = 99
    assert t.as_numpy()[0, 0] == 1.0  # a copy


def test_tensor_value_is_a_copy_that_survives_renew():
    x = dy.inputVector([3.0, 1.0, 2.0])
    t = x.tensor_value()
    dy.renew_cg()
    dy.inputVector([9.0, 9.0, 9.0]).value()  # reuses the graph memory
    assert t.as_numpy().tolist() == [3.0, 1.0, 2.0]


def test_tensor_batched_layout_and_sampling():
    arr = np.arange(12, dtype=np.float32).reshape(2, 3, 2)  # batch of 2 (last axis)
    t = dy.inputTensor(arr, batched=True).tensor_value()
    assert t.dim() == ((2, 3), 2)
    assert np.array_equal(t.as_numpy(), arr)
    assert np.array_equal(t.argmax().as_numpy(), np.ones((1, 3, 2)))
    # Samples from softmax([0, log 3]): index 1 with probability 3/4.
    logp = dy.inputVector([0.0, float(np.log(3.0))]).tensor_value()
    draws = [int(logp.categorical_sample_log_prob().as_numpy()[0]) for _ in range(4000)]
    assert set(draws) <= {0, 1}
    assert abs(np.mean(draws) - 0.75) < 0.03


def test_values_come_back_as_dynet_returns_them():
    """DyNet's Python module returns float64 arrays; value() is a float for a scalar, a list for a
    vector (batched ones too: all values in a row), else npvalue()."""
    pc = dy.ParameterCollection()
    W = pc.add_parameters((2, 3))
    E = pc.add_lookup_parameters((4, 2))
    x = dy.inputVector([1.0, 2.0, 3.0])
    dy.sum_elems(W * x).backward()
    for a in (x.npvalue(), W.as_array(), W.grad_as_array(), E.as_array(), E.row_as_array(1), E.rows_as_array([1, 2]),
              E.grad_as_array(), x.tensor_value().as_numpy(), dy.npvalues([x])[0]):
        assert a.dtype == np.float64
    assert np.from_dlpack(x).dtype == np.float32  # DLPack shares the graph's type
    batched = dy.inputTensor(np.arange(6.0).reshape(3, 2), batched=True)
    assert batched.value() == [0.0, 2.0, 4.0, 1.0, 3.0, 5.0]
    assert dy.inputTensor(np.array([[1.0, 2.0]]), batched=True).value() == [1.0, 2.0]
    assert dy.scalarInput(2.0).value() == 2.0
    assert dy.inputTensor(np.ones((2, 2))).value().shape == (2, 2)


# ---- Parameters and LookupParameters are expressions ----
def test_parameters_are_expressions():
    pc = dy.ParameterCollection()
    W = pc.add_parameters((3, 2))
    E = pc.add_lookup_parameters((5, 3))
    w = W.as_array()
    x = dy.inputVector([1.0, 2.0])
    assert np.allclose((W * x).npvalue(), w @ [1.0, 2.0])
    assert np.allclose((W + W).npvalue(), 2 * w)
    assert np.allclose((W - 1).npvalue(), w - 1)
    assert np.allclose((-W).npvalue(), -w)
    assert np.allclose((W / 2).npvalue(), w / 2)
    assert np.allclose((2 * W).npvalue(), 2 * w)
    assert np.allclose((W ** 2).npvalue(), w ** 2, rtol=1e-5)
    assert np.allclose(W.npvalue(), w) and np.allclose(W.value(), w)
    assert W.dim() == ((3, 2), 1)
    assert np.allclose(W[1].npvalue(), w[1])
    assert E.dim() == ((3, 5), 1)  # the whole table: a row per column
    assert np.allclose(E.npvalue(), E.as_array().T)
    assert dy.parameter(W) is W
    loss = dy.sum_elems(W * x)
    loss.backward()
    assert np.allclose(W.grad_as_array(), np.outer(np.ones(3), [1.0, 2.0]))


def test_const_parameter_gets_no_gradient():
    pc = dy.ParameterCollection()
    W = pc.add_parameters((2,), init=1.0)
    dy.sum_elems(dy.const_parameter(W) * 3).backward()
    assert np.allclose(W.grad_as_array(), 0)


# ---- updatable lookups, picks and inputs ----
def test_lookup_and_pick_set():
    pc = dy.ParameterCollection()
    E = pc.add_lookup_parameters((5, 3))
    table = E.as_array()
    for e in (dy.lookup(E, 1), E[1], dy.lookup(E, 1, update=False)):
        assert np.allclose(e.npvalue(), table[1])
        e.set(4)
        assert np.allclose(e.npvalue(), table[4])
    b = dy.lookup_batch(E, [1, 2])
    loss = dy.sum_batches(dy.sum_elems(b))
    b.set([4, 0])
    assert np.allclose(b.npvalue(), table[[4, 0]].T)
    assert loss.value() == pytest.approx(table[[4, 0]].sum(), rel=1e-5)
    x = dy.inputVector([1.0, 2.0, 3.0])
    p = dy.pick(x, 0)
    assert p.value() == 1.0
    p.set_index(2)
    assert p.value() == 3.0
    pb = dy.pick_batch(dy.inputTensor(np.arange(6.0).reshape(3, 2), batched=True), [0, 1])
    pb.set([2, 0])  # batch element 0 is [0, 2, 4], element 1 is [1, 3, 5]
    assert pb.npvalue().ravel().tolist() == [4.0, 1.0]


def test_set_errors_leave_the_graph_usable():
    pc = dy.ParameterCollection()
    E = pc.add_lookup_parameters((5, 3))
    e = dy.lookup(E, 1)
    e.set(7)  # out of range: found at forward
    with pytest.raises(ValueError, match="out of range"):
        e.value()
    e.set(2)
    assert np.allclose(e.npvalue(), E.as_array()[2])
    with pytest.raises(ValueError, match="indices"):
        dy.lookup_batch(E, [1, 2]).set([1])
    with pytest.raises(TypeError):
        e.set("a")
    with pytest.raises(ValueError, match="cannot be updated"):
        dy.tanh(e).set(1)
    s = dy.scalarInput(2.0)
    s.set(5)
    assert s.value() == 5.0
    dy.renew_cg()
    with pytest.raises(RuntimeError, match="stale"):
        e.set(1)


# ---- ParameterCollection.add_parameters' init ----
def test_initializers_by_name_number_and_object():
    pc = dy.ParameterCollection()
    u = pc.add_parameters((50, 50), init="uniform", scale=4.0).as_array()
    assert np.abs(u).max() <= 4.0 and np.abs(u).max() > 3.5
    n = pc.add_parameters((100, 100), init="normal", mean=5.0, std=0.1).as_array()
    assert abs(n.mean() - 5.0) < 0.01 and abs(n.std() - 0.1) < 0.01
    g = pc.add_parameters((200, 50), init="glorot").as_array()
    assert np.abs(g).max() <= np.sqrt(6.0 / 250) + 1e-6
    h = pc.add_parameters((200, 50), init="he").as_array()
    assert abs(h.std() - np.sqrt(0.5 / 50)) < 0.01  # DyNet's Python module's numbers
    assert np.array_equal(pc.add_parameters((4, 4), init="identity").as_array(), np.eye(4))
    assert np.all(pc.add_parameters((2, 3), init=0.5).as_array() == 0.5)
    assert np.all(pc.add_parameters((2, 3), init=dy.ConstInitializer(2)).as_array() == 2)
    q = pc.add_parameters((6, 6), init=dy.SaxeInitializer()).as_array()
    assert np.allclose(q @ q.T, np.eye(6), atol=1e-5)
    with pytest.raises(ValueError, match="Didn't recognize initializer"):
        pc.add_parameters((2, 2), init="bogus")
    with pytest.raises(TypeError):
        pc.add_parameters((2, 2), init=object())
    assert isinstance(dy.NormalInitializer(0, 1), dy.PyInitializer)
    # DyNet's Python default for tables: Glorot over the whole (dim, rows) table.
    t = pc.add_lookup_parameters((1000, 10)).as_array()
    assert np.abs(t).max() <= np.sqrt(6.0 / 1010) + 1e-6 and np.abs(t).max() > 0.07
    with pytest.raises(ValueError, match="lookup_parameters_from_numpy"):
        pc.add_lookup_parameters((2, 2), init=dy.NumpyInitializer(np.zeros((2, 2))))


# ---- ClassFactoredSoftmaxBuilder ----
CLUSTERS = "c1 the\nc1 a\nc2 dog\nc2 cat\nc2 fish\nc3 runs\n"
WORDS = {"the": 0, "a": 1, "dog": 2, "cat": 3, "fish": 4, "runs": 5}


def log_softmax(v):
    v = v - v.max()
    return v - np.log(np.exp(v).sum())


def test_class_factored_softmax_matches_numpy(tmp_path):
    path = tmp_path / "clusters.txt"
    path.write_text(CLUSTERS)
    pc = dy.ParameterCollection()
    cfsm = dy.ClassFactoredSoftmaxBuilder(4, str(path), dict(reversed(list(WORDS.items()))), pc)
    # r2c, cbias, then per cluster with more than one word: rc2w, rcwbias (the singleton "runs" has none)
    params = pc.parameters_list()
    assert [p.shape() for p in params] == [(3, 4), (3,), (2, 4), (2,), (3, 4), (3,)]
    rng = np.random.RandomState(0)
    for p in params:
        p.set_value(rng.randn(*p.shape()))
    r2c, cb, w0, b0, w1, b1 = [p.as_array() for p in params]
    r = np.array([0.1, -0.2, 0.3, 0.4])
    lc = log_softmax(r2c @ r + cb)
    expected = np.concatenate([lc[0] + log_softmax(w0 @ r + b0), lc[1] + log_softmax(w1 @ r + b1), [lc[2]]])
    x = dy.inputVector(list(r))
    nll = [cfsm.neg_log_softmax(x, i).value() for i in range(6)]
    assert np.allclose(nll, -expected, atol=1e-5)
    assert np.allclose(cfsm.full_log_distribution(x).npvalue(), expected, atol=1e-5)
    assert np.allclose(cfsm.class_log_distribution(x).npvalue(), lc, atol=1e-5)
    assert np.allclose(cfsm.subclass_log_distribution(x, 1).npvalue(), log_softmax(w1 @ r + b1), atol=1e-5)
    assert np.allclose(cfsm.class_logits(x).npvalue(), r2c @ r + cb, atol=1e-5)
    batch = dy.inputTensor(np.stack([r, r], axis=1), batched=True)
    assert np.allclose(cfsm.neg_log_softmax_batch(batch, [2, 5]).npvalue().ravel(), -expected[[2, 5]], atol=1e-5)
    assert 0 <= cfsm.sample(x) < 6
    with pytest.raises(ValueError, match="ids of dic"):
        dy.ClassFactoredSoftmaxBuilder(4, str(path), {"the": 3}, pc)
    with pytest.raises((ValueError, RuntimeError), match="nonexistent"):
        dy.ClassFactoredSoftmaxBuilder(4, str(tmp_path / "nonexistent"), WORDS, pc)


# ---- builders ----
def test_builder_parameters_dropout_and_spec():
    pc = dy.ParameterCollection()
    lstm = dy.VanillaLSTMBuilder(2, 3, 4, pc, ln_lstm=True)
    assert lstm.spec == (2, 3, 4, True, 1.0)
    assert [[p.shape() for p in layer] for layer in lstm.get_parameters()] == [[(16, 3), (16, 4), (16,)],
                                                                               [(16, 4), (16, 4), (16,)]]
    lstm.initial_state()
    assert [len(layer) for layer in lstm.get_parameter_expressions()] == [3, 3]
    gru = dy.GRUBuilder(1, 3, 4, pc)
    assert [p.shape() for p in gru.get_parameters()[0]][:3] == [(4, 3), (4, 4), (4,)]
    rnn = dy.SimpleRNNBuilder(1, 3, 4, pc)
    rnn.set_dropouts(0.1, 0.2)
    rnn.initial_state()
    rnn.set_dropout_masks(2)
    compact = dy.CompactVanillaLSTMBuilder(1, 3, 4, pc)
    compact.set_dropouts(0.1, 0.2)
    compact.set_weightnoise(0.01)
    assert lstm.whoami() == "VanillaLSTMBuilder" and dy.AdamTrainer(pc).whoami() == "AdamTrainer"


def test_birnn_builder_collection_and_save_load(tmp_path):
    pc = dy.ParameterCollection()
    bi = dy.BiRNNBuilder(2, 3, 4, pc, dy.VanillaLSTMBuilder)
    assert bi.param_collection().name() == "/birnn/"
    xs = [dy.inputVector([1.0, 0.0, -1.0]), dy.inputVector([0.5, 0.5, 0.5])]
    before = [e.npvalue() for e in bi.transduce(xs)]
    base = str(tmp_path / "bi")
    dy.save(base, [bi])
    pc2 = dy.ParameterCollection()
    (bi2,) = dy.load(base, pc2)
    dy.renew_cg()
    xs = [dy.inputVector([1.0, 0.0, -1.0]), dy.inputVector([0.5, 0.5, 0.5])]
    after = [e.npvalue() for e in bi2.transduce(xs)]
    assert all(np.allclose(a, b) for a, b in zip(before, after))


def test_stacked_rnn_state():
    pc = dy.ParameterCollection()
    low, high = dy.SimpleRNNBuilder(1, 2, 3, pc), dy.SimpleRNNBuilder(1, 3, 3, pc)
    st = dy.StackedRNNState([low.initial_state(), high.initial_state()])
    x = dy.inputVector([1.0, 2.0])
    s1 = st.add_input(x)
    # the top state reads the bottom state's output
    expected = high.initial_state().add_input(low.initial_state().add_input(x).output()).output()
    assert np.allclose(s1.output().npvalue(), expected.npvalue())
    assert s1.prev() is st and len(s1.h()) == 2
    assert isinstance(s1.states[0].h(), tuple) and isinstance(s1.states[0].s(), tuple)  # as DyNet's
    assert len(st.add_inputs([x, x])) == 2


# ---- low-level graph methods ----
def test_graph_methods():
    g = dy.cg()
    e = g.inputMatrixLiteral([1.0, 2.0, 3.0, 4.0], (2, 2))
    assert np.allclose(e.npvalue(), [[1.0, 3.0], [2.0, 4.0]])  # column-major
    s = g.inputSparseTensor([1, 3], [5.0, 7.0], (4,), defval=1.0)
    assert s.vec_value() == [1.0, 5.0, 1.0, 7.0]
    total = dy.sum_elems(s)
    assert g.forward_scalar(total) == pytest.approx(14.0)
    assert g.inc_forward_vec(s) == [1.0, 5.0, 1.0, 7.0]
    with pytest.raises(IndexError):
        g.forward(10 ** 6)
    with dy.ComputationGraph() as other:
        y = dy.inputVector([1.0])
    with pytest.raises(ValueError, match="another ComputationGraph"):
        g.forward(y)
    del other


def test_value_holders():
    v = dy.FloatVectorValue([1, 2])
    v.set([3.5, 4])
    assert v.get() == [3.5, 4.0] and v.size() == 2
    assert dy.UnsignedValue(3).get() == 3
    with pytest.raises(ValueError):
        dy.UnsignedVectorValue([1, -2])


# ---- pickling functions by name ----
def _public_functions():
    """Every function of the module, op object and method of its classes (the original pickled them all)."""
    out = []
    for name in dir(dy):
        f = getattr(dy, name)
        if isinstance(f, type) and f.__module__.startswith("dynet"):
            out += [(name + "." + m, getattr(f, m)) for m in vars(f) if not m.startswith("__")
                    and type(getattr(f, m)).__name__ in ("nb_func", "nb_method", "function")]
        elif callable(f) and not isinstance(f, type) and not name.startswith("_"):
            out.append((name, f))
    return out


def test_every_function_pickles_and_copies_by_name():
    import copy
    import pickle
    functions = _public_functions()
    kinds = {type(f).__name__ for _, f in functions}
    assert {"op", "nb_func", "nb_method", "function"} <= kinds
    for name, f in functions:
        for protocol in range(pickle.HIGHEST_PROTOCOL + 1):
            assert pickle.loads(pickle.dumps(f, protocol)) is f, name
        assert copy.deepcopy(f) is f and copy.copy(f) is f, name
    # as programs keep them: an options object holding the activation, saved with the model
    options = {"activation": dy.tanh, "renew": dy.renew_cg, "rectify": dy.rectify, "dims": [3, 4]}
    restored = pickle.loads(pickle.dumps(copy.deepcopy(options)))
    assert restored["activation"] is dy.tanh and restored["renew"] is dy.renew_cg
    assert np.allclose(restored["activation"](dy.inputVector([0.5])).npvalue(), np.tanh(0.5))
    # what the original's pickles name: its compiled module `_dynet`
    assert pickle.loads(b"c_dynet\ntanh\n.") is dy.tanh and pickle.loads(b"c_dynet\nrenew_cg\n.") is dy.renew_cg


def test_other_nanobind_functions_stay_unpicklable():
    """The reducer registered for nanobind's function types (shared with other nanobind modules) takes only
    dynet's functions: another module's keep the TypeError they raised before."""
    class Elsewhere:
        __module__ = "elsewhere"
        __qualname__ = "f"
    with pytest.raises(TypeError, match="cannot pickle"):
        dy._reduce_by_name(Elsewhere())
