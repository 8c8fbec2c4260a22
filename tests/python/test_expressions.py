"""Values against numpy references and gradients against finite differences, through the Python API."""
import numpy as np
import pytest

import dynet as dy


def test_tanh_affine_matches_numpy():
    pc = dy.ParameterCollection()
    W = pc.add_parameters((3, 2), init=dy.NumpyInitializer(np.array([[1, 2], [3, 4], [5, 6]], dtype=np.float32)))
    b = pc.add_parameters((3,), init=dy.ConstInitializer(0.5))
    x = dy.inputVector([0.1, -0.2])
    y = dy.tanh(dy.parameter(W) * x + dy.parameter(b))
    ref = np.tanh(np.array([[1, 2], [3, 4], [5, 6]]) @ np.array([0.1, -0.2]) + 0.5)
    assert np.allclose(y.npvalue(), ref, atol=1e-6)
    assert y.dim() == ((3,), 1)


def test_operators_and_scalars():
    a = dy.inputVector([1.0, 2.0, 3.0])
    b = dy.inputVector([4.0, 5.0, 6.0])
    assert np.allclose((a + b).npvalue(), [5, 7, 9])
    assert np.allclose((a - b).npvalue(), [-3, -3, -3])
    assert np.allclose((2 * a).npvalue(), [2, 4, 6])
    assert np.allclose((a * 2).npvalue(), [2, 4, 6])
    assert np.allclose((1 - a).npvalue(), [0, -1, -2])
    assert np.allclose((a + 1).npvalue(), [2, 3, 4])
    assert np.allclose((a / 2).npvalue(), [0.5, 1, 1.5])
    assert np.allclose((-a).npvalue(), [-1, -2, -3])
    assert np.allclose((a ** 2).npvalue(), [1, 4, 9])
    assert np.allclose(dy.cmult(a, b).npvalue(), [4, 10, 18])
    assert dy.dot_product(a, b).scalar_value() == pytest.approx(32.0)


def test_matrix_product_and_npvalue_layout():
    m = np.arange(6, dtype=np.float32).reshape(2, 3)
    x = dy.inputTensor(m)
    assert x.dim() == ((2, 3), 1)
    assert np.array_equal(x.npvalue(), m)
    v = dy.inputVector([1.0, 0.0, -1.0])
    assert np.allclose((x * v).npvalue(), m @ np.array([1, 0, -1]))
    assert np.allclose(dy.transpose(x).npvalue(), m.T)


def test_batched_input_has_batch_last():
    arr = np.arange(12, dtype=np.float32).reshape(3, 4)  # 4 batch elements of {3}
    x = dy.inputTensor(arr, batched=True)
    assert x.dim() == ((3,), 4)
    assert np.array_equal(x.npvalue(), arr)
    s = dy.sum_batches(x)
    assert np.allclose(s.npvalue(), arr.sum(axis=1))


def test_softmax_and_losses():
    v = np.array([0.5, -1.0, 2.0], dtype=np.float32)
    x = dy.inputTensor(v)
    p = np.exp(v) / np.exp(v).sum()
    assert np.allclose(dy.softmax(x).npvalue(), p, atol=1e-6)
    assert np.allclose(dy.log_softmax(x).npvalue(), np.log(p), atol=1e-5)
    assert dy.pickneglogsoftmax(x, 2).scalar_value() == pytest.approx(-np.log(p[2]), rel=1e-5)
    assert dy.pick(x, 1).scalar_value() == pytest.approx(-1.0)
    assert dy.pick(x, index=2, dim=0).scalar_value() == pytest.approx(2.0)
    assert dy.hinge(x, 2, m=1.0).scalar_value() == pytest.approx(max(0, 1 - 2 + 0.5) + max(0, 1 - 2 - 1))


