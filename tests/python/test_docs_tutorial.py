"""Runs the tutorial's Python code: every ```python block of each docs/tutorial page, in order, as one program
per page in a fresh interpreter (so each page's dynet_config settings take effect, as they would for a
reader who pastes them). The blocks assert what they claim (a loss that falls, equal results), so a page
whose code stops working, or stops showing what it says, fails here.

The C++ blocks that are whole programs (those with `int main(`) are compiled against include/ and the built
library and run, when a compiler and build/libdynet.so are there; the other C++ blocks are fragments.

Blocks written as ```{code-block} python are shown but not run (an MPI job, the profiler API section); only
plain ```python fences are extracted.
"""
import os
import pathlib
import re
import shutil
import subprocess
import sys

import pytest

SOURCE_DIR = pathlib.Path(os.environ.get("DYNET_SOURCE_DIR", pathlib.Path(__file__).resolve().parents[2]))
TUTORIAL = SOURCE_DIR / "docs" / "tutorial"
PAGES = sorted(p.name for p in TUTORIAL.glob("*.md") if p.name != "index.md")
# Column 0 only: a fence indented inside a list or a directive is shown as written and not run.
FENCE = re.compile(r"^```python[ \t]*\n(.*?)^```[ \t]*$", re.S | re.M)
CPP_FENCE = re.compile(r"^```cpp[ \t]*\n(.*?)^```[ \t]*$", re.S | re.M)
BUILD_DIR = pathlib.Path(os.environ.get("BUILD_DIR", SOURCE_DIR / "build"))
if not BUILD_DIR.is_absolute():
    BUILD_DIR = SOURCE_DIR / BUILD_DIR


def python_blocks(page):
    return FENCE.findall((TUTORIAL / page).read_text(encoding="utf-8"))


def cpp_programs():
    return [(page, i + 1, code) for page in PAGES
            for i, code in enumerate(CPP_FENCE.findall((TUTORIAL / page).read_text(encoding="utf-8")))
            if "int main(" in code]


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


def test_tutorial_cpp_programs_compile_and_run(tmp_path):
    programs = cpp_programs()
    assert programs, "no C++ block with int main( in the tutorial"
    compiler = os.environ.get("CXX") or shutil.which("c++") or shutil.which("g++")
    library = BUILD_DIR / "libdynet.so"
    if not compiler or not library.exists():
        pytest.skip(f"needs a C++ compiler and {library} (scripts/build)")
    for page, number, code in programs:
        source = tmp_path / f"{page[:-3]}_{number}.cc"
        source.write_text(code, encoding="utf-8")
        binary = tmp_path / source.stem
        build = subprocess.run([compiler, "-std=c++20", "-O1", str(source), "-I", str(SOURCE_DIR / "include"),
                                "-L", str(BUILD_DIR), "-ldynet", f"-Wl,-rpath,{BUILD_DIR}", "-o", str(binary)],
                               capture_output=True, text=True, timeout=300)
        assert build.returncode == 0, f"{page}, C++ block {number} does not compile:\n{build.stderr[-3000:]}"
        run = subprocess.run([str(binary), "--dynet-seed", "1"], capture_output=True, text=True, timeout=120)
        assert run.returncode == 0, (f"{page}, C++ block {number} exited {run.returncode}:\n"
                                     f"{run.stdout[-2000:]}\n{run.stderr[-2000:]}")
