"""The learning rule of figure 003: REINFORCE with a moving-average baseline (Zoph & Le 2017).

A controller replica that handed out m children and got back their accuracies R_1..R_m
computes

    g = −(1/m) Σ_j (r_j − b) ∇_Θ log π(child_j),   r_j = R_j³ (cubed, as the paper) or R_j

on the Θ it pulled, and pushes g to the servers, which apply Θ ← Θ − lr·g (a step *up* the
expected reward). b is the replica's exponential moving average of the rewards it has seen:
set to the mean of its first batch, then b ← decay·b + (1 − decay)·mean(r) after each batch.
"""
from __future__ import annotations

import math
from typing import Sequence

import torch

from ..layout import Layout, Params
from .controller import log_prob_grad
from .space import Space


def reward(accuracy: float, cube: bool) -> float:
    """The paper cubes the accuracy: it separates good children from very good ones."""
    return accuracy ** 3 if cube else accuracy


class Baseline:
    """An exponential moving average of the rewards (None before the first batch)."""

    def __init__(self, decay: float):
        self.decay = decay
        self.value: float | None = None

    def advantages(self, rewards: Sequence[float]) -> list[float]:
        """r_j − b for this batch (b taken before the batch), then move b towards it."""
        mean = math.fsum(rewards) / len(rewards)
        if self.value is None:
            self.value = mean
        out = [r - self.value for r in rewards]
        self.value = self.decay * self.value + (1 - self.decay) * mean
        return out


def gradient(theta: Params, layout: Layout, space: Space, choices: Sequence[tuple[int, ...]],
             advantages: Sequence[float]) -> torch.Tensor:
    """The flat gradient g (server order) of −mean_j a_j log π(child_j) at Θ."""
    total = torch.zeros(layout.size, dtype=torch.float32)
    for c, a in zip(choices, advantages):
        total -= a * layout.flatten(log_prob_grad(theta, space, c))
    return total / len(choices)
