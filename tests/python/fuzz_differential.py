"""Calls every op function of the original DyNet's module with every combination of up to three arguments from
a small pool (vectors, matrices, a batch, a scalar, a 3-d tensor, ints, a float, lists), under the original
and under ours, and prints where they differ: calls the original takes and ours refuses, results of other
dims or sums, other exception classes. A tool for finding incompatibilities, run by hand (the differences
it found are cases of differential.py, or deliberate: see docs/contributing/testing.md):

    python tests/python/fuzz_differential.py [--original PYTHON] [--show N] [--empty]

--empty: instead, calls of up to two arguments of which one has no elements (a {0} vector, {3,0} and {0,3}
parameters, as DyNet programs make for features they turn off) from that pool with the others.

PYTHON defaults to .venv-original's (scripts/setup). The original aborts on some calls; a run that dies
resumes after the call that killed it.
"""
import argparse
import collections
import itertools
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
POOL = ["v3", "m34", "b32", "s", "i1", "i0", "f", "l01", "lv", "t"]
EMPTY = ["e0", "e30", "e03"]
EMPTY_MODE = "--empty" in sys.argv
if EMPTY_MODE:
    POOL = POOL[:8] + EMPTY
SKIP = {"init", "init_from_params", "reset_random_seed", "print_text_graphviz", "print_graphviz", "dump_cg", "cg",
        "cg_checkpoint", "cg_revert", "cg_version", "renew_cg", "save", "load", "load_generator", "available_devices",
        "get_device_info", "to_device", "forward", "npvalues", "values", "random_normal", "random_bernoulli",
        "random_uniform", "random_gumbel", "noise", "dropout", "dropout_batch", "dropout_dim", "block_dropout",
        "vanilla_lstm_gates_dropout", "vanilla_lstm_gates_dropout_concat", "sparse_inputTensor", "inputMatrix",
        "matInput", "parameter", "const_parameter", "lookup", "lookup_batch"}


def calls():
    with open(os.path.join(HERE, "data", "dynet_2_1_api.json")) as f:
        api = json.load(f)
    names = [k for k, v in api.items() if v.get("kind") == "function" and k not in SKIP]
    out = []
    for name in names:
        for k in (1, 2) if EMPTY_MODE else (1, 2, 3):
            for combo in itertools.product(range(len(POOL)), repeat=k):
                if k == 3 and any(POOL[i] in ("t", "lv") for i in combo):
                    continue
                if EMPTY_MODE and not any(POOL[i] in EMPTY for i in combo):
                    continue
                out.append((name, combo))
    return out


def worker(out_path, start):
    """Runs the calls from `start` on, one JSON line per call (a 'started' line first)."""
    import dynet as dy
    import numpy as np

    pc = dy.ParameterCollection()
    empty = {"e30": pc.add_parameters((3, 0)), "e03": pc.add_parameters((0, 3))}

    def pool():
        dy.renew_cg()
        r = np.random.RandomState(0)
        v3 = dy.inputVector([0.3, -0.5, 0.8])
        return {"v3": v3, "m34": dy.inputTensor(r.uniform(-1, 1, (3, 4))),
                "b32": dy.inputTensor(r.uniform(-1, 1, (3, 2)), batched=True), "s": dy.scalarInput(0.7), "i1": 1,
                "i0": 0, "f": 0.5, "l01": [0, 1], "lv": [v3, v3], "t": dy.inputTensor(r.uniform(-1, 1, (2, 3, 4))),
                "e0": dy.inputVector([]), "e30": empty["e30"].expr(), "e03": empty["e03"].expr()}
    todo = calls()
    with open(out_path, "a") as f:
        for i in range(start, len(todo)):
            name, combo = todo[i]
            f.write(json.dumps({"i": i, "started": True}) + "\n")
            f.flush()
            values = pool()
            try:
                e = getattr(dy, name)(*[values[POOL[j]] for j in combo])
                total = np.nan_to_num(np.asarray(e.npvalue(), dtype=float)).sum()
                result = "ok %s %s" % (e.dim(), round(float(total), 3))
            except Exception as ex:  # the comparison is about which calls raise what
                result = "err " + type(ex).__name__
            f.write(json.dumps({"i": i, "r": result}) + "\n")
            f.flush()


def run(python, env):
    out = tempfile.NamedTemporaryFile(suffix=".jsonl", delete=False).name
    start = 0
    while True:
        flags = ["--empty"] if EMPTY_MODE else []
        proc = subprocess.run([python, os.path.abspath(__file__), "--worker", out, str(start)] + flags, env=env,
                              capture_output=True)
        if proc.returncode == 0:
            break
        with open(out) as f:
            start = json.loads(f.readlines()[-1])["i"] + 1
    results = {}
    with open(out) as f:
        for line in f:
            rec = json.loads(line)
            results[rec["i"]] = rec.get("r", "crash")
    os.unlink(out)
    return results


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--original", default=os.path.join(HERE, "..", "..", ".venv-original", "bin", "python"))
    parser.add_argument("--show", type=int, default=3, help="examples printed per op and kind of difference")
    parser.add_argument("--empty", action="store_true", help="calls with an argument without elements")
    parser.add_argument("--worker", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        sys.argv = sys.argv[:1]
        worker(args.worker[0], int(args.worker[1]))
        return
    theirs = run(args.original, {k: v for k, v in os.environ.items() if k != "PYTHONPATH"})
    ours = run(sys.executable, dict(os.environ))
    kinds, examples = collections.Counter(), collections.defaultdict(list)
    for i, (name, combo) in enumerate(calls()):
        a, b = theirs[i], ours[i]
        if a == b:
            continue
        kind = ("the original crashes" if a == "crash" else
                "%s there, %s here" % ("works" if a.startswith("ok") else "raises",
                                       "works" if b.startswith("ok") else "raises"))
        if kind == "works there, works here":
            kind = "both work, results differ"
        elif kind == "raises there, raises here":
            kind = "other exception class"
        kinds[kind] += 1
        examples[(kind, name)].append("%s(%s): %s | %s" % (name, ", ".join(POOL[j] for j in combo), a, b))
    print("calls: %d; %s" % (len(theirs), dict(kinds)))
    for (kind, name), lines in sorted(examples.items()):
        if kind in ("works there, raises here", "both work, results differ") or os.environ.get("FUZZ_ALL"):
            print("%s, %s (%d): %s" % (kind, name, len(lines), "; ".join(lines[:args.show])))


if __name__ == "__main__":
    main()