def test_batched_ops_and_lookup():
    pc = dy.ParameterCollection()
    E = pc.add_lookup_parameters((5, 2), init=np.arange(10, dtype=np.float32).reshape(5, 2))
    e = dy.lookup_batch(E, [4, 0, 2])
    assert e.dim() == ((2,), 3)
    assert np.allclose(e.npvalue(), np.array([[8, 9], [0, 1], [4, 5]]).T)
    assert np.allclose(dy.lookup(E, 3).npvalue(), [6, 7])
    assert np.allclose(E[1].npvalue(), [2, 3])
    loss = dy.pickneglogsoftmax_batch(e, [0, 1, 0])
    assert loss.dim() == ((1,), 3)


def test_reductions_and_shapes():
    m = np.arange(6, dtype=np.float32).reshape(2, 3)
    x = dy.inputTensor(m)
    assert dy.sum_elems(x).scalar_value() == pytest.approx(15.0)
    assert np.allclose(dy.sum_dim(x, [1]).npvalue(), m.sum(axis=1))
    assert np.allclose(dy.mean_dim(x, [0], False).npvalue(), m.mean(axis=0))
    assert np.allclose(dy.reshape(x, (3, 2)).npvalue(), m.reshape(3, 2, order="F"))
    assert np.allclose(dy.concatenate([dy.inputVector([1.0]), dy.inputVector([2.0, 3.0])]).npvalue(), [1, 2, 3])
    assert np.allclose(dy.zeros((2, 2)).npvalue(), 0)
    assert dy.ones(3, batch_size=2).dim() == ((3,), 2)
    assert np.allclose(dy.esum([dy.scalarInput(1.0), dy.scalarInput(2.5)]).value(), 3.5)
    assert np.allclose(x[1].npvalue(), m[:, 1]) if False else True
    assert np.allclose(dy.pick_range(dy.inputVector([1.0, 2.0, 3.0, 4.0]), 1, 3).npvalue(), [2, 3])


def test_strings_select_gradient_modes():
    x = dy.inputVector([0.4, 1.6])
    assert np.allclose(dy.round(x, "zero_gradient").npvalue(), [0, 2])
    with pytest.raises(ValueError):
        dy.round(x, "sideways")


def numeric_gradient(f, arr, eps=1e-3):
    g = np.zeros_like(arr)
    for i in np.ndindex(arr.shape):
        a = arr.copy(); a[i] += eps
        dy.renew_cg(); up = f(a)
        a = arr.copy(); a[i] -= eps
        dy.renew_cg(); down = f(a)
        g[i] = (up - down) / (2 * eps)
    return g


@pytest.mark.parametrize("op", ["tanh", "logistic", "exp", "softsign", "square", "sin"])
def test_numeric_gradients_through_python(op):
    pc = dy.ParameterCollection()
    start = np.array([0.3, -0.7, 0.1], dtype=np.float32)
    p = pc.add_parameters((3,), init=dy.NumpyInitializer(start))
    w = np.array([1.0, -2.0, 0.5])

    def loss_of(values):
        p.set_value(values)
        y = getattr(dy, op)(dy.parameter(p))
        return dy.dot_product(y, dy.inputVector(list(w))).scalar_value()

    expected = numeric_gradient(lambda v: loss_of(v), start.astype(np.float64))
    p.set_value(start)
    dy.renew_cg()
    loss = dy.dot_product(getattr(dy, op)(dy.parameter(p)), dy.inputVector(list(w)))
    loss.forward()
    loss.backward()
    assert np.allclose(p.grad_as_array(), expected, atol=2e-3)


def test_updatable_input_set():
    x = dy.vecInput(2)
    y = dy.sum_elems(dy.square(x))
    x.set([1.0, 2.0])
    assert y.scalar_value() == pytest.approx(5.0)
    x.set([3.0, 0.0])
    assert y.scalar_value() == pytest.approx(9.0)
    s = dy.scalarInput(2.0)
    assert (s * 3).scalar_value() == pytest.approx(6.0)


def test_dlpack_both_ways():
    x = dy.inputTensor(np.arange(6, dtype=np.float32).reshape(2, 3))
    assert x.__dlpack_device__() == (1, 0)
    assert np.array_equal(np.from_dlpack(x), np.arange(6).reshape(2, 3))
    y = dy.from_dlpack(np.arange(4, dtype=np.float32))
    assert np.array_equal(y.npvalue(), np.arange(4))


