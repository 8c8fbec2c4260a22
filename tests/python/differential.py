"""The same small programs run under any `dynet` module, their results written as JSON, so that ours can be
compared with the original DyNet (test_differential.py runs this under both interpreters).

    python tests/python/differential.py --out FILE [--autobatch N] [--from CASE]
    python tests/python/differential.py --list     # the cases' names

Each case builds one expression from parameters with fixed values, then records its dims, its value and the
gradient of every parameter for the loss sum(out * w) (w fixed weights of out's shape); a case that raises
records the exception's class instead. Random ops record what does not depend on the generator: dims, and
for dropout the set of ratios out / x. Builders and trainers run short programs on weights set by hand. One
line per finished case is appended to FILE as it finishes, so that a run that dies (the original aborts on
some inputs) can resume after the case that killed it.
"""
import argparse
import json
import math
import sys

parser = argparse.ArgumentParser()
parser.add_argument("--out")
parser.add_argument("--list", action="store_true")
parser.add_argument("--autobatch", type=int, default=0)
parser.add_argument("--from", dest="start", default=None, help="skip the cases before this one")
args = parser.parse_args()
sys.argv = sys.argv[:1]

import dynet_config  # noqa: E402

dynet_config.set(autobatch=args.autobatch, random_seed=3)
import dynet as dy  # noqa: E402
import numpy as np  # noqa: E402

rng = np.random.RandomState(7)


class IntOnly:
    """An object with __int__ and no __index__, as numpy < 2's one-element arrays look to Cython."""

    def __init__(self, v):
        self.v = v

    def __int__(self):
        return self.v


def uniform(lo, hi, *shape):
    return rng.uniform(lo, hi, size=shape)


# Fixed values, drawn once in this order (numpy's RandomState is the same stream in every version).
VALUES = {
    "v3": uniform(-0.9, 0.9, 3), "u3": uniform(-0.9, 0.9, 3), "v4": uniform(-0.9, 0.9, 4),
    "u4": uniform(-0.9, 0.9, 4), "pos3": uniform(0.5, 2.0, 3), "big3": uniform(1.2, 3.0, 3),
    "prob3": uniform(0.1, 0.9, 3), "m34": uniform(-0.9, 0.9, 3, 4), "n34": uniform(-0.9, 0.9, 3, 4),
    "pos34": uniform(0.5, 2.0, 3, 4), "m43": uniform(-0.9, 0.9, 4, 3), "m33": np.eye(3) * 2 + uniform(-0.3, 0.3, 3, 3),
    "n33": uniform(-0.9, 0.9, 3, 3), "m44": uniform(-0.9, 0.9, 4, 4), "m32": uniform(-0.9, 0.9, 3, 2),
    "b32": uniform(-0.9, 0.9, 3, 2), "c32": uniform(-0.9, 0.9, 3, 2), "t234": uniform(-0.9, 0.9, 2, 3, 4),
    "b23": uniform(-0.9, 0.9, 2, 3), "b2": uniform(-0.9, 0.9, 2), "img": uniform(-0.9, 0.9, 5, 5, 2),
    "filt": uniform(-0.9, 0.9, 2, 2, 2, 3), "fb3": uniform(-0.9, 0.9, 3), "g4": uniform(0.5, 1.5, 4),
    "s": uniform(0.5, 1.5, 1), "x3": uniform(-0.9, 0.9, 3), "h2": uniform(-0.9, 0.9, 2), "c2": uniform(-0.9, 0.9, 2),
    "wx83": uniform(-0.9, 0.9, 8, 3), "wh82": uniform(-0.9, 0.9, 8, 2), "b8": uniform(-0.9, 0.9, 8),
    "E": uniform(-0.9, 0.9, 6, 3), "pos340": uniform(0.5, 2.0, 3, 40), "m38": uniform(-0.9, 0.9, 3, 8), "spd": None,
}
VALUES["spd"] = VALUES["m33"] @ VALUES["m33"].T + np.eye(3)


class Inputs:
    """The case's parameters (attribute access makes one the first time) and their expressions."""

    def __init__(self):
        self.pc = dy.ParameterCollection()
        self.made = {}

    def __getattr__(self, name):
        if name.startswith("_") or name not in VALUES and name not in ("bv", "bu", "bm", "bpos", "lp"):
            raise AttributeError(name)
        if name not in self.made:
            if name == "lp":
                self.made[name] = self.pc.add_lookup_parameters((6, 3), init=VALUES["E"])
            elif name in ("bv", "bu"):  # a batch of two 3-vectors, with a gradient
                param = self._param("b32" if name == "bv" else "c32")
                self.made[name] = dy.reshape(param, (3,), batch_size=2)
            elif name == "bpos":  # a batch of forty positive 3-vectors
                self.made[name] = dy.reshape(self._param("pos340"), (3,), batch_size=40)
            elif name == "bm":  # a batch of two 3x4 matrices
                self.made[name] = dy.reshape(self._param("m38"), (3, 4), batch_size=2)
            else:
                self.made[name] = self._param(name)
        return self.made[name]

    def _param(self, name):
        key = "_p_" + name
        if key not in self.made:
            p = self.pc.add_parameters(VALUES[name].shape, init=dy.NumpyInitializer(VALUES[name]))
            self.made[key] = (p, p.expr(True))
        return self.made[key][1]

    def gradients(self):
        out = {}
        for key, made in sorted(self.made.items()):
            if key.startswith("_p_"):
                out[key[3:]] = made[0].grad_as_array().tolist()
            elif key == "lp":
                out[key] = made.grad_as_array().tolist()
        return out


CASES = []


def case(name, kind="exact"):
    def register(build):
        CASES.append((name, kind, build))
        return build
    return register


def simple(name, build, kind="exact"):
    CASES.append((name, kind, build))


UNARY = ["tanh", "exp", "cube", "square", "abs", "cos", "sin", "tan", "cosh", "sinh", "atan", "asinh", "erf",
         "log_sigmoid", "logistic", "rectify", "elu", "selu", "silu",
         "flip_gradient", "nobackprop", "transpose", "sum_elems", "mean_elems", "std_elems", "l2_norm",
         "squared_norm", "softmax", "logsumexp_dim", "max_dim", "min_dim", "cumsum", "sum_batches",
         "mean_batches", "std_batches"]
for op in UNARY:
    simple(op, lambda I, op=op: getattr(dy, op)(I.m34))
    simple(op + "/batched", lambda I, op=op: getattr(dy, op)(I.bm))
for op in ("ceil", "floor", "round"):
    for mode in ("zero_gradient", "straight_through_gradient"):
        simple(op + "/" + mode, lambda I, op=op, mode=mode: getattr(dy, op)(I.m34 * 2, mode))
simple("softsign", lambda I: dy.softsign(I.v3))
simple("softsign/batched", lambda I: dy.softsign(I.bv))
for op in ("sqrt", "log", "lgamma"):
    simple(op, lambda I, op=op: getattr(dy, op)(I.pos34))
for op in ("acos", "asin", "atanh"):
    simple(op, lambda I, op=op: getattr(dy, op)(I.v3))
simple("acosh", lambda I: dy.acosh(I.big3))
simple("elu/alpha", lambda I: dy.elu(I.m34, 0.5))
simple("silu/beta", lambda I: dy.silu(I.m34, 2.0))
simple("scale_gradient", lambda I: dy.scale_gradient(I.m34, 0.25))
simple("softmax/d1", lambda I: dy.softmax(I.m34, d=1))
simple("log_softmax", lambda I: dy.log_softmax(I.v3))
simple("log_softmax/matrix", lambda I: dy.log_softmax(I.m34))
simple("log_softmax/restrict", lambda I: dy.log_softmax(I.v4, [0, 2]))
simple("sparsemax", lambda I: dy.sparsemax(I.v4 * 2))
simple("logsumexp_dim/d1", lambda I: dy.logsumexp_dim(I.m34, d=1))
simple("max_dim/d1", lambda I: dy.max_dim(I.m34, d=1))
simple("min_dim/d1", lambda I: dy.min_dim(I.m34, d=1))
simple("cumsum/d1", lambda I: dy.cumsum(I.m34, d=1))
simple("moment_elems", lambda I: dy.moment_elems(I.m34, 3))
simple("moment_batches", lambda I: dy.moment_batches(I.bm, 3))
for d in ([0], [1], [0, 1]):
    for b in (False, True):
        simple("sum_dim/%s/%s" % (d, b), lambda I, d=d, b=b: dy.sum_dim(I.bm, d, b))
        simple("mean_dim/%s/%s" % (d, b), lambda I, d=d, b=b: dy.mean_dim(I.bm, d, b))
        simple("std_dim/%s/%s" % (d, b), lambda I, d=d, b=b: dy.std_dim(I.bm, d, b))
        simple("moment_dim/%s/%s" % (d, b), lambda I, d=d, b=b: dy.moment_dim(I.bm, d, 2, b))
simple("sum_dim/n", lambda I: dy.sum_dim(I.m34, [1], False, 2))
simple("mean_dim/n", lambda I: dy.mean_dim(I.m34, [1], False, 2))
simple("kmax_pooling", lambda I: dy.kmax_pooling(I.m34, 2))
simple("kmax_pooling/d0", lambda I: dy.kmax_pooling(I.m34, 2, d=0))
simple("fold_rows", lambda I: dy.fold_rows(I.m44, 2))
simple("argmax/zero", lambda I: dy.argmax(I.v4, "zero_gradient"))
simple("argmax/straight", lambda I: dy.argmax(I.v4, "straight_through_gradient"))
simple("argmax/batched", lambda I: dy.argmax(I.bv, "straight_through_gradient"))

