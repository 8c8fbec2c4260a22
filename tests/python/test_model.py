"""Parameters, trainers, builders and model files through the Python API."""
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

import dynet as dy
from conftest import NO_ORIGINAL, ORIGINAL_PYTHON, mismatch, original_available, original_env



def test_parameters_numpy_methods():
    pc = dy.ParameterCollection()
    p = pc.add_parameters((2, 3), init=dy.ConstInitializer(0.25), name="W")
    assert p.shape() == (2, 3)
    assert np.allclose(p.as_array(), 0.25)
    p.set_value(np.arange(6, dtype=np.float32).reshape(2, 3))
    assert np.allclose(p.as_array(), np.arange(6).reshape(2, 3))
    p.scale(2.0)
    assert np.allclose(p.as_array(), 2 * np.arange(6).reshape(2, 3))
    p.clip_inplace(0.0, 3.0)
    assert p.as_array().max() == pytest.approx(3.0)
    assert p.name() == "/W"
    lp = pc.add_lookup_parameters((4, 2), init=np.ones((4, 2), dtype=np.float32))
    assert lp.shape() == (4, 2) and len(lp) == 4
    lp.init_row(2, [5.0, 6.0])
    assert np.allclose(lp.row_as_array(2), [5, 6])
    assert np.allclose(lp.as_array()[2], [5, 6])
    assert pc.parameter_count() == 6 + 8


def test_sgd_step_equals_hand_computed_update():
    pc = dy.ParameterCollection()
    p = pc.add_parameters((2,), init=dy.NumpyInitializer(np.array([1.0, -1.0], dtype=np.float32)))
    trainer = dy.SimpleSGDTrainer(pc, learning_rate=0.5)
    loss = dy.squared_norm(dy.parameter(p))  # gradient 2p
    loss.forward()
    loss.backward()
    trainer.update()
    assert np.allclose(p.as_array(), [1.0 - 0.5 * 2.0, -1.0 + 0.5 * 2.0])


def test_rmsprop_python_defaults_differ_from_cpp():
    pc = dy.ParameterCollection()
    t = dy.RMSPropTrainer(pc)
    assert t.learning_rate == pytest.approx(0.001)


def test_xor_loss_goes_down():
    pc = dy.ParameterCollection()
    W = pc.add_parameters((8, 2))
    V = pc.add_parameters((1, 8))
    b = pc.add_parameters((8,))
    trainer = dy.AdamTrainer(pc, alpha=0.05)
    data = [((0, 0), 0), ((0, 1), 1), ((1, 0), 1), ((1, 1), 0)]
    losses = []
    for epoch in range(150):
        total = 0.0
        for (x1, x2), y in data:
            dy.renew_cg()
            x = dy.inputVector([x1, x2])
            out = dy.logistic(V * dy.tanh(W * x + b))
            loss = dy.binary_log_loss(out, dy.scalarInput(y))
            total += loss.value()
            loss.backward()
            trainer.update()
        losses.append(total)
    assert losses[-1] < 0.25 * losses[0]


def test_lstm_builder_states():
    pc = dy.ParameterCollection()
    lstm = dy.VanillaLSTMBuilder(1, 3, 4, pc)
    s = lstm.initial_state()
    xs = [dy.inputVector([0.1, 0.2, 0.3]) for _ in range(3)]
    outs = s.transduce(xs)
    assert len(outs) == 3 and outs[-1].dim() == ((4,), 1)
    s2 = s.add_input(xs[0])
    assert np.allclose(s2.output().npvalue(), outs[0].npvalue())
    assert s2.prev() is s
    assert len(s2.h()) == 1 and len(s2.s()) == 2
    bi = dy.BiRNNBuilder(1, 3, 4, pc, dy.VanillaLSTMBuilder)
    assert bi.transduce(xs)[0].dim() == ((4,), 1)


