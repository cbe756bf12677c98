"""A dashboard's callbacks take turns, whichever thread the kernel runs them on.

ipykernel 7 runs a widget's comm messages on a subshell's thread when the page asks for it, and
JupyterLab 4.4+ does by default (its setting "commsOverSubshells": one subshell per comm
target). That thread has its own event loop; what a cell starts runs on the main thread's. So
a slider moved in the page is answered on the subshell's thread, while the settle, the
why-line's search or the frames sent ahead that the cell (or an earlier message) scheduled run
on the main thread's loop, at the same time, on the same dashboard.

Two rules keep that sound, whatever thread calls:
- `Serial`: the methods marked `@serial` hold the object's lock (re-entrant: one may call
  another), so one callback runs at a time and each sees the state the last one left;
- `Turn`: a callback due on the running loop is scheduled with its own `Turn` as its first
  argument, and the object keeps the `Turn` it still wants; a callback whose `Turn` is no
  longer kept was stopped (perhaps from the other thread, after its loop had already started
  it) and does nothing. `cancel()` works from any thread.
"""
from __future__ import annotations

import asyncio
import functools
import threading
from typing import Any, Callable, TypeVar

__all__ = ["Serial", "Turn", "serial", "running_loop"]

F = TypeVar("F", bound=Callable[..., Any])


class Serial:
    """An object whose `@serial` methods run one at a time across threads."""

    def __init__(self) -> None:
        self._turns = threading.RLock()


def serial(method: F) -> F:
    """Run `method` holding its object's lock (`Serial`)."""
    @functools.wraps(method)
    def one_at_a_time(self: Serial, *args: Any, **kwargs: Any) -> Any:
        with self._turns:
            return method(self, *args, **kwargs)
    return one_at_a_time  # type: ignore[return-value]


def running_loop() -> asyncio.AbstractEventLoop | None:
    """The event loop running on this thread (a kernel's main or subshell thread), or None
    (tests, scripts)."""
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


class Turn:
    """`callback(turn, *args)` due on `loop` after `delay` seconds (None: its next turn)."""

    def __init__(self, loop: asyncio.AbstractEventLoop, delay: float | None,
                 callback: Callable[..., None], *args: Any):
        self.loop = loop  # the next turn of a chain goes to the same loop
        self._handle: asyncio.Handle = (loop.call_soon(callback, self, *args) if delay is None
                                        else loop.call_later(delay, callback, self, *args))

    def cancel(self) -> None:
        """Drop it, from its loop's thread or another (a loop's own `cancel` is not safe from
        another thread); a callback already started still finds its `Turn` no longer kept."""
        try:
            if running_loop() is self.loop:
                self._handle.cancel()
            else:
                self.loop.call_soon_threadsafe(self._handle.cancel)
        except RuntimeError:  # that loop is closed (its subshell ended): nothing will run
            pass