# arithmetic and combinations
simple("add", lambda I: I.m34 + I.n34)
simple("add/broadcast", lambda I: I.bm + I.n34)
simple("add/scalar-left", lambda I: 1.5 + I.m34)
simple("add/scalar-right", lambda I: I.m34 + 1.5)
simple("sub", lambda I: I.m34 - I.n34)
simple("sub/scalar-left", lambda I: 1.5 - I.m34)
simple("sub/scalar-right", lambda I: I.m34 - 1.5)
simple("neg", lambda I: -I.m34)
simple("mul/matrix", lambda I: I.m34 * I.m43)
simple("mul/batched", lambda I: I.m43 * I.bv)
simple("mul/scalar", lambda I: 2.5 * I.m34)
simple("mul/scalar-right", lambda I: I.m34 * 2.5)
simple("mul/by-1x1", lambda I: I.m34 * I.s)
simple("div/scalar", lambda I: I.m34 / 2.5)
simple("div/expr", lambda I: I.m34 / I.pos34)
simple("cmult", lambda I: dy.cmult(I.m34, I.n34))
simple("cmult/broadcast", lambda I: dy.cmult(I.bm, I.n34))
simple("cdiv", lambda I: dy.cdiv(I.m34, I.pos34))
simple("pow", lambda I: dy.pow(I.pos34, I.s))
simple("pow/elementwise", lambda I: dy.pow(I.pos34, I.m34))
simple("bmax", lambda I: dy.bmax(I.m34, I.n34))
simple("bmin", lambda I: dy.bmin(I.m34, I.n34))
simple("emax", lambda I: dy.emax([I.m34, I.n34, I.pos34 - 1]))
simple("esum", lambda I: dy.esum([I.m34, I.n34, I.pos34]))
simple("average", lambda I: dy.average([I.m34, I.n34, I.pos34]))
simple("logsumexp", lambda I: dy.logsumexp([I.v3, I.u3]))
simple("dot_product", lambda I: dy.dot_product(I.v3, I.u3))
simple("dot_product/batched", lambda I: dy.dot_product(I.bv, I.u3))
simple("colwise_add", lambda I: dy.colwise_add(I.m34, I.v3))
simple("concatenate", lambda I: dy.concatenate([I.v3, I.u4]))
simple("concatenate/d1", lambda I: dy.concatenate([I.m34, I.m32], d=1))
simple("concatenate/batched", lambda I: dy.concatenate([I.bv, I.u3]))
simple("concatenate_cols", lambda I: dy.concatenate_cols([I.v3, I.u3, I.m32]))
simple("concatenate_to_batch", lambda I: dy.concatenate_to_batch([I.m34, I.bm]))
simple("affine_transform", lambda I: dy.affine_transform([I.v3, I.m34, I.v4, I.m33, I.u3]))
simple("affine_transform/batched", lambda I: dy.affine_transform([I.v3, I.m33, I.bv]))
simple("reshape", lambda I: dy.reshape(I.m34, (4, 3)))
simple("reshape/to-batch", lambda I: dy.reshape(I.m34, (2,), batch_size=6))
simple("inverse", lambda I: dy.inverse(I.m33))
simple("logdet", lambda I: dy.logdet(I.spd))
simple("trace_of_product", lambda I: dy.trace_of_product(I.m33, I.n33))
simple("circ_conv", lambda I: dy.circ_conv(I.v4, I.u4))
simple("circ_corr", lambda I: dy.circ_corr(I.v4, I.u4))
simple("contract3d_1d", lambda I: dy.contract3d_1d(I.t234, I.v4))
simple("contract3d_1d_bias", lambda I: dy.contract3d_1d_bias(I.t234, I.v4, I.b23))
simple("contract3d_1d_1d", lambda I: dy.contract3d_1d_1d(I.t234, I.v4, I.v3))
simple("contract3d_1d_1d_bias", lambda I: dy.contract3d_1d_1d_bias(I.t234, I.v4, I.v3, I.b2))
simple("conv2d/valid", lambda I: dy.conv2d(I.img, I.filt, [1, 1]))
simple("conv2d/same", lambda I: dy.conv2d(I.img, I.filt, [2, 1], is_valid=False))
simple("conv2d_bias", lambda I: dy.conv2d_bias(I.img, I.filt, I.fb3, [1, 2]))
simple("maxpooling2d/valid", lambda I: dy.maxpooling2d(I.img, [2, 2], [1, 1]))
simple("maxpooling2d/same", lambda I: dy.maxpooling2d(I.img, [2, 3], [2, 2], is_valid=False))
# TensorFlow-style 4-entry strides (mead-baseline passes [1, 1, 1, 1]): DyNet reads the first two.
simple("conv2d_bias/four_strides", lambda I: dy.conv2d_bias(I.img, I.filt, I.fb3, [2, 1, 1, 1], is_valid=False))
simple("maxpooling2d/three_entries", lambda I: dy.maxpooling2d(I.img, [2, 3, 5], [2, 2, 1], is_valid=False))
simple("filter1d_narrow", lambda I: dy.filter1d_narrow(I.m34, I.m32))
simple("kmh_ngram", lambda I: dy.kmh_ngram(I.m34, 2))
simple("layer_norm", lambda I: dy.layer_norm(I.v4, I.g4, I.u4))
simple("weight_norm", lambda I: dy.weight_norm(I.m34, I.s))
simple("constrained_softmax", lambda I: dy.constrained_softmax(I.v3, I.prob3))
simple("constrained_softmax/infeasible", lambda I: dy.constrained_softmax(I.v3, I.prob3 * 0.3))  # bounds sum < 1

# losses and distances
simple("pickneglogsoftmax", lambda I: dy.pickneglogsoftmax(I.v3, 1))
simple("pickneglogsoftmax/batched", lambda I: dy.pickneglogsoftmax(I.bv, [2, 0]))
simple("pickneglogsoftmax_batch", lambda I: dy.pickneglogsoftmax_batch(I.bv, [1, 2]))
simple("hinge", lambda I: dy.hinge(I.v3, 1))
simple("hinge/m", lambda I: dy.hinge(I.v3, 1, m=0.3))
simple("hinge/batched", lambda I: dy.hinge(I.bv, [0, 2]))
simple("hinge_batch", lambda I: dy.hinge_batch(I.bv, [2, 1], m=0.5))
simple("hinge_dim", lambda I: dy.hinge_dim(I.m34, [0, 1, 2, 1]))
simple("hinge_dim/d1", lambda I: dy.hinge_dim(I.m34, [3, 0, 1], d=1, m=0.5))
simple("binary_log_loss", lambda I: dy.binary_log_loss(dy.logistic(I.v3), dy.logistic(I.u3)))
simple("pairwise_rank_loss", lambda I: dy.pairwise_rank_loss(dy.pick(I.bv, 0), dy.pick(I.bu, 1)))
simple("pairwise_rank_loss/m", lambda I: dy.pairwise_rank_loss(dy.pick(I.bv, 0), dy.pick(I.bu, 1), m=0.2))
simple("pairwise_rank_loss/vectors", lambda I: dy.pairwise_rank_loss(I.v3, I.u3))
simple("poisson_loss", lambda I: dy.poisson_loss(I.s, 3))
simple("huber_distance", lambda I: dy.huber_distance(I.m34 * 3, I.n34))
simple("huber_distance/c", lambda I: dy.huber_distance(I.m34, I.n34, c=0.2))
simple("l1_distance", lambda I: dy.l1_distance(I.m34, I.n34))
simple("squared_distance", lambda I: dy.squared_distance(I.m34, I.n34))
simple("squared_distance/batched", lambda I: dy.squared_distance(I.bv, I.u3))

# selections
simple("pick", lambda I: dy.pick(I.v3, 2))
simple("pick/matrix", lambda I: dy.pick(I.m34, 1))
simple("pick/dim1", lambda I: dy.pick(I.m34, 3, dim=1))
simple("pick/batched", lambda I: dy.pick(I.bv, [2, 0]))
simple("pick_batch", lambda I: dy.pick_batch(I.bm, [2, 1], dim=0))
simple("pick_batch_elem", lambda I: dy.pick_batch_elem(I.bm, 1))
simple("pick_batch_elems", lambda I: dy.pick_batch_elems(I.bm, [1, 0, 1]))
simple("pick_range", lambda I: dy.pick_range(I.v4, 1, 3))
simple("pick_range/d1", lambda I: dy.pick_range(I.m34, 1, 3, d=1))
simple("pickrange", lambda I: dy.pickrange(I.v4, 0, 2))
simple("index", lambda I: I.v4[2])
simple("slice", lambda I: I.v4[1:3])
simple("select_rows", lambda I: dy.select_rows(I.m34, [2, 0, 2]))
simple("select_cols", lambda I: dy.select_cols(I.m34, [3, 1]))
simple("strided_select", lambda I: dy.strided_select(I.m34, [2, 2], [0, 1], [3, 4]))
simple("strided_select/short", lambda I: dy.strided_select(I.m34, [1], [1], [3]))
simple("lookup", lambda I: dy.lookup(I.lp, 4))
simple("lookup/no-update", lambda I: dy.lookup(I.lp, 2, update=False))
simple("lookup/index-op", lambda I: I.lp[5])
simple("lookup_batch", lambda I: dy.lookup_batch(I.lp, [1, 4, 1]))
simple("lookup_batch/no-update", lambda I: dy.lookup_batch(I.lp, [0, 3], update=False))
simple("lookup/parameter", lambda I: dy.parameter(I.lp))
simple("const_parameter", lambda I: dy.const_parameter(I.pc.add_parameters((2, 2), init=dy.NumpyInitializer(
    VALUES["m33"][:2, :2]))) + I.m32[0])

