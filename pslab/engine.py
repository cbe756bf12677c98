"""The clock of every figure: a discrete-event loop and the resources that queue on it.

Nothing here knows about gradients or weights (SimPy's split: engine, resources, actors). The
clock calls back into the actors in time order; ties are broken by the order events were
scheduled, so a run is the same every time.

Layer: the clock, at the bottom (README, "How it works"): it imports no pslab module;
everything else is built on it.
"""
from __future__ import annotations

import gc
import math
import signal
import threading
from contextlib import contextmanager
from heapq import heapify, heappop, heappush
from typing import Any, Callable, Iterable, Iterator


URGENT = 2**62  # Clock.first's events sort before every other at their time


class Clock:
    """A heap of timed callbacks, run in (time, scheduling order).

    queue: the pending events as a heap of (time, order, fn, args); read it, schedule with `at`.
    scheduled: how many events were ever scheduled (the next one's `order`: ties run in it).
    """

    def __init__(self) -> None:
        self.now = 0.0
        self.queue: list[tuple[float, int, Callable[..., Any], tuple]] = []
        self.scheduled = 0
        self.stopped = False  # True when run() ended on interrupt()
        self._stop_asked = False

    def at(self, time: float, fn: Callable[..., Any], *args: Any) -> None:
        """Call fn(*args) at virtual time `time` (never earlier than now)."""
        now = self.now
        heappush(self.queue, (time if time > now else now, self.scheduled, fn, args))
        self.scheduled += 1

    def first(self, time: float, fn: Callable[..., Any], *args: Any) -> None:
        """Call fn(*args) at `time` before the events `at` schedules for that time (SimPy's
        urgent events): a message that has arrived by a moment is taken before anything else
        happens at it. Among themselves these run in the order they were scheduled."""
        now = self.now
        heappush(self.queue, (time if time > now else now, self.scheduled - URGENT, fn, args))
        self.scheduled += 1

    def run(self, until: float | None = None) -> float:
        """Run every event, or until `interrupt()`; returns the time of the last one run.
        until: run only the events at times up to `until` (a checkpoint's moment), leaving the
        rest pending: the clock moves no further than the last event run."""
        heap = self.queue
        try:
            if until is not None:
                while heap and heap[0][0] <= until:
                    self.now, _, fn, args = heappop(heap)
                    fn(*args)
                return self.now
            while heap:
                self.now, _, fn, args = heappop(heap)
                fn(*args)
        except Stopped as stop:
            self.now = stop.now
            self.stopped = True
        return self.now

    def step(self) -> None:
        """Run the next event (a stop raises `Stopped`, leaving the clock where it was)."""
        time, _, fn, args = heappop(self.queue)
        if time > self.now:
            self.now = time
        fn(*args)

    @property
    def idle(self) -> bool:
        """No event is pending."""
        return not self.queue

    def pending(self) -> list[tuple[float, int, Callable[..., Any], tuple]]:
        """The pending events in the order they will run."""
        return sorted(self.queue)

    def take(self, fns: tuple) -> list[tuple[float, int, Callable[..., Any], tuple]]:
        """Take the pending events that call one of `fns` off the clock (equal methods count:
        a checkpoint's events hold equal, not identical, ones); returns them in their order."""
        mine = sorted(item for item in self.queue if item[2] in fns)
        self.queue[:] = [item for item in self.queue if item[2] not in fns]
        heapify(self.queue)
        return mine

    def put_back(self, events: Iterable[tuple[float, int, Callable[..., Any], tuple]]) -> None:
        """Put events (as `take` or `pending` gave them) back on the clock."""
        self.queue += events
        heapify(self.queue)

    def restore(self, now: float, scheduled: int,
                events: Iterable[tuple[float, int, Callable[..., Any], tuple]]) -> None:
        """Set the clock to a saved moment: its time, its count and its pending events."""
        self.now, self.scheduled = now, scheduled
        self.queue = []
        self.put_back(events)

    @property
    def stopping(self) -> bool:
        """`interrupt()` was called: a long event may end early, leaving nothing half-done."""
        return self._stop_asked

    def interrupt(self) -> None:
        """Stop `run` before the next event, never inside one (safe from a signal handler).

        An event changes the weights, the timeline and the history together; stopping between
        two events leaves them consistent. The stop is an event that sorts before every other
        (time -inf), so the running loop needs no flag to check.
        """
        if not self._stop_asked:  # a second stop event would tie with the first in the heap
            self._stop_asked = True
            heappush(self.queue, (-math.inf, -1, _stop, (self.now,)))


