"""Bytes a step moves per rank: a pipeline's activations and gradients against ZeRO-3's
re-gathered weights, for the same model, micro-batches and links (notebook 08).

A pipeline rank sends each micro-batch's activation down and its gradient up once per stage
boundary: 2·m·b·h·4 bytes (b rows, h wide, fp32), whatever the model's size. ZeRO-3 (FSDP)
frees the weights after each use, so with m micro-batches it all-gathers them before every
forward and every backward, 2m times, and reduce-scatters the gradient once: (2m + 1)·4Ψ·(N−1)/N
bytes per rank. Combining the two, each micro-batch re-gathers every stage's weights: the two
fit badly once 4Ψ outgrows the activations.
"""
from __future__ import annotations

from typing import NamedTuple

from ..collectives import bytes_per_worker

BYTES = 4


class Traffic(NamedTuple):
    """Bytes one rank sends in a step, and the seconds they take on a link."""

    name: str
    sent: float
    seconds: float


def pipeline_bytes(micro: int, rows: int, width: int) -> float:
    """Bytes a middle pipeline rank sends per step: each micro-batch's activation down and its
    gradient up."""
    return 2 * micro * rows * width * BYTES


def zero3_bytes(params: int, ranks: int, micro: int) -> float:
    """Bytes a ZeRO-3 rank sends per step, the weights gathered before each micro-batch's
    forward and backward and the gradient reduce-scattered once (what the clock's ZeRO(3)
    moves with accumulate = micro: pslab.collectives)."""
    return bytes_per_worker(3, BYTES * params, ranks, micro)


def compare(params: int, ranks: int, micro: int, rows: int, width: int, bandwidth: float
            ) -> list[Traffic]:
    """The two side by side, with the seconds each takes at `bandwidth` bytes per second."""
    pp, z3 = pipeline_bytes(micro, rows, width), zero3_bytes(params, ranks, micro)
    return [Traffic("pipeline (activations + gradients)", pp, pp / bandwidth),
            Traffic("ZeRO-3 (weights re-gathered per micro-batch)", z3, z3 / bandwidth)]