# inputs and constants (their dims and values; the loss reaches no parameter)
simple("inputVector", lambda I: dy.inputVector([1.5, -2.0, 0.25]) + I.v3)
simple("inputMatrix", lambda I: dy.inputMatrix([1.0, 2.0, 3.0, 4.0, 5.0, 6.0], (3, 2)) + I.m32)
simple("inputTensor", lambda I: dy.inputTensor(VALUES["t234"]) + I.t234)
simple("inputTensor/batched", lambda I: dy.inputTensor(VALUES["m34"], batched=True) + I.v3)
simple("scalarInput", lambda I: dy.cmult(dy.scalarInput(1.25), I.s))
simple("scalarInput/times-vector", lambda I: dy.scalarInput(1.25) * I.v3)
simple("vecInput", lambda I: dy.vecInput(3) + I.v3)
simple("matInput", lambda I: dy.matInput(3, 2) + I.m32)
simple("sparse_inputTensor", lambda I: dy.sparse_inputTensor([[0, 2], [1, 0]], [1.5, -2.0], (3, 2)) + I.m32)
simple("sparse_inputTensor/defval", lambda I: dy.sparse_inputTensor([[1], [1]], [3.0], (3, 2), defval=0.5) + I.m32)
simple("zeros", lambda I: dy.zeros((3,)) + I.v3)
simple("zeroes", lambda I: dy.zeroes((3, 4), batch_size=2) + I.m34)
simple("ones", lambda I: dy.ones((3,)) + I.v3)
simple("constant", lambda I: dy.constant((3,), 0.75, batch_size=2) * 2 + I.v3)
simple("one_hot", lambda I: dy.one_hot(4, 2) + I.v4)
simple("one_hot/batched", lambda I: dy.one_hot(4, [2, 0]) + I.v4)

# LSTM cell ops
simple("vanilla_lstm_gates", lambda I: dy.vanilla_lstm_gates(I.x3, I.h2, I.wx83, I.wh82, I.b8))
simple("vanilla_lstm_gates_concat", lambda I: dy.vanilla_lstm_gates_concat([I.x3], I.h2, I.wx83, I.wh82, I.b8))
simple("vanilla_lstm_c", lambda I: dy.vanilla_lstm_c(I.c2, dy.vanilla_lstm_gates(I.x3, I.h2, I.wx83, I.wh82, I.b8)))
simple("vanilla_lstm_h", lambda I: dy.vanilla_lstm_h(
    dy.vanilla_lstm_c(I.c2, dy.vanilla_lstm_gates(I.x3, I.h2, I.wx83, I.wh82, I.b8)),
    dy.vanilla_lstm_gates(I.x3, I.h2, I.wx83, I.wh82, I.b8)))
simple("vanilla_lstm_gates_dropout", lambda I: dy.vanilla_lstm_gates_dropout(
    I.x3, I.h2, I.wx83, I.wh82, I.b8, dy.inputVector([2.0, 0.0, 2.0]), dy.inputVector([0.0, 2.0])))
simple("vanilla_lstm_gates_dropout_concat", lambda I: dy.vanilla_lstm_gates_dropout_concat(
    [I.x3], I.h2, I.wx83, I.wh82, I.b8, dy.inputVector([2.0, 0.0, 2.0]), dy.inputVector([0.0, 2.0])))

# random ops: what does not depend on the generator
for name, build in [
        ("random_normal", lambda I: dy.random_normal((3, 2), batch_size=2) + I.v3),
        ("random_uniform", lambda I: dy.random_uniform((3,), -1, 1) + I.v3),
        ("random_gumbel", lambda I: dy.random_gumbel((3,)) + I.v3),
        ("noise", lambda I: dy.noise(I.m34, 0.1))]:
    simple(name, build, kind="random")
simple("random_bernoulli", lambda I: dy.random_bernoulli((50,), 0.5, scale=2.0), kind="levels")
for name, build in [
        ("dropout", lambda I: dy.cdiv(dy.dropout(I.pos340, 0.5), I.pos340)),
        ("dropout/zero", lambda I: dy.cdiv(dy.dropout(I.pos340, 0.0), I.pos340)),
        ("dropout_dim", lambda I: dy.cdiv(dy.dropout_dim(dy.transpose(I.pos340), 1, 0.5), dy.transpose(I.pos340))),
        ("dropout_dim/d0", lambda I: dy.cdiv(dy.dropout_dim(I.pos340, 0, 0.25), I.pos340)),
        ("dropout_batch", lambda I: dy.cdiv(dy.dropout_batch(I.bpos, 0.5), I.bpos)),
        ("block_dropout", lambda I: dy.concatenate([dy.cdiv(dy.block_dropout(I.pos3, 0.5), I.pos3)
                                                    for _ in range(40)]))]:
    simple(name, build, kind="levels")


def record_expression(I, out, kind):
    dim = out.dim()
    rec = {"dim": [list(dim[0]), dim[1]]}
    value = np.asarray(out.npvalue(), dtype=np.float64)
    if kind == "exact":
        rec["value"] = value.tolist()
    elif kind == "levels":  # the distinct values, e.g. a dropout's 0 and 1/(1-p)
        rec["levels"] = sorted({round(float(v), 4) for v in value.ravel()})
    weights = np.cos(np.arange(value.size) * 0.7 + 0.3).reshape(value.shape)
    w = dy.inputTensor(weights, batched=dim[1] > 1) if value.size > 1 else dy.scalarInput(float(weights.ravel()[0]))
    loss = dy.sum_batches(dy.sum_elems(dy.cmult(out, w)))
    rec["loss"] = loss.scalar_value() if kind == "exact" else None
    loss.backward()
    if kind == "exact":
        rec["grads"] = I.gradients()
    return rec


def run_case(name, kind, build):
    dy.renew_cg()
    I = Inputs()
    try:
        out = build(I)
        if isinstance(out, dict):
            return out
        return record_expression(I, out, kind)
    except Exception as e:  # the comparison decides whether raising was right
        return {"error": type(e).__name__, "message": str(e)[:300]}


# Builders: weights set in their order from a fixed stream, a sequence of inputs, outputs and gradients.
def set_builder_weights(builder, seed):
    r = np.random.RandomState(seed)
    params = []
    for layer in builder.get_parameters():
        for p in layer:
            p.set_value(r.uniform(-0.5, 0.5, size=p.shape()))
            params.append(p)
    return params


def builder_case(make, inputs=4, batch=1):
    def build(I):
        b = make(I.pc)
        params = set_builder_weights(b, 11)
        r = np.random.RandomState(12)
        xs = [dy.inputTensor(r.uniform(-1, 1, size=(3, batch) if batch > 1 else (3,)), batched=batch > 1)
              for _ in range(inputs)]
        s = b.initial_state()
        outs = s.transduce(xs)
        loss = dy.esum([dy.sum_elems(dy.cmult(o, dy.inputVector([0.3, -0.2, 0.5, 0.1][:o.dim()[0][0]])))
                        for o in outs])
        loss = dy.sum_batches(loss)
        rec = {"outputs": [np.asarray(o.npvalue()).tolist() for o in outs], "loss": loss.scalar_value()}
        loss.backward()
        rec["grads"] = [p.grad_as_array().tolist() for p in params]
        rec["shapes"] = [list(p.shape()) for p in params]
        return rec
    return build


for name, make in [
        ("VanillaLSTMBuilder", lambda pc: dy.VanillaLSTMBuilder(2, 3, 4, pc)),
        ("VanillaLSTMBuilder/ln", lambda pc: dy.VanillaLSTMBuilder(1, 3, 4, pc, ln_lstm=True)),
        ("CoupledLSTMBuilder", lambda pc: dy.CoupledLSTMBuilder(2, 3, 4, pc)),
        ("LSTMBuilder", lambda pc: dy.LSTMBuilder(2, 3, 4, pc)),
        ("FastLSTMBuilder", lambda pc: dy.FastLSTMBuilder(1, 3, 4, pc)),
        ("CompactVanillaLSTMBuilder", lambda pc: dy.CompactVanillaLSTMBuilder(2, 3, 4, pc)),
        ("GRUBuilder", lambda pc: dy.GRUBuilder(2, 3, 4, pc)),
        ("SimpleRNNBuilder", lambda pc: dy.SimpleRNNBuilder(2, 3, 4, pc)),
        ("SimpleRNNBuilder/bias", lambda pc: dy.SimpleRNNBuilder(1, 3, 4, pc, support_lags=False))]:
    simple("builder/" + name, builder_case(make))
    simple("builder/" + name + "/batched", builder_case(make, batch=2))


# Trainers: three updates of a matrix and a lookup table from fixed gradients (the loss sum(W x) + E[i]).
def trainer_case(make):
    def build(I):
        W = I.pc.add_parameters((3, 4), init=dy.NumpyInitializer(VALUES["m34"]))
        E = I.pc.add_lookup_parameters((6, 3), init=VALUES["E"])
        trainer = make(I.pc)
        history = []
        for step in range(3):
            dy.renew_cg()
            x = dy.inputVector(list(VALUES["v4"] * (step + 1)))
            loss = dy.sum_elems(dy.cmult(dy.tanh(W * x + E[step]), dy.inputVector(list(VALUES["u3"]))))
            loss.forward()
            loss.backward()
            trainer.update()
            history.append([W.as_array().tolist(), E.as_array().tolist()])
        return {"history": history}
    return build


for name, make in [
        ("SimpleSGDTrainer", lambda pc: dy.SimpleSGDTrainer(pc)),
        ("SimpleSGDTrainer/lr", lambda pc: dy.SimpleSGDTrainer(pc, learning_rate=0.5)),
        ("CyclicalSGDTrainer", lambda pc: dy.CyclicalSGDTrainer(pc)),
        ("MomentumSGDTrainer", lambda pc: dy.MomentumSGDTrainer(pc)),
        ("AdagradTrainer", lambda pc: dy.AdagradTrainer(pc)),
        ("AdadeltaTrainer", lambda pc: dy.AdadeltaTrainer(pc)),
        ("RMSPropTrainer", lambda pc: dy.RMSPropTrainer(pc)),
        ("AdamTrainer", lambda pc: dy.AdamTrainer(pc)),
        ("AmsgradTrainer", lambda pc: dy.AmsgradTrainer(pc)),
        ("EGTrainer", lambda pc: dy.EGTrainer(pc))]:
    simple("trainer/" + name, trainer_case(make))


