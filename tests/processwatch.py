"""The `processes` marker and `pytest --processes-check`.

`@pytest.mark.processes` marks a test that starts a process: a fork, a fresh Python, a
forkserver, torchrun, a notebook kernel, a shell tool. `python -m bench.flakes` runs the marked
tests pass after pass at load to show they do not flake; `pytest -m "not processes"` runs the
rest in a few minutes.

With `--processes-check` every process the pytest process starts is recorded (os.fork,
os.forkpty, os.posix_spawn[p], os.system and `_posixsubprocess.fork_exec`, which subprocess
(under its own name) and multiprocessing's forkserver and spawn starts go through) and charged
to the test whose setup, call or teardown is running; a test that started one without the mark
fails at its teardown, naming what it started. Processes started by those children (the forkserver's forks, a
launcher's workers) are theirs, not the test's. At the end the marked tests that started none
are listed: a session fixture that started its processes for an earlier test, or a mark that
is no longer needed. A test that uses a fixture in FIXTURES is marked at collection.
"""
from __future__ import annotations

import os
import platform
import subprocess
import threading

import _posixsubprocess
import pytest

MARK = "processes"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--processes-check", action="store_true", default=False,
                     help=f"fail a test that starts a process without @pytest.mark.{MARK}")


# Fixtures that start processes: a test that uses one is marked, whether or not it is the test
# whose setup starts them (a session fixture starts them for the first test that asks).
FIXTURES = {"torchrun"}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(MARK)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers",
                            f"{MARK}: the test starts a process (see tests/processwatch.py)")
    if config.getoption("--processes-check"):
        config.pluginmanager.register(Watch(), "processes-check")


class Watch:
    """Records the processes started from this process, per test (see the module docstring)."""

    def __init__(self) -> None:
        # platform.processor() runs `uname -p` once a Python and keeps the answer: asked here, the
        # first test that reads it is not charged with a process it did not start itself
        platform.processor()
        self.lock = threading.Lock()
        self.current: str | None = None
        self.started: dict[str, list[str]] = {}
        self.unmarked_failed = 0
        self.marked_idle: list[str] = []
        self.undo: list[tuple[object, str, object]] = []
        for owner, name, what in [(os, "fork", None), (os, "forkpty", None),
                                  (os, "posix_spawn", 1), (os, "posix_spawnp", 1),
                                  (os, "system", 0), (_posixsubprocess, "fork_exec", 0),
                                  (subprocess, "_fork_exec", 0)]:  # its own name for fork_exec
            if hasattr(owner, name):
                self._wrap(owner, name, what)

    def _wrap(self, owner: object, name: str, argv_at: int | None) -> None:
        original = getattr(owner, name)

        def started(*args, **kwargs):
            what = name
            if argv_at is not None and len(args) > argv_at:
                argv = args[argv_at]
                what += ": " + (argv if isinstance(argv, str) else " ".join(map(os.fsdecode, argv)))
            self.note(what)
            return original(*args, **kwargs)

        self.undo.append((owner, name, original))
        setattr(owner, name, started)

    def note(self, what: str) -> None:
        with self.lock:
            self.started.setdefault(self.current or "", []).append(what[:160])

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(self, item: pytest.Item, nextitem):
        self.current = item.nodeid
        yield
        self.current = None

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo):
        outcome = yield
        report = outcome.get_result()
        if report.when != "teardown":
            return
        started = self.started.get(item.nodeid, [])
        marked = item.get_closest_marker(MARK) is not None
        if started and not marked and report.outcome == "passed":
            self.unmarked_failed += 1
            report.outcome = "failed"
            more = f"\n  ... {len(started) - 5} more" if len(started) > 5 else ""
            shown = "\n  ".join(started[:5]) + more
            report.longrepr = (f"{item.nodeid} started {len(started)} process(es) without "
                               f"@pytest.mark.{MARK}:\n  {shown}")
        elif marked and not started:
            self.marked_idle.append(item.nodeid)

    def pytest_terminal_summary(self, terminalreporter) -> None:
        tr = terminalreporter
        tr.write_sep("-", "processes check")
        tr.write_line(f"tests that started processes: {sum(1 for k in self.started if k)}; "
                      f"without the mark: {self.unmarked_failed}")
        if self.marked_idle:
            tr.write_line(f"marked, started none this session ({len(self.marked_idle)}):")
            for nodeid in self.marked_idle:
                tr.write_line(f"  {nodeid}")

    def pytest_unconfigure(self) -> None:
        for owner, name, original in reversed(self.undo):
            setattr(owner, name, original)
        self.undo.clear()
