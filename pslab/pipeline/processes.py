"""A pipelined run on real OS processes: PyTorch's torch.distributed.pipelining (PipelineStage
and its schedule classes) on gloo, CPU only, one process per rank of every replica.

Each process builds its virtual stages from the run's seed (the same layers as the simulation,
as torch modules), and every step feeds the same micro-batches (Digits.minibatch of one
worker) through PyTorch's schedule, whose action lists are pslab's (tests/test_pipeline_torch
.py). PyTorch sums each micro-batch's gradient in autograd, divides by m (scale_grads) and
SGD steps: the simulation's weights to float round-off. With d replicas (worker j·p + r is
replica j's rank r; replica j feeds micro-batches j·m … j·m + m − 1 of the step's d·m, as on the
clock), each replica's pipeline is a gloo group of its own, and after the schedule each stage's
d copies all-reduce their gradients (one flat tensor, gloo's sum) and divide by d: the mean
over the d·m micro-batches, the clock's weights to round-off (the sums are grouped otherwise).
Each action is timed around the stage's own forward_one_chunk / backward_one_chunk /
backward_weight_one_chunk, and each blocking wait on sends and receives between them (send,
recv spans), on the processes' shared monotonic clock: the measured timeline, drawn beside
the simulated one.
Starting, watching and cleaning up (a dead or silent rank named in a ProcessFailure, nothing
left behind) is pslab/processes/group.py, as for FSDP2.
"""
from __future__ import annotations

import os
import statistics
import time
from datetime import timedelta
from typing import Sequence

import torch

from ..cluster import Cluster
from ..data import Digits
from ..tensorfile import read_kept, save_tensors
from ..model import hidden_names, init_params, layer_names, score, shapes
from ..processes.group import Finished, Member, group
from ..timeline import Record, Span
from .clock import Op
from .mode import Pipeline
from ..options import ProcessOptions
from ..settings import Settings
from .result import PipelineRun
from .simulated import activation_bytes, durations, param_bytes
from .schedules import rank_of
from .stages import layer_bounds

TORCH = {"gpipe": "ScheduleGPipe", "1f1b": "Schedule1F1B",
         "interleaved-1f1b": "ScheduleInterleaved1F1B", "looped-bfs": "ScheduleLoopedBFS",
         "zb-h1": "ScheduleInterleavedZeroBubble", "zbv": "ScheduleZBVZeroBubble"}
MOST_RANKS = 16  # processes on one machine
# PyTorch's single-stage schedule classes post each receive just before the action that
# needs it (gloo sends a message only into a posted receive): the clock's receives="late"
POSTED_LATE = ("gpipe", "1f1b")
KIND = {"forward_one_chunk": "forward", "backward_weight_one_chunk": "backward-weight"}
LETTER = {"forward": "F", "backward": "B", "backward-input": "I", "backward-weight": "W"}


class StageModule(torch.nn.Module):
    """Layers [lo, hi) of the MLP: tanh after every hidden layer, the logits out of the last."""

    def __init__(self, params: dict, names: list[tuple[str, str]], lo: int, hi: int):
        super().__init__()
        self.last = hi == len(names)
        self.layers = torch.nn.ModuleList()
        self.names = names[lo:hi]
        for w, b in self.names:
            layer = torch.nn.Linear(params[w].shape[1], params[w].shape[0])
            with torch.no_grad():
                layer.weight.copy_(params[w])
                layer.bias.copy_(params[b])
            self.layers.append(layer)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for j, layer in enumerate(self.layers):
            x = layer(x)
            if not (self.last and j == len(self.layers) - 1):
                x = torch.tanh(x)
        return x

    def weights(self) -> dict[str, torch.Tensor]:
        return {name: t.detach().clone() for (w, b), layer in zip(self.names, self.layers)
                for name, t in ((w, layer.weight), (b, layer.bias))}


def train_processes(config: Settings, hosts: Sequence[str] | None = None,
                    compute: dict[tuple[int, str], float] | None = None) -> PipelineRun:
    """Run the settings' Pipeline on one process per rank (checked settings, backend
    "processes": timeout, kill and hang from its options); returns the measured PipelineRun.
    hosts: rank r in the network namespace hosts[r] (a `Hosts` host: gloo on its shaped
    link). compute: seconds each (virtual stage, kind) sleeps inside its timed action, the
    clock's compute, so that a measured step is that compute plus what the links take."""
    pipe, options = config.mode, config.processes
    slept = None if compute is None else [[k, kind, t] for (k, kind), t in compute.items()]
    settings = (pipe.plain(), config.steps, config.seed, config.batch, config.lr,
                config.hidden, slept)
    with group(_rank, settings, pipe.stages * pipe.replicas, pipe.name, options.timeout,
               partial=lambda done: _assemble(done, config, pipe, complete=False),
               kill=options.kill, hang=options.hang,
               hosts=None if hosts is None else list(hosts)) as done:
        return _assemble(done, config, pipe, complete=True)


