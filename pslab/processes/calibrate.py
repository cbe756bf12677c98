"""A link measured, and the timing model it gives (issue 21): `Cluster(latency, bandwidth)` taken
from the wire, not typed in, before a simulated run is compared with a measured one.

`calibrate(bandwidth)` makes two hosts — host 0 behind a link shaped to `bandwidth` bits per
second, like a server shard's; host 1 unshaped, like a worker's — and plays ping-pong between
them over gloo point-to-point (the same `dist.send`/`dist.recv` a run's messages take), with
messages of a few sizes around a run's own (a shard's weights are 2.4-9.6 KB). Each round trip
crosses the shaped link twice, so half of it is one transfer; a straight line through the
medians, seconds = latency + bytes / bandwidth, is the figure-000 link model. The latency holds
what a message costs besides its bytes: gloo, TCP, two Python processes waking up on a loaded
machine. `python -m pslab.processes.calibrate` is one end of the ping-pong (run in a host).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from datetime import timedelta

from ..checks import integer
from .hosts import Hosts, wait_all

SIZES = (64, 2_400, 4_800, 9_600, 19_200)  # bytes: a header alone, then 1/4..2x our weights
PORT = 29490


@dataclass(frozen=True)
class Link:
    """A measured link: latency (seconds per message) and bandwidth (bytes per second), the
    shaping asked for (bits per second), and the medians the line was drawn through."""

    latency: float
    bandwidth: float
    asked: float
    samples: dict[int, float] = field(default_factory=dict)  # bytes -> median one-way seconds

    def cluster(self, **timing):
        """A Cluster with this link's latency and bandwidth and the other settings given."""
        from ..cluster import Cluster

        return Cluster(latency=self.latency, bandwidth=self.bandwidth, **timing)

    @property
    def error(self) -> float:
        """Relative difference of the measured bandwidth from the one asked for."""
        return self.bandwidth * 8 / self.asked - 1


def fit(samples: dict[int, float]) -> tuple[float, float]:
    """Least squares seconds = a + bytes * b over the samples, a >= 0: (a, 1 / b). A line
    that would cross below zero (a token bucket lets a message's first frame through at once,
    earlier than a wire would) is fitted through the origin instead: the best line a Cluster,
    whose latency cannot be negative, can hold."""
    xs, ys = list(samples), list(samples.values())
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)
    if slope <= 0:
        raise RuntimeError(f"the link's times do not grow with the bytes ({samples}): "
                           f"nothing to fit a bandwidth to")
    if my - slope * mx < 0:
        return 0.0, sum(x * x for x in xs) / sum(x * y for x, y in zip(xs, ys))
    return my - slope * mx, 1.0 / slope


def calibrate(bandwidth: float, repeats: int = 7, sizes=SIZES, timeout: float = 120.0) -> Link:
    """Measure a link shaped to `bandwidth` bits per second (root only: it makes two hosts,
    removed afterwards, also on failure). About 5 s here, most of it two Pythons importing
    torch."""
    repeats = integer("repeats", repeats, high=100)
    with Hosts(2, bandwidth=[bandwidth, None]) as hosts:
        master = hosts.addresses[0]
        args = [sys.executable, "-m", "pslab.processes.calibrate", "--master", master,
                "--repeats", str(repeats), "--sizes", *map(str, sizes)]
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        procs = [hosts.run(r, [*args, "--rank", str(r)], env=env, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True) for r in range(2)]
        codes = wait_all(procs, timeout)
        if codes != [0, 0]:
            words = [p.stderr.read()[-500:] if p.poll() is not None else "(still running)"
                     for p in procs]
            raise RuntimeError(f"the calibration failed (exit codes {codes}): {words}")
        measured = json.loads(procs[1].stdout.read())
    samples = {int(n): statistics.median(ts) / 2 for n, ts in measured.items()}
    latency, rate = fit(samples)
    return Link(latency, rate, float(bandwidth), samples)


def ping_pong(rank: int, master: str, sizes: list[int], repeats: int) -> dict[int, list]:
    """One end of the ping-pong: rank 1 sends each size and times the echo, rank 0 echoes."""
    import torch
    import torch.distributed as dist

    torch.set_num_threads(1)
    os.environ["GLOO_SOCKET_IFNAME"] = "eth0"  # a host's one link (hosts.py names it so)
    dist.init_process_group("gloo", init_method=f"tcp://{master}:{PORT}", rank=rank,
                            world_size=2, timeout=timedelta(seconds=60))
    times: dict[int, list] = {n: [] for n in sizes}
    try:
        for turn in range(repeats + 2):  # two warm-up rounds: connection, first buffers
            for n in sizes:  # sizes interleaved, so that a slow moment hits all of them
                buf = torch.zeros(max(1, n // 4))
                t0 = time.perf_counter()
                if rank == 1:
                    dist.send(buf, 0)
                    dist.recv(buf, 0)
                else:
                    dist.recv(buf, 1)
                    dist.send(buf, 1)
                if turn >= 2:
                    times[n].append(time.perf_counter() - t0)
                time.sleep(0.005)  # a pause, as between a run's messages
        dist.barrier()
    finally:
        dist.destroy_process_group()
    return times


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m pslab.processes.calibrate",
                                description="one end of a link's ping-pong (see calibrate())")
    p.add_argument("--rank", type=int, required=True, choices=(0, 1))
    p.add_argument("--master", required=True, help="host 0's address")
    p.add_argument("--repeats", type=int, default=7)
    p.add_argument("--sizes", type=int, nargs="+", default=list(SIZES))
    a = p.parse_args(argv)
    times = ping_pong(a.rank, a.master, a.sizes, a.repeats)
    if a.rank == 1:
        print(json.dumps(times))


if __name__ == "__main__":
    main()
