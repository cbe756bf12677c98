"""Shared test fixtures."""
import multiprocessing
import signal
import tempfile
import threading

import pytest


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
    # (pymp-*: the forkserver's own socket folder, made once per Python, removed at its exit)
    assert [p for p in folder.iterdir() if not p.name.startswith("pymp-")] == []
    assert [p for p in multiprocessing.active_children() if p.name.startswith("pslab-")] == []
