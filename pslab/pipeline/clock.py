"""One pipeline step on the virtual clock: every rank runs its action list in order, each action
as soon as the rank is free and its input has arrived.

Because a rank's list fixes its order, each start follows from two numbers, when the rank is
free and when the input arrived (Lindley's recursion, as engine.Resource books a shard): no
event heap is needed. Activations go down the pipeline and gradients back up over the links
between ranks; each directed link is an engine.Resource serving one transfer at a time (links
are full duplex: the two directions do not share), a transfer taking the Cluster's latency +
bytes / bandwidth. Sends do not stop the sender's compute (PyTorch's isend). Two stages on
the same rank (the tip of ZB-V's V) hand over in memory, at no cost.

By default a message moves as soon as it is sent (the papers' figures). With `late`, it moves
only once the receiving rank has reached the action that needs it: how PyTorch's single-stage
schedule classes (GPipe, 1F1B) run on gloo, which posts a receive just before its action and
sends a message only once its receive is posted, so each such transfer is waited for in full
instead of overlapping the receiver's compute (measured across hosts: bench/pipeline_speed.py).
"""
from __future__ import annotations

from typing import Callable, NamedTuple

from ..engine import Resource
from .schedules import Action


class Op(NamedTuple):
    """One action as run: its rank, virtual stage, kind (F, B, I, W), micro-batch and times."""

    rank: int
    stage: int
    kind: str
    micro: int
    start: float
    end: float


class Transfer(NamedTuple):
    """Bytes on a link: an activation (down) or a gradient (up) of one micro-batch."""

    src: int
    dst: int
    what: str  # "activation" or "gradient"
    micro: int
    start: float
    end: float


class Deadlock(RuntimeError):
    """A schedule whose ranks all wait for inputs that never come."""


def execute(lists: list[list[Action]], where: list[int], seconds: dict[tuple[int, str], float],
            link_time: float, links: dict[tuple[int, int], Resource], start: float,
            on_action: Callable[[Action], None] | None = None, late: bool = False
            ) -> tuple[list[Op], list[Transfer]]:
    """Run one step's lists from time `start`; returns the ops and the transfers, each rank's
    ops in its list's order. seconds[(stage, kind)]: an action's duration; link_time: one
    transfer's seconds (0: free links); links: the directed links' resources, (src, dst) ->
    Resource, made on first use and kept across steps. on_action(action) runs each action's
    arithmetic, in an order where every input exists (the order they are timed in). late: a
    transfer starts no earlier than its receiver reaching the action that needs it."""
    last = len(where) - 1
    arrive_f: dict[tuple[int, int], float] = {}  # (stage, micro) -> its input is there
    arrive_b: dict[tuple[int, int], float] = {}  # (stage, micro) -> its output's gradient
    f_end: dict[tuple[int, int], float] = {}
    i_end: dict[tuple[int, int], float] = {}
    ops: list[Op] = []
    transfers: list[Transfer] = []
    ptr = [0] * len(lists)
    free = [start] * len(lists)
    left = sum(map(len, lists))

    posted: dict[tuple[str, int, int], tuple[int, int, str]] = {}  # late: sent, not moved

    def send(src: int, stage: int, micro: int, now: float, what: str,
             key: tuple[str, int, int]) -> float:
        dst = where[stage]
        if dst == src or not link_time:
            return now
        if late:  # moved when the receiver asks for it (`move`)
            posted[key] = (src, dst, what)
            return now
        return move(src, dst, what, micro, now)

    def move(src: int, dst: int, what: str, micro: int, now: float) -> float:
        link = links.get((src, dst))
        if link is None:
            link = links[(src, dst)] = Resource()
        a, b = link.book(now, link_time)
        transfers.append(Transfer(src, dst, what, micro, a, b))
        return b

    waiting: dict[tuple[str, int, int], int] = {}  # an input not there yet -> its rank
    ready = list(range(len(lists)))[::-1]  # ranks that can go on, rank 0 first

    def arrived(key: tuple[str, int, int], when: float, table: dict) -> None:
        table[key[1:]] = when
        if key in waiting:
            ready.append(waiting.pop(key))

    while ready:  # each rank runs until an input is missing, then waits for exactly that one
        r = ready.pop()
        actions, i, t = lists[r], ptr[r], free[r]
        while i < len(actions):
            action = actions[i]
            k, kind, mb = action
            if kind == "F":
                key, table = ("F", k, mb), arrive_f
            elif kind == "W":
                key, table = ("I", k, mb), i_end
            elif k == last:  # B or I: the loss (last stage) or the gradient from after
                key, table = ("E", k, mb), f_end
            else:
                key, table = ("B", k, mb), arrive_b
            dep = start if kind == "F" and k == 0 else table.get(key[1:])
            if dep is None:
                waiting[key] = r
                break
            if key in posted:  # late: sent at `dep`, asked for now (`t`)
                src, dst, what = posted.pop(key)
                dep = move(src, dst, what, mb, t if t > dep else dep)
            begin = t if t > dep else dep
            t = begin + seconds[(k, kind)]
            ops.append(Op(r, k, kind, mb, begin, t))
            if on_action is not None:
                on_action(action)
            if kind == "F":
                arrived(("E", k, mb), t, f_end)
                if k < last:
                    arrived(("F", k + 1, mb), send(r, k + 1, mb, t, "activation",
                                                   ("F", k + 1, mb)), arrive_f)
            elif kind != "W":
                if kind == "I":
                    arrived(("I", k, mb), t, i_end)
                if k:
                    arrived(("B", k - 1, mb), send(r, k - 1, mb, t, "gradient",
                                                   ("B", k - 1, mb)), arrive_b)
            i += 1
            left -= 1
        ptr[r], free[r] = i, t
    if left:
        stuck = {r: str(lists[r][ptr[r]]) for r in range(len(lists)) if ptr[r] < len(lists[r])}
        raise Deadlock(f"every rank waits for an input that never comes: {stuck}")
    return ops, transfers