def trainer_clipping(I):
    W = I.pc.add_parameters((3, 4), init=dy.NumpyInitializer(VALUES["m34"] * 10))
    trainer = dy.SimpleSGDTrainer(I.pc, learning_rate=0.3)
    trainer.set_clip_threshold(0.5)
    loss = dy.sum_elems(W * dy.inputVector(list(VALUES["v4"] * 5)))
    loss.forward()
    loss.backward()
    trainer.update()
    return {"W": W.as_array().tolist(), "threshold": trainer.get_clip_threshold()}


simple("trainer/clipping", trainer_clipping)



# The rest of the API: each program returns plain data.
def arr(x):
    return np.asarray(x, dtype=np.float64).tolist()


def set_all(pc, seed):
    """Every parameter of pc, in parameters_list order, from a fixed stream (the order is the file format's)."""
    r = np.random.RandomState(seed)
    for p in pc.parameters_list():
        p.set_value(r.uniform(-0.5, 0.5, size=p.shape()))
    for p in pc.lookup_parameters_list():
        p.init_from_array(r.uniform(-0.5, 0.5, size=p.shape()))


@case("expression_methods")
def expression_methods(I):
    e = dy.tanh(I.m34)
    v = dy.tanh(I.v3)
    b = dy.tanh(I.bv)
    out = {"value": arr(e.value()), "npvalue": arr(e.npvalue()), "vec_value": arr(e.vec_value()),
           "vec_value/vector": arr(v.vec_value()), "value/vector": arr(v.value()),
           "tensor": arr(e.tensor_value().as_numpy()), "batched/npvalue": arr(b.npvalue()),
           "batched/value": arr(b.value()), "batched/vec_value": arr(b.vec_value()),
           "dim": [list(e.dim()[0]), e.dim()[1]], "argmax": arr(v.tensor_value().argmax().as_numpy()),
           "item": arr(v[1].value()), "slice": arr(v[0:2].value()), "row": arr(e[1].npvalue()),
           "scalar": dy.sum_elems(e).scalar_value(), "scalar/value": dy.sum_elems(e).value()}
    loss = dy.sum_elems(dy.cmult(e, e))
    loss.forward()
    loss.backward(full=True)
    out["gradient/intermediate"] = arr(e.gradient())
    out["gradient/param"] = arr(I.m34.gradient())
    return out


@case("cython/none_as_false")
def none_as_false(I):
    # Cython's bint took None as False: programs pass a variable that defaults to None.
    e = dy.tanh(I.m34)
    b = dy.VanillaLSTMBuilder(1, 3, 4, I.pc)
    set_all(I.pc, 5)
    out = {"value": arr(e.value(recalculate=None)), "npvalue": arr(e.npvalue(None)),
           "scalar": dy.sum_elems(e).scalar_value(None), "forward": arr(e.forward(recalculate=None)),
           "inputTensor": arr((dy.inputTensor(VALUES["m34"], None) + I.m34).npvalue()),
           "state": arr(b.initial_state(update=None).add_input(I.v3).output().npvalue())}
    # update=None: constant lookups, so the table gets no gradient from these.
    loss = dy.sum_elems(dy.lookup(I.lp, 3, update=None)) + dy.sum_elems(dy.lookup_batch(I.lp, [1, 5], None))
    loss = dy.sum_batches(loss + dy.sum_elems(e))
    loss.forward()
    loss.backward(full=None)
    out["loss"] = loss.scalar_value()
    out["gradient/param"] = arr(I.m34.gradient())
    out["gradient/table"] = arr(I.lp.grad_as_array())
    return out


@case("graph_checkpoint")
def graph_checkpoint(I):
    a = dy.tanh(I.v3)
    dy.cg_checkpoint()
    b = dy.exp(a)
    first = arr(b.npvalue())
    dy.cg_revert()
    c = dy.logistic(a)
    return {"first": first, "after": arr(c.npvalue()), "a": arr(a.npvalue())}


@case("rnn_state")
def rnn_state(I):
    b = dy.VanillaLSTMBuilder(2, 3, 4, I.pc)
    set_all(I.pc, 21)
    x = [dy.inputVector(list(VALUES["x3"] * (k + 1))) for k in range(3)]
    s0 = b.initial_state()
    s1 = s0.add_input(x[0])
    s2 = s1.add_input(x[1])
    out = {"h": [arr(e.npvalue()) for e in s2.h()], "s": [arr(e.npvalue()) for e in s2.s()],
           "output": arr(s2.output().npvalue()), "prev_is_s1": s2.prev() is s1,
           "states": [arr(st.output().npvalue()) for st in s0.add_inputs(x)],
           "transduce": [arr(e.npvalue()) for e in s0.transduce(x)]}
    h0 = [dy.inputVector([0.1, -0.2, 0.3, 0.4]), dy.inputVector([0.5, 0.0, -0.1, 0.2])]
    c0 = [dy.inputVector([0.2, 0.2, -0.3, 0.1]), dy.inputVector([-0.5, 0.1, 0.1, 0.0])]
    out["initial"] = arr(b.initial_state(c0 + h0).add_input(x[0]).output().npvalue())
    out["raw"] = arr(b.initial_state_from_raw_vectors([list(e.npvalue()) for e in c0 + h0])
                     .add_input(x[0]).output().npvalue())
    out["set_h"] = arr(s1.set_h(h0).add_input(x[1]).output().npvalue())
    out["set_s"] = arr(s1.set_s(c0 + h0).add_input(x[1]).output().npvalue())
    out["parameter_expressions"] = [[arr(e.npvalue()) for e in layer] for layer in b.get_parameter_expressions()]
    return out


@case("rnn_dropout")
def rnn_dropout(I):
    """Dropout with masks of ones (set_dropout_masks) equals no dropout scaled as the builder scales."""
    b = dy.VanillaLSTMBuilder(1, 3, 4, I.pc)
    set_all(I.pc, 22)
    x = dy.inputVector(list(VALUES["x3"]))
    plain = arr(b.initial_state().add_input(x).output().npvalue())
    b.set_dropouts(0.5, 0.5)
    b.set_dropout_masks()
    masked = b.initial_state().add_input(x).output().dim()
    b.disable_dropout()
    return {"plain": plain, "dims": [list(masked[0]), masked[1]],
            "again": arr(b.initial_state().add_input(x).output().npvalue())}


@case("rnn_dropout_one")
def rnn_dropout_one(I):
    """A dropout rate of 1 drops every input unit (the masks are Bernoulli(0) draws): h depends on the
    biases alone."""
    out = {}
    for name, make in (("lstm", dy.VanillaLSTMBuilder), ("simple", dy.SimpleRNNBuilder)):
        b = make(1, 3, 4, I.pc)
        set_all(I.pc, 25)
        b.set_dropouts(1.0, 0.0)
        out[name] = [arr(b.initial_state().add_input(dy.inputVector(list(VALUES["x3"] * k))).output().npvalue())
                     for k in (1, 5)]
    return out


@case("birnn")
def birnn(I):
    b = dy.BiRNNBuilder(2, 3, 6, I.pc, dy.VanillaLSTMBuilder)
    set_all(I.pc, 23)
    xs = [dy.inputVector(list(VALUES["x3"] * (k - 1))) for k in range(4)]
    outs = b.transduce(xs)
    loss = dy.esum([dy.sum_elems(dy.cmult(o, o)) for o in outs])
    res = {"transduce": [arr(o.npvalue()) for o in outs], "loss": loss.scalar_value(),
           "add_inputs": [[arr(s.output().npvalue()) for s in pair] for pair in b.add_inputs(xs)],
           "shapes": [list(p.shape()) for p in I.pc.parameters_list()]}
    loss.backward()
    res["grads"] = [arr(p.grad_as_array()) for p in I.pc.parameters_list()]
    return res


@case("softmax_builder")
def softmax_builder(I):
    sm = dy.StandardSoftmaxBuilder(4, 5, I.pc)
    set_all(I.pc, 24)
    h = dy.tanh(I.v4)
    hb = dy.reshape(dy.concatenate([I.v4, I.u4]), (4,), batch_size=2)
    loss = sm.neg_log_softmax(h, 3) + dy.sum_batches(sm.neg_log_softmax_batch(hb, [1, 4]))
    res = {"logits": arr(sm.full_logits(h).npvalue()), "log_distribution": arr(sm.full_log_distribution(h).npvalue()),
           "loss": loss.scalar_value()}
    loss.backward()
    res["grads"] = [arr(p.grad_as_array()) for p in I.pc.parameters_list()]
    res["v4"] = arr(I.made["_p_v4"][0].grad_as_array())
    return res


@case("softmax_builder/no-bias")
def softmax_builder_no_bias(I):
    sm = dy.StandardSoftmaxBuilder(4, 5, I.pc, bias=False)
    set_all(I.pc, 25)
    return {"logits": arr(sm.full_logits(I.v4).npvalue()), "count": len(I.pc.parameters_list())}


@case("collection")
def collection(I):
    pc = I.pc
    a = pc.add_parameters((2, 3))
    sub = pc.add_subcollection("enc")
    b = sub.add_parameters(4, name="w")
    E = sub.add_lookup_parameters((5, 2))
    c = pc.add_parameters((3,), init=dy.ConstInitializer(0.25))
    d = pc.add_parameters((3, 3), init=dy.IdentityInitializer())
    f = pc.parameters_from_numpy(np.arange(6.0).reshape(2, 3))
    g = pc.lookup_parameters_from_numpy(np.arange(6.0).reshape(3, 2))
    return {"names": [p.name() for p in pc.parameters_list()] + [p.name() for p in pc.lookup_parameters_list()],
            "sub": sub.name(), "count": pc.parameter_count(), "shapes": [list(p.shape()) for p in (a, b, E, f, g)],
            "const": arr(c.as_array()), "identity": arr(d.as_array()), "from_numpy": arr(f.as_array()),
            "lookup_from_numpy": arr(g.as_array()), "len": len(E), "b_name": b.name()}


