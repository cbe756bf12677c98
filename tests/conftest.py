"""Shared test fixtures."""
import signal
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
