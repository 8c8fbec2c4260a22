"""python/dynet/_dynet.pyi is what nanobind's stubgen writes for the module now (regenerate with
`PYTHONPATH=build/python .venv/bin/python -m nanobind.stubgen -m dynet._dynet -p python/dynet/stubgen_patterns.txt
-o python/dynet/_dynet.pyi`)."""
import os
import re
import subprocess
import sys

import pytest

from conftest import REPO


def pinned_nanobind():
    """The nanobind version scripts/setup installs (the stubs are that version's stubgen output)."""
    with open(os.path.join(REPO, "scripts", "setup")) as f:
        return re.search(r"nanobind==([0-9.]+)", f.read()).group(1)


def test_stubs_are_current(tmp_path):
    nanobind = pytest.importorskip("nanobind")
    pytest.importorskip("nanobind.stubgen")
    assert nanobind.__version__ == pinned_nanobind(), (
        "the stubs are nanobind %s's stubgen output; this venv has %s (scripts/setup installs the pinned one)"
        % (pinned_nanobind(), nanobind.__version__))
    out = tmp_path / "_dynet.pyi"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    patterns = os.path.join(REPO, "python", "dynet", "stubgen_patterns.txt")
    r = subprocess.run([sys.executable, "-m", "nanobind.stubgen", "-q", "-m", "dynet._dynet", "-p", patterns, "-o", str(out)],
                       capture_output=True, text=True, env=env, cwd=str(tmp_path))
    assert r.returncode == 0, r.stderr
    committed = os.path.join(REPO, "python", "dynet", "_dynet.pyi")
    with open(committed) as f:
        assert f.read() == out.read_text(), "python/dynet/_dynet.pyi is stale; regenerate it (see this file's docstring)"
    assert os.path.exists(os.path.join(REPO, "python", "dynet", "py.typed"))


def test_stubs_carry_the_schema_signatures():
    with open(os.path.join(REPO, "python", "dynet", "_dynet.pyi")) as f:
        text = f.read()
    assert "def pick(e: Expression, index: int = 0, dim: int = 0) -> Expression: ..." in text
    assert "def lookup_batch(p: LookupParameters, indices: collections.abc.Sequence[int], update: bool = True) -> Expression" in text or "def lookup_batch(" in text
