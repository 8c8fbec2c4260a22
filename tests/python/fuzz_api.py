"""Calls every op function and every method of the module's classes with hostile arguments: wrong types,
wrong shapes, stale expressions, expressions of another graph, out-of-range numbers, odd numpy arrays.
Each call must either work or raise ValueError, TypeError, IndexError or RuntimeError (MemoryError
for sizes that cannot be allocated); what works is also evaluated and differentiated. Prints one line
per unexpected exception and exits 1 if there was any; a crash of the interpreter is the other failure
(test_fuzz.py runs this in a subprocess).

    python tests/python/fuzz_api.py [--seed N] [--samples N] [--autobatch N]
"""
import argparse
import inspect
import itertools
import os
import random
import sys
import tempfile

sys.argv = sys.argv[:1] if __name__ != "__main__" else sys.argv
ALLOWED = (ValueError, TypeError, IndexError, RuntimeError, MemoryError, NotImplementedError)
# Names that would write outside the temporary folder or stop the process.
SKIP = {"init", "init_from_params", "reset_random_seed", "print_text_graphviz", "print_graphviz", "dump_cg",
        "DynetParams", "status"}


def arguments(dy, np, other_graph_expr):
    """A pool of values, good and bad, that op arguments are drawn from."""
    pc = dy.ParameterCollection()
    stale = dy.inputVector([1.0, 2.0])
    dy.renew_cg()
    return pc, [
        dy.inputVector([1.0, -2.0, 3.0]),
        dy.inputTensor(np.arange(9.0).reshape(3, 3)),
        dy.scalarInput(0.5),
        dy.inputTensor(np.ones((3, 2)), batched=True),
        dy.inputTensor(np.ones((2, 3, 4))),
        dy.inputTensor(np.full((2, 2), np.nan)),
        stale,
        other_graph_expr,
        pc.add_parameters((3, 3)),
        pc.add_lookup_parameters((4, 3)),
        None, "zero_gradient", "bogus", 1.5, -1, 0, 1, 2, 3, 2 ** 33, -2 ** 40, float("nan"), float("inf"),
        True, [], [0, 1], [3, 1, 2], [-1], [[0, 1], [1, 0]], (3, 3), (0,), (1, 2, 3, 4, 5, 6, 7, 8, 9),
        {}, object(), np.array([1.0, 2.0, 3.0]), np.array(["a"]), np.zeros((2, 2), dtype=complex),
        np.arange(6.0)[::2], np.float32(2.0), np.int64(1), b"ab",
    ]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--samples", type=int, default=300, help="random argument tuples per function")
    p.add_argument("--autobatch", type=int, default=0, help="the graphs' executor (--dynet-autobatch)")
    args = p.parse_args()
    sys.argv = sys.argv[:1]
    import numpy as np
    import dynet_config
    dynet_config.set(autobatch=args.autobatch)
    import dynet as dy

    os.chdir(tempfile.mkdtemp(prefix="dynet-fuzz-"))
    rng = random.Random(args.seed)
    unexpected = []
    calls = succeeded = 0

    def attempt(label, f, call_args):
        nonlocal calls, succeeded
        calls += 1
        try:
            r = f(*call_args)
            succeeded += 1
            if isinstance(r, dy.Expression):
                label += " (forward, backward)"
                r.value()
                dy.sum_elems(dy.sum_batches(r)).backward(full=True)
                r.gradient()
        except ALLOWED as e:
            if "bad_cast" in str(e):  # a conversion failure nothing turned into a message naming the call
                unexpected.append("%s%r: %s: %s" % (label, tuple(map(short, call_args)), type(e).__name__, e))
        except Exception as e:  # noqa: BLE001 (reported, the point of the test)
            unexpected.append("%s%r: %s: %s" % (label, tuple(map(short, call_args)), type(e).__name__, e))

    other_graph = dy.ComputationGraph()  # stays alive: its expressions are live, just not of this graph
    with other_graph:
        other = dy.inputVector([1.0, 2.0, 3.0])
    pc, pool = arguments(dy, np, other)

    # Every op function (generated from the API entries, plus the module's own). Arguments are drawn by
    # index from the current pool: renew_cg, cg_revert & co. are called too, and then the pool is rebuilt.
    state = {"version": dy.cg_version(), "pc": pc, "pool": pool}

    def current():
        if dy.cg_version() != state["version"]:
            state["pc"], state["pool"] = arguments(dy, np, other)
            state["version"] = dy.cg_version()
        return state["pool"]

    ops = sorted(n for n in dir(dy) if not n.startswith("_") and n not in SKIP and callable(getattr(dy, n))
                 and not isinstance(getattr(dy, n), type) and n not in ("save", "load", "load_generator"))
    small = list(range(12)) + [len(pool) - 1 - k for k in range(6)]  # the expressions and a few others
    for name in ops:
        f = getattr(dy, name)
        for n in range(0, 3):  # every tuple of up to 2 arguments from a smaller pool
            for combo in itertools.product(small, repeat=n):
                attempt(name, f, [current()[i] for i in combo])
        for _ in range(args.samples):
            attempt(name, f, [rng.choice(current()) for _ in range(rng.randint(1, 6))])
        # the graph is still usable after the errors
        x = current()[0]
        if abs(dy.sum_elems(dy.tanh(x * 0 + 1)).value() - 3 * np.tanh(1)) > 1e-5:
            unexpected.append("%s: the graph computes wrong values after the calls" % name)
        dy.renew_cg()
    pc, pool = arguments(dy, np, other)

    # Every method of the objects users hold.
    def objects():
        pc2 = dy.ParameterCollection()
        return [pool[0], pc2.add_parameters((3, 3)), pc2.add_lookup_parameters((4, 3)), pc2,
                dy.SimpleSGDTrainer(pc2), dy.AdamTrainer(pc2), dy.VanillaLSTMBuilder(1, 3, 3, pc2),
                dy.SimpleRNNBuilder(1, 3, 3, pc2), dy.GRUBuilder(1, 3, 3, pc2), dy.CompactVanillaLSTMBuilder(1, 3, 3, pc2),
                dy.StandardSoftmaxBuilder(3, 4, pc2), dy.inputVector([1.0, 2.0]).tensor_value(), dy.cg(),
                dy.VanillaLSTMBuilder(1, 3, 3, pc2).initial_state()]
    for obj in objects():
        for mname in sorted(dir(obj)):
            if (mname.startswith("_") and mname not in ("__getitem__",)) or mname in SKIP:
                continue
            method = getattr(obj, mname, None)
            if not callable(method) or inspect.isclass(method):
                continue
            label = "%s.%s" % (type(obj).__name__, mname)
            for n in range(0, 3):
                for combo in itertools.product([pool[0], pool[6], None, "bogus", -1, 2 ** 33, [0, 1], 1.5,
                                                np.zeros((2, 2), dtype=complex)], repeat=n):
                    attempt(label, method, combo)
            for _ in range(args.samples // 3):
                attempt(label, method, [rng.choice(pool) for _ in range(rng.randint(1, 4))])
        dy.renew_cg()
        pc, pool = arguments(dy, np, other)

    for line in unexpected[:100000]:
        print(line)
    print("fuzz_api: %d calls, %d worked (and were evaluated and differentiated), %d unexpected exceptions"
          % (calls, succeeded, len(unexpected)))
    return 1 if unexpected else 0


def short(v):
    s = repr(v)
    return s if len(s) < 40 else s[:37] + "..."


if __name__ == "__main__":
    sys.exit(main())
