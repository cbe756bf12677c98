"""How fast the virtual clock runs: timing-only runs of large clusters, and full numerics.

    python bench/core_speed.py

Prints the best of three wall times. The goal: 800 workers x 100 steps, timing only,
well under a second; a default sync training run in a few seconds.
"""
from __future__ import annotations

import time

import pslab


def best_of(n: int, **kwargs) -> tuple[float, pslab.Run]:
    times, run = [], None
    for _ in range(n):
        t0 = time.perf_counter()
        run = pslab.train(**kwargs)
        times.append(time.perf_counter() - t0)
    return min(times), run


def main() -> None:
    pslab.train(steps=1)  # load the data once, outside the timings
    print(f"{'run':44s} {'wall s':>8s} {'spans':>8s} {'us/span':>8s}")
    cases = [
        ("timing-only sync 800x100", dict(mode="sync", numerics=False)),
        ("timing-only async 800x100", dict(mode="async", numerics=False)),
        ("timing-only SSP(2) 800x100", dict(mode=pslab.SSP(2), numerics=False)),
        ("timing-only async 800x100, free network",
         dict(mode="async", numerics=False, cluster=pslab.Cluster.free())),
    ]
    for name, kw in cases:
        wall, run = best_of(3, workers=800, steps=100, **kw)
        print(f"{name:44s} {wall:8.3f} {len(run.timeline):8d} {1e6 * wall / len(run.timeline):8.2f}")
    for mode in ("sync", "async"):
        wall, run = best_of(3, mode=mode)
        print(f"{'numerics ' + mode + ' defaults (3 workers x 50)':44s} {wall:8.3f} "
              f"{len(run.timeline):8d}   accuracy {run.final_accuracy:.1%}")


if __name__ == "__main__":
    main()