class Stopped(Exception):
    """Raised by the stop event: carries the time the clock had reached."""

    def __init__(self, now: float):
        self.now = now


def _stop(now: float) -> None:
    raise Stopped(now)


class Resource:
    """Serves one job at a time, first come first served (a server shard, figure 000).

    Because the clock hands out requests in time order, the start of each job follows from
    when the previous one ends (Lindley's recursion): no queue object and no extra events.
    """

    __slots__ = ("free_at",)  # read and written ~10^6 times in a large run: no __dict__

    def __init__(self) -> None:
        self.free_at = 0.0

    def book(self, now: float, duration: float) -> tuple[float, float]:
        """Queue a job asked for at `now`; returns its (start, end)."""
        start = self.free_at if self.free_at > now else now
        self.free_at = start + duration
        return start, self.free_at


class Shaped(Resource):
    """A Resource behind a token bucket (a shaper's, `tc tbf`): while it is idle it earns
    credit, one second per second up to `credit` seconds, and the next job spends it: it ends
    that much sooner, but never sooner than its `fixed` seconds (a message's cost besides its
    bytes) after it starts. A job that waited in line finds no credit: the one before it
    ended just then. A line never used (free_at 0) has been idle for ever: its first job
    finds all of the credit. The credit a job leaves unspent is not kept for the next one
    (which earns its own while the line is idle): a job is booked from `free_at` alone, as a
    Resource's is, so a checkpoint holds nothing more."""

    __slots__ = ("credit", "fixed")

    def __init__(self, credit: float, fixed: float) -> None:
        super().__init__()
        self.credit, self.fixed = credit, fixed

    def book(self, now: float, duration: float) -> tuple[float, float]:
        free = self.free_at
        start = free if free > now else now
        idle = start - free if free else self.credit
        saved = min(self.credit, idle, duration - self.fixed)
        self.free_at = start + duration - (saved if saved > 0 else 0.0)
        return start, self.free_at


@contextmanager
def stop_on_interrupt(clock: Clock) -> Iterator[None]:
    """Inside the block, Ctrl-C (or Jupyter's stop button) stops the clock between two events,
    so what was computed is consistent; a second Ctrl-C interrupts at once, as usual.
    Signal handlers live in the main thread only: elsewhere nothing changes."""
    before = signal.getsignal(signal.SIGINT)
    if threading.current_thread() is not threading.main_thread() or before is None:
        yield  # None: a handler not set from Python, which we could not put back
        return

    def first(signum: int, frame: Any) -> None:
        signal.signal(signal.SIGINT, before)  # the next Ctrl-C is an ordinary one
        clock.interrupt()

    signal.signal(signal.SIGINT, first)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, before)


@contextmanager
def collector_paused(promote: bool = True) -> Iterator[None]:
    """The cyclic garbage collector off inside the block; with `promote`, what the block
    allocated is then handed straight to the collector's oldest generation.

    A run allocates up to ~10^6 spans and frees none: the collector would rescan them again and
    again during the run (half its time), and after it, once on, walk them three times within
    the next few allocations (young, middle, then a full collection; ~0.15 s) to learn they are
    alive. So: collect the caller's young objects first (cheap: few), leaving only the run's
    own objects young; after the run, freeze + unfreeze splices the young lists into the oldest
    generation (O(1), nothing walked). A run makes no reference cycles, so nothing that could
    be freed is kept. That first collection costs ~0.2 ms: a small run passes promote=False.
    Only the plain switch-off when the program froze objects itself (unfreeze would release
    those too), and nothing at all when the collector was already off."""
    if not gc.isenabled():
        yield
        return
    promote = promote and gc.get_freeze_count() == 0
    if promote:
        gc.collect(1)
    gc.disable()
    try:
        yield
    finally:
        if promote:
            gc.freeze()
            gc.unfreeze()
        gc.enable()
