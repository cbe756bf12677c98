"""A simulation between two events, as plain data (the checkpoint of figure 000's run).

Between two events of the virtual clock a run is just numbers: the clock's pending events (which
actor does what next, at what time), each shard's queue (when it is free), the server's keys and
versions, each worker's fetched keys and gradient, the timeline and history so far. `snapshot`
writes them as JSON-able values and tensors; `restore` puts them back into a simulation built
afresh from the same settings, so the resumed run makes the same events in the same order on
the same numbers as the uninterrupted one. No object is pickled: the pending events are saved
by the name of the actor's method they call, and only those names are accepted back.
"""
from __future__ import annotations

from collections import defaultdict
from typing import Any

import torch

from .simulation import Record, Simulation
from .timeline import Span

# The actors' methods the clock may hold pending (a RingSimulation adds the last two).
EVENTS = ("start_step", "computed", "round_applied", "pushed_one", "_ring", "_next_step")
# The simulation's own bookkeeping: plain lists and numbers.
PLAIN = ("push_staleness", "_fetched", "_slowest", "_push_done", "_stale", "_closed", "started",
         "_arrived")
BY_KEY = ("_how_many", "_waiting", "_members")  # int-keyed dicts: saved as [key, value] pairs


def snapshot(sim: Simulation) -> tuple[dict[str, Any], dict[str, torch.Tensor]]:
    """(plain values, tensors) of the simulation now, between two events."""
    clock, server = sim.clock, sim.server
    events = []
    for time, seq, fn, args in sorted(clock._heap):
        name = getattr(fn, "__name__", "")
        if getattr(fn, "__self__", None) is not sim or name not in EVENTS:
            raise ValueError(f"cannot checkpoint a pending event {fn!r}: not an actor's step")
        events.append([time, seq, name, list(args)])
    state = dict(
        now=clock.now, seq=clock._seq, events=events,
        shards_free_at=[[r.free_at for _, r, _ in routes] for routes in sim._transfers],
        timeline=[list(s) for s in sim.timeline], history=[list(r) for r in sim.history],
        plain={k: getattr(sim, k) for k in PLAIN if hasattr(sim, k)},
        by_key={k: [[key, v] for key, v in getattr(sim, k).items()] for k in BY_KEY},
        server=dict(versions=server.versions, counts=server._counts,
                    buffered=[len(b) for b in server._buffer]),
        workers=[dict(versions=[[s, v] for s, v in w.versions.items()], loss=w.loss,
                      shards=sorted(w.shards), grads=len(w.grads)) for w in sim.workers])
    tensors = {}
    if server.params is not None:
        tensors.update({f"server.{s}": t for s, t in enumerate(server.params)})
        tensors.update({f"buffer.{s}.{i}": g for s, buf in enumerate(server._buffer)
                        for i, g in enumerate(buf)})
    for w in sim.workers:
        tensors.update({f"worker.{w.rank}.shard.{s}": t for s, t in w.shards.items()})
        tensors.update({f"worker.{w.rank}.grad.{i}": g for i, g in enumerate(w.grads)})
    return state, tensors


def restore(sim: Simulation, state: dict[str, Any], tensors: dict[str, torch.Tensor]) -> None:
    """Put a snapshot back into `sim`, built afresh by train from the same settings."""
    clock, server = sim.clock, sim.server
    clock.now, clock._seq = state["now"], state["seq"]
    clock._heap = []
    for time, seq, name, args in state["events"]:
        if name not in EVENTS or not hasattr(sim, name):
            raise ValueError(f"a checkpoint's pending event {name!r} is not an actor's step")
        clock._heap.append((time, seq, getattr(sim, name), tuple(args)))  # sorted: a heap
    for routes, free in zip(sim._transfers, state["shards_free_at"], strict=True):
        for (_, resource, _), at in zip(routes, free, strict=True):
            resource.free_at = at
    sim.timeline.clear()
    sim.timeline.extend(Span(*s) for s in state["timeline"])
    sim.history[:] = [Record(*r) for r in state["history"]]
    for k, v in state["plain"].items():
        setattr(sim, k, v)
    empty = {"_how_many": int, "_waiting": list, "_members": list}
    for k, pairs in state["by_key"].items():
        table = defaultdict(empty[k])
        table.update({key: ([tuple(x) for x in v] if k == "_waiting" else v)
                      for key, v in pairs})
        setattr(sim, k, table)
    saved = state["server"]
    server.versions[:], server._counts[:] = saved["versions"], saved["counts"]
    if server.params is not None:
        server.params = [tensors[f"server.{s}"] for s in range(len(server.params))]
        server._buffer = [[tensors[f"buffer.{s}.{i}"] for i in range(n)]
                          for s, n in enumerate(saved["buffered"])]
    for w, mine in zip(sim.workers, state["workers"], strict=True):
        w.versions = {s: v for s, v in mine["versions"]}
        w.loss = mine["loss"]
        w.shards = {s: tensors[f"worker.{w.rank}.shard.{s}"].to(w.device) for s in mine["shards"]}
        w.grads = [tensors[f"worker.{w.rank}.grad.{i}"].to(w.device) for i in range(mine["grads"])]
