"""Runs the tutorial's Python code: every ```python block of each docs/tutorial page, in order, as one program
per page in a fresh interpreter (so each page's dynet_config settings take effect, as they would for a
reader who pastes them). The blocks assert what they claim (a loss that falls, equal results), so a page
whose code stops working, or stops showing what it says, fails here.

Blocks written as ```{code-block} python are shown but not run (an MPI job, the profiler API section); only
plain ```python fences are extracted.
"""
import os
import pathlib
import re
import subprocess
import sys

import pytest

SOURCE_DIR = pathlib.Path(os.environ.get("DYNET_SOURCE_DIR", pathlib.Path(__file__).resolve().parents[2]))
TUTORIAL = SOURCE_DIR / "docs" / "tutorial"
PAGES = sorted(p.name for p in TUTORIAL.glob("*.md") if p.name != "index.md")
# Column 0 only: a fence indented inside a list or a directive is shown as written and not run.
FENCE = re.compile(r"^```python[ \t]*\n(.*?)^```[ \t]*$", re.S | re.M)


def python_blocks(page):
    return FENCE.findall((TUTORIAL / page).read_text(encoding="utf-8"))


def test_every_tutorial_page_has_code():
    assert len(PAGES) >= 7, PAGES
    for page in PAGES:
        assert python_blocks(page), f"{page} has no ```python block"


@pytest.mark.parametrize("page", PAGES)
def test_tutorial_page_runs(page, tmp_path):
    blocks = python_blocks(page)
    # One program: the blocks in the page's order, each marked so a traceback names the block.
    program = "\n".join(f"# --- {page}, block {i + 1}\n{code}" for i, code in enumerate(blocks))
    script = tmp_path / page.replace(".md", ".py")
    script.write_text(program, encoding="utf-8")
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    result = subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=env, capture_output=True,
                            text=True, timeout=300)
    assert result.returncode == 0, (f"{page} failed (exit {result.returncode}):\n"
                                    f"stdout:\n{result.stdout[-3000:]}\nstderr:\n{result.stderr[-3000:]}")