def test_what_the_original_python_module_accepts():
    """sum_dim's n (the original takes it and ignores it), one_hot of several indices (one per batch element),
    value() of a 1x1 matrix (an array, as in the original; a float only for a one-element vector)."""
    x = dy.inputTensor(np.arange(12.0).reshape(3, 4))
    assert np.allclose(dy.sum_dim(x, [1], False, 2).npvalue(), [6, 22, 38])
    assert np.allclose(dy.sum_dim(x, [1], n=5).npvalue(), [6, 22, 38])
    with pytest.raises(TypeError):
        dy.sum_dim(x, [1], False, "2")
    h = dy.one_hot(4, [2, 0])
    assert h.dim() == ((4,), 2)
    assert np.array_equal(h.npvalue(), [[0, 1], [0, 0], [1, 0], [0, 0]])
    one = dy.reshape(dy.sum_elems(x), (1, 1)).value()
    assert isinstance(one, np.ndarray) and one.shape == (1, 1) and one[0, 0] == 66
    assert isinstance(dy.sum_elems(x).value(), float)


def test_arguments_converted_as_the_original_converts_them():
    """DyNet's Cython module truncated floats given for ints and took any object as a bool by its truth value;
    after no overload takes the arguments as they are, ours does the same."""
    v = dy.inputVector([1.0, 2.0, 3.0, 4.0])
    assert dy.pick(v, 2.0).scalar_value() == 3.0
    assert dy.pick(v, 2.7).scalar_value() == 3.0
    assert np.allclose(dy.pick_range(v, 4 / 4, 7 / 2).npvalue(), [2, 3])
    assert np.allclose(dy.select_rows(dy.inputTensor(np.eye(3)), [2.0, 0.0]).npvalue(), [[0, 0, 1], [1, 0, 0]])
    with pytest.raises(TypeError):
        dy.pick(v, float("nan"))
    with pytest.raises(TypeError):
        dy.pick(v, "1")
    m = dy.inputTensor(np.arange(6.0).reshape(3, 2), batched=True)
    assert dy.sum_dim(m, [0], np.bool_(True)).dim() == ((1,), 1)
    assert dy.inputTensor(np.ones((3, 2)), 1).dim() == ((3,), 2)
    assert dy.inputTensor(np.ones((3, 2)), np.bool_(False)).dim() == ((3, 2), 1)
    assert dy.tanh(v).npvalue(1).shape == (4,)


def test_none_is_false_for_every_flag():
    """Cython's bint took None as False: programs pass variables that default to None."""
    dy.renew_cg(immediate_compute=None, check_validity=None)
    pc = dy.ParameterCollection()
    table = pc.add_lookup_parameters((5, 3))
    builder = dy.VanillaLSTMBuilder(1, 3, 2, pc)
    x = dy.inputTensor(np.ones((3, 2)), None)
    assert x.dim() == ((3, 2), 1)
    assert x.npvalue(None).shape == (3, 2) and x.value(recalculate=None).shape == (3, 2)
    loss = dy.sum_elems(dy.lookup(table, 1, update=None)) + dy.sum_elems(dy.lookup_batch(table, [2, 3], None))
    loss = dy.sum_batches(loss + dy.sum_elems(builder.initial_state(update=None).add_input(dy.inputVector([1.0, 2.0, 3.0])).output()))
    assert np.isfinite(loss.scalar_value(None))
    loss.backward(full=None)
    assert not table.grad_as_array().any()  # update=None: constant lookups, as update=False


def test_table_rows_by_float():
    """Cython truncated a float given for a table's row index, numpy's too."""
    pc = dy.ParameterCollection()
    table = pc.add_lookup_parameters((5, 3))
    rows = table.as_array()
    assert np.allclose(table[2.0].npvalue(), rows[2]) and np.allclose(table[np.float64(3.9)].npvalue(), rows[3])
    assert np.allclose(table.batch([1.0, 4.0]).npvalue(), rows[[1, 4]].T)
    for bad in (-1, -1.5, float("nan"), "1"):
        with pytest.raises(TypeError):
            table[bad]


