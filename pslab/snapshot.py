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

from typing import Any

import torch

from .simulation import Record, Simulation
from .timeline import Span

# The actors' methods the clock may hold pending (a RingSimulation adds the last two).
EVENTS = ("start_step", "computed", "round_applied", "pushed_one", "_ring", "_next_step")


def snapshot(sim: Simulation) -> tuple[dict[str, Any], dict[str, torch.Tensor]]:
    """(plain values, tensors) of the simulation now, between two events."""
    clock, server = sim.clock, sim.server
    events = []
    for time, seq, fn, args in clock.pending():
        name = getattr(fn, "__name__", "")
        if getattr(fn, "__self__", None) is not sim or name not in EVENTS:
            raise ValueError(f"cannot checkpoint a pending event {fn!r}: not an actor's step")
        events.append([time, seq, name, list(args)])
    state = dict(
        now=clock.now, seq=clock.scheduled, events=events, actors=sim.bookkeeping(),
        timeline=[list(s) for s in sim.timeline], history=[list(r) for r in sim.history],
        server=dict(versions=server.versions, counts=server.counts,
                    buffered=[len(b) for b in server.buffer]),
        workers=[dict(versions=[[s, v] for s, v in w.versions.items()], loss=w.loss,
                      shards=sorted(w.shards), grads=len(w.grads)) for w in sim.workers])
    tensors = {}
    if server.params is not None:
        tensors.update({f"server.{s}": t for s, t in enumerate(server.params)})
        tensors.update({f"buffer.{s}.{i}": g for s, buf in enumerate(server.buffer)
                        for i, g in enumerate(buf)})
    for w in sim.workers:
        tensors.update({f"worker.{w.rank}.shard.{s}": t for s, t in w.shards.items()})
        tensors.update({f"worker.{w.rank}.grad.{i}": g for i, g in enumerate(w.grads)})
    return state, tensors


def restore(sim: Simulation, state: dict[str, Any], tensors: dict[str, torch.Tensor]) -> None:
    """Put a snapshot back into `sim`, built afresh by train from the same settings."""
    clock, server = sim.clock, sim.server
    events = []
    for time, seq, name, args in state["events"]:
        if name not in EVENTS or not hasattr(sim, name):
            raise ValueError(f"a checkpoint's pending event {name!r} is not an actor's step")
        events.append((time, seq, getattr(sim, name), tuple(args)))
    clock.restore(state["now"], state["seq"], events)
    sim.set_bookkeeping(state["actors"])
    sim.timeline.clear()
    sim.timeline.extend(Span(*s) for s in state["timeline"])
    sim.history[:] = [Record(*r) for r in state["history"]]
    saved = state["server"]
    server.versions[:], server.counts[:] = saved["versions"], saved["counts"]
    if server.params is not None:
        server.params = [tensors[f"server.{s}"] for s in range(len(server.params))]
        server.buffer = [[tensors[f"buffer.{s}.{i}"] for i in range(n)]
                          for s, n in enumerate(saved["buffered"])]
    for w, mine in zip(sim.workers, state["workers"], strict=True):
        w.versions = {s: v for s, v in mine["versions"]}
        w.loss = mine["loss"]
        w.shards = {s: tensors[f"worker.{w.rank}.shard.{s}"].to(w.device) for s in mine["shards"]}
        w.grads = [tensors[f"worker.{w.rank}.grad.{i}"].to(w.device) for i in range(mine["grads"])]