def train_across(pipe: Pipeline, hosts: Sequence[str], steps: int = 4, batch: int = 32,
                 timeout: float = 30.0) -> PipelineRun:
    """`pipe` (its `times` given) with worker w (replica w // p's rank w % p) in the namespace
    hosts[w], each action sleeping its (F, B, W) seconds: the clock's compute, so measured and
    simulated steps differ by what the links and the processes add. Seed 0, lr 0.5, hidden 32."""
    if pipe.times is None:
        raise ValueError("times must be given to run a Pipeline across hosts: each action "
                         "sleeps its seconds (got times=None)")
    workers = pipe.stages * pipe.replicas
    if len(hosts) != workers:
        raise ValueError(f"hosts must give one namespace per rank of every replica (stages * "
                         f"replicas = {workers}; got {len(hosts)})")
    config = Settings(mode=pipe, steps=steps, batch=batch,
                      processes=ProcessOptions(timeout=timeout))
    return train_processes(config, hosts, durations(pipe, Cluster(), config.hidden))


def step_time(run: PipelineRun) -> float:
    """Measured seconds per step: the median time from one step's first forward on rank 0 to
    the next's (the flush included; a median, so that a moment when other programs took the
    cores does not decide it). The first step pays for PyTorch's set-up: left out."""
    starts: dict[int, float] = {}
    for s in run.timeline:
        if s.worker == 0 and s.kind == "forward":
            starts[s.step] = min(starts.get(s.step, s.start), s.start)
    ordered = [starts[k] for k in sorted(starts)][1:]
    if len(ordered) < 2:
        raise ValueError("step_time needs a run of at least 3 steps")
    return statistics.median(b - a for a, b in zip(ordered, ordered[1:]))


def span_time(run: PipelineRun) -> float:
    """Measured seconds of the schedule itself: the median over the steps after the first of
    its first action's start to its last action's end, on any rank. What the clock's step is
    when updates cost nothing; step_time adds what this backend does between steps to check
    the run (each rank writes its weights, rank 0 scores them, two barriers)."""
    spans: dict[int, list[float]] = {}
    for s in run.timeline:
        if s.kind in LETTER and s.step:
            a, b = spans.get(s.step, (s.start, s.end))
            spans[s.step] = [min(a, s.start), max(b, s.end)]
    if not spans:
        raise ValueError("span_time needs a run of at least 2 steps")
    return statistics.median(b - a for a, b in spans.values())


def receives_of(pipe: Pipeline) -> str | list[dict[int, list[tuple[str, int, int]]]]:
    """Where PyTorch's schedule class for `pipe` posts each receive, as clock.execute takes it:
    "late" for the single-stage classes; for the multi-stage runtime, read off its own plan
    (`pipeline_order_with_comms`, built without processes from stand-in stages): per rank,
    {compute actions run before the receive is posted: the inputs it asks for}."""
    import logging
    import warnings

    from torch.distributed.pipelining import schedules

    if pipe.schedule in POSTED_LATE:
        return "late"

    class Stand:  # what a schedule's constructor reads of a PipelineStage
        group_rank, group_size, num_stages = 0, pipe.stages, pipe.virtual
        submod, stage_index = None, 0

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        logging.disable(logging.WARNING)
        try:
            plan = getattr(schedules, TORCH[pipe.schedule])(
                [Stand() for _ in range(pipe.chunks)], pipe.microbatches
            ).pipeline_order_with_comms
        finally:
            logging.disable(logging.NOTSET)
    computes = ("FORWARD", "FULL_BACKWARD", "BACKWARD_INPUT", "BACKWARD_WEIGHT")
    out: list[dict[int, list[tuple[str, int, int]]]] = []
    for r in range(pipe.stages):
        mine: dict[int, list[tuple[str, int, int]]] = {}
        done = 0
        for action in plan[r]:
            kind = action.computation_type.name
            if kind in computes:
                done += 1
            elif kind in ("RECV_F", "RECV_B"):
                mine.setdefault(done, []).append(
                    (kind[-1], action.stage_index, action.microbatch_index))
        out.append(mine)
    return out


def stage_shapes(pipe: Pipeline, hidden: int, rank: int) -> dict[str, tuple[int, ...]]:
    """The name and shape of every weight rank `rank` holds: its stages' layers."""
    every = shapes(64, hidden, 10, pipe.layers)  # the digits' 8x8 pixels, 10 classes
    names = [*hidden_names(pipe.layers), ("W_o", "b_o")]
    where = rank_of(pipe.schedule, pipe.stages, pipe.chunks)
    bounds = layer_bounds(pipe.layers, pipe.virtual)
    return {n: every[n] for k in range(pipe.virtual) if where[k] == rank
            for pair in names[slice(*bounds[k])] for n in pair}


