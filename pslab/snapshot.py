"""A simulation between two events, as plain data (the checkpoint of figure 000's run).

Between two events of the virtual clock a run is just numbers: the clock's pending events (which
actor does what next, at what time), each shard's queue (when it is free), the server's keys and
versions, each worker's fetched keys and gradient, the timeline and history so far. `snapshot`
writes them as JSON-able values and tensors; `restore` puts them back into a simulation built
afresh from the same settings, so the resumed run makes the same events in the same order on
the same numbers as the uninterrupted one. No object is pickled: the pending events are saved
by the name of the actor's method they call, and only those names are accepted back.

A saved state is untrusted: `restore` checks all of it against the simulation it goes into
before it changes anything (the shape `State` declares: keys, types, finite times, no time
before the saved clock; then every count and index against the settings: workers, shards,
steps, minibatches; the tensors' names and float32 shapes before their bytes are read; the
simulation's own attributes only from its fixed lists PLAIN and BY_STEP).
"""
from __future__ import annotations

from functools import partial
from math import isfinite, isnan
from operator import is_not, itemgetter, le
from typing import Annotated, Any, Literal, Optional, Union

import torch
from msgspec import Meta, Struct, to_builtins

from .files import NOT_FINITE, check_shape
from .tensorfile import TensorFile
from .engine import URGENT
from .simulation import Record, Simulation
from .timeline import EVERY_KIND, NOTES

# The actors' methods the clock may hold pending (a RingSimulation adds the last two), and the
# arguments each takes: a worker's rank and its step, a round's step, a push's shard.
EVENTS = ("start_step", "computed", "push_arrived", "round_applied", "pushed_one", "_ring",
          "_next_step")
ARGS = dict(start_step=("rank", "step"), computed=("rank", "step"),
            push_arrived=("rank", "step", "shard"), round_applied=("step",),
            pushed_one=("rank", "step"), _ring=("step",), _next_step=("step",))

Time = Annotated[float, Meta(ge=0.0, le=1e300)]  # virtual seconds: finite, never negative
Count = Annotated[int, Meta(ge=0, le=2**53)]
Index = Count  # a worker, shard, step or minibatch: checked against the settings in `check`
Order = Annotated[int, Meta(ge=-URGENT, le=2**53)]  # an event's place among its ties
# a loss or an accuracy: nan before the first one (timing-only runs: always), inf if diverged;
# read by files.decode_rest, which gives those as the strings NOT_FINITE
Loss = Union[float, Literal[NOT_FINITE]]


class Plain(Struct, forbid_unknown_fields=True):
    push_staleness: list[int]
    fetched: list[list[Count]]
    pushing: list[tuple[Count, int, Optional[Time]]]  # shards yet to take it, staleness, end
    slowest: Count
    push_done: list[Time]
    round_staleness: int
    closed: Count
    started: bool
    arrived: Optional[Count] = None  # the ring modes only
    micro: Optional[list[Count]] = None  # ZeRO's ring: each worker's minibatch in its step
    gathered: Optional[Count] = None  # ZeRO's ring: workers done with this minibatch


OPTIONAL = ("arrived", "micro", "gathered")  # Plain's attributes that some modes have


class ByStep(Struct, forbid_unknown_fields=True):
    how_many: list[tuple[Count, Count]]
    waiting: list[tuple[Count, list[tuple[Index, Time]]]]
    members: list[tuple[Count, list[Index]]]


class Actors(Struct, forbid_unknown_fields=True):
    """Simulation.bookkeeping(): its attributes, from the fixed lists PLAIN and BY_STEP only."""
    plain: Plain
    by_step: ByStep
    links: list[Time]  # when each line of the run is free (Simulation.resources)


class Server(Struct, forbid_unknown_fields=True):
    versions: list[Count]
    counts: list[Count]
    buffered: list[Count]


class WorkerState(Struct, forbid_unknown_fields=True):
    versions: list[tuple[Index, Count]]
    loss: Loss  # nan before its first minibatch
    shards: list[Index]
    grads: Count


SpanRow = tuple[Optional[Index], Optional[Index], Literal[EVERY_KIND], Time, Time, Count,
                Optional[Index], Optional[Literal[tuple(NOTES)]]]
RecordRow = tuple[Time, Loss, Loss, int, Count, Optional[Index], Count]