@case("parameter_methods")
def parameter_methods(I):
    pc = I.pc
    W = pc.add_parameters((2, 3), init=dy.NumpyInitializer(VALUES["m34"][:2, :3]))
    E = pc.add_lookup_parameters((4, 3), init=VALUES["E"][:4])
    out = {}
    W.scale(2.0)
    out["scale"] = arr(W.as_array())
    W.clip_inplace(-0.5, 0.5)
    out["clip"] = arr(W.as_array())
    E.init_row(1, [1.0, 2.0, 3.0])
    out["init_row"] = arr(E.row_as_array(1))
    out["rows"] = arr(E.rows_as_array([3, 1]))
    dy.renew_cg()
    loss = dy.sum_elems(dy.cmult(W * E[1], dy.inputVector([1.0, -2.0]))) + dy.sum_elems(E[3])
    loss.backward()
    out["row_grad"] = arr(E.row_grad_as_array(1))
    out["rows_grad"] = arr(E.rows_grad_as_array([1, 3]))
    out["W_grad"] = arr(W.grad_as_array())
    W.scale_gradient(0.5)
    out["W_grad_scaled"] = arr(W.grad_as_array())
    out["updated"] = [W.is_updated(), E.is_updated()]
    W.set_updated(False)
    out["updated_after"] = W.is_updated()
    W.zero()
    out["zero"] = arr(W.as_array())
    E.batch([0, 2])
    out["expr_values"] = arr(W.expr().npvalue())
    out["lookup_batch"] = arr(E.batch([0, 2]).npvalue())
    return out


@case("initializer_bounds")
def initializer_bounds(I):
    """What the random initializers' ranges and spreads are (two decimals, from 60,000 draws)."""
    pc = I.pc
    def stats(p):
        a = p.as_array()
        return [round(float(np.abs(a).max()), 2), round(float(a.std()), 2), round(float(a.mean()), 1)]
    return {
        "default": stats(pc.add_parameters((200, 300))),
        "default_vector": stats(pc.add_parameters((60000,))),
        "lookup_default": stats(pc.add_lookup_parameters((300, 200))),
        "glorot": stats(pc.add_parameters((200, 300), init=dy.GlorotInitializer())),
        "glorot_gain": stats(pc.add_parameters((200, 300), init=dy.GlorotInitializer(gain=2.0))),
        "glorot_lookup": stats(pc.add_parameters((200, 300), init=dy.GlorotInitializer(is_lookup=True))),
        "uniform": stats(pc.add_parameters((200, 300), init=dy.UniformInitializer(0.3))),
        "normal": stats(pc.add_parameters((200, 300), init=dy.NormalInitializer(0.5, 0.04))),
        "scale": stats(pc.add_parameters((200, 300), scale=2.0)),
        "lookup_uniform": stats(pc.add_lookup_parameters((300, 200), init=dy.UniformInitializer(0.2))),
        "saxe": [round(float(v), 3) for v in np.linalg.svd(pc.add_parameters((8, 8), init=dy.SaxeInitializer())
                                                           .as_array())[1][:2]],
    }


def trainer_options(make, configure):
    def build(I):
        W = I.pc.add_parameters((3, 4), init=dy.NumpyInitializer(VALUES["m34"]))
        E = I.pc.add_lookup_parameters((6, 3), init=VALUES["E"])
        trainer = make(I.pc)
        configure(I.pc, trainer)
        history = []
        for step in range(3):
            dy.renew_cg()
            x = dy.inputVector(list(VALUES["v4"] * (step + 1)))
            loss = dy.sum_elems(dy.cmult(dy.tanh(W * x + E[step % 2]), dy.inputVector(list(VALUES["u3"]))))
            loss.forward()
            loss.backward()
            trainer.update()
            if step == 1:
                trainer.update_epoch(1.0)
            history.append([arr(W.as_array()), arr(E.as_array())])
        return {"history": history, "learning_rate": trainer.learning_rate}
    return build


for name, make in [("sgd", lambda pc: dy.SimpleSGDTrainer(pc, 0.2)),
                   ("momentum", lambda pc: dy.MomentumSGDTrainer(pc, 0.05, 0.5)),
                   ("adagrad", lambda pc: dy.AdagradTrainer(pc, 0.2, eps=1e-4)),
                   ("adadelta", lambda pc: dy.AdadeltaTrainer(pc, eps=1e-5, rho=0.9)),
                   ("rmsprop", lambda pc: dy.RMSPropTrainer(pc, 0.05, eps=1e-6, rho=0.8)),
                   ("adam", lambda pc: dy.AdamTrainer(pc, 0.01, 0.8, 0.9, 1e-6)),
                   ("amsgrad", lambda pc: dy.AmsgradTrainer(pc, 0.01, 0.8, 0.9, 1e-6))]:
    for option, configure in [
            ("dense", lambda pc, t: t.set_sparse_updates(False)),
            ("decay", lambda pc, t: pc.set_weight_decay_lambda(0.05)),
            ("lr", lambda pc, t: t.set_learning_rate(0.03)),
            ("noclip", lambda pc, t: t.set_clip_threshold(0.0)),
            ("restart", lambda pc, t: t.restart()),
            ("frozen", lambda pc, t: pc.parameters_list()[0].set_updated(False))]:
        simple("trainer/%s/%s" % (name, option), trainer_options(make, configure))
simple("trainer/sgd/edecay", trainer_options(lambda pc: dy.SimpleSGDTrainer(pc, 0.2, edecay=0.5), lambda pc, t: None))
simple("trainer/cyclical", trainer_options(
    lambda pc: dy.CyclicalSGDTrainer(pc, 0.01, 0.1, 2.0, 0.9), lambda pc, t: None))


@case("immediate_compute")
def immediate_compute(I):
    dy.renew_cg(immediate_compute=True, check_validity=True)
    out = {}
    try:
        dy.log(I.v3 - 5.0)
        out["log_negative"] = "no error"
    except Exception as e:
        out["log_negative"] = type(e).__name__
    dy.renew_cg()
    return out


# Batches on either side of the binary ops, and ops whose batch rule is their own.
VALUES.update({"m382": uniform(-0.9, 0.9, 3, 8), "m342": uniform(-0.9, 0.9, 3, 4, 2), "v32": uniform(-0.9, 0.9, 3, 2),
               "w432": uniform(-0.9, 0.9, 4, 3, 2)})
BATCHED = {
    "bm2": lambda I: dy.reshape(I.m382, (3, 4), batch_size=2),
    "bw": lambda I: dy.reshape(dy.reshape(I.w432, (24,)), (4, 3), batch_size=2),
    "bv2": lambda I: dy.reshape(I.v32, (3,), batch_size=2),
}
for name, build in [
        ("add/both-batched", lambda I: I.bm + BATCHED["bm2"](I)),
        ("sub/left-unbatched", lambda I: I.n34 - I.bm),
        ("cmult/both-batched", lambda I: dy.cmult(I.bm, BATCHED["bm2"](I))),
        ("cdiv/batched", lambda I: dy.cdiv(I.bm, I.pos34)),
        ("mul/batched-weights", lambda I: BATCHED["bw"](I) * I.v3),
        ("mul/both-batched", lambda I: BATCHED["bw"](I) * BATCHED["bv2"](I)),
        ("mul/batched-matrix", lambda I: I.m43 * I.bm),
        ("affine_transform/batched-bias", lambda I: dy.affine_transform([BATCHED["bv2"](I), I.m33, I.v3])),
        ("dot_product/both-batched", lambda I: dy.dot_product(I.bv, BATCHED["bv2"](I))),
        ("concatenate_cols/batched", lambda I: dy.concatenate_cols([I.bv, I.v3])),
        ("bmax/batched", lambda I: dy.bmax(I.bm, I.n34)),
        ("squared_distance/both-batched", lambda I: dy.squared_distance(I.bv, BATCHED["bv2"](I))),
        ("l1_distance/batched", lambda I: dy.l1_distance(I.bv, I.u3)),
        ("huber_distance/batched", lambda I: dy.huber_distance(I.bv, I.u3)),
        ("logsumexp/batched", lambda I: dy.logsumexp([I.bv, I.u3])),
        ("emax/batched", lambda I: dy.emax([I.bv, I.u3])),
        ("esum/batched", lambda I: dy.esum([I.bv, I.u3])),
        ("layer_norm/batched", lambda I: dy.layer_norm(dy.reshape(I.m38, (4,), batch_size=6), I.g4, I.u4)),
        ("select_rows/batched", lambda I: dy.select_rows(I.bm, [1, 1, 0])),
        ("select_cols/batched", lambda I: dy.select_cols(I.bm, [0, 3])),
        ("pick_range/batched", lambda I: dy.pick_range(I.bm, 1, 3, d=1)),
        ("reshape/batched", lambda I: dy.reshape(I.bm, (2, 6), batch_size=2)),
        ("reshape/unbatch", lambda I: dy.reshape(I.bm, (24,))),
        ("kmax_pooling/batched", lambda I: dy.kmax_pooling(I.bm, 2)),
        ("inverse/batched", lambda I: dy.inverse(dy.reshape(dy.concatenate_cols([I.m33, I.n33 * 0.1 + I.m33]), (3, 3),
                                                            batch_size=2))),
        ("conv2d/batched", lambda I: dy.conv2d(dy.concatenate_to_batch([I.img, I.img * 0.5]), I.filt, [1, 1])),
        ("softmax/batched-vector", lambda I: dy.softmax(I.bv)),
        ("log_softmax/batched", lambda I: dy.log_softmax(I.bv)),
        ("sparsemax/batched", lambda I: dy.sparsemax(I.bv * 3)),
        ("pickneglogsoftmax_batch/one", lambda I: dy.pickneglogsoftmax_batch(I.v3, [2])),
        ("pick_batch_elems/batched", lambda I: dy.pick_batch_elems(I.bv, [1])),
        ("concatenate_to_batch/vectors", lambda I: dy.concatenate_to_batch([I.v3, I.u3, I.bv])),
        ("mean_batches/unbatched", lambda I: dy.mean_batches(I.v3)),
        ("contract3d_1d_1d/batched", lambda I: dy.contract3d_1d_1d(I.t234, dy.concatenate_to_batch([I.v4, I.u4]),
                                                                    I.v3)),
        ("weight_norm/matrix", lambda I: dy.weight_norm(I.m34, I.s) * I.v4)]:
    simple(name, build)


