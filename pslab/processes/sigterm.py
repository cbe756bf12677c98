"""SIGTERM inside a block that must clean up: raised there as `Terminated`, so that the block's
`finally` (and its `__exit__`s) stop its processes and remove what it made; then the process
ends by the signal, as SIGTERM asks (its exit status says so).

    with Sigterm() as term:        # a SIGTERM here raises Terminated where the program is
        with term.held():          # here it waits for the end of the section (a child being
            start_a_child()        # started must be known before anything is cleaned up)
        ...

A handler the program set itself runs instead, and decides (it may raise, or return and let the
block go on): every SIGTERM reaches it, those held included, once their section has ended.
SIGTERM ignored, a handler not set from Python, or a block outside the main thread (where
Python runs handlers): left as they are. Blocks nest: an inner one passes the signal to the
outer one's handler, and the process ends when the outermost block is left.
"""
from __future__ import annotations

import os
import signal
import threading
from contextlib import contextmanager
from typing import Any, Iterator


class Terminated(SystemExit):
    """SIGTERM arrived inside a `Sigterm` block: raised there so that the block is left (and
    everything it made removed) before the process ends as the signal asks."""

    def __init__(self, signum: int):
        super().__init__(128 + signum)
        self.signum = signum


class Sigterm:
    """A block where SIGTERM (its default action) raises `Terminated` once; see the module."""

    def __init__(self) -> None:
        self._handler = self._on_sigterm  # one bound method, to know it when it is installed
        self._previous: Any = None  # the handler before ours (None: ours not installed)
        self._holding = 0  # sections where a SIGTERM waits
        self._pending: int | None = None  # a SIGTERM that waits
        self._raised = False  # Terminated raised: the process ends when the block is left

    def __enter__(self) -> "Sigterm":
        if threading.current_thread() is threading.main_thread():
            previous = signal.getsignal(signal.SIGTERM)
            if previous is not signal.SIG_IGN and previous is not None:
                self._previous = previous
                signal.signal(signal.SIGTERM, self._handler)
        return self

    def _on_sigterm(self, signum: int, frame: Any) -> None:
        if self._holding or self._raised:  # (after the first: the cleanup goes on)
            self._pending = signum
        elif callable(self._previous):
            self._previous(signum, frame)
        else:
            self._raised = True
            raise Terminated(signum)

    @contextmanager
    def held(self) -> Iterator[None]:
        """A SIGTERM inside this section is acted on at its end."""
        self._holding += 1
        try:
            yield
        finally:
            self._holding -= 1
            if not self._holding and self._pending is not None and not self._raised:
                signum, self._pending = self._pending, None
                self._on_sigterm(signum, None)

    def __exit__(self, kind: Any, error: Any, trace: Any) -> None:
        if self._previous is None:
            return
        previous, self._previous = self._previous, None
        if signal.getsignal(signal.SIGTERM) == self._handler:  # (another's since: theirs)
            signal.signal(signal.SIGTERM, previous)
        if self._raised and previous is signal.SIG_DFL and \
                signal.getsignal(signal.SIGTERM) is signal.SIG_DFL:
            os.kill(os.getpid(), signal.SIGTERM)  # ends the process here, by the signal
