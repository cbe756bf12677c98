"""The README's `make lab`, run as a newcomer would: as root (a container, a course server) and
as an ordinary user. The server must answer on 127.0.0.1 with the repository root in its file
browser, open on the start notebook, trusted; then it is stopped, with every process it started.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
START = "notebooks/00_start_here.ipynb"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _get(url: str) -> tuple[int, str, bytes]:
    """(status, final URL after redirects, body) of a GET on the local server."""
    with urllib.request.urlopen(url, timeout=10) as r:  # noqa: S310 - 127.0.0.1 only
        return r.status, r.geturl(), r.read()


def _users() -> list[str]:
    if os.geteuid() != 0:
        return ["user"]
    # as root: also as an unprivileged user, where the checkout is readable by one
    other = shutil.which("runuser") and (ROOT / ".venv" / "bin" / "jupyter").exists()
    return ["root", "nobody"] if other else ["root"]


@pytest.mark.processes
def test_make_lab_allows_root_only_for_root():
    """JupyterLab refuses root without --allow-root, and an ordinary user must not get it."""
    def dry(*prefix: str) -> str:
        return subprocess.run([*prefix, "make", "-n", "--no-print-directory", "lab"], cwd=ROOT,
                              capture_output=True, text=True, check=True).stdout

    assert ("--allow-root" in dry()) == (os.geteuid() == 0)
    if os.geteuid() == 0 and shutil.which("runuser"):
        assert "--allow-root" not in dry("runuser", "-u", "nobody", "--")


@pytest.mark.timeout(300)
@pytest.mark.parametrize("user", _users())
def test_make_lab_serves_the_repository_root_on_the_start_notebook(user):
    if not (ROOT / ".venv" / ".installed").exists():
        pytest.skip("make install has not run (make test runs it first)")
    tmp = Path(tempfile.mkdtemp(prefix="pslab-make-lab-"))
    jupyter_dirs = {f"JUPYTER_{k}_DIR": str(tmp / k.lower()) for k in ("DATA", "CONFIG",
                                                                        "RUNTIME")}
    env = dict(os.environ, **jupyter_dirs, IPYTHONDIR=str(tmp / "ipython"), HOME=str(tmp))
    port = _free_port()
    cmd = ["make", "--no-print-directory", "lab",
           f"LAB_ARGS=--no-browser --port={port} --port-retries=0"]
    if user == "nobody":
        os.chmod(tmp, 0o777)
        cmd = ["runuser", "-u", "nobody", "--", "env",
               *(f"{k}={v}" for k, v in jupyter_dirs.items()),
               f"IPYTHONDIR={tmp / 'ipython'}", f"HOME={tmp}", *cmd]
    log_path = tmp / "lab.log"
    with open(log_path, "w") as log:
        proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
                                start_new_session=True)
    try:
        deadline, url = time.monotonic() + 120, None
        while url is None:
            text = log_path.read_text()
            if user == "nobody" and "Permission denied" in text:  # e.g. a venv on root's Python
                pytest.skip(f"this venv is not usable by nobody: {text[-300:]}")
            assert proc.poll() is None, f"make lab exited ({proc.returncode}):\n{text[-3000:]}"
            assert time.monotonic() < deadline, f"no server after 120 s:\n{text[-3000:]}"
            found = re.search(rf"http://127\.0\.0\.1:{port}/(\S*)\?token=(\w+)", text)
            if found:
                url = found
            time.sleep(0.5)
        path, token = url.groups()
        assert path == f"lab/tree/{START}", f"make lab opens {path}, not the start notebook"
        base = f"http://127.0.0.1:{port}"
        # the file browser's root is the repository: README, the library, the notebooks
        status, _, body = _get(f"{base}/api/contents?token={token}")
        names = {item["name"] for item in json.loads(body)["content"]}
        assert {"README.md", "pslab", "notebooks", "Makefile"} <= names
        # the bare address lands on the start notebook
        status, final, _ = _get(f"{base}/?token={token}")
        assert status == 200 and final.startswith(f"{base}/lab/tree/{START}"), final
        # and the server found the start notebook trusted: it marks every code cell so
        # (JupyterLab's "not trusted" shows when it does not)
        status, _, body = _get(f"{base}/api/contents/{START}?token={token}")
        cells = [c for c in json.loads(body)["content"]["cells"] if c["cell_type"] == "code"]
        assert cells and all(c["metadata"].get("trusted") for c in cells), \
            "the start notebook is not trusted"
        assert "is not trusted" not in log_path.read_text()
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)  # make, JupyterLab and any kernel
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=10)
        shutil.rmtree(tmp, ignore_errors=True)
    with pytest.raises(OSError):  # stopped: nothing answers any more
        _get(f"http://127.0.0.1:{port}/api/status")


@pytest.mark.processes
def test_make_present_trusts_the_presenter_notebook_before_serving_it(tmp_path):
    """`make present` signs notebooks/present.ipynb first, as `make lab` does its notebooks, so
    Voila shows no "not trusted" warning: its recipe's trust line, run here with a fresh
    Jupyter data folder, leaves the notebook's signature valid there."""
    import nbformat
    from nbformat.sign import NotebookNotary

    lines = subprocess.run(["make", "-n", "--no-print-directory", "present"], cwd=ROOT,
                           capture_output=True, text=True, check=True).stdout.splitlines()
    trust = [i for i, line in enumerate(lines) if "jupyter trust" in line
             and "notebooks/present.ipynb" in line]
    serve = [i for i, line in enumerate(lines) if "voila" in line]
    assert trust and serve and trust[0] < serve[0], lines
    jupyter = shutil.which("jupyter", path=str(Path(sys.executable).parent))
    if jupyter is None:
        pytest.skip("jupyter is not installed beside this Python")
    env = dict(os.environ, JUPYTER_DATA_DIR=str(tmp_path))
    subprocess.run([jupyter, "trust", "notebooks/present.ipynb"], cwd=ROOT, env=env,
                   check=True, capture_output=True, timeout=60)
    nb = nbformat.read(ROOT / "notebooks" / "present.ipynb", as_version=4)
    assert NotebookNotary(data_dir=str(tmp_path)).check_signature(nb)
