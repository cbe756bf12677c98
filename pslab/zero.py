"""ZeRO's memory arithmetic (Rajbhandari et al., SC'20, Figure 1): what one GPU holds.

A data-parallel worker keeps three model states: the parameters, their gradients and the
optimizer's state. Plain data parallelism (stage 0: DDP, all-reduce, a parameter server's
workers) keeps all three whole on every GPU; ZeRO cuts them into N key ranges, one per GPU:
stage 1 (P_os) the optimizer state, stage 2 (P_os+g) the gradients too, stage 3 (P_os+g+p)
the parameters too. With Ψ parameters, N GPUs, p and g bytes per parameter and gradient and K
bytes of optimizer state per parameter, one GPU holds

    stage 0: (p + g + K)·Ψ          stage 1: (p + g)·Ψ + K·Ψ/N
    stage 2: p·Ψ + (g + K)·Ψ/N      stage 3: (p + g + K)·Ψ/N

The paper's model is mixed-precision Adam: fp16 parameters and gradients (p = g = 2) and K = 12
(fp32 master weights, momentum and variance). For Ψ = 7.5e9 and N = 64 that is Figure 1's
120 GB, 31.4 GB, 16.6 GB and 1.9 GB. This module is arithmetic only: `Run.memory` uses it for
the run's own model (fp32 SGD: p = g = 4, K = 0).
"""
from __future__ import annotations

from numbers import Real
from typing import NamedTuple

from .checks import integer, number
from .layout import BYTES_PER_VALUE, Layout

# bytes per parameter: (parameter, gradient, optimizer state K)
OPTIMIZERS: dict[str, tuple[float, float, float]] = {
    "adam-mixed": (2, 2, 12),  # the paper's: fp16 p and g; fp32 copy, momentum, variance
    "adam": (4, 4, 8),  # fp32 throughout: momentum and variance
    "sgd-momentum": (4, 4, 4),  # fp32, one momentum buffer
    "sgd": (4, 4, 0),  # fp32 plain SGD, no state: pslab's own workers
}
STAGES = (0, 1, 2, 3)  # 0: plain data parallelism, the paper's baseline


class Memory(NamedTuple):
    """Bytes one GPU holds of each model state (and, at its peak, a gathered layer)."""

    params: float
    grads: float
    optimizer: float
    gathered: float = 0.0  # stage 3: one layer's parameters gathered for compute, then freed

    @property
    def total(self) -> float:
        return self.params + self.grads + self.optimizer + self.gathered


def memory(params: float, gpus: int, stage: int, optimizer: str | float = "adam-mixed"
           ) -> Memory:
    """The paper's per-GPU bytes for `params` (Ψ) parameters on `gpus` (N) GPUs at ZeRO
    `stage` (0 = no ZeRO). optimizer: a name in OPTIMIZERS, or K (bytes of optimizer state
    per parameter) with the paper's fp16 parameters and gradients."""
    psi = number("params (the parameter count Ψ)", params, positive=True, high=1e15)
    n = integer("gpus", gpus, high=10**9)
    stage = integer("stage (0: no ZeRO, 1, 2, 3)", stage, low=0, high=3)
    p, g, k = bytes_per_parameter(optimizer)
    return split(psi * p, psi * g, psi * k, n, stage)


def bytes_per_parameter(optimizer: str | float) -> tuple[float, float, float]:
    """(p, g, K) of an optimizer name, or (2, 2, K) for a number K."""
    if isinstance(optimizer, str):
        if optimizer not in OPTIMIZERS:
            raise ValueError(f"optimizer must be one of {sorted(OPTIMIZERS)} or a number K of "
                             f"bytes per parameter (got {optimizer!r})")
        return OPTIMIZERS[optimizer]
    if not isinstance(optimizer, Real) or isinstance(optimizer, bool):
        raise ValueError(f"optimizer must be one of {sorted(OPTIMIZERS)} or a number K of "
                         f"bytes per parameter (got {optimizer!r})")
    return 2.0, 2.0, number("optimizer (K, bytes of state per parameter)", optimizer, high=1e6)


def split(params: float, grads: float, optimizer: float, gpus: int, stage: int) -> Memory:
    """The three states' whole bytes, each cut over `gpus` from the stage that shards it."""
    return Memory(params / gpus if stage >= 3 else params,
                  grads / gpus if stage >= 2 else grads,
                  optimizer / gpus if stage >= 1 else optimizer)


def stage_of(mode: str) -> int:
    """ZeRO's stage from a mode's name ("ZeRO(2)" -> 2); 0 for every other mode."""
    if mode.startswith("ZeRO(") and mode.endswith(")") and mode[5:-1].isdigit():
        return int(mode[5:-1])
    return 0


def worker_memory(layout: Layout, workers: int, stage: int, value_bytes: int = BYTES_PER_VALUE
                  ) -> list[Memory]:
    """Per worker, the bytes of pslab's own model states (fp32 SGD: no optimizer state) at
    `stage`, worker i owning `layout`'s key range i when stage >= 1 (ZeRO's owner layout).

    Stage 3 also holds, while it computes, one layer gathered whole (FSDP frees it after the
    layer: the largest layer is the peak). The clock draws stage 3's gathers as one block per
    pass, which costs the same time as one per layer, since no collective overlaps compute.
    """
    whole = layout.size * value_bytes
    own = [layout.keys(i) * value_bytes for i in range(workers)] if stage else [whole] * workers
    largest = max(_layer_keys(layout)) * value_bytes if stage == 3 else 0
    return [Memory(mine if stage >= 3 else whole, mine if stage >= 2 else whole, 0.0,
                   largest) for mine in own]


def _layer_keys(layout: Layout) -> list[int]:
    """Keys of each layer: a weight W_x with its bias b_x (the digits MLP's two layers)."""
    sizes: dict[str, int] = {}
    for name, dims in zip(layout.names, layout.shapes):
        n = 1
        for d in dims:
            n *= d
        layer = name.split("_", 1)[-1]  # W_h and b_h are layer h
        sizes[layer] = sizes.get(layer, 0) + n
    return list(sizes.values())
