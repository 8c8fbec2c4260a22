"""The module documents itself: every public callable of `dynet` (functions, op objects, classes and their
public methods) has a Google-style docstring naming each of its parameters, `inspect.signature` works on it,
defaults print as short decimals, and the objects have reprs that say what they are."""
import inspect
import os
import re

import numpy as np
import pytest

from conftest import REPO

import dynet as dy


def public_callables():
    """(qualified name, object) for every public callable of dynet and every public method of its classes."""
    seen, out = set(), []
    for name in sorted(dir(dy)):
        if name.startswith("_"):
            continue
        obj = getattr(dy, name)
        if inspect.ismodule(obj) or not callable(obj):
            continue
        out.append((name, obj))
        if inspect.isclass(obj):
            for attr in sorted(dir(obj)):
                if attr.startswith("_"):
                    continue
                member = inspect.getattr_static(obj, attr, None)
                if isinstance(member, (property, staticmethod, classmethod)) or not callable(getattr(obj, attr)):
                    member = getattr(obj, attr)
                    if not callable(member):
                        continue
                else:
                    member = getattr(obj, attr)
                if getattr(getattr(member, "__objclass__", None), "__module__", None) == "builtins":
                    continue  # inherited from a builtin base (BaseException.add_note)
                if id(member) in seen and not inspect.ismethod(member):
                    continue
                seen.add(id(member))
                out.append((name + "." + attr, member))
    return out


CALLABLES = public_callables()


def doc_body(obj):
    """The docstring without the signature lines nanobind puts before it."""
    doc = obj.__doc__ or ""
    sigs = getattr(obj, "__nb_signature__", None)
    if isinstance(sigs, tuple):
        lines = doc.split("\n")
        while lines and re.match(r"^[A-Za-z_][\w.]*\(.*\)( -> .*)?$", lines[0]):
            lines.pop(0)
        doc = "\n".join(lines)
    return doc.strip()


def parameter_names(sig):
    return [p.name for p in sig.parameters.values() if p.name not in ("self", "cls")]


def test_there_are_many_callables():
    assert len(CALLABLES) > 300


@pytest.mark.parametrize("name,obj", CALLABLES, ids=[n for n, _ in CALLABLES])
def test_signature_works(name, obj):
    sig = inspect.signature(obj)
    # Float defaults are the shortest decimal of the float32 value, not its double expansion.
    for p in sig.parameters.values():
        if isinstance(p.default, float):
            assert len(repr(p.default).lstrip("-").split("e")[0].replace(".", "").strip("0")) <= 8, (name, p)


@pytest.mark.parametrize("name,obj", CALLABLES, ids=[n for n, _ in CALLABLES])
def test_docstring_is_google_style(name, obj):
    body = doc_body(obj)
    lines = [l for l in body.split("\n") if l.strip()]
    assert len(lines) > 1, "%s: the docstring has %d line(s): %r" % (name, len(lines), body)
    params = parameter_names(inspect.signature(obj))
    if params:
        assert "Args:" in body, "%s: no Args: section" % name
    for p in params:
        assert re.search(r"\b%s\b" % re.escape(p), body), "%s: the docstring does not mention %r" % (name, p)


def long_floats(text):
    """Decimal literals with more than 8 significant digits (a float32 printed as a double)."""
    found = []
    for m in re.finditer(r"(?<![\w.])(\d+\.\d+)(?:e[-+]?\d+)?", text):
        digits = m.group(1).replace(".", "").lstrip("0")
        if len(digits) > 8:
            found.append(m.group(0))
    return found


def test_no_long_float_defaults_in_signatures_docs_or_stubs():
    texts = []
    for name, obj in CALLABLES:
        texts.append(str(inspect.signature(obj)))
        texts.append(obj.__doc__ or "")
    with open(os.path.join(REPO, "python", "dynet", "_dynet.pyi")) as f:
        texts.append(f.read())
    bad = [f for t in texts for f in long_floats(t)]
    assert not bad, bad[:10]


