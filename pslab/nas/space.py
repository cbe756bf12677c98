"""What the controller of figure 003 chooses from: the search space of child networks.

A child is an MLP on the digits: first its number of hidden layers, then, for each layer, a
width and an activation (Zoph & Le 2017 sample one token per decision in the same way). An
architecture is a tuple of (width, activation) layers, e.g. ((32, "relu"), (16, "tanh")).
The controller's parameters Θ hold one row of logits per decision (`Space.shapes`), so the
layout of Θ on the server follows from the space alone.
"""
from __future__ import annotations

from dataclasses import dataclass
from numbers import Integral
from typing import Any, Sequence

ACTIVATIONS = ("relu", "tanh", "sigmoid", "identity")
Arch = tuple[tuple[int, str], ...]


def describe(arch: Arch) -> str:
    """'32 units (relu) → 16 units (tanh)': a child's hidden layers in one short line."""
    return " → ".join(f"{w} units ({'no activation' if a == 'identity' else a})"
                      for w, a in arch)


# Children are real MLPs trained on the 8x8 digits: 8 hidden layers of 1,024 units is already
# far past what 64 pixels need, and a child that size still trains in seconds here.
LARGEST = {"depths": 8, "widths": 1024}


def _ints(name: str, values: Any) -> tuple[int, ...]:
    high = LARGEST[name]
    ok = isinstance(values, (list, tuple)) and 0 < len(values) <= high and all(
        isinstance(v, Integral) and not isinstance(v, bool) and 1 <= v <= high for v in values)
    if not ok or len(set(values)) != len(values):
        raise ValueError(f"space {name} must be a non-empty list of distinct integers from 1 "
                         f"to {high} (got {values!r})")
    return tuple(int(v) for v in values)


@dataclass(frozen=True)
class Space:
    """depths: allowed numbers of hidden layers; widths: allowed units per layer;
    activations: allowed activations (from ACTIVATIONS). The default has 3 + 3·(6 + 4) = 33
    decisions' logits and 24 + 24² + 24³ = 14,424 architectures."""

    depths: tuple[int, ...] = (1, 2, 3)
    widths: tuple[int, ...] = (2, 4, 8, 16, 32, 64)
    activations: tuple[str, ...] = ACTIVATIONS

    def __post_init__(self) -> None:
        object.__setattr__(self, "depths", _ints("depths", self.depths))
        object.__setattr__(self, "widths", _ints("widths", self.widths))
        acts = self.activations
        if not isinstance(acts, (list, tuple)) or not acts or len(set(acts)) != len(acts) \
                or any(a not in ACTIVATIONS for a in acts):
            raise ValueError(f"space activations must be a non-empty list of distinct names "
                             f"from {ACTIVATIONS} (got {acts!r})")
        object.__setattr__(self, "activations", tuple(acts))

    @property
    def max_depth(self) -> int:
        return max(self.depths)

    @property
    def shapes(self) -> dict[str, tuple[int]]:
        """One logit vector per decision, in the order the controller samples them."""
        out = {"depth": (len(self.depths),)}
        for layer in range(1, self.max_depth + 1):
            out[f"width{layer}"] = (len(self.widths),)
            out[f"act{layer}"] = (len(self.activations),)
        return out

    @property
    def size(self) -> int:
        """How many architectures the space holds."""
        per_layer = len(self.widths) * len(self.activations)
        return sum(per_layer ** d for d in self.depths)

    def decisions(self, depth: int) -> list[str]:
        """The names of the decisions made for a child of `depth` layers (depth first)."""
        out = ["depth"]
        for layer in range(1, depth + 1):
            out += [f"width{layer}", f"act{layer}"]
        return out

    def arch(self, choices: Sequence[int]) -> Arch:
        """The architecture from the chosen indices (depth index, then width, act per layer)."""
        depth = self.depths[choices[0]]
        rest = choices[1:]
        return tuple((self.widths[rest[2 * i]], self.activations[rest[2 * i + 1]])
                     for i in range(depth))


def as_space(space: Any) -> Space:
    """Check the `space` argument of the public entries: None (the default) or a Space, or a
    dict of Space's fields."""
    if space is None:
        return Space()
    if isinstance(space, Space):
        return space
    if isinstance(space, dict):
        unknown = set(space) - {"depths", "widths", "activations"}
        if unknown:
            raise ValueError(f"space has no field {', '.join(sorted(unknown))}; its fields are "
                             "depths, widths, activations")
        return Space(**space)
    raise ValueError(f"space must be a pslab.nas.Space or a dict of depths, widths, activations "
                     f"(got {type(space).__name__})")
