"""The install files agree: environment.yml lists what pyproject.toml asks for."""
import re
import tomllib
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
CONDA_NAMES = {"torch": "pytorch"}  # the same package under conda-forge's name


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
    assert "torch==2.13.0" in make  # the CPU build on disk, never a CUDA download


def test_import_is_light_and_every_public_name_resolves():
    # A script that only trains must not pay for matplotlib or ipywidgets (they load on first use).
    import subprocess
    import sys

    code = ("import sys, pslab; heavy = [m for m in ('matplotlib', 'ipywidgets') "
            "if m in sys.modules]; print(heavy)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"

    import pslab

    for name in pslab.__all__:
        value = getattr(pslab, name)
        assert value is not None
        if name.startswith("plot_") or name in ("tikz", "compare", "dashboard"):
            assert callable(value) and value.__name__ == name, name
