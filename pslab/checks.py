"""Argument checks for the public entries (train, Cluster, SSP): one clear ValueError naming the
parameter and what is allowed, raised before any work starts."""
from __future__ import annotations

import math
from numbers import Integral, Real
from typing import Any


def integer(name: str, value: Any, low: int = 1, high: int | None = None) -> int:
    """An int in [low, high]; bools are refused (True is not a worker count)."""
    ok = isinstance(value, Integral) and not isinstance(value, bool)
    if not ok or value < low or (high is not None and value > high):
        allowed = f"an integer >= {low}" if high is None else f"an integer from {low} to {high}"
        raise ValueError(f"{name} must be {allowed} (got {value!r})")
    return int(value)


def number(name: str, value: Any, *, positive: bool = False, allow_inf: bool = False,
           low: float | None = None, high: float | None = None) -> float:
    """A real number, >= 0 (or > 0 with positive=True), finite unless allow_inf, and within
    [low, high] when they are given (bounds that keep the timing model's sums finite)."""
    ok = isinstance(value, Real) and not isinstance(value, bool) and not math.isnan(value)
    if ok:
        value = float(value)
        ok = ((value > 0 if positive else value >= 0) and (allow_inf or math.isfinite(value))
              and (low is None or value >= low) and (high is None or value <= high))
    if not ok:
        sign = f">= {low:g}" if low is not None else "> 0" if positive else ">= 0"
        kind = "a number" if allow_inf else "a finite number"
        most = "" if high is None else f" and <= {high:g}"
        raise ValueError(f"{name} must be {kind} {sign}{most} (got {value!r})")
    return value


def flag(name: str, value: Any, none: bool = False) -> bool | None:
    """True or False (or None, with none=True): "yes", 1 or 0.5 is a mistake, not a switch.
    A numpy bool (from a grid of settings) counts as the bool it holds, as a numpy int counts
    as an int."""
    if getattr(value, "dtype", None) is not None and getattr(value.dtype, "kind", "") == "b" \
            and getattr(value, "shape", None) == ():
        value = bool(value)
    if not (isinstance(value, bool) or (none and value is None)):
        raise ValueError(f"{name} must be True{', False or None' if none else ' or False'} "
                         f"(got {value!r})")
    return value


def text(name: str, value: Any, none: bool = True) -> str | None:
    """A string (or None): a label that is not one would be drawn as its repr."""
    if not (isinstance(value, str) or (none and value is None)):
        raise ValueError(f"{name} must be a string{' or None' if none else ''} (got {value!r})")
    return value


def one_of(name: str, value: Any, allowed: tuple) -> Any:
    if value not in allowed:
        raise ValueError(f"{name} must be one of {', '.join(map(repr, allowed))} (got {value!r})")
    return value


def run_labels(labels: Any, count: int) -> list[str | None]:
    """One label per run, or None for no labels: a list of another length would silently drop
    or misname a run, so it is refused."""
    if labels is None:
        return [None] * count
    if isinstance(labels, str) or not hasattr(labels, "__len__"):
        raise ValueError(f"labels must be None or a list of {count} strings, one per run "
                         f"(got {labels!r})")
    if len(labels) != count:
        raise ValueError(f"labels must give one label per run: {count} labels "
                         f"(got {len(labels)}: {list(labels)!r})")
    return [None if lab is None else str(lab) for lab in labels]
