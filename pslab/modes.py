"""Update modes of figure 000 as policies over one engine: sync, async and bounded staleness.

A policy answers two questions and nothing else:
- how many pushes the server averages into one update (`aggregate`), and
- when a worker may start its next step (`waits_for_update`, `may_start`).
"""
from __future__ import annotations

import math

from .checks import integer


class Policy:
    name = "policy"
    waits_for_update = False  # True: after pushing, wait for the update, then fetch (a barrier)
    bound = math.inf  # how many steps a worker may run ahead of the slowest one

    def aggregate(self, workers: int) -> int:
        return 1

    def may_start(self, step: int, slowest_pushed: int) -> bool:
        """May a worker start push number `step` (0-based) when the slowest has pushed this many?"""
        return step - slowest_pushed <= self.bound

    def __repr__(self) -> str:
        return self.name


class Sync(Policy):
    """A barrier: the server averages all workers' gradients, makes one update, then all fetch."""

    name = "sync"
    waits_for_update = True
    bound = 0

    def aggregate(self, workers: int) -> int:
        return workers


class Async(Policy):
    """Every push is applied when it arrives; no worker ever waits for another."""

    name = "async"


class SSP(Policy):
    """Stale synchronous parallel: no worker starts step t+s+1 before all have pushed step t.

    Pushes are applied one by one as in async; SSP(s) with s >= steps is exactly async.
    """

    def __init__(self, s: int):
        self.bound = integer("s (the SSP staleness bound)", s, low=0)
        self.name = f"SSP({self.bound})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SSP) and other.bound == self.bound

    def __hash__(self) -> int:
        return hash(("SSP", self.bound))


MODES = {"sync": Sync, "async": Async}


def policy_for(mode: str | Policy) -> Policy:
    if isinstance(mode, Policy):
        return mode
    if isinstance(mode, str) and mode in MODES:
        return MODES[mode]()
    raise ValueError(f"mode must be 'sync', 'async' or pslab.SSP(s) with an integer s >= 0 "
                     f"(got {mode!r})")
