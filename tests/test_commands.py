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
    """Where a user reads commands: the package's and the benchmark's code (docstrings and
    messages), the figures' headers, the Makefile, the docs and their code, the benchmark's
    saved reports, the notebooks (their cells' text) and the tests' messages. Not the
    CHANGELOG: it tells what was, commands that are gone included."""
    paths = [*ROOT.glob("pslab/**/*.py"), *ROOT.glob("bench/*.py"),
             *ROOT.glob("bench/results/*.txt"), *ROOT.glob("figures/*.tex"),
             *ROOT.glob("docs/figures/*.tex"), ROOT / "Makefile", ROOT / "README.md",
             *ROOT.glob("docs/*.md"), *ROOT.glob("docs/*.py"), *ROOT.glob("notebooks/**/*.py"),
             *ROOT.glob("tests/*.py")]
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


def _flags() -> dict[tuple[str, str], dict[str, str]]:
    """(module, first word after it) -> each option written after them (`--name`) -> the first
    file that writes it. The command's text ends at a quote, a backquote, a bracket, the line's
    end or the next command; the word may be a subcommand (`python -m pslab figures --docs`)
    or prose, which the test tells apart by asking the module."""
    found: dict[tuple[str, str], dict[str, str]] = {}
    for where, text in sorted(_texts().items()):
        for match in PYTHON_M.finditer(text):
            rest = re.split(r"[`'\"()\n]|python3? -m ", text[match.end():], maxsplit=1)[0]
            words = rest.split()
            word = words[0] if words and re.fullmatch(r"[a-z]+", words[0]) else ""
            for flag in re.findall(r"(?<![\w-])--[a-z][-a-z0-9]*", rest):
                found.setdefault((match.group(1).rstrip("."), word), {}).setdefault(flag, where)
    return found


MODULES = _named(PYTHON_M)
TARGETS = _named(MAKE)
FLAGS = _flags()


def test_the_commands_are_found():
    assert {"pslab", "pslab.drawing.tex", "pslab.processes", "bench", "bench.network",
            "bench.nas_speed"} <= set(MODULES)
    assert {"lab", "present", "test", "figures", "docs"} <= set(TARGETS)
    assert {"--only", "--quick", "--seed"} <= set(FLAGS["bench", ""])
    assert "--docs" in FLAGS["pslab", "figures"] and "--replay" in FLAGS["bench.network", ""]


@pytest.mark.processes
@pytest.mark.parametrize("module", sorted(MODULES))
def test_each_python_m_command_named_runs(module):
    done = subprocess.run([sys.executable, "-m", module, "--help"], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.startswith("usage: "), (
        f"`python -m {module}` (named in {MODULES[module]}) does not run:\n{done.stderr[-2000:]}")


def _help(*command: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", *command, "--help"], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)


@pytest.mark.processes
@pytest.mark.parametrize("module,word", sorted(FLAGS))
def test_each_option_named_is_the_commands(module, word):
    """Every `--option` written after a command is one its --help lists (of the subcommand
    when the word after the module is one)."""
    sub = _help(module, word) if word else None
    shown = (sub if sub is not None and sub.returncode == 0 else _help(module)).stdout
    missing = {flag: where for flag, where in FLAGS[module, word].items()
               if not re.search(rf"(?<![\w-]){flag}(?![\w-])", shown)}
    assert not missing, f"`python -m {module} {word}` takes no {missing} (--help:\n{shown})"


@pytest.mark.processes
@pytest.mark.parametrize("target", sorted(TARGETS))
def test_each_make_target_named_exists(target):
    done = subprocess.run(["make", "-n", target], cwd=ROOT, capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, f"`make {target}` (named in {TARGETS[target]}): {done.stderr}"


@pytest.mark.processes
def test_the_style_file_is_what_its_header_command_writes():
    done = subprocess.run([sys.executable, "-m", "pslab.drawing.tex", "--check"], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