@case("python_values")
def python_values(I):
    """What value(), npvalue() and vec_value() return for each kind of shape."""
    out = {}
    for name, e in [("scalar", dy.sum_elems(I.v3)), ("scalar/batched", dy.sum_elems(I.bv)),
                    ("1x1", dy.reshape(dy.sum_elems(I.v3), (1, 1))), ("column", dy.reshape(I.v3, (3, 1))),
                    ("row", dy.reshape(I.v3, (1, 3))), ("vector/batched", I.bv), ("matrix/batched", I.bm),
                    ("tensor", I.t234), ("tensor/batched", dy.concatenate_to_batch([I.t234, I.t234]))]:
        v, nv = e.value(), e.npvalue()
        out[name] = {"type": type(v).__name__, "value": arr(v), "np_shape": list(np.shape(nv)),
                     "np": arr(nv), "vec": arr(e.vec_value()), "dim": [list(e.dim()[0]), e.dim()[1]]}
    return out


# Tensor's methods, one case each (the original aborts on argmax with num > 1).
def tensor_result(r):
    return arr(r.as_numpy())


def topk_result(r, dim):
    """topk's values and indices, in descending order (the original leaves the k in no particular order)."""
    values, indices = (x.as_numpy() for x in r)
    order = np.argsort(-values, axis=dim, kind="stable")
    return [arr(np.take_along_axis(values, order, dim)), arr(np.take_along_axis(indices, order, dim))]


for name, build in [("argmax", lambda t: tensor_result(t.argmax())),
                    ("argmax/d1", lambda t: tensor_result(t.argmax(dim=1))),
                    ("argmax/num", lambda t: tensor_result(t.argmax(num=2))),
                    ("topk", lambda t: topk_result(t.topk(num=2), 0)),
                    ("topk/d1", lambda t: topk_result(t.topk(1, 3), 1)),
                    ("as_numpy", tensor_result)]:
    simple("tensor/" + name, lambda I, build=build: {"matrix": build(dy.tanh(I.m34).tensor_value()),
                                                    "batched": build(dy.tanh(I.bm).tensor_value())})


@case("input_set")
def input_set(I):
    """Inputs changed after the graph is built: the next value reflects them."""
    x = dy.vecInput(3)
    x.set([1.0, 2.0, 3.0])
    s = dy.scalarInput(2.0)
    e = dy.lookup(I.lp, 1)
    y = dy.cmult(x, e) * s + dy.pick(I.v3, 1)
    first = arr(y.npvalue())
    x.set([0.5, -1.0, 4.0])
    s.set(-1.0)
    e.set(4)
    second = arr(y.npvalue())
    return {"first": first, "second": second}


# A list of numpy arrays is a batch (one element per array), whatever the arrays' rank; a list of numbers or
# of lists is one tensor.
simple("inputTensor/list_of_vectors", lambda I: dy.cmult(dy.inputTensor([VALUES["v3"], VALUES["u3"]]), I.x3))
simple("inputTensor/list_of_matrices", lambda I: dy.cmult(dy.inputTensor([VALUES["m32"], VALUES["b32"]]), I.c32))


@case("inputTensor/lists")
def input_tensor_lists(I):
    out = {}
    for name, value, batched in [("scalars", [np.asarray(1.5), np.asarray(-2.0), np.asarray(0.5)], False),
                                 ("vectors/batched", [VALUES["v3"], VALUES["u3"]], True),
                                 ("numbers", [1.0, 2.0, 3.0], False), ("lists", [[1.0, 2.0], [3.0, 4.0]], False),
                                 ("mixed", [VALUES["b2"], [3.0, 4.0]], False),
                                 ("int_arrays", [np.arange(3), np.arange(3, 6)], False)]:
        e = dy.inputTensor(value, batched=batched)
        out[name] = {"dim": [list(e.dim()[0]), e.dim()[1]], "value": arr(e.npvalue())}
    return out


# A product's shape follows its right operand: a column {k,1} gives {m,1}, a vector {k} gives {m} (programs
# see it in npvalue()'s shape); concatenate takes its first argument's rank.
simple("matmul/column", lambda I: I.m34 * dy.reshape(I.v4, (4, 1)))
simple("matmul/column_batched", lambda I: I.m32 * dy.reshape(I.bu[:2, :], (2, 1)))
simple("concatenate/vector_then_column", lambda I: dy.concatenate([I.v3, dy.reshape(I.u3, (3, 1))]))
simple("concatenate/column_then_vector", lambda I: dy.concatenate([dy.reshape(I.u3, (3, 1)), I.v3]))


# Slices of a batched expression: an index after the dims slices the batch.
simple("getitem/batch_axis", lambda I: I.bm[1:, ::2, 1:])
simple("getitem/batch_axis_all", lambda I: I.bv[:2, :])


@case("builder/parameter_expressions_stale")
def parameter_expressions_stale(I):
    """get_parameter_expressions before initial_state, or after renew_cg, raises ValueError."""
    out = {}
    for cls in (dy.SimpleRNNBuilder, dy.GRUBuilder, dy.VanillaLSTMBuilder, dy.CoupledLSTMBuilder, dy.FastLSTMBuilder):
        builder = cls(1, 2, 3, I.pc)
        steps = []
        for action in ("fresh", "initial_state", "renew_cg"):
            if action == "initial_state":
                builder.initial_state()
            elif action == "renew_cg":
                dy.renew_cg()
            try:
                steps.append([[list(e.dim()[0]) for e in layer] for layer in builder.get_parameter_expressions()])
            except Exception as e:
                steps.append(type(e).__name__)
        out[cls.__name__] = steps
    return out


@case("class_factored_softmax")
def class_factored_softmax(I):
    import os
    import tempfile
    words = {"the": 0, "a": 1, "dog": 2, "cat": 3, "fish": 4, "runs": 5}
    fd, path = tempfile.mkstemp(suffix=".txt")
    with os.fdopen(fd, "w") as f:
        f.write("c1 the\nc1 a\nc2 dog\nc2 cat\nc2 fish\nc3 runs\n")
    try:
        sm = dy.ClassFactoredSoftmaxBuilder(4, path, words, I.pc)
    finally:
        os.unlink(path)
    set_all(I.pc, 26)
    h = dy.tanh(I.v4)
    hb = dy.reshape(dy.concatenate([I.v4, I.u4]), (4,), batch_size=2)
    loss = sm.neg_log_softmax(h, 3) + sm.neg_log_softmax(h, 5) + dy.sum_batches(sm.neg_log_softmax_batch(hb, [1, 4]))
    res = {"full": arr(sm.full_log_distribution(h).npvalue()), "logits": arr(sm.full_logits(h).npvalue()),
           "class": arr(sm.class_log_distribution(h).npvalue()), "class_logits": arr(sm.class_logits(h).npvalue()),
           "sub": arr(sm.subclass_log_distribution(h, 1).npvalue()), "sub_logits": arr(sm.subclass_logits(h, 0).npvalue()),
           "shapes": [list(p.shape()) for p in I.pc.parameters_list()], "loss": loss.scalar_value()}
    loss.backward()
    res["grads"] = [arr(p.grad_as_array()) for p in I.pc.parameters_list()]
    return res


# Whole training steps of the kind DyNet users write: several examples of different sizes in one graph,
# their losses summed, one update. What autobatching batches here (strategies 1 and 2) must change nothing.
def sentences(r, n, vocab, lo, hi):
    return [list(r.randint(vocab, size=r.randint(lo, hi + 1))) for _ in range(n)]


def training_steps(I, build_loss, steps=2):
    trainer = dy.AdamTrainer(I.pc, 0.01)
    set_all(I.pc, 31)
    losses = []
    for step in range(steps):
        dy.renew_cg()
        loss = build_loss(step)
        losses.append(loss.scalar_value())
        loss.backward()
        trainer.update()
    return {"losses": losses, "params": [arr(p.as_array()) for p in I.pc.parameters_list()],
            "tables": [arr(p.as_array()) for p in I.pc.lookup_parameters_list()]}


@case("program/bilstm_tagger")
def bilstm_tagger(I):
    pc = I.pc
    E = pc.add_lookup_parameters((20, 5))
    fwd, bwd = dy.VanillaLSTMBuilder(1, 5, 6, pc), dy.VanillaLSTMBuilder(1, 5, 6, pc)
    W, b = pc.add_parameters((4, 12)), pc.add_parameters(4)
    r = np.random.RandomState(32)
    data = [(s, list(r.randint(4, size=len(s)))) for s in sentences(r, 6, 20, 1, 7)]

    def loss(step):
        terms = []
        for words, tags in data[step::2] + data[:3]:
            xs = [E[w] for w in words]
            hs = [dy.concatenate([f, b_]) for f, b_ in zip(fwd.initial_state().transduce(xs),
                                                          reversed(bwd.initial_state().transduce(reversed(xs))))]
            terms += [dy.pickneglogsoftmax(W * h + b, t) for h, t in zip(hs, tags)]
        return dy.esum(terms)
    return training_steps(I, loss)