class State(Struct, forbid_unknown_fields=True):
    """What `snapshot` writes, as the file must hold it (checked by msgspec, strictly)."""
    now: Time
    seq: Count
    events: list[tuple[Time, Order, Literal[EVENTS], list[Count]]]
    actors: Actors
    timeline: list[SpanRow]
    history: list[RecordRow]
    server: Server
    workers: list[WorkerState]


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
        timeline=[list(s) for s in sim.timeline],
        history=[[r[0], word(r[1]), word(r[2]), *r[3:]] for r in sim.history],
        server=dict(versions=server.versions, counts=server.counts,
                    buffered=[len(b) for b in server.buffer]),
        workers=[dict(versions=[[s, v] for s, v in w.versions.items()], loss=word(w.loss),
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


def check(sim: Simulation, saved: Any, where: str) -> State:
    """`saved` as a State that fits `sim` (built from the file's own settings), or a ValueError
    naming `where` and the field: every count and index in range, every pending event an actor
    step this simulation has, at or after the saved clock, with its own sequence number."""
    state = saved if isinstance(saved, State) else check_shape(saved, State, where)
    workers, shards, steps = len(sim.workers), len(sim.server.versions), sim.steps

    def need(ok: bool, name: str, why: str) -> None:
        if not ok:
            raise ValueError(f"{where}: field state.{name}: {why} (the run has {workers} "
                             f"workers, {shards} shards, {steps} steps)")

    seqs = set()
    for i, (time, seq, name, args) in enumerate(state.events):
        need(hasattr(sim, name), f"events[{i}]", f"{name!r} is not an event of this mode")
        need(time >= state.now, f"events[{i}]", f"time {time!r} is before the saved clock "
             f"{state.now!r}")
        need(seq < state.seq and seq not in seqs, f"events[{i}]", f"sequence number {seq} "
             f"repeated or not below seq={state.seq}")
        seqs.add(seq)
        need(len(args) == len(ARGS[name]), f"events[{i}]", f"{name} takes {ARGS[name]}")
        for arg, value in zip(ARGS[name], args):
            top = dict(rank=workers - 1, shard=shards - 1).get(arg, steps)
            need(value <= top, f"events[{i}]", f"{arg} {value} is not from 0 to {top}")
    need(len(state.actors.links) == len(sim.resources), "actors.links",
         f"not one free time per line ({len(sim.resources)})")
    # column by column first (a run's timeline has hundreds of thousands of spans), then, if
    # one is wrong, span by span to name the first
    spans, records = state.timeline, state.history
    if spans and not _all_fit(spans, workers, shards, steps, sim.accumulate):
        for i, s in enumerate(spans):
            need(_fits(s[0], workers) and _fits(s[1], shards) and s[3] <= s[4]
                 and s[5] <= steps and _fits(s[6], sim.accumulate), f"timeline[{i}]",
                 f"{list(s)} is out of range")
    if records and not (_top(map(itemgetter(5), records)) < workers
                        and max(map(itemgetter(6), records)) < steps):
        for i, r in enumerate(records):
            need(_fits(r[5], workers) and r[6] < steps, f"history[{i}]", f"{list(r)} out of range")
    _check_plain(state, sim, need)
    saved_server = state.server
    for name in ("versions", "counts", "buffered"):
        need(len(getattr(saved_server, name)) == shards, f"server.{name}", "not one per shard")
    need(all(n <= workers for n in saved_server.buffered), "server.buffered", "too many")
    need(len(state.workers) == workers, "workers", "not one per worker")
    for r, w in enumerate(state.workers):
        need(all(s < shards for s, _ in w.versions) and all(s < shards for s in w.shards)
             and len(set(w.shards)) == len(w.shards) and w.grads <= shards,
             f"workers[{r}]", "a shard out of range, repeated, or too many gradients")
    return state


def _fits(index: int | None, count: int) -> bool:
    return index is None or index < count


def _top(column) -> int:
    """The largest index in `column` (an iterator; None is no index), -1 if none is."""
    return max(filter(partial(is_not, None), column), default=-1)


def _all_fit(spans: list, workers: int, shards: int, steps: int, micros: int) -> bool:
    """Whether every span's indexes are in range (a column at a time, at C speed)."""
    def column(i):
        return map(itemgetter(i), spans)

    return (_top(column(0)) < workers and _top(column(1)) < shards and max(column(5)) <= steps
            and _top(column(6)) < micros and all(map(le, column(3), column(4))))


def _check_plain(state: State, sim: Simulation, need) -> None:
    """The bookkeeping attributes: exactly those this simulation has, each the right size."""
    workers, shards = len(sim.workers), len(sim.server.versions)
    plain = state.actors.plain
    for name in OPTIONAL:
        need((getattr(plain, name) is None) == (name not in sim.PLAIN), f"actors.plain.{name}",
             "present in a mode without it, or missing")
    need(plain.micro is None or (len(plain.micro) == workers and
                                 all(m < sim.accumulate for m in plain.micro)),
         "actors.plain.micro", "not one minibatch of the step per worker")
    # a gather that every worker has joined has already started (the count is back to 0)
    need(plain.gathered is None or plain.gathered < workers, "actors.plain.gathered",
         "not fewer than the run's workers")
    need(len(plain.fetched) == workers and all(len(v) == shards for v in plain.fetched),
         "actors.plain.fetched", "not one version per worker and shard")
    need(len(plain.push_done) == workers, "actors.plain.push_done", "not one time per worker")
    need(len(plain.pushing) == workers and all(left <= shards for left, _, _ in plain.pushing),
         "actors.plain.pushing", "not one push per worker, or more shards than the run has")
    need(plain.slowest <= sim.steps and plain.closed <= sim.steps,
         "actors.plain", "slowest or closed past the last step")
    by_step = state.actors.by_step
    need(all(k <= sim.steps and n <= workers for k, n in by_step.how_many),
         "actors.by_step.how_many", "a step or a worker count out of range")
    need(all(k <= sim.steps and all(r < workers for r, _ in v) for k, v in by_step.waiting),
         "actors.by_step.waiting", "a step or a worker out of range")
    need(all(all(r < workers for r in v) for _, v in by_step.members),
         "actors.by_step.members", "a worker out of range")


def tensor_shapes(sim: Simulation, state: State) -> dict[str, tuple[int, ...]]:
    """The name and shape of every tensor `state` needs in `sim`: what the file must hold."""
    if sim.server.params is None:  # timing only: no keys anywhere
        return {}
    shape = [tuple(t.shape) for t in sim.server.params]
    out = {f"server.{s}": shape[s] for s in range(len(shape))}
    out.update({f"buffer.{s}.{i}": shape[s] for s, n in enumerate(state.server.buffered)
                for i in range(n)})
    for r, w in enumerate(state.workers):
        out.update({f"worker.{r}.shard.{s}": shape[s] for s in w.shards})
        out.update({f"worker.{r}.grad.{i}": shape[i] for i in range(w.grads)})
    return out


def restore(sim: Simulation, saved: Any, found: TensorFile) -> None:
    """Put a snapshot back into `sim`, built afresh by train from the same settings, once all of
    it is checked (`check`, then the tensors against `tensor_shapes`); a ValueError naming the
    file and the field, with `sim` untouched, otherwise."""
    where = str(found.path)
    state = check(sim, saved, where)
    tensors = found.tensors(tensor_shapes(sim, state))
    clock, server = sim.clock, sim.server
    clock.restore(state.now, state.seq, [(time, seq, getattr(sim, name), tuple(args))
                                         for time, seq, name, args in state.events])
    actors = to_builtins(state.actors)
    for name in OPTIONAL:
        if actors["plain"][name] is None:
            del actors["plain"][name]
    sim.set_bookkeeping(actors)
    sim.timeline.clear()
    add = sim.timeline.add
    for s in state.timeline:
        add(*s)
    sim.history[:] = [Record(time, number(loss), number(accuracy), *rest)
                      for time, loss, accuracy, *rest in state.history]
    server.versions[:], server.counts[:] = state.server.versions, state.server.counts
    if server.params is not None:
        server.params = [tensors[f"server.{s}"] for s in range(len(server.params))]
        server.buffer = [[tensors[f"buffer.{s}.{i}"] for i in range(n)]
                         for s, n in enumerate(state.server.buffered)]
    for w, mine in zip(sim.workers, state.workers, strict=True):
        w.versions = {s: v for s, v in mine.versions}
        w.loss = number(mine.loss)
        w.shards = {s: tensors[f"worker.{w.rank}.shard.{s}"].to(w.device) for s in mine.shards}
        w.grads = [tensors[f"worker.{w.rank}.grad.{i}"].to(w.device) for i in range(mine.grads)]


def word(value: float) -> float | str:
    """A Loss as `snapshot` writes it: a float, or nan and the infinities as NOT_FINITE's
    strings (JSON has no such numbers; msgspec reads the strings at full speed)."""
    return value if isfinite(value) else NOT_FINITE[0 if isnan(value) else 1 + (value < 0)]


def number(value: float | str) -> float:
    """A Loss as the float it stands for (NOT_FINITE's strings: nan and the infinities)."""
    return float(value.lower()) if isinstance(value, str) else value


def plain_state(state: State) -> dict[str, Any]:
    """`state` as plain values, each Loss a float (as `snapshot` wrote it)."""
    out = to_builtins(state)
    out["history"] = [[r[0], number(r[1]), number(r[2]), *r[3:]] for r in out["history"]]
    for w in out["workers"]:
        w["loss"] = number(w["loss"])
    return out