def read_stage(path: str, pipe: Pipeline, hidden: int, steps: int,
               rank: int) -> tuple[int, dict[str, torch.Tensor]]:
    """(the step, the weights) rank `rank` kept in `path`, read as untrusted: the file's size
    bounded by its layers' before anything is read, the tensors exactly its layers' names,
    shapes and float32 before their bytes are read, the step one of the run's; a ValueError
    naming the file otherwise."""
    return read_kept(path, f"stage {rank}'s weights", stage_shapes(pipe, hidden, rank), steps)


def _assemble(done: Finished, config: Settings, pipe: Pipeline,
              complete: bool) -> PipelineRun:
    """The Run from the ranks' reports and their last kept weights."""
    weights: dict[str, torch.Tensor] = {}
    last = None
    for r in range(pipe.stages):
        step, tensors = read_stage(os.path.join(done.folder, f"stage{r}.safetensors"), pipe,
                                   config.hidden, config.steps, r)
        last = step if last is None else min(last, step)
        weights.update(tensors)
    spans = [Span(rank, None, kind, a, b, step, micro if micro >= 0 else None)
             for rank, mine in enumerate(done.spans) for kind, a, b, step, micro, _ in mine]
    t0 = min(s.start for s in spans)
    ops = _last_step(done.spans)
    spans = sorted((s._replace(start=s.start - t0, end=s.end - t0) for s in spans),
                   key=lambda s: s.start)
    history = [Record(max(s.end for s in spans if s.step == k), *done.scores[k], 0, k + 1,
                      None, k) for k in range(last + 1) if k in done.scores]
    order = list(shapes(64, config.hidden, 10, pipe.layers))
    return PipelineRun(settings=config, timeline=spans, history=history,
                       weights={k: weights[k] for k in order},  # the latest END, not the
                       makespan=max((s.end for s in spans), default=0.0),  # latest start's
                       complete=complete, pipeline=pipe, ops=ops,
                       step_time=max(o.end for o in ops),
                       activation_bytes=activation_bytes(pipe, config.batch, config.hidden),
                       param_bytes=param_bytes(pipe, shapes(64, config.hidden, 10, pipe.layers)))


def _last_step(reported: list[list]) -> list[Op]:
    """The last step's measured actions as ops, from its first start (the first step pays
    for PyTorch's set-up): the bubbles and activations of a measured step."""
    last = max(step for mine in reported for _, _, _, step, _, _ in mine)
    rows = [(rank, stage, LETTER[kind], micro, a, b) for rank, mine in enumerate(reported)
            for kind, a, b, step, micro, stage in mine if step == last and kind in LETTER]
    t0 = min(a for *_, a, _ in rows)
    return sorted((Op(rank, stage, kind, micro, a - t0, b - t0)
                   for rank, stage, kind, micro, a, b in rows), key=lambda o: (o.rank, o.start))


