"""ZeRO-3 on real OS processes with PyTorch's own FSDP2 (`fully_shard`) on gloo, CPU only.

Each of N processes wraps the digits MLP (the same W_h, b_h, W_o, b_o from the run's seed) with
`fully_shard` per layer, so it holds 1/N of every layer; FSDP2 all-gathers a layer before its
forward and again before its backward, and reduce-scatters its gradient (averaged over the
ranks) — the collectives `pslab.ZeRO(3)` puts on the virtual clock. Every process reads the
simulation's minibatches (Digits.minibatch), so the weights equal the simulated ZeRO(3)'s to
float tolerance (FSDP2 sums in its own order). The processes meet through a file store in a
private temporary folder: no port to choose, nothing left behind. A process that fails makes
the whole call raise (torch.multiprocessing stops the others).

Not yet here: a measured timeline of the collectives (notes/h22.md).
"""
from __future__ import annotations

import os
import shutil
import tempfile

import torch

from ..checks import integer, number
from ..data import Digits
from ..files import load_tensors, save_tensors
from ..model import NAMES, init_params
from ..result import Params


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
               lr: float = 0.5, hidden: int = 32, accumulate: int = 1) -> Params:
    """Train with FSDP2 over `workers` processes; returns the final weights (pslab's names)."""
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
        return {name: tensors[name] for name in NAMES}
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
        for step in range(steps):
            for micro in range(accumulate):
                x, y = data.minibatch(step, rank, micro, workers, accumulate, batch)
                loss = torch.nn.functional.cross_entropy(model(x), y) / accumulate
                model.set_requires_gradient_sync(micro == accumulate - 1)
                loss.backward()
            opt.step()
            opt.zero_grad()
        full = {name: p.full_tensor() for layer in (model.hidden, model.output)
                for name, p in zip(layer.names, (layer.W, layer.b))}
        if rank == 0:
            save_tensors(os.path.join(folder, "weights.safetensors"),
                         {k: full[k].detach().contiguous() for k in NAMES}, {})
    finally:
        dist.destroy_process_group()
