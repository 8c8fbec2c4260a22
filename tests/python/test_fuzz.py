"""Hostile arguments to every op function and method never crash the interpreter (fuzz_api.py, run in
a child process so that a crash is a test failure with its output, not the end of the test run), with
autobatching off and on."""
import os
import subprocess
import sys

import pytest
from conftest import REPO


@pytest.mark.parametrize("autobatch", [0, 1])
def test_hostile_arguments_raise_python_errors(autobatch):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    r = subprocess.run([sys.executable, "-X", "faulthandler", "-W", "ignore",
                        os.path.join(REPO, "tests", "python", "fuzz_api.py"), "--samples", "100",
                        "--autobatch", str(autobatch)],
                       capture_output=True, text=True, env=env, timeout=600)
    assert r.returncode == 0, "exit status %d\n%s\n%s" % (r.returncode, r.stdout[-5000:], r.stderr[-5000:])
    summary = r.stdout.strip().splitlines()[-1]
    assert "0 unexpected exceptions" in summary
    calls, worked = (int(w) for w in summary.split()[1:4:2])
    assert calls > 50000 and worked > 1000, summary  # the calls reached the ops
