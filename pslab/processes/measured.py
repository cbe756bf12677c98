"""Measured reports -> a `Run`: the same timeline, history and weights as a simulated run.

Processes report spans with real seconds since time zero. Workers report their compute blocks;
shards report the transfers on their links (fetch, push) and their updates, with the new keys
of each update. The idle blocks are what a worker's own timeline leaves uncovered. Each history
record is the model the server held when an update (sync: a round; async: one push) was on every
shard, scored as the simulation scores it.
"""
from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections import defaultdict
from dataclasses import replace
from typing import Any

import torch

from ..data import Digits
from ..model import evaluate, init_params, score
from ..model import single_thread
from ..result import Run
from ..timeline import Record
from ..timeline import Span, gaps
from .job import Job


def assemble(job: Job, spans: list[Span], updates: list[dict[str, Any]], complete: bool,
             extra: dict[str, Any], pushes: list[dict[str, Any]] = ()) -> Run:
    with single_thread():  # as the simulation scores: same numbers, and 10x faster here
        return _assemble(job, spans, updates, complete, extra, pushes)


def _assemble(job: Job, spans: list[Span], updates: list[dict[str, Any]], complete: bool,
              extra: dict[str, Any], pushes) -> Run:
    layout = job.layout()
    policy = job.policy
    held = policy.waits_for_update or policy.bound < job.steps
    timeline = sorted(spans + idle_spans(spans, job.workers, held),
                      key=lambda s: (s.start, s.end))
    start = layout.split(layout.flatten(init_params(64, job.hidden, 10, job.seed))) \
        if job.start_keys is None else [torch.from_numpy(k) for k in job.start_keys]
    data = Digits.load(job.seed)
    updates = [dict(u, keys=torch.from_numpy(u["keys"])) for u in updates]
    history = []
    for r in records(updates, start):
        loss, accuracy = score(layout.unflatten(torch.cat(r["held"])), data)
        history.append(Record(r["time"], loss, accuracy, r["staleness"],
                              job.start_step + len(history) + 1, r["worker"], r["step"]))
    final = list(start)
    for u in sorted(updates, key=lambda u: u["version"]):
        final[u["shard"]] = u["keys"]
    makespan = max((s.end for s in timeline), default=0.0)
    groups = [layout.names_in(s) for s in range(layout.shards)]
    shard_bytes = layout.shard_bytes()
    start_loss = evaluate(layout.unflatten(torch.cat(start)), data.x_train, data.y_train)[0]
    return Run(job.settings, timeline, history, layout.unflatten(torch.cat(final)),
               makespan, groups, shard_bytes, complete=complete, layout=layout,
               push_staleness=push_staleness(pushes), start_loss=start_loss, **extra)


def push_staleness(pushes: list[dict[str, Any]]) -> list[int]:
    """Staleness of every push the server took, in order of arrival: a push counts as stale as
    on its stalest shard (as the simulation counts it)."""
    by_push: dict[tuple[int, int], list[dict]] = defaultdict(list)
    for p in pushes:
        by_push[p["worker"], p["step"]].append(p)
    order = sorted(by_push.values(), key=lambda ps: min(p["time"] for p in ps))
    return [max(p["staleness"] for p in ps) for ps in order]


def idle_spans(spans: list[Span], workers: int, held: bool = False) -> list[Span]:
    """Each worker's waits: the gaps between its compute blocks and its transfers.

    held: the mode may hold a worker before a step (a barrier, or an SSP bound the run can
    reach). Then the gap before a step's first fetch is noted "barrier", as in the simulation:
    the shard answers the fetch only when the mode lets the worker start (shard.wait_to_start).
    Other gaps stay unnoted: on real processes they mix a link's queue with messaging time."""
    own = defaultdict(list)
    for s in spans:
        if s.worker is not None:
            own[s.worker].append(s)
    out = []
    for w in range(workers):
        mine = sorted(own[w], key=lambda s: s.start)
        if not mine:
            continue
        starts = [s.start for s in mine]
        by_end = sorted(mine, key=lambda s: s.end)
        ends = [s.end for s in by_end]
        for a, b in gaps([(s.start, s.end) for s in mine], mine[0].start, mine[-1].end):
            i, j = bisect_right(ends, a), bisect_left(starts, b)
            before = by_end[i - 1] if i else None  # the last span to end before the gap
            after = mine[j] if j < len(mine) else mine[-1]  # the first to start after it
            waits = held and after.kind == "fetch" and before is not None \
                and before.step < after.step
            out.append(Span(w, None, "idle", a, b, after.step, note="barrier" if waits else None))
    return out


def records(updates: list[dict[str, Any]], start: list[torch.Tensor]) -> list[dict[str, Any]]:
    """One record per update that reached every shard, in time order, with the keys the shards
    held then: per push when each push is an update (async, SSP), per round otherwise (sync,
    matched by the shards' version)."""
    shards = len(start)
    groups: dict[tuple, list[dict]] = defaultdict(list)
    timelines: list[list[dict]] = [[] for _ in range(shards)]
    for u in updates:
        key = (u["worker"], u["step"]) if u["worker"] is not None else (None, u["version"])
        groups[key].append(u)
        timelines[u["shard"]].append(u)
    for t in timelines:
        t.sort(key=lambda u: u["time"])
    times = [[u["time"] for u in t] for t in timelines]
    out = []
    for (worker, _), parts in groups.items():
        if len(parts) < shards:  # the run stopped before this update reached every shard
            continue
        when = max(p["time"] for p in parts)
        if worker is None:  # a round: exactly the keys it made
            held = [p["keys"] for p in sorted(parts, key=lambda p: p["shard"])]
        else:  # a push: whatever each shard held by then (others' pushes race with it)
            held = [timelines[s][bisect_right(times[s], when) - 1]["keys"]
                    for s in range(shards)]
        out.append(dict(time=when, worker=worker, step=parts[0]["step"], held=held,
                        staleness=max(p["staleness"] for p in parts)))
    return sorted(out, key=lambda r: r["time"])


def scaled(run: Run, factor: float) -> Run:
    """The same run with every time multiplied by `factor`: a simulated run in the real seconds
    the processes take (factor = time_scale), to draw it on one axis with a measured run."""
    timeline = [s._replace(start=s.start * factor, end=s.end * factor) for s in run.timeline]
    history = [r._replace(time=r.time * factor) for r in run.history]
    return replace(run, timeline=timeline, history=history, makespan=run.makespan * factor)


def same_weights(a: Run, b: Run) -> bool:
    """True when two runs ended with exactly the same weights, bit for bit."""
    return a.weights.keys() == b.weights.keys() and all(
        torch.equal(a.weights[n].cpu(), b.weights[n].cpu()) for n in a.weights)
