import os
import subprocess
import sys

import numpy as np
import pytest

# dynet reads --dynet-* flags from sys.argv at import; pytest's own arguments are not for it.
sys.argv = sys.argv[:1]

import dynet_config  # noqa: E402

dynet_config.set(random_seed=5)

import dynet as dy  # noqa: E402

REPO = os.environ.get("DYNET_SOURCE_DIR", os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..")))
# The original DyNet (the dyNET38 package that scripts/setup installs into .venv-original, and bench/run into
# bench/.venv), for the tests that compare with it.
ORIGINAL_PYTHON = os.environ.get("DYNET_ORIGINAL_PYTHON") or next(
    (p for p in (os.path.join(REPO, ".venv-original", "bin", "python"), os.path.join(REPO, "bench", ".venv", "bin", "python"))
     if os.path.exists(p)), "")


def original_env():
    """The environment for the original's interpreter: without our package on PYTHONPATH."""
    return {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}


NO_ORIGINAL = "the original DyNet (dyNET38) is not installed: scripts/setup puts it into .venv-original"


def original_available():
    if not os.path.exists(ORIGINAL_PYTHON):
        return False
    probe = subprocess.run([ORIGINAL_PYTHON, "-c", "import sys; sys.argv=sys.argv[:1]; import _dynet"],
                           capture_output=True, env=original_env())
    return probe.returncode == 0


@pytest.fixture(autouse=True)
def fresh_graph():
    dy.renew_cg()
    yield


def mismatch(x, y, path):
    """The first place where two results differ (None if they agree within float tolerance)."""
    if isinstance(x, dict) and isinstance(y, dict):
        if set(x) != set(y):
            return "%s: fields %s against %s" % (path, sorted(x), sorted(y))
        for k in x:
            m = None if k == "message" else mismatch(x[k], y[k], path + "." + k)
            if m:
                return m
        return None
    if isinstance(x, list) and isinstance(y, list):
        try:
            a, b = np.array(x, dtype=np.float64), np.array(y, dtype=np.float64)
        except (ValueError, TypeError):  # ragged: element by element
            if len(x) != len(y):
                return "%s: %d items against %d" % (path, len(x), len(y))
            for k, (u, v) in enumerate(zip(x, y)):
                m = mismatch(u, v, "%s[%d]" % (path, k))
                if m:
                    return m
            return None
        if a.shape != b.shape:
            return "%s: shape %s against %s" % (path, a.shape, b.shape)
        if not np.allclose(a, b, rtol=2e-4, atol=2e-5, equal_nan=True):
            return "%s: %s against %s" % (path, a.ravel()[:8], b.ravel()[:8])
        return None
    if isinstance(x, float) and isinstance(y, float):
        return None if np.isclose(x, y, rtol=2e-4, atol=2e-5, equal_nan=True) else "%s: %r against %r" % (path, x, y)
    return None if x == y else "%s: %r against %r" % (path, x, y)
