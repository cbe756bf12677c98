"""ZeRO-3 on real OS processes with PyTorch's own FSDP2 (`fully_shard`) on gloo, CPU only, and
its baseline, the all-reduce of PyTorch's DistributedDataParallel (DDP).

Each of N processes wraps the digits MLP (the same W_h, b_h, W_o, b_o from the run's seed) with
`fully_shard` per layer, so it holds 1/N of every layer; FSDP2 all-gathers a layer before its
forward and again before its backward, and reduce-scatters its gradient (averaged over the
ranks) — the collectives `pslab.ZeRO(3)` puts on the virtual clock. DDP keeps the whole model
in every process and all-reduces the gradients (averaged), as `"allreduce"` does on the clock.
Every process reads the simulation's minibatches (Digits.minibatch), so the weights equal the
simulated run's to float tolerance (gloo sums in its own order). Starting, watching and
cleaning up the processes (a dead or silent one named in the error, nothing left behind) is
pslab/processes/group.py; `pslab.train(mode=ZeRO(3) or "allreduce", backend="processes")`
comes here.

The returned Run's timeline is measured: torch.profiler's ranges (FSDP2's "FSDP::all_gather"
and "FSDP::post_backward_reduce", DDP's "gloo:all_reduce", the rest of a step compute) become
spans on the processes' shared monotonic clock, so it plots with the same code as a simulated
run.
"""
from __future__ import annotations

import os
import time
from contextlib import nullcontext
from typing import Sequence
from datetime import timedelta

import torch

from ..checks import number, one_of
from ..data import Digits

from ..tensorfile import read_kept, save_tensors
from ..model import NAMES, init_params, score, shapes
from ..modes import ZeRO
from ..options import ProcessOptions
from ..result import Params, Run
from ..settings import Settings
from ..timeline import Record, Span
from .group import Finished, Member, group

# torch.profiler ranges -> span kinds: FSDP2's collectives, and DDP's gloo all-reduce (drawn as
# a push, the gradient leaving the worker, as the simulated all-reduce's first half is)
KINDS = {"fsdp": {"FSDP::all_gather (": "all-gather",
                  "FSDP::post_backward_reduce (": "reduce-scatter"},
         "ddp": {"gloo:all_reduce": "push"}}
MODES = {"fsdp": ZeRO(3), "ddp": "allreduce"}
# timed across hosts: the span kind of a step's time besides the compute slept (collectives)
STAMPED = {"fsdp": "all-gather", "ddp": "push"}
WEIGHTS = "weights.safetensors"  # rank 0's whole weights after its last update


class Layer(torch.nn.Module):
    """One of pslab's layers, x W^T + b, its parameters named as the server names them."""

    def __init__(self, params: Params, weight: str, bias: str):
        super().__init__()
        self.names = (weight, bias)
        self.W = torch.nn.Parameter(params[weight].clone())
        self.b = torch.nn.Parameter(params[bias].clone())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x @ self.W.T + self.b


class MLP(torch.nn.Module):
    """pslab's model (model.logits) as modules, so FSDP2 can shard it layer by layer."""

    def __init__(self, params: Params):
        super().__init__()
        self.hidden, self.output = Layer(params, "W_h", "b_h"), Layer(params, "W_o", "b_o")

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.output(torch.tanh(self.hidden(x)))


def collectives(settings: Settings, compute: tuple[float, ...] | None = None,
                hosts: list[str] | None = None) -> Run:
    """Train checked `settings` (mode ZeRO(3): FSDP2, or "allreduce": DDP) over `workers`
    processes; returns the Run: final weights (pslab's names) and the measured timeline of
    every step's compute and collectives. The process options' timeout (seconds without a
    word from any process before the run stops) and kill / hang ({worker: step}: that process
    kills itself (SIGKILL) / stops answering at that step, a fault on purpose) apply.
    compute, hosts: as `train_across`."""
    s, options = settings, settings.processes
    wrap = "fsdp" if s.mode.schedule == "zero" else "ddp"
    args = (s.workers, s.steps, s.seed, s.batch, s.lr, s.hidden, s.accumulate, wrap, compute)
    with group(_worker, args, s.workers, s.mode.name, options.timeout,
               partial=lambda done: _assemble(done, s, complete=False), hosts=hosts,
               kill=options.kill, hang=options.hang) as done:
        return _assemble(done, s, complete=True)


