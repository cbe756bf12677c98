"""ZeRO-3 on real OS processes with PyTorch's own FSDP2 (`fully_shard`) on gloo, CPU only.

Each of N processes wraps the digits MLP (the same W_h, b_h, W_o, b_o from the run's seed) with
`fully_shard` per layer, so it holds 1/N of every layer; FSDP2 all-gathers a layer before its
forward and again before its backward, and reduce-scatters its gradient (averaged over the
ranks) — the collectives `pslab.ZeRO(3)` puts on the virtual clock. Every process reads the
simulation's minibatches (Digits.minibatch), so the weights equal the simulated ZeRO(3)'s to
float tolerance (FSDP2 sums in its own order). The processes meet through a file store in a
private temporary folder: no port to choose, nothing left behind. A process that fails makes
the whole call raise (torch.multiprocessing stops the others).

The returned Run's timeline is measured: torch.profiler's FSDP2 ranges (compute, "FSDP::
all_gather", "FSDP::post_backward_reduce") become compute, all-gather and reduce-scatter spans
on the processes' shared monotonic clock, so it plots with the same code as a simulated run.
"""
from __future__ import annotations

import math
import os
import shutil
import tempfile
import time

import torch

from ..checks import integer, number
from ..data import Digits
from ..files import load_tensors, save_tensors
from ..model import NAMES, init_params
from ..result import Params, Run
from ..timeline import Record, Span

KINDS = {"FSDP::all_gather (": "all-gather", "FSDP::post_backward_reduce (": "reduce-scatter"}


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


def train_fsdp(workers: int = 2, steps: int = 5, seed: int = 0, batch: int = 32,
               lr: float = 0.5, hidden: int = 32, accumulate: int = 1) -> Run:
    """Train with FSDP2 over `workers` processes; returns the Run: final weights (pslab's
    names) and the measured timeline of every step's compute and collectives."""
    workers = integer("workers (FSDP2 needs at least 2 to shard)", workers, low=2, high=16)
    steps, batch = integer("steps", steps, high=10**5), integer("batch", batch, high=1797)
    hidden, accumulate = integer("hidden", hidden, high=4096), integer("accumulate", accumulate)
    seed, lr = integer("seed", seed, low=0), number("lr", lr, positive=True)
    import torch.multiprocessing as mp

    folder = tempfile.mkdtemp(prefix="pslab-fsdp-")
    try:
        settings = (workers, steps, seed, batch, lr, hidden, accumulate, folder)
        mp.start_processes(_worker, args=settings, nprocs=workers, start_method="spawn")
        _, tensors = load_tensors(os.path.join(folder, "weights.safetensors"), "FSDP2 weights")
        spans = []
        for rank in range(workers):
            meta, _ = load_tensors(os.path.join(folder, f"spans{rank}.safetensors"), "spans")
            spans += [Span(rank, None, kind, a, b, step) for kind, a, b, step in meta["spans"]]
        t0 = min(sp.start for sp in spans)
        spans = [sp._replace(start=sp.start - t0, end=sp.end - t0) for sp in spans]
        config = dict(mode="ZeRO(3)", workers=workers, accumulate=accumulate, lr=lr,
                      batch=batch, steps=steps, seed=seed, hidden=hidden, backend="processes")
        ends = [max(sp.end for sp in spans if sp.step == k) for k in range(steps)]
        history = [Record(t, math.nan, math.nan, 0, k + 1, None, k) for k, t in enumerate(ends)]
        return Run(config, sorted(spans, key=lambda sp: sp.start), history,
                   {name: tensors[name] for name in NAMES}, max(sp.end for sp in spans))
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _worker(rank: int, workers: int, steps: int, seed: int, batch: int, lr: float, hidden: int,
            accumulate: int, folder: str) -> None:
    import torch.distributed as dist
    from torch.distributed.fsdp import fully_shard

    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"file://{folder}/store", rank=rank,
                            world_size=workers)
    try:
        data = Digits.load(seed)
        model = MLP(init_params(data.features, hidden, data.classes, seed))
        fully_shard(model.hidden)
        fully_shard(model.output)
        fully_shard(model)
        opt = torch.optim.SGD(model.parameters(), lr=lr)
        spans = []
        for step in range(steps):
            with _profiled(spans, step):
                for micro in range(accumulate):
                    x, y = data.minibatch(step, rank, micro, workers, accumulate, batch)
                    loss = torch.nn.functional.cross_entropy(model(x), y) / accumulate
                    model.set_requires_gradient_sync(micro == accumulate - 1)
                    loss.backward()
                opt.step()
                opt.zero_grad()
        save_tensors(os.path.join(folder, f"spans{rank}.safetensors"), {}, {"spans": spans})
        full = {name: p.full_tensor() for layer in (model.hidden, model.output)
                for name, p in zip(layer.names, (layer.W, layer.b))}
        if rank == 0:
            save_tensors(os.path.join(folder, "weights.safetensors"),
                         {k: full[k].detach().contiguous() for k in NAMES}, {})
    finally:
        dist.destroy_process_group()


class _profiled:
    """torch.profiler around one step; its FSDP2 collectives and the step's compute (the rest)
    appended to `spans` as (kind, start, end, step) in seconds of the monotonic clock."""

    def __init__(self, spans: list, step: int):
        self.spans, self.step = spans, step

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
            kind = next((k for prefix, k in KINDS.items() if e.name.startswith(prefix)), None)
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