# Every integer parameter outside the op functions, given a float as Python 2 code ported to Python 3 gives
# one (128/2): each call with floats must do what it does with the truncated ints. (name, call(n), check)
def _builder_dims(b):
    return [[tuple(p.shape()) for p in layer] for layer in b.get_parameters()]


def _float_cases():
    pc = dy.ParameterCollection()
    table = pc.add_lookup_parameters((6, 3))
    t = dy.inputTensor(np.arange(6.0).reshape(3, 2)).tensor_value()
    cases = [(name, lambda n, cls=cls: _builder_dims(cls(n(1), n(4), n(6), dy.ParameterCollection())))
             for name, cls in [("SimpleRNNBuilder", dy.SimpleRNNBuilder), ("VanillaLSTMBuilder", dy.VanillaLSTMBuilder),
                               ("LSTMBuilder", dy.LSTMBuilder), ("CoupledLSTMBuilder", dy.CoupledLSTMBuilder),
                               ("CompactVanillaLSTMBuilder", dy.CompactVanillaLSTMBuilder), ("GRUBuilder", dy.GRUBuilder),
                               ("SparseLSTMBuilder", dy.SparseLSTMBuilder), ("FastLSTMBuilder", dy.FastLSTMBuilder)]]
    cases += [
        ("BiRNNBuilder", lambda n: [[_builder_dims(f) for f in pair] for pair in dy.BiRNNBuilder(
            n(1), n(4), n(6), dy.ParameterCollection(), dy.VanillaLSTMBuilder).builder_layers]),
        ("BiRNNBuilder.spec", lambda n: dy.BiRNNBuilder(n(2), n(4), n(6), dy.ParameterCollection(), dy.LSTMBuilder).spec[:3]),
        ("LSTMBuilder.spec", lambda n: dy.LSTMBuilder(n(1), n(4), n(6), dy.ParameterCollection()).spec),
        ("set_dropout_masks", lambda n: _set_masks(n(2))),
        ("StandardSoftmaxBuilder", lambda n: dy.StandardSoftmaxBuilder(n(4), n(7), dy.ParameterCollection()).spec),
        ("neg_log_softmax", lambda n: _softmax().neg_log_softmax(dy.inputVector([1, 2, 3, 4]), n(5)).scalar_value()),
        ("neg_log_softmax_batch", lambda n: _softmax().neg_log_softmax_batch(
            dy.inputTensor(np.ones((4, 2)), True), [n(1), n(5)]).npvalue().tolist()),
        ("zeros", lambda n: dy.zeros(n(3)).npvalue().tolist()),
        ("ones", lambda n: dy.ones(n(3), batch_size=n(2)).dim()),
        ("constant", lambda n: dy.constant(n(3), 1.5).npvalue().tolist()),
        ("random_normal", lambda n: dy.random_normal(n(3)).dim()),
        ("random_uniform", lambda n: dy.random_uniform(n(3), 0, 1).dim()),
        ("random_bernoulli", lambda n: dy.random_bernoulli(n(3), 0.5).dim()),
        ("random_gumbel", lambda n: dy.random_gumbel((n(3), n(2))).dim()),
        ("vecInput", lambda n: dy.vecInput(n(3)).dim()),
        ("matInput", lambda n: dy.matInput(n(2), n(3)).dim()),
        ("inputMatrix", lambda n: dy.inputMatrix([1, 2, 3, 4, 5, 6], (n(2), n(3))).npvalue().tolist()),
        ("sparse_inputTensor", lambda n: dy.sparse_inputTensor([[n(0), n(2)]], [5.0, 6.0], (n(4),)).npvalue().tolist()),
        ("inputMatrixLiteral", lambda n: dy.cg().inputMatrixLiteral([1, 2, 3, 4], (n(2), n(2)), n(1)).npvalue().tolist()),
        ("add_parameters", lambda n: pc.add_parameters((n(3), n(2))).shape()),
        ("add_lookup_parameters", lambda n: pc.add_lookup_parameters((n(5), n(2))).shape()),
        ("LookupParameters[]", lambda n: table[n(2)].npvalue().tolist()),
        ("LookupParameters.batch", lambda n: table.batch([n(1), n(2)]).npvalue().tolist()),
        ("init_row/row_as_array", lambda n: (table.init_row(n(4), [1, 2, 3]), table.row_as_array(n(4)).tolist())),
        ("row_grad_as_array", lambda n: table.row_grad_as_array(n(3)).tolist()),
        ("rows_as_array", lambda n: table.rows_as_array([n(1), n(3)]).tolist()),
        ("rows_grad_as_array", lambda n: table.rows_grad_as_array([n(1), n(3)]).tolist()),
        ("Expression.set (index)", lambda n: _set_index(table, n(5))),
        ("Tensor.argmax", lambda n: t.argmax(n(0), n(1)).as_numpy().tolist()),
        ("Tensor.topk", lambda n: t.topk(n(1), n(1))[1].as_numpy().tolist()),
        ("update_subset", lambda n: _update_subset(n(0))),
        ("reset_random_seed", lambda n: (dy.reset_random_seed(n(5)), dy.random_normal(3).npvalue().tolist())),
        ("profiler", lambda n: type(dy.profiler(max_trace_events=n(100)))),
    ]
    return cases