def train_across(wrap: str, hosts: Sequence[str], compute: Sequence[float], steps: int = 5,
                 accumulate: int = 1, timeout: float = 30.0) -> Run:
    """DDP (wrap="ddp") or FSDP2 ("fsdp") with process r in the network namespace hosts[r]
    (`Hosts.namespace(r)`: gloo on that host's shaped link), sleeping compute[r] seconds per
    minibatch before its forward pass: the timing model's compute, as the parameter-server
    ranks sleep it, so that a measured step is compute plus what the links take. Only the
    last step's weights are gathered and scored (a gather each step would be traffic the
    timing model has not). Seed 0, batch 32, lr 0.5, hidden 32."""
    one_of("wrap", wrap, tuple(MODES))
    compute = tuple(number("compute (seconds)", c, positive=True, high=60) for c in compute)
    if len(compute) != len(hosts):
        raise ValueError(f"compute must give one time per host ({len(hosts)}; got {compute})")
    settings = Settings(mode=MODES[wrap], workers=len(hosts), steps=steps, accumulate=accumulate,
                        processes=ProcessOptions(timeout=timeout))
    return collectives(settings, compute, list(hosts))


def _assemble(done: Finished, settings: Settings, complete: bool) -> Run:
    """The Run from what the processes reported and rank 0's last weights: every step's
    measured spans, and a history record per update up to those weights."""
    last, tensors = read_weights(os.path.join(done.folder, WEIGHTS), settings)
    spans = [Span(rank, None, kind, a, b, step) for rank, mine in enumerate(done.spans)
             for kind, a, b, step in mine]
    t0 = min(sp.start for sp in spans)
    spans = sorted((sp._replace(start=sp.start - t0, end=sp.end - t0) for sp in spans),
                   key=lambda sp: sp.start)
    history = [Record(max(sp.end for sp in spans if sp.step == k), *done.scores[k], 0, k + 1,
                      None, k) for k in range(last + 1) if k in done.scores]
    return Run(settings, spans, history, {name: tensors[name] for name in NAMES},
               max(sp.end for sp in spans), complete=complete)


def read_weights(path: str, settings: Settings) -> tuple[int, dict[str, torch.Tensor]]:
    """(the step, the weights) rank 0 kept in `path`, read as untrusted: the file's size is
    bounded by the model's before anything is read, its header by one step number and four
    tensors, the tensors must be exactly the model's names, shapes and float32 before their
    bytes are read, and the step one of the run's; a ValueError naming the file otherwise."""
    expected = shapes(features=64, hidden=settings.hidden, classes=10)  # the digits' 8x8 pixels
    return read_kept(path, "rank 0's weights", expected, settings.steps)


def _worker(member: Member, folder: str, timeout: float, workers: int, steps: int, seed: int,
            batch: int, lr: float, hidden: int, accumulate: int, wrap: str,
            compute: tuple[float, ...] | None = None) -> None:
    import torch.distributed as dist

    torch.set_num_threads(1)
    rank = member.rank
    # gloo's own limit well past the caller's: the caller names the silent worker first
    member.arrive()
    dist.init_process_group("gloo", init_method=f"file://{folder}/store", rank=rank,
                            world_size=workers, timeout=timedelta(seconds=3 * timeout + 30))
    data = Digits.load(seed)
    model = MLP(init_params(data.features, hidden, data.classes, seed))
    wrapped = _wrap(model, wrap)
    opt = torch.optim.SGD(model.parameters(), lr=lr)
    member.say("ready")
    dist.barrier()  # every process set up: the first step's all-gather waits for nobody
    for step in range(steps):
        member.starting(step)
        spans: list = []
        timed = _profiled(spans, step, KINDS[wrap]) if compute is None else \
            _stamped(spans, step, STAMPED[wrap])
        with timed:
            for micro in range(accumulate):
                if compute is not None:  # the timing model's compute, slept (across hosts)
                    timed.sleep(compute[rank])
                x, y = data.minibatch(step, rank, micro, workers, accumulate, batch)
                with _sync(wrapped, wrap, micro == accumulate - 1):
                    loss = torch.nn.functional.cross_entropy(wrapped(x), y) / accumulate
                    loss.backward()
            opt.step()
            opt.zero_grad()
        # the whole weights after each update (FSDP2: a gather every rank joins, outside
        # the timed step): rank 0 scores them as the simulation does and keeps them on disk
        # (replaced whole, so a run stopped by a dead process still returns its last update)
        # timed across hosts (compute given): the last step's only, as the gather and the
        # barrier would put messages on the shaped links that the timing model has not
        if compute is None or step == steps - 1:
            full = {k: v.detach().contiguous() for k, v in _full_weights(model, wrap).items()}
            if rank == 0:
                member.say("scored", step=step, score=score(full, data))
                save_tensors(os.path.join(folder, WEIGHTS), {k: full[k] for k in NAMES},
                             {"step": step})
            # a step counts as finished once rank 0 has kept its update: no rank reports it
            # (or goes on to die in the next one) before, so however a death and rank 0's
            # last words interleave, the steps the error names are the updates .run holds
            dist.barrier()
        member.finished(step, spans)


