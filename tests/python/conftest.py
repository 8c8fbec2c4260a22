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
# The original DyNet (the dyNET38 package that bench/run installs into bench/.venv), for interop tests.
ORIGINAL_PYTHON = os.environ.get("DYNET_ORIGINAL_PYTHON", os.path.join(REPO, "bench", ".venv", "bin", "python"))


def original_env():
    """The environment for the original's interpreter: without our package on PYTHONPATH."""
    return {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}


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
