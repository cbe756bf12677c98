"""What a user installs by name is what the tests tested: `python -m build` makes a
wheel and an sdist of the distribution pslab-edu from this checkout; the wheel goes into a
fresh virtual environment (torch first, the CPU build on a machine without a GPU, as `make
install` does; the wheel's own dependencies then resolved by pip from its metadata), which
imports pslab and every name in pslab.__all__ from the installed copy, runs the README's quick
start, exports its TikZ and executes notebook 00 top to bottom. Several minutes, most of them
pip's."""
import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[1]
QUICK_START = """
import pslab
assert "site-packages" in pslab.__file__, pslab.__file__
for name in pslab.__all__:
    assert getattr(pslab, name) is not None, name
run = pslab.train(mode="sync", workers=3, accumulate=1, lr=0.5, batch=32, steps=50,
                  shards=2, seed=0, cluster=pslab.Cluster(speeds=[0.5, 1, 1]))
print("QUICK START", f"{run.final_accuracy:.3f}", f"{run.makespan:.2f}")
tex = pslab.tikz(run)  # the figures' TikZ: its style comes from the installed palette
assert "\\documentclass" in tex and "\\definecolor" in tex and "\\end{tikzpicture}" in tex
print("TIKZ", len(tex.splitlines()), "lines")
from pslab import compiled, fastduplex, fastloop  # the loops' twins, built with the wheel
print("COMPILED", compiled.in_use(fastduplex) and compiled.in_use(fastloop))
"""


def sh(*cmd, cwd=ROOT, env=None, timeout=900):
    out = subprocess.run([str(c) for c in cmd], cwd=cwd, capture_output=True, text=True,
                         timeout=timeout, env=env)
    assert out.returncode == 0, f"{cmd}\n{out.stdout[-2000:]}\n{out.stderr[-3000:]}"
    return out.stdout


@pytest.mark.processes
@pytest.mark.skipif(os.environ.get("PSLAB_SKIP_WHEEL") == "1", reason="PSLAB_SKIP_WHEEL=1")
def test_the_wheel_installs_by_name_and_runs_the_quick_start(tmp_path):
    pytest.importorskip("build")
    sh(sys.executable, "-m", "build", "--outdir", tmp_path / "dist", ROOT)
    wheel = next((tmp_path / "dist").glob("pslab_edu-*.whl"))
    assert next((tmp_path / "dist").glob("pslab_edu-*.tar.gz"))
    names = zipfile.ZipFile(wheel).namelist()
    assert "pslab/__init__.py" in names and not any(n.startswith("tests/") for n in names)
    meta = zipfile.ZipFile(wheel).read(next(n for n in names if n.endswith("METADATA")))
    assert b"Name: pslab-edu" in meta

    venv = tmp_path / "fresh"
    sh(sys.executable, "-m", "venv", venv)
    py = venv / "bin" / "python"
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    sh(py, ROOT / "tools" / "install_torch.py", env=env)  # the CPU build here, never CUDA's
    sh(py, "-m", "pip", "install", "-q", wheel, env=env)
    away = tmp_path / "elsewhere"  # not the checkout: `import pslab` must find the wheel's
    away.mkdir()
    out = sh(py, "-c", QUICK_START, cwd=away, env=env)
    assert "QUICK START 0.925 111.82" in out, out  # the README's numbers
    assert "TIKZ" in out, out
    if shutil.which("cc"):  # a C compiler: the wheel holds the compiled loops (setup.py)
        assert "COMPILED True" in out, out
    notebook = away / "00_start_here.ipynb"
    notebook.write_text((ROOT / "notebooks" / "00_start_here.ipynb").read_text())
    (away / "img").symlink_to(ROOT / "notebooks" / "img")
    sh(venv / "bin" / "jupyter", "nbconvert", "--to", "notebook", "--execute", "--inplace",
       notebook, cwd=away, env=env)
    cells = json.loads(notebook.read_text())["cells"]
    errors = [o for c in cells for o in c.get("outputs", []) if o.get("output_type") == "error"]
    assert not errors and any(c.get("outputs") for c in cells)