def test_op_signature_and_docstring():
    sig = inspect.signature(dy.pick)
    assert list(sig.parameters) == ["e", "index", "dim"]
    assert sig.parameters["index"].default == 0
    assert "Args:" in dy.pick.__doc__ and "Returns:" in dy.pick.__doc__
    # Overloads: one signature with the union of the argument types.
    sig = inspect.signature(dy.lookup)
    assert list(sig.parameters) == ["p", "index", "update"] and sig.parameters["update"].default is True
    sig = inspect.signature(dy.AdamTrainer)
    assert list(sig.parameters) == ["m", "alpha", "beta_1", "beta_2", "eps"]
    assert sig.parameters["alpha"].default == 0.001 and repr(sig.parameters["eps"].default) == "1e-08"
    pc = dy.ParameterCollection()
    assert list(inspect.signature(pc.add_parameters).parameters)[:2] == ["dim", "init"]


def test_trainer_docstrings_give_the_update_rule():
    for cls in (dy.SimpleSGDTrainer, dy.MomentumSGDTrainer, dy.AdagradTrainer, dy.AdadeltaTrainer, dy.RMSPropTrainer,
                dy.AdamTrainer, dy.AmsgradTrainer, dy.CyclicalSGDTrainer):
        assert "←" in cls.__doc__, cls


def test_stubs_type_numpy_results():
    with open(os.path.join(REPO, "python", "dynet", "_dynet.pyi")) as f:
        text = f.read()
    for method in ("npvalue", "gradient", "as_array", "grad_as_array", "as_numpy", "row_as_array"):
        sigs = re.findall(r"def %s\(self[^)]*\) -> ([^:]+):" % method, text)
        assert sigs and all("NDArray" in s for s in sigs), (method, sigs)


def test_reprs():
    dy.renew_cg()
    pc = dy.ParameterCollection()
    W = pc.add_parameters((8, 2), name="W")
    E = pc.add_lookup_parameters((10, 4), name="E")
    assert "/W" in repr(W) and "{8,2}" in repr(W) and repr(W).startswith("Parameter")
    assert "/E" in repr(E) and "10" in repr(E) and "{4}" in repr(E)
    x = dy.tanh(W * dy.inputVector([1, 2]))
    r = repr(x)
    assert "tanh" in r and "{8}" in r and "graph" in r, r
    assert "ParameterCollection" in repr(pc) and "2 parameters" in repr(pc)
    t = dy.AdamTrainer(pc, alpha=0.01)
    assert "AdamTrainer" in repr(t) and "0.01" in repr(t)
    b = dy.VanillaLSTMBuilder(2, 3, 5, pc)
    assert "VanillaLSTMBuilder" in repr(b) and "layers=2" in repr(b) and "input_dim=3" in repr(b) and "hidden_dim=5" in repr(b)
    assert "ComputationGraph" in repr(dy.cg())


def test_expression_repr_does_not_compute():
    dy.renew_cg()
    v = dy.inputVector([1.0, 2.0])
    y = 2 * v
    repr(y)
    v.set([3.0, 4.0])  # had repr computed y, the old value would be cached until the graph is invalidated
    assert y.value() == [6.0, 8.0]


def test_safetensors_round_trip(tmp_path):
    pc = dy.ParameterCollection()
    W = pc.add_parameters((3, 2), name="W")
    E = pc.add_lookup_parameters((4, 2), name="E")
    w0, e0 = W.as_array(), E.as_array()
    path = str(tmp_path / "m.safetensors")
    dy.save_safetensors(path, pc)
    W.set_value(np.zeros((3, 2)))
    E.init_from_array(np.zeros((4, 2)))
    dy.load_safetensors(path, pc)
    np.testing.assert_allclose(W.as_array(), w0)
    np.testing.assert_allclose(E.as_array(), e0)
    with open(path, "rb") as f:
        header = f.read(200)
    assert b'"/W"' in header
    with pytest.raises(Exception):
        dy.load_safetensors(str(tmp_path / "missing.safetensors"), pc)


def test_expression_array_protocol():
    dy.renew_cg()
    x = dy.inputTensor(np.arange(6.0).reshape(2, 3))
    a = np.asarray(x)
    np.testing.assert_array_equal(a, x.npvalue())
    assert np.asarray(x, dtype=np.float32).dtype == np.float32
    assert np.array(x).shape == (2, 3)
    # numpy's operators still build graph nodes rather than computing on the value.
    assert isinstance(np.float32(2) * x, dy.Expression) and isinstance(x * np.float32(2), dy.Expression)
