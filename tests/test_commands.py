"""Every command the repository tells a user to run runs: each `python -m ...` that a docstring,
a message, a file header (figures/), the Makefile, a notebook or the docs name (run with
--help, the cheap form every one of them takes), and each `make` target they name (make -n: the
target exists and its recipe expands)."""
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PYTHON_M = re.compile(r"python3? -m ((?:pslab|bench)[a-zA-Z0-9_.]*)")
MAKE = re.compile(r"`make ([a-z][a-z-]*)|^#\s+make ([a-z][a-z-]*)", re.M)


def _texts() -> dict[str, str]:
    """Where a user reads commands: the package's code (docstrings and messages), the figures'
    headers, the Makefile, the docs and the notebooks (their cells' text)."""
    paths = [*ROOT.glob("pslab/**/*.py"), *ROOT.glob("figures/*.tex"), ROOT / "Makefile",
             ROOT / "README.md", *ROOT.glob("docs/*.md")]
    out = {str(p.relative_to(ROOT)): p.read_text(encoding="utf-8") for p in paths}
    for nb in ROOT.glob("notebooks/*.ipynb"):
        cells = json.loads(nb.read_text(encoding="utf-8"))["cells"]
        out[str(nb.relative_to(ROOT))] = "\n".join("".join(c["source"]) for c in cells)
    return out


def _named(pattern: re.Pattern) -> dict[str, str]:
    """Each command found -> the first file that names it."""
    found: dict[str, str] = {}
    for where, text in sorted(_texts().items()):
        for match in pattern.finditer(text):
            found.setdefault(next(g for g in match.groups() if g).rstrip("."), where)
    return found


MODULES = _named(PYTHON_M)
TARGETS = _named(MAKE)


def test_the_commands_are_found():
    assert {"pslab", "pslab.drawing.tex", "pslab.processes", "bench"} <= set(MODULES)
    assert {"lab", "present", "test", "figures"} <= set(TARGETS)


@pytest.mark.parametrize("module", sorted(MODULES))
def test_each_python_m_command_named_runs(module):
    done = subprocess.run([sys.executable, "-m", module, "--help"], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.startswith("usage: "), (
        f"`python -m {module}` (named in {MODULES[module]}) does not run:\n{done.stderr[-2000:]}")


@pytest.mark.parametrize("target", sorted(TARGETS))
def test_each_make_target_named_exists(target):
    done = subprocess.run(["make", "-n", target], cwd=ROOT, capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, f"`make {target}` (named in {TARGETS[target]}): {done.stderr}"


def test_the_style_file_is_what_its_header_command_writes():
    done = subprocess.run([sys.executable, "-m", "pslab.drawing.tex", "--check"], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
