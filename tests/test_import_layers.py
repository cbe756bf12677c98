"""The layers are kept by CI: import-linter checks pyproject.toml's contracts (a lower
layer never imports a higher one, not even inside a function; the core never imports a plotting
or widget library), and an import planted in a copy of the package against either is caught by
name. No module is over the house rule of ~400 lines."""
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[1]
LINT = Path(sys.executable).with_name("lint-imports")
needs_linter = pytest.mark.skipif(not LINT.exists(), reason="import-linter is not installed "
                                  "(pip install -e '.[test]')")


def lint(where: Path) -> subprocess.CompletedProcess:
    return subprocess.run([str(LINT), "--no-cache"], cwd=where, capture_output=True, text=True,
                          timeout=300, env={"PYTHONPATH": str(where), "PATH": "/usr/bin:/bin"})


@pytest.mark.processes
@needs_linter
def test_the_layers_contract_is_kept():
    out = lint(ROOT)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-2000:]
    assert "2 kept, 0 broken" in out.stdout


@pytest.mark.processes
@needs_linter
@pytest.mark.parametrize("module, planted, message", [
    ("timeline", "from .training import train",  # a back-import, inside a function
     "pslab.timeline is not allowed to import pslab.training"),
    ("engine", "import matplotlib.pyplot",  # the clock reaching for a plotting library
     "pslab.engine is not allowed to import matplotlib"),
])
def test_a_forbidden_import_fails_naming_both_modules(tmp_path, module, planted, message):
    shutil.copytree(ROOT / "pslab", tmp_path / "pslab",
                    ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path)
    source = tmp_path / "pslab" / f"{module}.py"
    source.write_text(source.read_text() + "\n\ndef _up():\n"
                      f"    {planted}  # inside a function: still counted\n")
    out = lint(tmp_path)
    assert out.returncode != 0
    assert message in out.stdout, out.stdout[-3000:]
    assert "1 kept, 1 broken" in out.stdout


def test_no_module_is_over_the_house_rule():
    long = {str(p.relative_to(ROOT)): n for p in (ROOT / "pslab").rglob("*.py")
            if (n := len(p.read_text().splitlines())) > 420}
    assert not long, f"modules over ~400 lines: {long}"
