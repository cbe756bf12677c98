"""Shared test fixtures."""
import multiprocessing
import pathlib
import signal
import tempfile
import threading

import pytest
from processwatch import (  # noqa: F401 (the `processes` marker and its check)
    pytest_addoption, pytest_collection_modifyitems, pytest_configure)


@pytest.fixture
def ctrl_c_works():
    """SIGINT as in an ordinary terminal (Python's KeyboardInterrupt) for one test, whatever
    disposition the suite was started with: started in the background (`pytest &`, nohup, some
    CI runners), SIGINT is ignored, and a test of what Ctrl-C does would test nothing. Put back
    afterwards."""
    if threading.current_thread() is not threading.main_thread():
        pytest.skip("signal handlers live in the main thread")
    before = signal.getsignal(signal.SIGINT)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, before)


@pytest.fixture
def private_tmp(tmp_path, monkeypatch):
    """Temporary folders land here, to see that none is left behind (`nothing_left`)."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    return tmp_path


@pytest.fixture
def nothing_left():
    """A check that a run left no file in a folder and no pslab process alive."""
    return _nothing_left


def _nothing_left(folder):
    # pymp-*: multiprocessing's folder, made once per Python and removed at its exit: the
    # forkserver's socket, and a forkserver launch's run folder (pslab-run-*), which must go
    # with its run
    assert [p for p in folder.iterdir() if not p.name.startswith("pymp-")] == []
    # (this process's pymp-* may lie in an earlier test's folder: it is made once)
    mine = multiprocessing.current_process()._config.get("tempdir")
    pymp = [*folder.glob("pymp-*"), *([pathlib.Path(mine)] if mine else [])]
    assert [q for p in pymp if p.is_dir() for q in p.iterdir() if q.name.startswith("pslab-")] \
        == []
    assert [p for p in multiprocessing.active_children() if p.name.startswith("pslab-")] == []


@pytest.fixture(scope="session")
def torchrun(tmp_path_factory):
    """`torchrun(nproc, *args)`: the run folder of `python -m pslab.processes *args` launched
    by torchrun on loopback, launched once a session for the same arguments (a launch is
    nproc + 1 fresh Pythons importing torch: 10-17 s at load 10); `again=True` launches anew.
    Tests read it, or copy it before changing anything."""
    import subprocess
    import sys
    from pathlib import Path

    made: dict = {}

    def launch(nproc: int, *args: str, again: bool = False):
        if again or (nproc, args) not in made:
            out = tmp_path_factory.mktemp("torchrun") / "run"
            done = subprocess.run([str(Path(sys.executable).with_name("torchrun")), "--standalone",
                                   "--log-dir", str(tmp_path_factory.getbasetemp() / "torchelastic"),
                                   "--nproc-per-node", str(nproc), "-m", "pslab.processes", *args,
                                   "--out", str(out)], capture_output=True, text=True, timeout=240)
            assert done.returncode == 0, done.stderr[-2000:]
            if again:
                return out
            made[nproc, args] = out
        return made[nproc, args]

    return launch
