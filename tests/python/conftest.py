import os
import subprocess
import sys

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
