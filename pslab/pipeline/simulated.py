"""A pipelined run on the virtual clock, with the real SGD arithmetic done in clock order.

Every step is alike on the clock: the step starts when the last rank has applied its update
(the flush: SGD needs the whole batch's gradient, and the ranks meet there to report the
loss; with d data-parallel replicas, each stage's d copies first all-reduce its gradient),
and the durations depend only on the stage and the kind of action. So one step is
timed (pslab/pipeline/clock.py) and the run's timeline is that step repeated; with numerics,
each step's arithmetic runs the actions in the order they were timed.
"""
from __future__ import annotations

import math

import numpy as np

from ..allreduce import ring_time
from ..cluster import Cluster
from ..columns import NAMES, Columns
from ..data import Digits
from ..model import init_params, layer_names, score, shapes, single_thread
from ..timeline import Record
from .clock import Op, Transfer, execute
from ..settings import Settings
from .mode import Pipeline
from .result import PipelineRun
from .schedules import Action, orders, rank_of
from .stages import StageMath, layer_bounds

KIND = {"F": "forward", "B": "backward", "I": "backward-input", "W": "backward-weight"}
BYTES = 4  # fp32


def simulate_pipeline(settings: Settings, receives: str | list = "early",
                      after: float = 0.0) -> PipelineRun:
    """Train the `pipe.layers`-layer MLP for `steps` steps under the settings' Pipeline
    (checked settings): its d replicas side by side, then the flush (all-reduce, update).
    receives: where each receive is posted (clock.execute): "early" (the papers' figures), or
    as PyTorch's schedule posts them on gloo (processes.receives_of). after: seconds each
    rank spends after an action's outputs have left, before its next (clock.execute)."""
    pipe, cluster = settings.mode, settings.timing
    lr, batch, steps, seed = settings.lr, settings.batch, settings.steps, settings.seed
    numerics, hidden = settings.numerics, settings.hidden
    p, v, m, d = pipe.stages, pipe.chunks, pipe.microbatches, pipe.replicas
    where = rank_of(pipe.schedule, p, v)
    lists = orders(pipe.schedule, p, m, v)
    link_time = cluster.transfer_time(batch * hidden * BYTES)
    if math.isinf(cluster.bandwidth) and not cluster.latency:
        link_time = 0.0
    ops: list[Op] = []
    transfers: list[Transfer] = []
    for j in range(d):  # replicas alike unless their speeds differ: timed once, then shifted
        if j == 0 or cluster.speeds is not None:
            mine, moved = execute(lists, where, durations(pipe, cluster, hidden, j), link_time,
                                  {}, 0.0, receives=receives, after=after)
        ops += [o._replace(rank=o.rank + j * p) for o in mine] if j else mine
        transfers += [t._replace(src=t.src + j * p, dst=t.dst + j * p) for t in moved] \
            if j else moved
    sizes = shapes(64, hidden, 10, pipe.layers)
    after, period = _flush(pipe, cluster, ops, param_bytes(pipe, sizes),
                           _update_times(pipe, cluster, sizes))
    timeline = _timeline(ops, transfers, after, period, d * p, m, steps)
    params, history, start_loss = {}, [], math.nan
    if numerics:
        with single_thread():
            params, history, start_loss = _train(pipe, ops, lr, batch, steps, seed, hidden,
                                                 period)
    else:
        history = [Record(period * (t + 1), math.nan, math.nan, 0, t + 1, None, t)
                   for t in range(steps)]
    return PipelineRun(settings=settings, timeline=timeline, history=history, weights=params,
                       makespan=period * steps, start_loss=start_loss, pipeline=pipe,
                       ops=ops, transfers=transfers, step_time=period,
                       activation_bytes=activation_bytes(pipe, batch, hidden),
                       param_bytes=param_bytes(pipe, sizes))


