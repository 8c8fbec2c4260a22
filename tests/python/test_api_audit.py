"""Every name of DyNet 2.1's Python module exists here, with the same parameter names and defaults
(tests/python/data/dynet_2_1_api.json describes the original; api_audit.py explains how it is made)."""
import copy
import json
import os
import subprocess

import pytest

import dynet as dy
from api_audit import compare, describe
from conftest import NO_ORIGINAL, ORIGINAL_PYTHON, REPO, original_available, original_env

SNAPSHOT = os.path.join(REPO, "tests", "python", "data", "dynet_2_1_api.json")


def load_snapshot():
    with open(SNAPSHOT) as f:
        return json.load(f)


def test_module_has_the_original_api():
    problems = compare(load_snapshot(), describe(dy))
    assert not problems, "\n".join(problems)


def test_audit_reports_differences():
    """The comparison is not vacuous: a missing name, member, parameter or default is reported."""
    original = load_snapshot()
    assert len(original) > 200 and "ClassFactoredSoftmaxBuilder" in original
    ours = describe(dy)
    broken = copy.deepcopy(ours)
    del broken["pick_batch"]
    del broken["Tensor"]["members"]["topk"]
    broken["lookup"]["signatures"] = [[(n, d, k) for n, d, k in s if n != "update"] for s in broken["lookup"]["signatures"]]
    broken["AdamTrainer"]["members"]["restart"] = [[("self", None, "POSITIONAL_OR_KEYWORD"),
                                                     ("learning_rate", "0.5", "POSITIONAL_OR_KEYWORD")]]
    problems = "\n".join(compare(original, broken))
    for what in ("missing: dynet.pick_batch", "missing: dynet.Tensor.topk", "dynet.lookup", "AdamTrainer.restart"):
        assert what in problems


@pytest.mark.skipif(not original_available(), reason=NO_ORIGINAL)
def test_snapshot_describes_the_installed_original(tmp_path):
    fresh = tmp_path / "api.json"
    subprocess.run([ORIGINAL_PYTHON, os.path.join(REPO, "tests", "python", "api_audit.py"), "--write", str(fresh)],
                   check=True, cwd=str(tmp_path), env=original_env())
    assert json.loads(fresh.read_text()) == load_snapshot(), "regenerate %s (see api_audit.py)" % SNAPSHOT
