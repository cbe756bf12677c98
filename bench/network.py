"""Measured across hosts vs simulated (issue 21): `python -m bench --only network`.

A link shaped to 4 Mbit/s is calibrated (latency and bandwidth of a Cluster, measured), then
figure 000 (sync and async, a straggler), figure 001 (accumulate 1 vs 2) and the shards sweep
(S = 1, 2, 4) run across network namespaces (pslab.processes.network) and on the virtual clock
with that Cluster. One row per case with `measured_step` and `simulated_step` (seconds per step)
and the error; then the calibration and the summary (median and worst error, ranking). Needs
root (network namespaces): elsewhere one row says why it was not measured. About 30 s here
(each rank forked into its host, hosts_fork.py; ~90 s when each host started its own Python).
"""
from __future__ import annotations

import os
from typing import Any

GOAL = "median |error| <= 5 %, worst <= 10 %, same ranking"


def rows(quick: bool = False) -> list[dict[str, Any]]:
    from pslab.processes.hosts import unavailable

    why = unavailable()
    if why:
        return [{"section": "network", "name": f"not measured: {why}"}]
    from pslab.processes import network
    from pslab.processes.calibrate import calibrate

    load = os.getloadavg()[0]
    link = calibrate(network.BANDWIDTH)
    compared = network.compare(link)
    out = [case_row(r) for r in compared]
    summary = network.summary(compared)
    out.append({"section": "network", "name": "calibrated link (4 Mbit/s asked)",
                "latency": link.latency, "bandwidth": link.bandwidth, "asked": link.asked,
                "bandwidth_error": link.error,
                "samples": {str(k): v for k, v in link.samples.items()}})
    met = summary["median_error"] <= 0.05 and summary["worst_error"] <= 0.10 \
        and summary["ranking_same"]
    out.append({"section": "network", "name": "median |error| of the per-step time",
                "median_error": summary["median_error"], "worst_error": summary["worst_error"],
                "ranking_same": summary["ranking_same"], "ranking": summary["ranking"],
                "load": load, "goal": GOAL, "met": met})
    print_table(out, link)
    return out


def case_row(r) -> dict[str, Any]:
    plain = r.plain()
    return dict(plain, section="network", median=r.measured_step, ratio=1 + r.error)


def print_table(out: list[dict[str, Any]], link) -> None:
    print(f"\nnetwork: link {link.bandwidth * 8 / 1e6:.2f} Mbit/s measured "
          f"({link.error:+.1%} of asked), latency {link.latency * 1e3:.2f} ms")
    print(f"{'case':24} {'measured':>9} {'simulated':>9} {'error':>7} {'waiting m/s':>12} "
          f"{'staleness TV':>12} {'both ways':>9}")
    for r in out:
        if "measured_step" not in r:
            continue
        print(f"{r['name']:24} {r['measured_step'] * 1e3:7.1f}ms {r['simulated_step'] * 1e3:7.1f}ms "
              f"{r['error']:+7.1%} {r['measured_waiting']:5.0%} /{r['simulated_waiting']:4.0%} "
              f"{r['staleness_distance']:12.2f} {r['measured_both_ways']:9.0%}")
    s = out[-1]
    print(f"median |error| {s['median_error']:.1%}, worst {s['worst_error']:.1%}, ranking "
          f"{'the same' if s['ranking_same'] else 'DIFFERENT'} (goal: {GOAL}; load {s['load']:.1f})")
