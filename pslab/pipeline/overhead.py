"""What real processes add to every pipeline action, measured, and the clock charged with it.

A rank of PyTorch's pipelining runtime does more per action than the compute it was given:
inside each timed action its own forward/backward_one_chunk work, between actions the
schedule's bookkeeping and the posting of sends and receives. None of it is a link's time or
the compute, so the virtual clock does not have it; `action_cost` measures it on a run beside
the one to predict (on the same hosts, at the same load), and `charged` adds it to the
Pipeline's action times, one cost per action a rank runs; `placed` puts each part where
the process pays it. The clock itself is unchanged: a Pipeline not charged times as
before, bit for bit.
"""
from __future__ import annotations

import statistics
from typing import NamedTuple

from ..cluster import Cluster
from .mode import Pipeline
from .result import PipelineRun
from .simulated import durations

LETTER = {"forward": "F", "backward": "B", "backward-input": "I", "backward-weight": "W"}
WAITS = ("send", "recv")


class Cost(NamedTuple):
    """Seconds a process adds per action: inside it (beyond its sleep) and between actions."""

    inside: float
    between: float

    @property
    def total(self) -> float:
        return self.inside + self.between


def action_cost(run: PipelineRun) -> Cost:
    """Seconds a rank spends per action on neither its given compute nor a send or receive
    wait. total: per rank and step after the first, the time from its first action's start
    to its last action's end, less the waits in between and the actions' sleeps (the
    Pipeline's times), over the actions it ran; the median over ranks and steps. inside: the
    median of each action's time beyond its sleep; between: total − inside (at least 0).
    `run`: a measured run whose actions slept the Pipeline's times (processes.train_across)."""
    pipe = run.pipeline
    if pipe is None or pipe.times is None:
        raise ValueError("run must be a measured pipeline run whose actions slept the "
                         "Pipeline's times (processes.train_across)")
    sleep = durations(pipe, Cluster(), run.settings.hidden)
    mine: dict[tuple[int, int], list] = {}
    for s in run.timeline:
        if s.step and (s.kind in LETTER or s.kind in WAITS):
            mine.setdefault((s.worker, s.step), []).append(s)
    costs, inside = [], []
    for spans in mine.values():
        acts = [s for s in spans if s.kind in LETTER]
        if not acts:
            continue
        a, b = min(s.start for s in acts), max(s.end for s in acts)
        waits = sum(min(s.end, b) - max(s.start, a) for s in spans
                    if s.kind in WAITS and s.end > a and s.start < b)
        slept = [sleep[(0, LETTER[s.kind])] for s in acts]
        costs.append((b - a - waits - sum(slept)) / len(acts))
        inside += [s.duration - t for s, t in zip(acts, slept)]
    if not costs:
        raise ValueError("action_cost needs a measured run of at least 2 steps")
    total, part = statistics.median(costs), statistics.median(inside)
    return Cost(part, max(0.0, total - part))


def charged(pipe: Pipeline, cost: float) -> Pipeline:
    """`pipe` with every action `cost` seconds longer (a Cost's inside part): each of a rank's
    v chunks' F, B (or I and W) pays it, so F and W grow by v·cost and B by v·cost per action
    it holds (two, I and W, where the schedule splits it)."""
    if pipe.times is None:
        raise ValueError("pipe must give its times to be charged a cost per action "
                         "(got times=None)")
    if not cost >= 0:
        raise ValueError(f"cost must be seconds >= 0 (got {cost!r})")
    f, b, w = pipe.times
    extra = cost * pipe.chunks
    times = (f + extra, b + 2 * extra, w + extra) if pipe.split else (f + extra, b + extra, w)
    return Pipeline(stages=pipe.stages, microbatches=pipe.microbatches, schedule=pipe.schedule,
                    chunks=pipe.chunks, layers=pipe.layers, times=times,
                    replicas=pipe.replicas)


def placed(pipe: Pipeline, cost: Cost) -> tuple[Pipeline, float]:
    """(`pipe` charged, the clock's `after`) for a measured cost, where the processes pay it:
    inside on every action (`charged(pipe, cost.inside)`: PyTorch's *_one_chunk work, after
    the action's input is there) and between as `after` (after the action's sends, before
    its next receives and their wait: it delays the rank, not its messages). Every PyTorch
    schedule class runs an action's sends right after its compute, the multi-stage runtime
    too (its plan puts each SEND right after its compute); the work between two actions is
    posting sends and receives (probe runs at load 4-10: ~0.15-0.2 ms a gap plus ~0.13 ms
    for each send or receive posted in it), all of it before the wait for the next input, so
    a rank that waits for an input hides it. Charging it on the action instead puts it after
    the input has come and makes a rank that waits slower than it is."""
    return charged(pipe, cost.inside), cost.between