def test_save_load_round_trip(tmp_path):
    pc = dy.ParameterCollection()
    W = pc.add_parameters((2, 3), name="W")
    E = pc.add_lookup_parameters((5, 2), name="E")
    base = str(tmp_path / "model")
    dy.save(base, [W, E])
    pc2 = dy.ParameterCollection()
    W2, E2 = dy.load(base, pc2)
    assert np.allclose(W2.as_array(), W.as_array())
    assert np.allclose(E2.as_array(), E.as_array())
    pc.save(str(tmp_path / "pc.txt"))
    pc3 = dy.ParameterCollection()
    W3 = pc3.add_parameters((2, 3), name="W")
    E3 = pc3.add_lookup_parameters((5, 2), name="E")
    pc3.populate(str(tmp_path / "pc.txt"))
    assert np.allclose(W3.as_array(), W.as_array()) and np.allclose(E3.as_array(), E.as_array())
    # A builder whose spec refers to a class, after other entries (each entry is a pickle of its own).
    birnn = dy.BiRNNBuilder(1, 2, 4, pc, dy.GRUBuilder)
    dy.save(base, [W, dy.VanillaLSTMBuilder(1, 2, 3, pc), birnn, E])
    _, lstm, birnn2, E2 = dy.load(base, dy.ParameterCollection())
    assert isinstance(lstm, dy.VanillaLSTMBuilder) and isinstance(birnn2, dy.BiRNNBuilder)
    assert np.allclose(E2.as_array(), E.as_array())
    xs = [dy.inputVector([0.5, -1.0]), dy.inputVector([0.25, 2.0])]
    assert np.allclose(birnn2.transduce(xs)[1].npvalue(), birnn.transduce(xs)[1].npvalue())


def test_empty_parameters_as_uuparser_makes_them(tmp_path):
    """uuparser makes lookup tables of width 0 for features it turns off, and saves them; in a graph they
    compute as in the original (a product with them is zeros), where their values have no elements."""
    pc = dy.ParameterCollection()
    pos = pc.add_lookup_parameters((20, 0))
    bias = pc.add_parameters((0,))
    W = pc.add_parameters((2, 3))
    W_pos = pc.add_parameters((2, 0))
    assert pos.as_array().shape == (20, 0) and bias.as_array().shape == (0,)
    trainer = dy.AdamTrainer(pc)
    for autobatch in (0, 1):
        dy.renew_cg(autobatching=autobatch)
        x = dy.inputVector([1.0, 2.0, 3.0])
        h = W * x + W_pos * pos[1]
        assert np.array_equal(h.npvalue(), (W * x).npvalue())
        assert pos[1].dim() == ((0,), 1) and pos[1].npvalue().shape == (0,)
        assert dy.tanh(bias).npvalue().shape == (0,) and dy.softmax(bias).dim() == ((0,), 1)
        assert W_pos.expr().npvalue().shape == (2, 0)
        assert dy.sum_elems(bias).value() == 0.0 and dy.dot_product(bias, bias).value() == 0.0
        assert dy.squared_norm(pos[2]).value() == 0.0 and dy.inputVector([]).dim() == ((0,), 1)
        assert np.array_equal(dy.concatenate([x, pos[3]]).npvalue(), x.npvalue())
        assert np.array_equal(dy.affine_transform([W * x, W_pos, pos[4]]).npvalue(), (W * x).npvalue())
        with pytest.raises(ValueError, match=r"mean_elems: argument 1 of dim \{0\} has no elements"):
            dy.mean_elems(bias)
        loss = dy.sum_elems(h)
        loss.backward()
        assert np.array_equal(W.grad_as_array(), np.outer([1.0, 1.0], [1.0, 2.0, 3.0]))
        trainer.update()
    base = str(tmp_path / "m")
    dy.save(base, [pos, bias, W])
    pos2, bias2, W2 = dy.load(base, dy.ParameterCollection())
    assert pos2.shape() == (20, 0) and bias2.shape() == (0,) and np.allclose(W2.as_array(), W.as_array())