def _flush(pipe: Pipeline, cluster: Cluster, ops: list[Op], per_rank: list[int],
           updates: list[float]) -> tuple[list[list[tuple]], float]:
    """Each worker's spans after its last action, and the step's period. The d workers
    holding rank r's stages wait for each other (idle, "barrier"), ring-all-reduce its
    gradient (reduce-scatter, then all-gather: pslab.allreduce.ring_time, none when d = 1),
    then each takes SGD's step (update); the next step starts when the last has."""
    p, d = pipe.stages, pipe.replicas
    ends = [0.0] * (p * d)
    for op in ops:
        ends[op.rank] = max(ends[op.rank], op.end)
    after: list[list[tuple]] = [[] for _ in range(p * d)]
    done = []
    for r in range(p):
        meet = max(ends[j * p + r] for j in range(d))
        ring = ring_time(cluster, d, per_rank[r])
        for j in range(d):
            w, spans = j * p + r, after[j * p + r]
            if ends[w] < meet:
                spans.append(("idle", "barrier", ends[w], meet))
            if ring:
                spans.append(("reduce-scatter", None, meet, meet + ring / 2))
                spans.append(("all-gather", None, meet + ring / 2, meet + ring))
            if updates[r]:
                spans.append(("update", None, meet + ring, meet + ring + updates[r]))
        done.append(meet + ring + updates[r])
    period = max(done)
    for w in range(p * d):
        if done[w % p] < period:
            after[w].append(("idle", "bubble", done[w % p], period))
    return after, period


def durations(pipe: Pipeline, cluster: Cluster, hidden: int, replica: int = 0
              ) -> dict[tuple[int, str], float]:
    """Seconds of every (virtual stage, kind) in `replica`: `pipe.times` split evenly over a
    rank's v chunks, else each stage's share of the forward FLOPs (in·out per layer) of
    compute_time, F : B : W = 1 : 2 : 1; a worker of speed s (cluster.speeds, one per worker:
    replica j's rank r is worker j·p + r) takes 1/s as long."""
    k_all = pipe.virtual
    speeds = [1.0] * pipe.stages if cluster.speeds is None else \
        list(cluster.speeds)[replica * pipe.stages:(replica + 1) * pipe.stages]
    where = rank_of(pipe.schedule, pipe.stages, pipe.chunks)
    if pipe.times is not None:
        f, b, w = (t / pipe.chunks for t in pipe.times)
        shares = [(f, b, w)] * k_all
    else:
        sizes = shapes(64, hidden, 10, pipe.layers)
        flops = [sizes[w][0] * sizes[w][1] for w, _ in layer_names(sizes)]
        whole = sum(flops)
        shares = []
        for lo, hi in layer_bounds(pipe.layers, k_all):
            f = cluster.compute_time * sum(flops[lo:hi]) / whole / 3
            shares.append((f, 2 * f, f))
    out: dict[tuple[int, str], float] = {}
    for k, (f, b, w) in enumerate(shares):
        s = speeds[where[k]]
        out[(k, "F")], out[(k, "B")] = f / s, b / s
        out[(k, "W")], out[(k, "I")] = w / s, (b - w) / s
    return out


def _update_times(pipe: Pipeline, cluster: Cluster, sizes: dict) -> list[float]:
    """Each rank's SGD step: update_time times its share of the parameters."""
    per = param_bytes(pipe, sizes)
    whole = sum(per)
    return [cluster.update_duration(b / whole) for b in per]


def param_bytes(pipe: Pipeline, sizes: dict) -> list[int]:
    """Bytes of parameters each rank holds."""
    names = layer_names(sizes)
    where = rank_of(pipe.schedule, pipe.stages, pipe.chunks)
    out = [0] * pipe.stages
    for k, (lo, hi) in enumerate(layer_bounds(pipe.layers, pipe.virtual)):
        for w, b in names[lo:hi]:
            out[where[k]] += BYTES * (int(np.prod(sizes[w])) + int(np.prod(sizes[b])))
    return out


def activation_bytes(pipe: Pipeline, batch: int, hidden: int) -> list[int]:
    """Bytes one micro-batch leaves on virtual stage k between its forward and its backward:
    every layer's input (64 pixels into the first, `hidden` wide after)."""
    return [BYTES * batch * sum(64 if j == 0 else hidden for j in range(lo, hi))
            for lo, hi in layer_bounds(pipe.layers, pipe.virtual)]


