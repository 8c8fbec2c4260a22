"""Ours against the original DyNet on the same programs (differential.py): every op's value and gradients,
the builders, the trainers and their options, the parameter and expression methods. Where the original
works, ours must give the same results; where it raises, ours may raise the same class or work (some of its
limits are lifted here). Ours must also give the same results autobatched (strategies 1 and 2), whole training
steps of several examples per graph included."""
import json
import os
import subprocess
import sys

import pytest

from conftest import NO_ORIGINAL, ORIGINAL_PYTHON, mismatch, original_available, original_env

SCRIPT = os.path.join(os.path.dirname(__file__), "differential.py")

# Where the original is wrong, checked by finite differences or by numpy; these fields are not compared.
ORIGINAL_WRONG = {
    "silu/beta": ("grads", "its backward is off for beta != 1: ours matches finite differences"),
    "binary_log_loss": ("grads", "its gradient of the target y is wrong: ours is -(log x - log(1-x))"),
    "poisson_loss": ("grads", "its backward ignores the incoming gradient: ours multiplies by it"),
    "contract3d_1d": ("value loss grads", "its values differ from numpy's x @ y: ours match numpy"),
    "std_batches": ("grads", "a batch of one gives 0/0 = NaN there, 0 here"),
    "class_factored_softmax": ("full logits", "its full logits add each word's probability in its class, not its log, "
                               "to the class's log-probability: ours are log p(class) + log p(word | class)"),
    "trainer/update_subset": ("after", "its update_subset changes nothing: no parameter, no gradient, no count"),
    "edge/dropout_one": ("value loss grads", "dropout with p = 1 is 0 / 0 = NaN there; zeros here"),
    "rnn_dropout_one": ("lstm simple", "its builders with dropout 1 give NaN (0 · 1/0 in the masks); here the inputs "
                        "are dropped and h depends on the biases alone"),
    "cdiv/broadcast_numerator": ("value loss grads", "its cdiv broadcasts only the divisor: x {3} / y {3,4} gives "
                                 "other values than numpy's x[:, None] / y; ours match numpy"),
    "edge/l2_norm_zero": ("grads", "NaN there; 0 here (a subgradient)"),
    "edge/std_elems_constant": ("grads", "NaN there; 0 here (a subgradient)"),
    "edge/layer_norm_constant": ("grads", "NaN there; here the derivative of g (x - mean) / (std + 1e-8), the "
                                 "std's own (undefined at std = 0) taken as 0"),
}
# Where the original computes NaN, ours raises a clear error instead:
OURS_RAISES = {
    "edge/weight_norm_zero": "weight_norm of a zero vector, whose direction is undefined",
}
# Where both raise, the class is the original's, except:
OTHER_ERROR_CLASS = {
    "error/esum_empty": "the original's is an assert (AssertionError, or nothing under python -O); ours a ValueError",
}
# The original's ceil/floor/round take the gradient mode from memory it never set: the mode differs from
# run to run. Ours does what the mode says.
for op in ("ceil", "floor", "round"):
    for mode in ("zero_gradient", "straight_through_gradient"):
        ORIGINAL_WRONG["%s/%s" % (op, mode)] = ("grads", "the original's mode varies between runs")


def run(python, env, out, autobatch=0):
    """Runs every case; a run the interpreter does not survive resumes after the case that killed it."""
    results, start = {}, None
    for _ in range(20):
        cmd = [python, SCRIPT, "--out", out, "--autobatch", str(autobatch)] + (["--from", start] if start else [])
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
        last = None
        with open(out) as f:
            for line in f:
                rec = json.loads(line)
                last = rec["case"]
                results[rec["case"]] = rec.get("result", {"error": "crash"})
        if proc.returncode == 0:
            return results
        assert last is not None and results[last] == {"error": "crash"}, proc.stderr[-2000:]
        names = case_names(python, env)
        if names.index(last) + 1 == len(names):
            return results
        start = names[names.index(last) + 1]
    raise AssertionError("too many crashes")


def case_names(python, env):
    listing = subprocess.run([python, SCRIPT, "--list"], capture_output=True, text=True, env=env, check=True)
    return listing.stdout.splitlines()


@pytest.fixture(scope="module")
def ours(tmp_path_factory):
    return run(sys.executable, dict(os.environ), str(tmp_path_factory.mktemp("ours") / "ours.jsonl"))


@pytest.mark.skipif(not original_available(), reason=NO_ORIGINAL)
def test_ours_computes_what_the_original_computes(ours, tmp_path):
    original = run(ORIGINAL_PYTHON, original_env(), str(tmp_path / "original.jsonl"))
    assert set(original) == set(ours)
    problems = []
    for name, theirs in original.items():
        mine = ours[name]
        if "error" in theirs:
            if ("error" in mine and mine["error"] != theirs["error"] and theirs["error"] != "crash" and
                    name not in OTHER_ERROR_CLASS):
                problems.append("%s: raises %s where the original raises %s" % (name, mine["error"], theirs["error"]))
            continue
        if "error" in mine and name not in OURS_RAISES:
            problems.append("%s: raises %s (%s) where the original works" % (name, mine["error"], mine.get("message")))
            continue
        if "error" in mine:
            continue
        skip = ORIGINAL_WRONG.get(name, ("", ""))[0].split()
        m = mismatch({k: v for k, v in theirs.items() if k not in skip},
                     {k: v for k, v in mine.items() if k not in skip}, name)
        if m:
            problems.append(m)
    assert not problems, "\n".join(problems)
    assert all("error" in ours[name] for name in OURS_RAISES)
    # Each listed disagreement is still one (a fixed original would make the entry stale).
    for name, (fields, _) in ORIGINAL_WRONG.items():
        if name.startswith(("ceil", "floor", "round")):
            continue
        assert any(mismatch(original[name].get(f), ours[name].get(f), name) for f in fields.split()), name


@pytest.mark.parametrize("strategy", [1, 2])
def test_autobatching_changes_no_result(ours, tmp_path, strategy):
    batched = run(sys.executable, dict(os.environ), str(tmp_path / "batched.jsonl"), autobatch=strategy)
    problems = [m for m in (mismatch(ours[k], batched[k], k) for k in ours) if m]
    assert not problems, "\n".join(problems)
