"""Conventions of the original DyNet's Python module that real DyNet programs depend on, found by running
such programs under both modules (each test names what the program did). These need no original DyNet:
differential.py compares the same behaviours with it where it is installed."""
import numpy as np
import pytest

import dynet as dy


def dims(e):
    return e.dim()[0], e.dim()[1]


# ---- inputTensor: a list of numpy arrays is a batch ----
def test_input_tensor_list_of_arrays_is_a_batch():
    a, b = np.arange(6.0).reshape(2, 3), -np.arange(6.0).reshape(2, 3)
    x = dy.inputTensor([a, b])
    assert dims(x) == ((2, 3), 2)
    assert np.allclose(x.npvalue(), np.stack([a, b], axis=-1))
    v = dy.inputTensor([np.array([1.0, 2.0]), np.array([3.0, 4.0])], batched=True)
    assert dims(v) == ((2,), 2)
    assert np.allclose(v.npvalue(), [[1, 3], [2, 4]])


def test_input_tensor_list_of_zero_d_arrays_is_a_batch_of_scalars():
    # What a transpose-and-iterate over a 1-d array gives (np.asarray of each element).
    x = dy.inputTensor([np.asarray(v).transpose() for v in np.arange(5.0)])
    assert dims(x) == ((1,), 5)
    assert dy.sum_batches(dy.squared_norm(x)).scalar_value() == 30


def test_input_tensor_lists_of_numbers_are_one_tensor():
    assert dims(dy.inputTensor([1.0, 2.0, 3.0])) == ((3,), 1)
    assert dims(dy.inputTensor([[1.0, 2.0], [3.0, 4.0]])) == ((2, 2), 1)
    assert dims(dy.inputTensor([np.array([1.0, 2.0]), [3.0, 4.0]])) == ((2, 2), 1)  # not all arrays
    assert dims(dy.inputTensor([np.array([1.0, 2.0, 3.0])])) == ((3,), 1)  # a batch of one


def test_input_tensor_list_of_arrays_of_different_shapes_raises():
    with pytest.raises(ValueError):
        dy.inputTensor([np.zeros(2), np.zeros(3)])


# ---- slicing: the index after the dims is the batch's ----
def test_slice_of_a_batched_expression_slices_the_batch():
    data = np.random.RandomState(0).random_sample((4, 5, 6))
    x = dy.inputTensor(data, batched=True)
    y = x[:1, :2, :3]
    assert dims(y) == ((1, 2), 3)
    assert np.allclose(y.npvalue(), data[:1, :2, :3])
    z = x[1:3, ::2, 2::3]
    assert dims(z) == ((2, 3), 2)
    assert np.allclose(z.npvalue(), data[1:3, ::2, 2::3])


def test_slice_of_the_batch_passes_gradients_back():
    pc = dy.ParameterCollection()
    p = pc.add_parameters((2, 6), init=np.arange(12.0).reshape(2, 6))
    x = dy.reshape(p, (2, 2), batch_size=3)
    loss = dy.sum_batches(dy.sum_elems(x[:, :, 1:]))
    loss.backward()
    grad = p.grad_as_array().reshape(2, 2, 3, order="F")
    assert np.allclose(grad[:, :, 0], 0) and np.allclose(grad[:, :, 1:], 1)


# ---- RNN builders: parameter expressions only in the graph of an initial_state ----
@pytest.mark.parametrize("cls", ["SimpleRNNBuilder", "GRUBuilder", "VanillaLSTMBuilder", "CoupledLSTMBuilder",
                                 "FastLSTMBuilder", "CompactVanillaLSTMBuilder"])
def test_parameter_expressions_need_an_initial_state_in_this_graph(cls):
    pc = dy.ParameterCollection()
    rnn = getattr(dy, cls)(2, 3, 4, pc)
    with pytest.raises(ValueError, match="initial_state"):
        rnn.get_parameter_expressions()
    rnn.initial_state()
    for layer_p, layer_e in zip(rnn.get_parameters(), rnn.get_parameter_expressions()):
        for p, e in zip(layer_p, layer_e):
            assert np.allclose(e.npvalue(), p.as_array())
    dy.renew_cg()
    with pytest.raises(ValueError, match="initial_state"):
        rnn.get_parameter_expressions()


# ---- constrained_softmax with bounds that sum to less than 1 (DyNet's API tutorial does this) ----
def test_constrained_softmax_with_infeasible_bounds_gives_the_bounds():
    x = dy.inputTensor([1.0, 2.0, 3.0, 4.0])
    u = dy.inputTensor([0.01, 0.05, 0.10, 0.55])
    y = dy.constrained_softmax(x, u)
    assert np.allclose(y.npvalue(), [0.01, 0.05, 0.10, 0.55])
    dy.dot_product(y, dy.inputTensor([1.0, -2.0, 0.5, 3.0])).backward(full=True)
    assert np.allclose(x.gradient(), 0) and np.allclose(u.gradient(), [1.0, -2.0, 0.5, 3.0])


def test_constrained_softmax_with_a_negative_bound_raises():
    y = dy.constrained_softmax(dy.inputTensor([1.0, 2.0]), dy.inputTensor([1.5, -0.5]))
    with pytest.raises(ValueError, match="negative"):
        y.value()


# ---- dropout with p = 1 (DyNet's API tutorial prints it) ----
@pytest.mark.parametrize("drop", [lambda x, p: dy.dropout(x, p), lambda x, p: dy.dropout_dim(x, 0, p),
                                  lambda x, p: dy.dropout_batch(x, p)])
def test_dropout_of_everything_is_zeros(drop):
    x = dy.inputTensor([[1.0, 2.0], [3.0, 4.0]], batched=True)
    y = drop(x, 1)
    assert np.all(y.npvalue() == 0)
    dy.sum_batches(dy.sum_elems(y)).backward(full=True)
    assert np.all(x.gradient() == 0)
    with pytest.raises(ValueError):
        drop(x, 1.5)


# ---- shapes of products and concatenations (DyNet's MNIST example reads argmax(npvalue(), 0)[0]) ----
def test_product_with_a_column_keeps_the_column():
    W = dy.inputTensor(np.arange(6.0).reshape(2, 3))
    assert dims(W * dy.inputTensor([1.0, 2.0, 3.0])) == ((2,), 1)
    assert dims(W * dy.inputTensor(np.ones((3, 1)))) == ((2, 1), 1)
    x = dy.reshape(dy.inputTensor(np.ones((3, 4)), batched=True), (3, 1), batch_size=4)
    y = W * x
    assert dims(y) == ((2, 1), 4) and y.npvalue().shape == (2, 1, 4)
    assert dims(dy.transpose(x) * x) == ((1, 1), 4)
    # affine_transform gives a vector whatever x's shape, as DyNet does
    assert dims(dy.affine_transform([dy.inputTensor([1.0, 2.0]), W, dy.inputTensor(np.ones((3, 1)))])) == ((2,), 1)


def test_concatenate_takes_the_first_arguments_rank():
    v, c = dy.inputTensor([1.0, 2.0]), dy.inputTensor(np.ones((3, 1)))
    assert dims(dy.concatenate([v, c])) == ((5,), 1)
    assert dims(dy.concatenate([c, v])) == ((5, 1), 1)
    assert np.allclose(dy.concatenate([v, c]).npvalue(), [1, 2, 1, 1, 1])
