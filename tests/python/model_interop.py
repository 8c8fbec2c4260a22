"""Model files written by one `dynet` module and read by another (test_model.py runs it across the original
DyNet and ours, both ways).

    python tests/python/model_interop.py write DIR   # writes the files, and DIR/written.json
    python tests/python/model_interop.py read DIR    # reads them, writes DIR/read.json

Both JSON files hold every parameter's name, shape and values and each builder's outputs on fixed inputs,
so equal files mean the reader got the same model and computes the same with it.
"""
import json
import os
import sys

mode, folder = sys.argv[1], sys.argv[2]
sys.argv = sys.argv[:1]
import dynet as dy  # noqa: E402
import numpy as np  # noqa: E402

# (The original cannot load a FastLSTMBuilder, nor save softmax builders: those classes lack from_spec, spec.)
BUILDERS = ["VanillaLSTMBuilder", "CoupledLSTMBuilder", "LSTMBuilder", "CompactVanillaLSTMBuilder", "GRUBuilder",
            "SimpleRNNBuilder"]


def build(pc):
    """The objects dy.save writes, in order."""
    objects = [pc.add_parameters((2, 3), name="W"), pc.add_parameters((4,)), pc.add_parameters((2, 3, 2), name="T"),
               pc.add_lookup_parameters((5, 3), name="E"), pc.add_lookup_parameters((4, 2, 2))]
    sub = pc.add_subcollection("enc")
    objects.append(sub.add_parameters((3, 3), name="U"))
    objects += [getattr(dy, name)(2, 3, 4, pc) for name in BUILDERS]
    objects.append(dy.BiRNNBuilder(2, 3, 6, pc, dy.VanillaLSTMBuilder))
    # Last: its layer norm's 6 gains and biases are the last parameters, created on the parent collection, not
    # the builder's (as in the original), so dy.save of the builder leaves them out and dy.load makes new ones.
    objects.append(dy.VanillaLSTMBuilder(1, 3, 4, pc, ln_lstm=True))
    return objects, sub


def describe(pc, objects):
    dy.renew_cg()
    out = {"params": [[p.name(), list(p.shape()), np.asarray(p.as_array()).tolist()] for p in pc.parameters_list()],
           "tables": [[p.name(), list(p.shape()), np.asarray(p.as_array()).tolist()]
                      for p in pc.lookup_parameters_list()],
           "kinds": [type(o).__name__ for o in objects], "outputs": []}
    xs = [dy.inputVector([0.5, -0.25 * k, 0.1]) for k in range(3)]
    for o in objects:
        if isinstance(o, dy.BiRNNBuilder):
            ys = o.transduce(xs)
        elif hasattr(o, "initial_state"):
            ys = o.initial_state().transduce(xs)
        else:
            continue
        out["outputs"].append([np.asarray(y.npvalue()).tolist() for y in ys])
    return out


def fill(pc, seed):
    r = np.random.RandomState(seed)
    for p in pc.parameters_list():
        p.set_value(r.uniform(-0.5, 0.5, size=p.shape()))
    for p in pc.lookup_parameters_list():  # by row: the original's init_from_array takes only 2-d tables
        for row in range(p.shape()[0]):
            p.init_row(row, list(r.uniform(-0.5, 0.5, size=int(np.prod(p.shape()[1:])))))


if mode == "write":
    pc = dy.ParameterCollection()
    objects, sub = build(pc)
    fill(pc, 41)
    dy.save(os.path.join(folder, "objects"), objects)
    pc.save(os.path.join(folder, "collection.txt"))
    sub.save(os.path.join(folder, "sub.txt"))
    objects[0].save(os.path.join(folder, "one.txt"), "/first")
    objects[3].save(os.path.join(folder, "one.txt"), "/table", append=True)
    result = describe(pc, objects)
    result["sub"] = np.asarray(objects[5].as_array()).tolist()
    with open(os.path.join(folder, "written.json"), "w") as f:
        json.dump(result, f)
else:
    pc = dy.ParameterCollection()
    objects = dy.load(os.path.join(folder, "objects"), pc)
    result = describe(pc, objects)
    # The whole collection's file, populated into a collection built the same way.
    again = dy.ParameterCollection()
    rebuilt, sub = build(again)
    again.populate(os.path.join(folder, "collection.txt"))
    result["populated"] = describe(again, rebuilt)
    # A subcollection's file, into a fresh subcollection of the same name.
    other = dy.ParameterCollection()
    U = other.add_subcollection("enc").add_parameters((3, 3), name="U")
    other.populate(os.path.join(folder, "sub.txt"))
    result["sub"] = np.asarray(U.as_array()).tolist()
    # Single objects by key.
    keyed = dy.ParameterCollection()
    W = keyed.add_parameters((2, 3))
    E = keyed.add_lookup_parameters((5, 3))
    W.populate(os.path.join(folder, "one.txt"), "/first")
    E.populate(os.path.join(folder, "one.txt"), "/table")
    result["keyed"] = [np.asarray(W.as_array()).tolist(), np.asarray(E.as_array()).tolist()]
    result["load_param"] = np.asarray(keyed.load_param(os.path.join(folder, "one.txt"), "/first").as_array()).tolist()
    with open(os.path.join(folder, "read.json"), "w") as f:
        json.dump(result, f)