def _rank(member: Member, folder: str, timeout: float, plain: dict, steps: int, seed: int,
          batch: int, lr: float, hidden: int, slept: list | None) -> None:
    import torch.distributed as dist
    from torch.distributed.pipelining import PipelineStage
    from torch.distributed.pipelining import schedules

    torch.set_num_threads(1)
    pipe = Pipeline(**plain)
    p, m, d = pipe.stages, pipe.microbatches, pipe.replicas
    replica, rank = divmod(member.rank, p)
    member.arrive()
    dist.init_process_group("gloo", init_method=f"file://{folder}/store", rank=member.rank,
                            world_size=p * d, timeout=timedelta(seconds=3 * timeout + 30))
    # every process makes every group, in the same order (torch.distributed's rule): one
    # pipeline per replica, and for each stage the d ranks that all-reduce its gradient
    line = ring = None
    if d > 1:
        lines = [dist.new_group([j * p + r for r in range(p)]) for j in range(d)]
        rings = [dist.new_group([j * p + r for j in range(d)]) for r in range(p)]
        line, ring = lines[replica], rings[rank]
    data = Digits.load(seed)
    params = init_params(data.features, hidden, data.classes, seed, layers=pipe.layers)
    names = layer_names(params)
    where = rank_of(pipe.schedule, p, pipe.chunks)
    mine = [k for k in range(pipe.virtual) if where[k] == rank]
    bounds = layer_bounds(pipe.layers, pipe.virtual)
    modules = {k: StageModule(params, names, *bounds[k]) for k in mine}
    spans: list = []
    step_now = [0]
    sleeps = {(k, kind): t for k, kind, t in slept or []}
    _timed_waits(schedules, spans, step_now)
    stages = [_timed(PipelineStage(modules[k], k, pipe.virtual, torch.device("cpu"),
                                   group=line), spans, step_now, sleeps) for k in mine]
    cls = getattr(schedules, TORCH[pipe.schedule])
    single = issubclass(cls, schedules.PipelineScheduleSingle)
    loss = torch.nn.functional.cross_entropy
    schedule = cls(stages[0] if single else stages, m, loss_fn=loss)
    weights = [q for mod in modules.values() for q in mod.parameters()]
    opt = torch.optim.SGD(weights, lr=lr)
    member.say("ready")
    dist.barrier()
    for step in range(steps):
        member.starting(step)
        step_now[0] = step
        rows = [data.minibatch(step, replica, i, d, m, batch) for i in range(m)]
        x = torch.cat([r[0] for r in rows])
        y = torch.cat([r[1] for r in rows])
        args = (x,) if 0 in mine else ()
        target = y if pipe.virtual - 1 in mine else None
        schedule.step(*args, target=target)
        if ring is not None:
            a = time.monotonic()
            _mean(weights, ring, d)
            # drawn as DDP's measured all-reduce is (pslab/processes/fsdp.py): a push
            spans.append(("push", a, time.monotonic(), step, -1, -1))
        opt.step()
        opt.zero_grad()
        if replica == 0:  # the replicas hold the same weights: replica 0's are kept
            kept = {}
            for mod in modules.values():
                kept.update(mod.weights())
            save_tensors(os.path.join(folder, f"stage{rank}.safetensors"), kept,
                         {"step": step})
        dist.barrier()  # every rank's weights of this step on disk
        if member.rank == 0:
            whole: dict[str, torch.Tensor] = {}
            for r in range(p):
                whole.update(read_stage(os.path.join(folder, f"stage{r}.safetensors"), pipe,
                                        hidden, steps, r)[1])
            member.say("scored", step=step, score=score(whole, data))
        dist.barrier()
        member.finished(step, spans[:])
        spans.clear()


def _mean(weights: list[torch.Tensor], ring, d: int) -> None:
    """Each gradient becomes the mean of its d replicas' (each already the mean of its m
    micro-batches): one flat tensor summed by gloo over the stage's ring group, then / d."""
    import torch.distributed as dist

    flat = torch.cat([q.grad.reshape(-1) for q in weights])
    dist.all_reduce(flat, group=ring)
    flat /= d
    at = 0
    for q in weights:
        n = q.grad.numel()
        q.grad.copy_(flat[at:at + n].view_as(q.grad))
        at += n


def _timed(stage, spans: list, step_now: list, sleeps: dict):
    """The stage with its three compute methods timed: (kind, start, end, step, micro);
    each first sleeps sleeps[(stage, F/B/I/W)] seconds where given (the clock's compute)."""
    for method in ("forward_one_chunk", "backward_one_chunk", "backward_weight_one_chunk"):
        inner = getattr(stage, method)

        def timed(micro, *args, _inner=inner, _method=method, **kwargs):
            a = time.monotonic()
            kind = KIND.get(_method) or ("backward" if kwargs.get("full_backward", True)
                                         else "backward-input")
            pause = sleeps.get((int(stage.stage_index), LETTER[kind]))
            if pause:
                time.sleep(pause)
            out = _inner(micro, *args, **kwargs)
            spans.append((kind, a, time.monotonic(), step_now[0], int(micro),
                          int(stage.stage_index)))
            return out

        setattr(stage, method, timed)
    return stage


class _Posted(list):
    """The works of one batch of sends and receives, and whether it holds a receive."""

    receives = False


def _timed_waits(schedules, spans: list, step_now: list) -> None:
    """PyTorch's schedules post their sends and receives in batches (`_batch_p2p`) and block
    on them (`_wait_batch_p2p`): each block is timed as a span, "recv" where the batch holds a
    receive, else "send" (micro-batch None). gloo moves a message only once its receiver has
    posted the receive, so a receive posted late waits a whole transfer however early the
    send was posted: the measured timeline shows it (notebook 08, "Across hosts";
    bench/pipeline_speed.receive_waits)."""
    post, wait = schedules._batch_p2p, schedules._wait_batch_p2p
    receive = getattr(__import__("torch.distributed", fromlist=["irecv"]), "irecv")

    def posted(ops, desc=None):
        works = _Posted(post(ops, desc))
        works.receives = any(op.op is receive for op in ops)
        return works

    def waited(works):
        a = time.monotonic()
        wait(works)
        if works:
            kind = "recv" if getattr(works, "receives", False) else "send"
            spans.append((kind, a, time.monotonic(), step_now[0], -1, -1))

    schedules._batch_p2p, schedules._wait_batch_p2p = posted, waited