def test_a_table_given_only_its_row_count_has_rows_of_one(tmp_path):
    """DyNet's add_lookup_parameters(n) makes n rows of dim (1,), saved as {1,n}; a 1-tuple is still refused."""
    pc = dy.ParameterCollection()
    E = pc.add_lookup_parameters(5, init=2.0)
    assert E.shape() == (5, 1) and E[3].dim() == ((1,), 1) and E[3].value() == 2.0
    dy.save(str(tmp_path / "m"), [E])
    with open(str(tmp_path / "m.data")) as f:
        assert f.readline().split()[:3] == ["#LookupParameter#", "/_0", "{1,5}"]
    with pytest.raises(ValueError, match="dim must be \\(n, d...\\)"):
        pc.add_lookup_parameters((5,))


def test_builders_from_spec_check_the_spec():
    # dy.load rebuilds a saved builder from its spec (a tuple); anything else is a clear error, not a KeyError.
    pc = dy.ParameterCollection()
    assert dy.StandardSoftmaxBuilder.from_spec((3, 4, False), pc).spec == (3, 4, False)
    assert dy.VanillaLSTMBuilder.from_spec([1, 2, 3], pc).spec == (1, 2, 3, False, 1.0)
    for cls in (dy.StandardSoftmaxBuilder, dy.VanillaLSTMBuilder, dy.GRUBuilder, dy.BiRNNBuilder):
        for spec in ({}, {0: 1}, "12", 3, None):
            with pytest.raises(TypeError, match="from_spec: the spec must be a tuple or list"):
                cls.from_spec(spec, pc)
    with pytest.raises(ValueError, match="needs \\(input_dim, num_classes"):
        dy.StandardSoftmaxBuilder.from_spec((3,), pc)


@pytest.mark.skipif(not original_available(), reason=NO_ORIGINAL)
def test_files_interchange_with_the_original(tmp_path):
    # written by the original, read by ours
    base = str(tmp_path / "orig")
    script = ("import sys; sys.argv=sys.argv[:1]; import dynet as dy, numpy as np\n"
              "pc = dy.ParameterCollection()\n"
              "W = pc.add_parameters((2, 3), init=dy.NumpyInitializer(np.arange(6.).reshape(2, 3)), name='W')\n"
              "E = pc.add_lookup_parameters((4, 2), init=np.arange(8.).reshape(4, 2), name='E')\n"
              "lstm = dy.VanillaLSTMBuilder(1, 3, 4, pc)\n"
              "dy.save(%r, [W, E, lstm])\n" % base)
    subprocess.run([ORIGINAL_PYTHON, "-c", script], check=True, cwd=str(tmp_path), env=original_env())
    pc = dy.ParameterCollection()
    W, E, lstm = dy.load(base, pc)
    assert isinstance(lstm, dy.VanillaLSTMBuilder) and lstm.spec == (1, 3, 4, False, 1.0)
    assert len(lstm.param_collection().parameters_list()) == 3
    assert np.allclose(W.as_array(), np.arange(6).reshape(2, 3))
    assert np.allclose(E.as_array(), np.arange(8).reshape(4, 2))
    # written by ours, read by the original
    ours = str(tmp_path / "ours")
    dy.save(ours, [W, E, lstm])
    check = ("import sys; sys.argv=sys.argv[:1]; import dynet as dy, numpy as np\n"
             "pc = dy.ParameterCollection()\n"
             "W, E, lstm = dy.load(%r, pc)\n"
             "assert isinstance(lstm, dy.VanillaLSTMBuilder)\n"
             "assert np.allclose(W.as_array(), np.arange(6.).reshape(2, 3))\n"
             "assert np.allclose(E.as_array(), np.arange(8.).reshape(4, 2))\n" % ours)
    subprocess.run([ORIGINAL_PYTHON, "-c", check], check=True, cwd=str(tmp_path), env=original_env())


