"""How large a run this machine can hold, estimated before any work starts.

A run keeps every span of its timeline (about 30 bytes each) and, with numerics, the model on
the server and on every worker. `train` asks `check_fits` first and refuses, with the estimate
and the limit in the message, a run that would exhaust memory or die deep inside numpy or
torch. The limit is half the memory the machine has free now; set the environment variable
PSLAB_MEMORY_LIMIT (bytes, or with a suffix: 8G, 500M) to raise or lower it deliberately.
"""
from __future__ import annotations

import os
from typing import Any

SPAN_BYTES = 32  # a span in the columnar timeline: 3 doubles, plus the array's growth and the
# events around it (tracemalloc: 26 per span for async, 100 workers x 40 steps)
RECORD_BYTES = 160  # one Record of the history
FLOAT_BYTES = 4
_SUFFIX = {"K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}


def memory_limit() -> int:
    """Bytes a run may use: PSLAB_MEMORY_LIMIT if set, else half of what is free now."""
    text = os.environ.get("PSLAB_MEMORY_LIMIT", "").strip().upper().removesuffix("B")
    if text:
        scale = _SUFFIX.get(text[-1], 1)
        try:
            return int(float(text.rstrip("KMGT")) * scale)
        except ValueError:
            raise ValueError(f"PSLAB_MEMORY_LIMIT must be a number of bytes such as 8G or "
                             f"500M (got {os.environ['PSLAB_MEMORY_LIMIT']!r})") from None
    return _available() // 2


def _available() -> int:
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 4 * 2**30  # not Linux: assume a laptop's few free gigabytes


def estimate(workers: int, steps: int, accumulate: int, shards: int, keys: int, batch: int,
             hidden: int, numerics: bool, updates: int) -> int:
    """Bytes a run will hold: its spans, its history and, with numerics, its tensors."""
    per_step = accumulate + 2 * shards + 2  # compute blocks, fetch and push per shard, waits
    spans = workers * steps * per_step + updates * shards
    total = spans * SPAN_BYTES + updates * RECORD_BYTES
    if numerics:  # weights + gradient per worker, the server's copy, a minibatch's activations
        total += FLOAT_BYTES * (keys * (2 * workers + 3) + batch * (hidden + 64 + 10) * 4)
    return total


def check_fits(shown: dict[str, Any] | None = None, **sizes) -> None:
    """Raise ValueError when the run would need more memory than the limit. shown: the
    settings to name in the message, as the caller typed them, where `sizes` are derived
    from them (a pipeline's); None names the sizes themselves."""
    need, limit = estimate(**sizes), memory_limit()
    if need > limit:
        if shown is None:
            shown = {k: v for k, v in sizes.items() if k not in ("keys", "updates")}
            smaller = "workers, steps, accumulate, shards or hidden"
        else:
            *most, last = [k for k, v in shown.items() if not isinstance(v, bool)]
            smaller = f"{', '.join(most)} or {last}" if most else last
        what = ", ".join(f"{k}={v}" for k, v in shown.items())
        raise ValueError(
            f"this run would need about {_human(need)} of memory ({what}), more than the "
            f"limit of {_human(limit)} (half the memory free now): make {smaller} smaller, "
            f"or set PSLAB_MEMORY_LIMIT to raise the limit deliberately")


def _human(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if n < 1024 or unit == "TB":
            return f"{n:.3g} {unit}"
        n /= 1024
    return f"{n:.3g} PB"
