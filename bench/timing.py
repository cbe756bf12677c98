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


def row(section: str, name: str, seconds: dict[str, float], **extra: Any) -> dict[str, Any]:
    """One line of the benchmark table."""
    return {"section": section, "name": name, **seconds, **extra}
