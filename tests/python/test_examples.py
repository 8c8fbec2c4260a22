"""The example programs: the Python examples are reproducible with --seed, and every C++ example answers
--help with each option it reads. Kept fast: only xor.py and tiny runs of the demo are trained."""
import glob
import os
import re
import subprocess
import sys

import pytest

import dynet as dy

from conftest import REPO

EXAMPLES_PY = os.path.join(REPO, "examples", "python")
CPP_SOURCES = sorted(glob.glob(os.path.join(REPO, "examples", "cpp", "*.cc")))


def build_dir():
    """DYNET_BUILD_DIR, else the build whose python/ folder this dynet was imported from."""
    if os.environ.get("DYNET_BUILD_DIR"):
        return os.environ["DYNET_BUILD_DIR"]
    return os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(dy.__file__))))


def example_binary(name):
    path = os.path.join(build_dir(), "examples", name)
    if not os.access(path, os.X_OK):
        pytest.skip("%s is not built (a pip-installed dynet has no examples; set DYNET_BUILD_DIR)" % path)
    return path


def run_python_example(*args):
    # Not through a terminal: the progress bars must stay off and leave only the per-epoch lines.
    return subprocess.run([sys.executable, os.path.join(EXAMPLES_PY, "xor.py")] + list(args), cwd=EXAMPLES_PY,
                          capture_output=True, text=True, timeout=120, check=True)


def test_xor_with_the_same_seed_prints_the_same_losses():
    first, second = run_python_example("--seed", "5"), run_python_example("--seed", "5")
    assert "epoch 20: loss" in first.stdout
    assert first.stdout == second.stdout
    # and the seed reaches DyNet: another seed initialises other parameters
    assert run_python_example("--seed", "6").stdout != first.stdout


def test_python_example_without_a_terminal_prints_no_progress_bar():
    out = run_python_example("--seed", "5")
    assert "\r" not in out.stdout + out.stderr
    assert len(re.findall(r"^epoch \d+: loss", out.stdout, re.M)) == 20


def test_python_example_help_shows_defaults():
    out = subprocess.run([sys.executable, os.path.join(EXAMPLES_PY, "xor.py"), "--help"], cwd=EXAMPLES_PY,
                         capture_output=True, text=True, timeout=60, check=True).stdout
    assert "--seed SEED" in out and "(default: 1)" in out


def options_read_by(source):
    """The options a C++ example compares its arguments with (its --dynet-* flags belong to initialize)."""
    text = open(source).read()
    found = re.findall(r'(?:k ==|strcmp\(k,)\s*"(--[a-z][a-z-]*)"', text)
    return sorted(set(o for o in found if not o.startswith("--dynet")))


def test_every_cpp_example_is_checked():
    assert {os.path.basename(s)[:-3] for s in CPP_SOURCES} >= {"demo", "xor", "tagger_mpi"}


@pytest.mark.parametrize("source", CPP_SOURCES, ids=lambda s: os.path.basename(s)[:-3])
def test_cpp_example_help_names_its_options(source):
    name = os.path.basename(source)[:-3]
    out = subprocess.run([example_binary(name), "--help"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("usage:") or "usage:" in out.stdout.splitlines()[0]
    for option in options_read_by(source) + ["--help"]:
        assert option in out.stdout, "%s --help does not mention %s" % (name, option)


def test_demo_autobatches_minibatches_of_trees_by_default():
    out = subprocess.run([example_binary("demo"), "--epochs", "2", "--train", "96", "--dev", "32", "--batch", "32",
                          "--dynet-seed", "3"], capture_output=True, text=True, timeout=120, check=True).stdout
    assert "32 trees per graph, autobatching on" in out
    epochs = re.findall(r"^epoch +(\d+) +loss ([\d.]+) .* ([\d.]+) trees/s$", out, re.M)
    assert [e[0] for e in epochs] == ["1", "2"]
    assert all(float(e[2]) > 0 for e in epochs)
    assert "autobatching on" in out.splitlines()[-1]


def test_demo_autobatch_0_turns_it_off_and_bad_options_are_refused():
    demo = example_binary("demo")
    out = subprocess.run([demo, "--epochs", "1", "--train", "32", "--dev", "8", "--autobatch", "0"],
                         capture_output=True, text=True, timeout=120, check=True).stdout
    assert "autobatching off" in out
    bad = subprocess.run([demo, "--batch", "0"], capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and "--batch" in bad.stderr
