"""The `nas` section of `python -m bench`: figure 003's searches against their goals.

- the small live search, S=2, K=3, m=2, 10 rounds, from a cold child cache (every child
  trains): goal <= 20 s on the 2-core machine; and the same search again, warm (every child
  from the cache);
- the paper's scale, S=20, K=100, m=8, 5 rounds, timing only: goal <= 5 s;
- one child's training, to read the live search's time as (children trained) x this.

    python -m bench --only nas        or        python -m bench.nas_speed
"""
from __future__ import annotations

from typing import Any

import pslab.nas as nas
from pslab.nas import child
from pslab.model import single_thread

from .timing import measure, row

LIVE = dict(servers=2, controllers=3, children=2, rounds=10, seed=0)
PAPER = dict(servers=20, controllers=100, children=8, rounds=5, numerics=False)


def _cold() -> nas.Search:
    child.clear_cache()
    return nas.search(**LIVE)


def rows(quick: bool = False) -> list[dict[str, Any]]:
    repeat = 2 if quick else 5
    out = []
    cold = measure(_cold, repeat)
    trained = _cold().trained
    out.append(row("nas", f"live S2 K3 m2 x10, cold: {trained} trained", cold,
                   goal="<= 20 s", met=cold["median"] <= 20))
    warm = measure(lambda: nas.search(**LIVE), repeat)
    out.append(row("nas", "live S2 K3 m2 x10 again, cached", warm,
                   ratio=cold["median"] / warm["median"], goal="instant re-run"))
    with single_thread():  # as inside a search
        one = measure(lambda: child.train(((32, "relu"), (32, "relu")), 0), repeat * 4)
    out.append(row("nas", "one child 32-relu/32-relu (50 x 96 rows)", one))
    paper = measure(lambda: nas.search(**PAPER), repeat)
    spans = len(nas.search(**PAPER).timeline)
    out.append(row("nas", f"paper S20 K100 m8 x5 timing-only, {spans} spans", paper,
                   goal="<= 5 s", met=paper["median"] <= 5))
    sweep = measure(lambda: nas.sweep_servers((1, 2, 4, 8, 20)), max(1, repeat // 2))
    out.append(row("nas", "paper-scale sweep, S = 1, 2, 4, 8, 20", sweep))
    return out


if __name__ == "__main__":
    import argparse

    from .__main__ import print_table

    argparse.ArgumentParser(prog="python -m bench.nas_speed",
                            description="the nas section of python -m bench, alone").parse_args()
    print_table(rows())
