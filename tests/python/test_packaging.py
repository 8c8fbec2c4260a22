"""The package as a user installs it: one version everywhere, its licence and metadata, and a loud failure
where the original DyNet is installed beside it."""
import glob
import importlib.machinery
import os
import re
import subprocess
import sys

import dynet as dy
import pytest

from conftest import ORIGINAL_PYTHON, REPO

try:
    import tomllib
except ImportError:  # Python 3.10
    tomllib = None


def cmake_version():
    text = open(os.path.join(REPO, "CMakeLists.txt")).read()
    return re.search(r"project\(dynet VERSION ([0-9.]+)", text).group(1)


def test_one_version_everywhere():
    assert dy.__version__ == cmake_version()
    assert int(dy.__version__.split(".")[0]) == 2, "the major version follows DyNet's API (2.x)"
    try:
        from importlib.metadata import PackageNotFoundError, version
        assert version("dynet-ng") == dy.__version__
    except PackageNotFoundError:  # the build folder's copy (PYTHONPATH), not an installed distribution
        pass


@pytest.mark.skipif(tomllib is None, reason="tomllib needs Python 3.11")
def test_metadata_names_our_distribution_and_its_licence():
    with open(os.path.join(REPO, "pyproject.toml"), "rb") as f:
        meta = tomllib.load(f)
    project = meta["project"]
    assert project["name"] == "dynet-ng"
    assert project["license"] == "Apache-2.0"
    assert "version" in project["dynamic"]
    rule = meta["tool"]["scikit-build"]["metadata"]["version"]
    text = open(os.path.join(REPO, rule["input"])).read()
    assert re.search(rule["regex"], text).group("value") == dy.__version__
    assert {"examples", "mpi"} <= set(project["optional-dependencies"])
    for f in project["license-files"]:
        assert os.path.getsize(os.path.join(REPO, f)) > 0
    assert "Apache License" in open(os.path.join(REPO, "LICENSE")).read(2000)


def site_with_ours(tmp_path):
    """A folder laid out like site-packages holding our package (links to the importable copy in use)."""
    ours = os.path.dirname(os.path.dirname(os.path.abspath(dy.__file__)))
    site = tmp_path / "site"
    site.mkdir()
    for name in ("dynet", "dynet_config.py", "_dynet.py"):
        os.symlink(os.path.join(ours, name), site / name)
    return site


def import_dynet_from(site):
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONPATH"] = str(site)
    return subprocess.run([sys.executable, "-c", "import sys; sys.argv = sys.argv[:1]; import dynet, _dynet; "
                           "print(dynet.__version__, _dynet is dynet)"],
                          capture_output=True, text=True, env=env, cwd=str(site.parent))


def test_alone_it_imports(tmp_path):
    run = import_dynet_from(site_with_ours(tmp_path))
    assert run.returncode == 0, run.stderr
    assert run.stdout.split() == [dy.__version__, "True"]


def original_files():
    """The original DyNet's installed top-level files, where scripts/setup installed it (else stand-ins)."""
    if ORIGINAL_PYTHON:
        site = glob.glob(os.path.join(os.path.dirname(os.path.dirname(ORIGINAL_PYTHON)), "lib", "python3*",
                                      "site-packages"))
        if site:
            found = [p for p in glob.glob(os.path.join(site[0], "*"))
                     if re.match(r"(_dynet\..*\.so|dynet\.py|dyNET.*\.dist-info)$", os.path.basename(p))]
            if found:
                return found
    return None


@pytest.mark.parametrize("which", ["extension", "module", "dist-info", "installed original"])
def test_beside_the_original_import_fails_loudly(tmp_path, which):
    site = site_with_ours(tmp_path)
    suffix = importlib.machinery.EXTENSION_SUFFIXES[0]
    if which == "installed original":
        files = original_files()
        if not files:
            pytest.skip("the original DyNet is not installed (.venv-original)")
        for f in files:
            os.symlink(f, site / os.path.basename(f))
    elif which == "extension":
        (site / ("_dynet" + suffix)).write_bytes(b"")
    elif which == "module":
        (site / "dynet.py").write_text("raise SystemExit('the original module ran')\n")
    else:
        (site / "dyNET38-2.2.dist-info").mkdir()
    run = import_dynet_from(site)
    assert run.returncode != 0
    assert "ImportError" in run.stderr and "the original DyNet is installed beside it" in run.stderr, run.stderr
    assert "pip uninstall" in run.stderr


def test_an_original_extension_earlier_on_the_path_is_refused(tmp_path):
    """`import _dynet` would load the original's extension from an earlier sys.path entry."""
    site = site_with_ours(tmp_path)
    other = tmp_path / "other"
    other.mkdir()
    (other / ("_dynet" + importlib.machinery.EXTENSION_SUFFIXES[0])).write_bytes(b"")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONPATH"] = os.pathsep.join([str(other), str(site)])
    run = subprocess.run([sys.executable, "-c", "import sys; sys.argv = sys.argv[:1]; import dynet"],
                         capture_output=True, text=True, env=env, cwd=str(tmp_path))
    assert run.returncode != 0 and "the original DyNet is installed beside it" in run.stderr, run.stderr
