"""How every benchmark times: a warm-up, then the median of repeated runs, with min and max."""
from __future__ import annotations

import statistics
import time
from typing import Any, Callable


def measure(fn: Callable[[], Any], repeat: int, warmup: int = 1) -> dict[str, float]:
    """Wall seconds of fn(): median, min and max over `repeat` runs after `warmup` runs."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return {"median": statistics.median(times), "min": min(times), "max": max(times),
            "runs": repeat}


def measure_in_turn(fns: dict[str, Callable[[], Any]], repeat: int, warmup: int = 1
                    ) -> dict[str, dict[str, float]]:
    """`measure` for several functions whose times are compared: one run of each in turn,
    `repeat` rounds, so a change of the machine's load falls on all of them alike (timed one
    after the other, the first ones could meet a quiet minute and the last a busy one)."""
    for fn in fns.values():
        for _ in range(warmup):
            fn()
    times: dict[str, list[float]] = {name: [] for name in fns}
    for _ in range(repeat):
        for name, fn in fns.items():
            t0 = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - t0)
    return {name: {"median": statistics.median(t), "min": min(t), "max": max(t), "runs": repeat}
            for name, t in times.items()}


def row(section: str, name: str, seconds: dict[str, float], **extra: Any) -> dict[str, Any]:
    """One line of the benchmark table."""
    return {"section": section, "name": name, **seconds, **extra}
