"""The layers are kept by CI (issue 20): import-linter checks pyproject.toml's contract (a lower
layer never imports a higher one, not even inside a function), and a back-import planted in a
copy of the package is caught by name. No module is over the house rule of ~400 lines."""
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


@needs_linter
def test_the_layers_contract_is_kept():
    out = lint(ROOT)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-2000:]
    assert "1 kept, 0 broken" in out.stdout


@needs_linter
def test_a_back_import_fails_naming_both_modules(tmp_path):
    shutil.copytree(ROOT / "pslab", tmp_path / "pslab",
                    ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path)
    timeline = tmp_path / "pslab" / "timeline.py"
    timeline.write_text(timeline.read_text() + "\n\ndef _up():\n"
                        "    from .training import train  # inside a function: still counted\n"
                        "    return train\n")
    out = lint(tmp_path)
    assert out.returncode != 0
    assert "pslab.timeline is not allowed to import pslab.training" in out.stdout


def test_no_module_is_over_the_house_rule():
    long = {str(p.relative_to(ROOT)): n for p in (ROOT / "pslab").rglob("*.py")
            if (n := len(p.read_text().splitlines())) > 420}
    assert not long, f"modules over ~400 lines: {long}"
