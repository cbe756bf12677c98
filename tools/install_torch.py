"""Install torch==2.13.0 into this Python without ever pulling a CUDA build on a CPU machine.

    python tools/install_torch.py            # what `make install` runs first

- A machine with an NVIDIA GPU (`nvidia-smi -L` lists one) gets pip's ordinary torch, which on
  Linux is the CUDA build (set TORCH_INDEX to pick another CUDA index).
- Any other machine gets the CPU build. pip is first asked, in a dry run, what it would install:
  where that is already a CPU build (a local wheel, as on the course machines, or macOS/Windows
  wheels) it is installed as it is, in seconds; where it would pull nvidia-* libraries (an
  ordinary Linux laptop: several GB), torch comes from PyTorch's CPU-only wheel index instead.

Standard library only: it runs before anything else is installed.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from importlib import metadata
from pathlib import Path

TORCH = "torch==2.13.0"
CPU_INDEX = "https://download.pytorch.org/whl/cpu"


def installed_version() -> str | None:
    try:
        return metadata.version("torch")
    except metadata.PackageNotFoundError:
        return None


def has_nvidia_gpu() -> bool:
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return False
    out = subprocess.run([smi, "-L"], capture_output=True, text=True)
    return out.returncode == 0 and "GPU" in out.stdout


def pulls_cuda(report: dict) -> bool:
    """True when a pip install report would bring CUDA: nvidia-* or cuda-* packages (PyPI's
    Linux torch 2.13.0 pulls cuda-toolkit, nvidia-cudnn-cu13, ...) or a +cu build of torch."""
    for item in report.get("install", []):
        name = item["metadata"]["name"].lower()
        version = item["metadata"]["version"]
        if name.startswith(("nvidia-", "cuda-")) or (name == "torch" and "+cu" in version):
            return True
    return False


def dry_run(pip: list[str]) -> dict:
    """What `pip install torch==2.13.0` would install here (resolves, downloads nothing big)."""
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "report.json"
        subprocess.run([*pip, "install", "--dry-run", "--ignore-installed", "--quiet",
                        "--report", str(report), TORCH], check=True)
        return json.loads(report.read_text())


def command(pip: list[str]) -> list[str]:
    """The pip command that installs torch on this machine (see the module docstring)."""
    if os.environ.get("TORCH_INDEX"):
        return [*pip, "install", TORCH, "--index-url", os.environ["TORCH_INDEX"]]
    if has_nvidia_gpu() or not pulls_cuda(dry_run(pip)):
        return [*pip, "install", TORCH]
    return [*pip, "install", TORCH, "--index-url", CPU_INDEX]


def main() -> int:
    pip = [sys.executable, "-m", "pip"]
    have = installed_version()
    if have is not None and have.split("+")[0] == TORCH.split("==")[1]:
        print(f"torch {have} is installed")
        return 0
    cmd = command(pip)
    print("installing torch:", " ".join(cmd[2:]), flush=True)
    return subprocess.run([*cmd, "--quiet"]).returncode


if __name__ == "__main__":
    sys.exit(main())