@pytest.mark.skipif(not original_available(), reason=NO_ORIGINAL)
def test_op_signatures_match_the_original():
    """Every op function of the original module exists here with the same parameter names and defaults."""
    script = ("import sys, inspect, json; sys.argv=sys.argv[:1]; import _dynet as d\n"
              "out = {}\n"
              "for k in dir(d):\n"
              "    v = getattr(d, k)\n"
              "    if callable(v) and not isinstance(v, type) and not k.startswith('_'):\n"
              "        try: out[k] = [(p.name, repr(p.default) if p.default is not p.empty else None)"
              " for p in inspect.signature(v).parameters.values()]\n"
              "        except Exception: pass\n"
              "print(json.dumps(out))\n")
    import json
    theirs = json.loads(subprocess.run([ORIGINAL_PYTHON, "-c", script], capture_output=True, text=True,
                                       check=True, env=original_env()).stdout)
    missing, differ = [], []
    for name, params in theirs.items():
        f = getattr(dy, name, None)
        if f is None:
            missing.append(name)
            continue
        sig = getattr(f, "__nb_signature__", None)
        if isinstance(sig, str):
            first = sig.splitlines()[-1] if sig.startswith("@") else sig.splitlines()[0]
            import re
            inside = re.sub(r"\[[^\]]*\]", "", first[first.index("(") + 1:first.rindex(")")])
            ours = [p.split(":")[0].split("=")[0].strip() for p in inside.split(",") if p.strip()]
            if ours != [p for p, _ in params]:
                differ.append((name, ours, [p for p, _ in params]))
    assert not missing, "functions of the original missing here: %s" % missing
    assert not differ, "parameter names differ: %s" % differ


@pytest.mark.skipif(not original_available(), reason=NO_ORIGINAL)
def test_every_kind_of_model_file_interchanges_with_the_original(tmp_path):
    """model_interop.py's files (dy.save of parameters, tables, a subcollection's parameter, every RNN builder and
    BiRNNBuilder; a collection's, a subcollection's and single objects' files), written by either module and
    read by both: each reader gets the writer's values and outputs, and the two readers agree on everything."""
    import json
    script = os.path.join(os.path.dirname(__file__), "model_interop.py")
    ours = [sys.executable, script]
    original = [ORIGINAL_PYTHON, script]
    written = {}
    for writer, cmd, env in (("original", original, original_env()), ("ours", ours, dict(os.environ))):
        folder = tmp_path / writer
        folder.mkdir()
        subprocess.run(cmd + ["write", str(folder)], check=True, env=env, capture_output=True)
        written[writer] = json.loads((folder / "written.json").read_text())
        read = {}
        for reader, rcmd, renv in (("original", original, original_env()), ("ours", ours, dict(os.environ))):
            out = tmp_path / ("%s-read-by-%s" % (writer, reader))
            shutil.copytree(folder, out)
            subprocess.run(rcmd + ["read", str(out)], check=True, env=renv, capture_output=True)
            read[reader] = json.loads((out / "read.json").read_text())
        assert mismatch(read["original"], read["ours"], "read") is None
        w = written[writer]

        def values(result, skip_layer_norm):  # without names: dy.load names unnamed parameters anew
            end = -6 if skip_layer_norm else None
            return {"params": [p[1:] for p in result["params"][:end]], "tables": [p[1:] for p in result["tables"]],
                    "outputs": result["outputs"][:-1 if skip_layer_norm else None], "kinds": result["kinds"]}
        # dy.load: all but the layer-norm LSTM's gains and biases (see model_interop.py), and so its outputs
        assert mismatch(values(read["ours"], True), values(w, True), "dy.load") is None
        assert mismatch(read["ours"]["populated"], {k: w[k] for k in ("params", "tables", "kinds", "outputs")},
                        "populate") is None
        assert mismatch(read["ours"]["sub"], w["sub"], "sub") is None
        assert mismatch(read["ours"]["keyed"], [w["params"][0][2], w["tables"][0][2]], "keyed") is None
    assert mismatch(written["original"], written["ours"], "written") is None
