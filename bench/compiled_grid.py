"""`python -m bench.compiled_grid [--seed N] [--cases K]`: the compiled loops against the Python.

Timing-only async and SoftSync runs go through fastloop.py or fastduplex.py, compiled by Cython
where the install had a C compiler (pslab/compiled.py). This draws `cases` settings from a
seeded grid (16-400 workers, 20-80 steps, 1-4 shards, either link kind, jitter 0-0.5), times
each on the loops in use and on the Python modules themselves, in turn, and prints both and
their ratio, then the median, least and most ratio over the grid.
"""
from __future__ import annotations

import argparse
import random
import statistics
from typing import Any, Callable

import pslab
from pslab import compiled, fastduplex, fastloop, simulation

from .timing import measure_in_turn


def python_loops(run: Callable[[], Any]) -> Any:
    """`run()` with Simulation.run taking the Python loops, not their compiled twins."""
    twins = simulation.run_duplex, simulation.run_inline
    simulation.run_duplex, simulation.run_inline = fastduplex.run_duplex, fastloop.run_inline
    try:
        return run()
    finally:
        simulation.run_duplex, simulation.run_inline = twins


def grid(seed: int, cases: int) -> list[dict[str, Any]]:
    """`cases` timing-only settings drawn from `seed`."""
    rng, out = random.Random(seed), []
    for _ in range(cases):
        mode = rng.choice(["async", pslab.SoftSync(2)])
        # even worker counts: SoftSync(2)'s rounds of two pushes always come out whole
        workers, steps = rng.choice([16, 64, 200, 400]), rng.randint(20, 80)
        out.append(dict(mode=mode, workers=workers, steps=steps, shards=rng.randint(1, 4),
                        seed=rng.randint(0, 99), numerics=False, cluster=pslab.Cluster(
                            jitter=rng.random() * 0.5,
                            links=rng.choice(["duplex", "one-at-a-time"]))))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(prog="python -m bench.compiled_grid", description=__doc__)
    ap.add_argument("--seed", type=int, default=44, help="the grid's seed (default 44)")
    ap.add_argument("--cases", type=int, default=10, help="settings drawn (default 10)")
    args = ap.parse_args()
    if not (compiled.in_use(fastduplex) and compiled.in_use(fastloop)):
        raise SystemExit("the compiled loops are not built here: nothing to compare")
    ratios = []
    for kw in grid(args.seed, args.cases):
        def run(kw: dict[str, Any] = kw) -> Any:
            return pslab.train(**kw)
        t = measure_in_turn({"compiled": run, "python": lambda: python_loops(run)}, 3)
        ratio = t["python"]["median"] / t["compiled"]["median"]
        ratios.append(ratio)
        print(f"{kw['workers']:4d} x {kw['steps']:2d}  S={kw['shards']}  "
              f"{kw['cluster'].links:13s}  {str(kw['mode']):11s}  compiled "
              f"{t['compiled']['median'] * 1e3:7.1f} ms  Python {t['python']['median'] * 1e3:7.1f}"
              f" ms  {ratio:.2f}x")
    print(f"seed {args.seed}, {args.cases} settings: Python / compiled median "
          f"{statistics.median(ratios):.2f}x, least {min(ratios):.2f}x, most {max(ratios):.2f}x")


if __name__ == "__main__":
    main()