def _wrap(model: MLP, wrap: str) -> torch.nn.Module:
    """FSDP2 shards each layer and the whole (in place); DDP wraps the model in a replica."""
    if wrap == "ddp":
        return torch.nn.parallel.DistributedDataParallel(model)
    from torch.distributed.fsdp import fully_shard

    fully_shard(model.hidden)
    fully_shard(model.output)
    fully_shard(model)
    return model


def _sync(wrapped: torch.nn.Module, wrap: str, last: bool):
    """Accumulation: gradients are exchanged on the last minibatch of a step only."""
    if wrap == "ddp":
        return nullcontext() if last else wrapped.no_sync()
    wrapped.set_requires_gradient_sync(last)
    return nullcontext()


def _full_weights(model: MLP, wrap: str) -> dict[str, torch.Tensor]:
    params = {name: p for layer in (model.hidden, model.output)
              for name, p in zip(layer.names, (layer.W, layer.b))}
    if wrap == "ddp":  # every replica holds the whole model
        return params
    return {name: p.full_tensor() for name, p in params.items()}


class _profiled:
    """torch.profiler around one step; its FSDP2 collectives and the step's compute (the rest)
    appended to `spans` as (kind, start, end, step) in seconds of the monotonic clock."""

    def __init__(self, spans: list, step: int, kinds: dict[str, str]):
        self.spans, self.step, self.kinds = spans, step, kinds

    def __enter__(self) -> None:
        from torch.profiler import ProfilerActivity, profile

        self.prof = profile(activities=[ProfilerActivity.CPU])
        self.prof.__enter__()
        self.t0 = time.monotonic()

    def __exit__(self, *exc) -> None:
        end = time.monotonic()
        self.prof.__exit__(*exc)
        found = []
        for e in self.prof.events():
            kind = next((k for prefix, k in self.kinds.items() if e.name.startswith(prefix)), None)
            if kind:
                found.append((kind, self.t0 + e.time_range.start / 1e6,
                              self.t0 + e.time_range.end / 1e6))
        found.sort(key=lambda f: f[1])
        t = self.t0
        for kind, a, b in found:
            if a > t:
                self.spans.append(("compute", t, a, self.step))
            self.spans.append((kind, a, b, self.step))
            t = max(t, b)
        if end > t:
            self.spans.append(("compute", t, end, self.step))


class _stamped:
    """A step timed by the clock alone (across hosts, where the compute is slept): the sleeps
    are the compute spans, the rest of the step (collectives, and the real forward and backward
    of ~0.2 ms) one span of `kind`. torch.profiler's start, stop and event list would cost the
    step ~10-30 ms of CPU on a loaded two-core machine, time the timing model has not."""

    def __init__(self, spans: list, step: int, kind: str):
        self.spans, self.step, self.kind = spans, step, kind

    def __enter__(self) -> "_stamped":
        self.t = time.monotonic()
        return self

    def sleep(self, seconds: float) -> None:
        a = time.monotonic()
        if a > self.t:
            self.spans.append((self.kind, self.t, a, self.step))
        time.sleep(seconds)
        self.t = time.monotonic()
        self.spans.append(("compute", a, self.t, self.step))

    def __exit__(self, *exc) -> None:
        end = time.monotonic()
        if end > self.t:
            self.spans.append((self.kind, self.t, end, self.step))