def _timeline(ops: list[Op], transfers: list[Transfer], after: list[list[tuple]],
              period: float, workers: int, m: int, steps: int) -> Columns:
    """The first step's spans (compute, send and recv, bubbles, then `after`: each worker's
    flush), then every step's: the same rows, shifted by the step's start and number. Packed
    with numpy, field by field (a slider step builds thousands of spans)."""
    cols = Columns(workers=workers, shards=0, micros=m)
    rank, _, kinds, micro, start, end = (np.array(f) for f in zip(*ops))
    code_of = {k: cols.kind_code(KIND[k]) for k in sorted(set(kinds.tolist()), key="FBIW".index)}
    kind = np.array([code_of[k] for k in kinds.tolist()])
    order = np.lexsort((start, rank))  # each rank's ops in time order: the gaps between them
    r, a, b = rank[order], start[order], end[order]
    before = np.empty_like(b)
    before[1:] = b[:-1]
    new = np.ones(len(r), bool)
    new[1:] = r[1:] != r[:-1]
    before[new] = 0.0  # a rank's first op: its gap from the step's start
    gap = a > before
    parts = [(rank, kind, micro + 1, 0, start, end),
             (r[gap], cols.kind_code("idle"), 0, cols.note_code("bubble"), before[gap], a[gap])]
    if transfers:
        src, dst, _, tmicro, tstart, tend = (np.array(f) for f in zip(*transfers))
        parts += [(src, cols.kind_code("send"), tmicro + 1, 0, tstart, tend),
                  (dst, cols.kind_code("recv"), tmicro + 1, 0, tstart, tend)]
    flush = [(w, cols.kind_code(k), 0, cols.note_code(n), x, y)
             for w, spans in enumerate(after) for k, n, x, y in spans]
    if flush:
        parts.append(tuple(np.array(f) for f in zip(*flush)))
    codes, times = [], []
    for w, k, mi, note, x, y in parts:
        code = ((np.asarray(mi) * cols.micro_unit + (np.asarray(w) + 1) * cols.worker_unit)
                + np.asarray(k) * NAMES + np.asarray(note))
        codes.append(np.broadcast_to(code, np.shape(x)).astype(float))
        times.append(np.stack([np.asarray(x, float), np.asarray(y, float)], axis=1))
    code, time = np.concatenate(codes), np.concatenate(times)
    shift = np.arange(steps, dtype=float)[:, None]
    rows = np.empty((steps, len(code), 3))
    rows[:, :, 0] = code[None, :] + shift * cols.step_unit
    rows[:, :, 1] = time[None, :, 0] + shift * period
    rows[:, :, 2] = time[None, :, 1] + shift * period
    cols.rows.frombytes(rows.tobytes())
    return cols


def _train(pipe: Pipeline, ops: list[Op], lr: float, batch: int, steps: int, seed: int,
           hidden: int, period: float) -> tuple[dict, list[Record], float]:
    """Every step's arithmetic in the timed order, replica by replica, then the all-reduce
    and SGD's step; a Record (training loss, test accuracy) after each flush."""
    data = Digits.load(seed)
    params = init_params(data.features, hidden, data.classes, seed, layers=pipe.layers)
    start_loss = score(params, data)[0]
    p, d = pipe.stages, pipe.replicas
    maths = [StageMath(params, pipe.virtual, data, pipe.microbatches, batch, lr, j, d)
             for j in range(d)]
    actions = [[Action(o.stage, o.kind, o.micro) for o in ops if o.rank // p == j]
               for j in range(d)]
    history = []
    for t in range(steps):
        for math_, mine in zip(maths, actions):
            math_.begin(t)
            for a in mine:
                math_(a)
        maths[0].finish(maths[1:])
        loss, acc = score(params, data)
        history.append(Record(period * (t + 1), loss, acc, 0, t + 1, None, t))
    return dict(params), history, start_loss