@case("program/char_tagger_dropout_free")
def char_tagger(I):
    pc = I.pc
    C = pc.add_lookup_parameters((12, 3))
    chars = dy.LSTMBuilder(1, 3, 4, pc)
    words = dy.GRUBuilder(1, 4, 5, pc)
    W = pc.add_parameters((3, 5))
    r = np.random.RandomState(33)
    data = [[list(r.randint(12, size=r.randint(1, 5))) for _ in range(r.randint(2, 5))] for _ in range(5)]

    def loss(step):
        terms = []
        for k, sent in enumerate(data):
            reps = [chars.initial_state().transduce([C[c] for c in w])[-1] for w in sent]
            for j, h in enumerate(words.initial_state().transduce(reps)):
                terms.append(dy.pickneglogsoftmax(W * h, (j + k + step) % 3))
        return dy.esum(terms)
    return training_steps(I, loss)


@case("program/tree_lstm")
def tree_lstm(I):
    pc = I.pc
    E = pc.add_lookup_parameters((10, 4))
    Wl, Wr, b = pc.add_parameters((4, 4)), pc.add_parameters((4, 4)), pc.add_parameters(4)
    U, out = pc.add_parameters((12, 4)), pc.add_parameters((2, 4))
    r = np.random.RandomState(34)

    def tree(depth):
        if depth == 0 or r.rand() < 0.3:
            return int(r.randint(10))
        return (tree(depth - 1), tree(depth - 1))
    trees = [tree(3) for _ in range(6)]

    def encode(t):
        if isinstance(t, int):
            return dy.tanh(E[t])
        left, right = encode(t[0]), encode(t[1])
        gates = U * (left + right)
        i, o = dy.logistic(dy.pick_range(gates, 0, 4)), dy.logistic(dy.pick_range(gates, 4, 8))
        u = dy.tanh(dy.pick_range(gates, 8, 12))
        c = dy.cmult(i, u) + dy.tanh(Wl * left + Wr * right + b)
        return dy.cmult(o, dy.tanh(c))

    def loss(step):
        return dy.esum([dy.pickneglogsoftmax(out * encode(t), (k + step) % 2) for k, t in enumerate(trees)])
    return training_steps(I, loss)


@case("program/attention")
def attention(I):
    pc = I.pc
    E = pc.add_lookup_parameters((8, 4))
    enc = dy.VanillaLSTMBuilder(1, 4, 4, pc)
    dec = dy.VanillaLSTMBuilder(1, 8, 4, pc)
    Wa, va, Wo = pc.add_parameters((5, 8)), pc.add_parameters((1, 5)), pc.add_parameters((8, 8))
    r = np.random.RandomState(35)
    pairs = [(s, list(reversed(s))) for s in sentences(r, 4, 8, 2, 5)]

    def loss(step):
        terms = []
        for src, tgt in pairs:
            hs = enc.initial_state().transduce([E[w] for w in src])
            H = dy.concatenate_cols(hs)
            s = dec.initial_state()
            ctx = dy.zeros(4)
            prev = 0
            for w in tgt:
                s = s.add_input(dy.concatenate([E[prev], ctx]))
                h = s.output()
                scores = dy.transpose(va * dy.tanh(Wa * dy.concatenate([H, dy.concatenate_cols([h] * len(hs))])))
                ctx = H * dy.softmax(scores)
                terms.append(dy.pickneglogsoftmax(Wo * dy.concatenate([h, ctx]), w))
                prev = w
        return dy.esum(terms)
    return training_steps(I, loss)


@case("program/value_reads")
def value_reads(I):
    """Values read mid-graph (a greedy decision per step), then the loss over all of it."""
    pc = I.pc
    E = pc.add_lookup_parameters((6, 3))
    rnn = dy.GRUBuilder(1, 3, 4, pc)
    W = pc.add_parameters((6, 4))

    def loss(step):
        terms = []
        for start in range(3):
            s, w = rnn.initial_state(), (start + step) % 6
            for _ in range(4):
                s = s.add_input(E[w])
                scores = W * s.output()
                w = int(np.argmax(scores.npvalue()))
                terms.append(dy.pickneglogsoftmax(scores, (w + 1) % 6))
        return dy.esum(terms)
    return training_steps(I, loss)


@case("program/minibatched")
def minibatched(I):
    """DyNet's manual minibatching: lookup_batch, pickneglogsoftmax_batch, sum_batches."""
    pc = I.pc
    E = pc.add_lookup_parameters((15, 4))
    rnn = dy.VanillaLSTMBuilder(2, 4, 5, pc)
    W, b = pc.add_parameters((15, 5)), pc.add_parameters(15)
    r = np.random.RandomState(36)
    batch = r.randint(15, size=(5, 3))

    def loss(step):
        s = rnn.initial_state()
        terms = []
        for t in range(4):
            s = s.add_input(dy.lookup_batch(E, list(batch[t])))
            terms.append(dy.pickneglogsoftmax_batch(W * s.output() + b, list(batch[t + 1])))
        return dy.sum_batches(dy.esum(terms)) / 3
    return training_steps(I, loss)


# Edge values: ties, kinks, zeros, infinities, large logits. What each op's value and gradient is there.
VALUES.update({"ties": np.array([[0.5, 0.5, -0.2, 0.0], [0.0, 0.0, 0.0, 0.0], [-1.0, 0.3, 0.3, 0.3]]),
               "big": np.array([800.0, 0.0, -800.0]), "kink3": np.array([0.0, 1.0, -1.0]),
               "zero4": np.zeros(4), "one3": np.array([1.0, 1.0, 1.0])})
for name, build in [
        ("edge/abs_at_0", lambda I: dy.abs(I.ties)),
        ("edge/rectify_at_0", lambda I: dy.rectify(I.ties)),
        ("edge/elu_at_0", lambda I: dy.elu(I.ties)),
        ("edge/selu_at_0", lambda I: dy.selu(I.ties)),
        ("edge/max_dim_ties", lambda I: dy.max_dim(I.ties)),
        ("edge/max_dim_ties/d1", lambda I: dy.max_dim(I.ties, d=1)),
        ("edge/min_dim_ties", lambda I: dy.min_dim(I.ties, d=1)),
        ("edge/bmax_ties", lambda I: dy.bmax(I.ties, I.ties * 0)),
        ("edge/bmin_ties", lambda I: dy.bmin(I.ties, I.ties * 0)),
        ("edge/emax_ties", lambda I: dy.emax([I.ties, I.ties * 0, I.ties])),
        ("edge/kmax_ties", lambda I: dy.kmax_pooling(I.ties, 2)),
        ("edge/argmax_ties", lambda I: dy.argmax(dy.reshape(I.ties, (12,)), "straight_through_gradient")),
        ("edge/l1_at_0", lambda I: dy.l1_distance(I.ties, I.ties * 0)),
        ("edge/huber_at_c", lambda I: dy.huber_distance(I.kink3 * 1.345, I.kink3 * 0)),
        ("edge/hinge_at_margin", lambda I: dy.hinge(I.kink3, 1, m=1.0)),
        ("edge/hinge_zero", lambda I: dy.hinge(I.kink3 * 5, 1)),
        ("edge/sparsemax_ties", lambda I: dy.sparsemax(I.one3)),
        ("edge/softmax_big", lambda I: dy.softmax(I.big)),
        ("edge/log_softmax_big", lambda I: dy.log_softmax(I.big)),
        ("edge/logsumexp_big", lambda I: dy.logsumexp([dy.pick(I.big, 0), dy.pick(I.big, 1)])),
        ("edge/logsumexp_dim_big", lambda I: dy.logsumexp_dim(I.big)),
        ("edge/pickneglogsoftmax_big", lambda I: dy.pickneglogsoftmax(I.big, 2)),
        ("edge/logistic_big", lambda I: dy.logistic(I.big)),
        ("edge/log_sigmoid_big", lambda I: dy.log_sigmoid(I.big)),
        ("edge/tanh_big", lambda I: dy.tanh(I.big)),
        ("edge/softsign_big", lambda I: dy.softsign(I.big)),
        ("edge/exp_big", lambda I: dy.exp(I.big * 0.1)),
        ("edge/log_zero", lambda I: dy.log(I.zero4)),
        ("edge/sqrt_zero", lambda I: dy.sqrt(I.zero4)),
        ("edge/l2_norm_zero", lambda I: dy.l2_norm(I.zero4)),
        ("edge/cdiv_zero", lambda I: dy.cdiv(I.one3, I.kink3)),
        ("edge/std_elems_constant", lambda I: dy.std_elems(I.one3)),
        ("edge/layer_norm_constant", lambda I: dy.layer_norm(I.one3, I.one3, I.kink3)),
        ("edge/pow_zero", lambda I: dy.pow(I.zero4, dy.scalarInput(2.0))),
        ("edge/cube_big", lambda I: dy.cube(I.big)),
        ("edge/binary_log_loss_ends", lambda I: dy.binary_log_loss(dy.inputVector([0.0, 1.0, 0.5]), I.kink3 * 0 + 0.5)),
        ("edge/dropout_one", lambda I: dy.dropout(I.one3, 1.0)),
        ("edge/weight_norm_zero", lambda I: dy.weight_norm(I.zero4, I.s))]:
    simple(name, build)