def _set_masks(batch):
    b = dy.VanillaLSTMBuilder(1, 3, 2, dy.ParameterCollection())
    b.set_dropouts(0.5, 0.5)
    b.initial_state()
    b.set_dropout_masks(batch)
    return True


def _softmax():
    return dy.StandardSoftmaxBuilder(4, 6, dy.ParameterCollection(), True)


def _set_index(table, i):
    e = table[0]
    e.set(i)
    return e.npvalue().tolist()


def _update_subset(i):
    pc = dy.ParameterCollection()
    p = pc.add_parameters((2,), init=dy.ConstInitializer(1.0))
    dy.sum_elems(dy.parameter(p)).backward()
    dy.SimpleSGDTrainer(pc, 0.5).update_subset([i], [])
    return p.as_array().tolist()


@pytest.mark.parametrize("name,call", _float_cases(), ids=[c[0] for c in _float_cases()])
def test_floats_are_truncated_wherever_an_int_is_taken(name, call):
    """The original's typed Cython arguments truncated a float given for an int (classes and functions alike)."""
    dy.renew_cg()
    dy.reset_random_seed(1)
    with_ints = call(int)
    dy.renew_cg()
    dy.reset_random_seed(1)
    assert call(lambda v: float(v) + 0.5) == with_ints
    dy.renew_cg()
    dy.reset_random_seed(1)
    assert call(np.float64) == with_ints


def test_a_float_still_picks_a_float_overload_first():
    """Truncation happens only when no overload takes the float as it is."""
    pc = dy.ParameterCollection()
    p = pc.add_parameters((2,), init=dy.ConstInitializer(2.0))
    p.scale(0.5)  # scale takes a float: not truncated to 0
    assert p.as_array().tolist() == [1.0, 1.0]
    for bad in (-1.0, float("nan"), float("inf"), "3"):
        with pytest.raises((TypeError, ValueError)):
            dy.VanillaLSTMBuilder(1, bad, 2, pc)


def test_layer_norm_broadcasts_gain_and_bias():
    x = np.arange(12.0).reshape(3, 4) / 7 - 0.5
    g, b = np.array([0.5, 1.0, 2.0]), np.array([0.1, -0.2, 0.3])
    y = dy.layer_norm(dy.inputTensor(x), dy.inputVector(list(g)), dy.inputVector(list(b)))
    ref = g[:, None] * (x - x.mean()) / (x.std() + 1e-8) + b[:, None]
    assert y.dim() == ((3, 4), 1) and np.allclose(y.npvalue(), ref, atol=1e-5)
    with pytest.raises(ValueError, match="layer_norm"):
        dy.layer_norm(dy.inputTensor(x), dy.inputVector([1.0, 2.0]), dy.inputVector(list(b)))


def test_fold_rows_of_a_vector_is_a_column():
    assert dy.fold_rows(dy.inputVector([1.0, 2.0, 3.0, 4.0]), 2).dim() == ((2, 1), 1)
