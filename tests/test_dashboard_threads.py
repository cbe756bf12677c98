"""A dashboard answered from two threads, as in JupyterLab 4.4+ with ipykernel 7: the widgets'
comm messages run on a subshell's thread with its own event loop (JupyterLab's default
"commsOverSubshells"), what the cell started runs on the main thread's (pslab.notebook.turns).

The browser test met it: notebook 01's dashboard at 16 workers, async, stuck on the status
"ValueError: generator already executing" (and, before, "TypeError: 'NoneType' object is not an
iterator"): the why-line's search advanced by a turn on each thread at once."""
from __future__ import annotations

import asyncio
import contextlib
import html
import threading
import time

from pslab.notebook.dashboard import is_faded
from pslab.notebook.widgets import Dashboard

WAIT = 1.5  # s: how long one side waits for the other to reach its point (it does at once
# where nothing keeps the threads apart; with the fix the other side waits for this one)


def test_a_slider_moved_on_the_comm_thread_while_a_why_run_is_on_the_main_thread():
    """The main thread's search is between one run and its next turn (its status line being
    written) when a slider moves on the comm thread, whose settle starts a search of its own
    and runs it; the main thread's turn then comes. Every callback takes its turn: no error,
    "ready" with the new values' numbers and why-line, nothing left running."""
    dashboards: list[Dashboard] = []
    between, b_in_run, stop = threading.Event(), threading.Event(), threading.Event()
    main_thread: list[threading.Thread] = []

    def between_runs(change) -> None:  # the main thread's search writes its next status line
        if (threading.current_thread() is main_thread[0] and not between.is_set()
                and 'data-state="busy"' in change["new"] and "trying" in change["new"]):
            between.set()
            b_in_run.wait(WAIT)  # (unfixed: the comm thread's search is in a run by now)

    async def main_side() -> None:  # the cell: the dashboard's first settle and its search
        dash = Dashboard("000", settle_delay=0.01, mode="async", lr=10.0)
        assert dash._finishing is not None, "no search running on the main thread"
        dash.status.observe(between_runs, names="value")
        dashboards.append(dash)
        while not stop.is_set():
            await asyncio.sleep(0.005)

    def in_run(cache_get):
        def get(settings, numerics):
            if (threading.current_thread() is not main_thread[0] and numerics
                    and settings.lr < 10.0 and not b_in_run.is_set()):
                b_in_run.set()  # a run of the comm thread's search: hold it a while
                time.sleep(WAIT / 2)
            return cache_get(settings, numerics)
        return get

    async def comm_side() -> None:  # a slider moved in the page, answered on this thread
        while not between.is_set() and not stop.is_set():
            await asyncio.sleep(0.002)
        dash = dashboards[0]
        dash.view.cache.get = in_run(dash.view.cache.get)
        dash.controls["workers"].value = 5
        while not stop.is_set():
            await asyncio.sleep(0.005)

    errors: list[BaseException] = []

    def run(side) -> None:
        try:
            asyncio.run(side())
        except BaseException as exc:  # noqa: BLE001 - reported by the test
            errors.append(exc)
            stop.set()

    threads = [threading.Thread(target=run, args=(side,), name=name, daemon=True)
               for side, name in ((main_side, "main"), (comm_side, "comm"))]
    main_thread.append(threads[0])
    for t in threads:
        t.start()
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not stop.is_set():
            time.sleep(0.05)
            if not dashboards or not between.is_set():
                continue
            dash = dashboards[0]
            with getattr(dash, "_turns", contextlib.nullcontext()):  # between two callbacks
                if (dash.settings.workers == 5 and not dash.pending
                        and dash._ahead_handle is None
                        and 'data-state="busy"' not in dash.status.value):
                    break
    finally:
        stop.set()
        for t in threads:
            t.join(30)
    assert not errors, errors
    dash = dashboards[0]
    assert dash.errors == [], dash.errors
    assert 'data-state="ready"' in dash.status.value, dash.status.value
    assert dash.numbers_for == dash.settings and dash.settings.workers == 5
    assert "5 workers" in dash.describe()
    why = html.unescape(dash.why.value)
    assert "DIVERGED" in why and "all 5 pushes" in why and not is_faded(dash.why), why
    assert not any(t.is_alive() for t in threads)