# Arguments as real programs pass them: numpy scalars and arrays for indices and values, tuples for dims.
for name, build in [
        ("numpy/pick_int64", lambda I: dy.pick(I.v3, np.int64(2))),
        ("numpy/pick_batch_array", lambda I: dy.pick_batch(I.bv, np.array([2, 0]))),
        ("numpy/lookup_int64", lambda I: dy.lookup(I.lp, np.int64(3))),
        ("numpy/lookup_getitem_int32", lambda I: I.lp[np.int32(4)]),
        ("numpy/lookup_batch_array", lambda I: dy.lookup_batch(I.lp, np.array([1, 5, 1]))),
        ("numpy/pickneglogsoftmax_batch_array", lambda I: dy.pickneglogsoftmax_batch(I.bv, np.array([1, 2]))),
        ("numpy/inputVector_array", lambda I: dy.inputVector(np.array([1.0, 2.0, -1.0])) + I.v3),
        ("numpy/inputTensor_float32", lambda I: dy.inputTensor(np.arange(12, dtype=np.float32).reshape(3, 4)) + I.m34),
        ("numpy/inputTensor_int", lambda I: dy.inputTensor(np.arange(12).reshape(3, 4)) + I.m34),
        ("numpy/inputTensor_list_of_lists", lambda I: dy.inputTensor([[1.0, 2.0, 3.0, 4.0]] * 3) + I.m34),
        ("numpy/inputTensor_fortran", lambda I: dy.inputTensor(np.asfortranarray(VALUES["m34"])) + I.m34),
        ("numpy/inputTensor_transposed_view", lambda I: dy.inputTensor(VALUES["m43"].T) + I.m34),
        ("numpy/scalar_right", lambda I: I.m34 * np.float32(2.0)),
        ("numpy/scalar_add", lambda I: I.m34 + np.float64(0.5)),
        ("numpy/scalar_div", lambda I: I.m34 / np.float64(4.0)),
        ("numpy/scalarInput_float32", lambda I: dy.scalarInput(np.float32(1.5)) * I.s),
        ("numpy/reshape_tuple_of_int64", lambda I: dy.reshape(I.m34, (np.int64(4), np.int64(3)))),
        ("numpy/select_rows_array", lambda I: dy.select_rows(I.m34, np.array([2, 0]))),
        ("numpy/pick_range_int64", lambda I: dy.pick_range(I.v4, np.int64(1), np.int64(3))),
        ("numpy/dropout_float32", lambda I: dy.dropout(I.m34, np.float32(0.0))),
        ("cython/pick_float_index", lambda I: dy.pick(I.v3, 2.0)),
        ("cython/pick_range_floats", lambda I: dy.pick_range(I.v4, 4 / 4, 5 / 2)),
        ("cython/softmax_float_dim", lambda I: dy.softmax(I.m34, 1.0)),
        ("cython/select_rows_floats", lambda I: dy.select_rows(I.m34, [2.0, 0.0])),
        ("cython/sum_dim_int_bool", lambda I: dy.sum_dim(I.bm, [0], 1)),
        ("cython/sum_dim_numpy_bool", lambda I: dy.sum_dim(I.bm, [0], np.bool_(True))),
        ("cython/inputTensor_int_batched", lambda I: dy.inputTensor(VALUES["m34"], 1) + I.v3),
        ("cython/inputTensor_numpy_bool", lambda I: dy.inputTensor(VALUES["m34"], np.bool_(True)) + I.v3),
        ("cython/lookup_getitem_float", lambda I: I.lp[2.0]),
        ("cython/lookup_getitem_numpy_float", lambda I: I.lp[np.float64(4.5)]),
        ("cython/lookup_batch_method_floats", lambda I: I.lp.batch([1.0, 5.0])),
        # Cython took C integers through __int__ (numpy < 2's one-element arrays as indices: mead-baseline).
        ("cython/lookup_int_object", lambda I: dy.lookup(I.lp, IntOnly(3)) + I.lp[IntOnly(1)]),
        ("cython/pick_int_object", lambda I: dy.pick(I.m34, IntOnly(2), IntOnly(1))),
        ("cython/npvalue_int_recalculate", lambda I: dy.tanh(I.v3) * float(np.sum(dy.tanh(I.v3).npvalue(1)))),
        ("layer_norm/vector_gain_over_matrix", lambda I: dy.layer_norm(I.m34, I.g4[0:3], I.v3)),
        ("layer_norm/scalar_gain", lambda I: dy.layer_norm(I.v4, I.s, I.u4)),
        ("layer_norm/matrix_bias", lambda I: dy.layer_norm(I.v3, I.u3, I.m34)),
        ("fold_rows/vector", lambda I: dy.fold_rows(I.v4, 2)),
        ("cdiv/broadcast_numerator", lambda I: dy.cdiv(I.v3, I.pos34)),
        ("tensor3/transpose_dims", lambda I: dy.transpose(I.t234, [2, 0, 1])),
        ("tensor3/sum_dim_2", lambda I: dy.sum_dim(I.t234, [2])),
        ("tensor3/sum_dim_0_2", lambda I: dy.sum_dim(I.t234, [0, 2])),
        ("tensor3/mean_dim_1", lambda I: dy.mean_dim(I.t234, [1], False)),
        ("tensor3/max_dim_2", lambda I: dy.max_dim(I.t234, d=2)),
        ("tensor3/concatenate_d2", lambda I: dy.concatenate([I.t234, I.t234 * 2], d=2)),
        ("tensor3/concatenate_d1", lambda I: dy.concatenate([I.t234, I.t234], d=1)),
        ("tensor3/pick_d2", lambda I: dy.pick(I.t234, 3, dim=2)),
        ("tensor3/pick_range_d2", lambda I: dy.pick_range(I.t234, 1, 3, d=2)),
        ("tensor3/reshape", lambda I: dy.reshape(I.t234, (4, 6))),
        ("tensor3/softmax", lambda I: dy.softmax(I.t234)),
        ("tensor3/logsumexp_dim_1", lambda I: dy.logsumexp_dim(I.t234, d=1)),
        ("tensor3/cumsum_d2", lambda I: dy.cumsum(I.t234, d=2)),
        ("tensor3/strided_select", lambda I: dy.strided_select(I.t234, [1, 2, 2], [0, 0, 1], [2, 3, 4])),
        ("tensor3/select_cols", lambda I: dy.select_cols(I.t234, [2, 0])),
        ("tensor3/std_dim", lambda I: dy.std_dim(I.t234, [0, 1], False)),
        ("tensor3/moment_dim", lambda I: dy.moment_dim(I.t234, [2], 3, False)),
        ("tensor3/cmult_broadcast", lambda I: dy.cmult(I.t234, dy.reshape(I.b23, (2, 3, 1)))),
        ("tensor3/kmax_pooling", lambda I: dy.kmax_pooling(I.t234, 2, d=2)),
        ("tensor3/transpose_batched", lambda I: dy.transpose(dy.concatenate_to_batch([I.t234, I.t234 * 3]), [1, 2, 0]))]:
    simple(name, build)


@case("trainer/update_subset")
def trainer_update_subset(I):
    W = I.pc.add_parameters((2, 3), init=dy.NumpyInitializer(VALUES["m34"][:2, :3]))
    V = I.pc.add_parameters((2, 3), init=dy.NumpyInitializer(VALUES["n34"][:2, :3]))
    E = I.pc.add_lookup_parameters((6, 3), init=VALUES["E"])
    trainer = dy.AdamTrainer(I.pc, 0.1)
    out = []
    for subset in (([1], [0]), ([0], []), ([], [0])):
        dy.renew_cg()
        x = dy.inputVector(list(VALUES["v3"]))
        loss = dy.sum_elems(dy.tanh((W + V) * x + dy.pick_range(E[1], 0, 2)))
        loss.forward()
        loss.backward()
        trainer.update_subset(*subset)
        out.append([arr(W.as_array()), arr(V.as_array()), arr(E.as_array())])
    return {"after": out}


@case("trainer/properties")
def trainer_properties(I):
    W = I.pc.add_parameters((2, 3), init=dy.NumpyInitializer(VALUES["m34"][:2, :3]))
    trainer = dy.MomentumSGDTrainer(I.pc, 0.1)
    out = {"lr": trainer.learning_rate, "clip": trainer.get_clip_threshold()}
    for step in range(3):
        dy.renew_cg()
        loss = dy.sum_elems(W * dy.inputVector(list(VALUES["v3"])) * (step + 1.0))
        loss.forward()
        loss.backward()
        trainer.learning_rate = 0.05 * (step + 1)
        trainer.update()
    trainer.restart(0.2)
    out.update({"W": arr(W.as_array()), "lr_after": trainer.learning_rate})
    return out


def stale_after_renew(I):
    x = dy.tanh(I.v3)
    dy.renew_cg()
    return x + dy.inputVector([1.0, 2.0, 3.0])


# Common mistakes, one case each (the original aborts on some: a scalar_value of a vector).
for name, build in [("scalar_of_vector", lambda I: I.v3.scalar_value()),
                    ("esum_empty", lambda I: dy.esum([])),
                    ("matmul_shapes", lambda I: I.m34 * I.m34),
                    ("add_shapes", lambda I: I.m34 + I.v4),
                    ("pick_out_of_range", lambda I: dy.pick(I.v3, 5)),
                    ("lookup_out_of_range", lambda I: dy.lookup(I.lp, 9)),
                    ("reshape_size", lambda I: dy.reshape(I.m34, (5,))),
                    ("concatenate_shapes", lambda I: dy.concatenate([I.m34, I.m43])),
                    ("stale_expression", lambda I: stale_after_renew(I)),
                    ("stale_npvalue", lambda I: stale_after_renew(I).npvalue())]:
    simple("error/" + name, build)

names = [c[0] for c in CASES]
assert len(names) == len(set(names)), "duplicate case names"
if args.list:
    print("\n".join(names))
    sys.exit(0)
start = names.index(args.start) if args.start else 0
with open(args.out, "a") as f:
    for name, kind, build in CASES[start:]:
        f.write(json.dumps({"case": name, "started": True}) + "\n")
        f.flush()
        result = run_case(name, kind, build)
        f.write(json.dumps({"case": name, "result": result}, allow_nan=True) + "\n")
        f.flush()
