"""The install files agree: environment.yml lists what pyproject.toml asks for."""
import re
import tomllib
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
CONDA_NAMES = {"torch": "pytorch", "build": "python-build"}  # the same packages under conda-forge's names


def requirement(text: str) -> tuple[str, str]:
    name, spec = re.match(r"([A-Za-z0-9_.\-]+)\s*(.*)", text.strip()).groups()
    return name.lower(), spec.replace(" ", "")


def test_environment_matches_pyproject():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    wanted = dict(requirement(r) for r in project["dependencies"])
    wanted.update(requirement(r) for extra in project["optional-dependencies"].values()
                  for r in extra)
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    conda = dict(requirement(d) for d in env["dependencies"] if isinstance(d, str))
    pip = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict))
    assert "-e ." in pip, "the environment must install pslab itself"
    for name, spec in wanted.items():
        assert conda.get(CONDA_NAMES.get(name, name)) == spec, name
    assert set(conda) - {"python", "pip"} == {CONDA_NAMES.get(n, n) for n in wanted}
    assert conda["python"].lstrip(">=") == project["requires-python"].lstrip(">=")


def test_readme_commands_are_the_makefile_targets():
    readme, make = (ROOT / "README.md").read_text(), (ROOT / "Makefile").read_text()
    for target in ("lab", "test"):
        assert f"make {target}" in readme and f"\n{target}:" in make
    assert "make test" in (ROOT / ".ci" / "run").read_text()
    # torch before pslab, through the installer that never takes a CUDA build without a GPU
    assert "$(PY) tools/install_torch.py" in make
    assert make.index("tools/install_torch.py\n") < make.index('pip install -q -e ".[test]"')


@pytest.mark.processes
def test_import_is_light_and_every_public_name_resolves():
    # A script that only trains must not pay for matplotlib or ipywidgets (they load on first use).
    import subprocess
    import sys

    code = ("import sys, pslab; heavy = [m for m in ('matplotlib', 'ipywidgets', 'anywidget') "
            "if m in sys.modules]; print(heavy)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"

    import pslab

    for name in pslab.__all__:
        value = getattr(pslab, name)
        assert value is not None
        if name.startswith("plot_") or name in ("tikz", "compare", "dashboard"):
            assert callable(value) and value.__name__ == name, name


@pytest.mark.processes
def test_license_is_an_spdx_string_and_builds_without_a_deprecation_warning(tmp_path):
    import subprocess
    import sys

    code = ("import setuptools.build_meta as b, sys; "
            f"print(b.prepare_metadata_for_build_wheel({str(tmp_path)!r}))")
    out = subprocess.run([sys.executable, "-W", "always", "-c", code], cwd=ROOT,
                         capture_output=True, text=True, check=True)
    assert "Deprecat" not in out.stdout + out.stderr, out.stderr[-2000:]
    meta = (tmp_path / out.stdout.strip().splitlines()[-1] / "METADATA").read_text()
    assert "License-Expression: MIT" in meta


def _installer():
    import importlib.util

    spec = importlib.util.spec_from_file_location("install_torch",
                                                  ROOT / "tools" / "install_torch.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _report(*packages: tuple[str, str]) -> dict:
    return {"install": [{"metadata": {"name": n, "version": v}} for n, v in packages]}


def test_torch_installer_tells_a_cuda_build_from_a_cpu_build():
    t = _installer()
    assert t.pulls_cuda(_report(("torch", "2.13.0"), ("cuda-toolkit", "13.0.3.0")))
    assert t.pulls_cuda(_report(("torch", "2.13.0"), ("nvidia-cudnn-cu13", "9.20.0.48")))
    assert t.pulls_cuda(_report(("torch", "2.13.0+cu128")))
    assert not t.pulls_cuda(_report(("torch", "2.13.0+cpu"), ("sympy", "1.14.0")))
    assert not t.pulls_cuda(_report(("torch", "2.13.0"), ("filelock", "3.0")))  # macOS wheel


@pytest.mark.processes
def test_torch_installer_on_a_machine_without_a_gpu(monkeypatch):
    """Here (no GPU): the local CPU wheel as it is; with pip's local wheels and indexes hidden,
    as on a laptop, PyPI's torch would pull CUDA, so the CPU index is used instead."""
    import os
    import subprocess
    import sys

    t = _installer()
    monkeypatch.setattr(t, "has_nvidia_gpu", lambda: False)
    monkeypatch.delenv("TORCH_INDEX", raising=False)
    pip = [sys.executable, "-m", "pip"]
    here = t.command(pip)
    if "--index-url" in here:
        pytest.skip("no local CPU wheel of torch on this machine")
    assert here == [*pip, "install", "torch==2.13.0"]
    monkeypatch.setenv("PIP_CONFIG_FILE", os.devnull)  # no find-links, no local indexes
    monkeypatch.setenv("PIP_FIND_LINKS", "")
    try:
        laptop = t.command(pip)
    except subprocess.CalledProcessError:  # a network hiccup must not fail the suite
        pytest.skip("the package index is out of reach")
    assert laptop == [*pip, "install", "torch==2.13.0", "--index-url", t.CPU_INDEX]


def test_readme_snippet_prints_what_the_readme_says():
    """The README's first code block, run as written: its commented numbers are this run's."""
    readme = (ROOT / "README.md").read_text()
    block = re.search(r"```python\n(import pslab\n.*?)```", readme, re.S).group(1)
    code = "\n".join(line for line in block.splitlines() if not line.startswith("run."))
    claim = re.search(r"run\.final_accuracy\s+# ([\d.]+): ([\d.]+) % test accuracy after (\d+) "
                      r"updates, at ([\d.]+) virtual seconds", block)
    assert claim, "the snippet states its accuracy, updates and makespan"
    scope: dict = {}
    exec(code, scope)  # noqa: S102 - the README's own example
    run = scope["run"]
    assert f"{run.final_accuracy:.3f}" == claim.group(1)
    assert f"{run.final_accuracy:.1%}" == claim.group(2) + "%"
    assert run.updates == int(claim.group(3))
    assert f"{run.makespan:.2f}" == claim.group(4)
    assert f"{run.final_accuracy:.1%} test accuracy".replace("%", " %") in readme
