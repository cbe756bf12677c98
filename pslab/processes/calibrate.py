"""A link measured, and the timing model it gives: `Cluster(latency, bandwidth)` taken
from the wire, not typed in, before a simulated run is compared with a measured one.

`calibrate(bandwidth)` makes two hosts — host 0 behind a link shaped to `bandwidth` bits per
second, like a server shard's; host 1 unshaped, like a worker's — and plays ping-pong between
them over gloo point-to-point (the same `dist.send`/`dist.recv` a run's messages take), with
messages of a few sizes around a run's own (a shard's weights are 2.4-9.6 KB). Each round trip
crosses the shaped link twice, so half of it is one transfer; a straight line through the
least round trip of each size, seconds = latency + bytes / bandwidth, is the figure-000 link
model. The latency holds what a message costs besides its bytes: gloo, TCP, two Python
processes waking up. `python -m pslab.processes.calibrate` is one end of the ping-pong (run in
a host).
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
from typing import Sequence
from datetime import timedelta

from ..checks import integer
from .hosts import Hosts, bucket, wait_all

SIZES = (64, 2_400, 4_800, 9_600, 19_200)  # bytes: a header alone, then 1/4..2x our weights
PORT = 29490


@dataclass(frozen=True)
class Link:
    """A measured link: latency (seconds per message) and bandwidth (bytes per second), the
    shaping asked for (bits per second), and the medians the line was drawn through."""

    latency: float
    bandwidth: float
    asked: float
    samples: dict[int, float] = field(default_factory=dict)  # bytes -> least one-way seconds
    # seconds per ring step of the collectives, measured (network.ring_latency), by
    # network.overhead_key: "allreduce 4" is DDP among 4 hosts behind links like this one
    ring: dict[str, float] = field(default_factory=dict)
    # seconds per message of the parameter server's protocol beside its bytes, measured
    # (network.overhead), by network.overhead_key: "sync 4 2" is 4 workers and 2 shards
    messages: dict[str, float] = field(default_factory=dict)
    # the clock's reduce-scatter bytes (Cluster.reduce_scatter) the ring latencies were
    # measured against: gloo's, an all-reduce's (2); grid files from before it say none (1)
    reduce_scatter: float = 2.0

    def cluster(self, **timing):
        """A Cluster with this link's latency and bandwidth and the other settings given."""
        from ..cluster import Cluster

        return Cluster(latency=self.latency, bandwidth=self.bandwidth, **timing)

    @property
    def burst(self) -> float:
        """The shaper's bucket (hosts.bucket, bytes on the wire) in this link's bytes (those
        of `bandwidth`, headers left out): the same seconds of credit after a pause."""
        return bucket(self.asked) * self.bandwidth * 8 / self.asked

    @property
    def error(self) -> float:
        """Relative difference of the measured bandwidth from the one asked for."""
        return self.bandwidth * 8 / self.asked - 1


CREDIT = 2_000  # bytes: more than a token bucket's first frame (hosts.py's burst, 1600 B)


def fit(samples: dict[int, float]) -> tuple[float, float]:
    """Least squares seconds = a + bytes * b over the samples larger than CREDIT bytes, a >= 0:
    (a, 1 / b). After a pause a token bucket lets a message's first frame through at once
    (1600 B: 12.8 ms at 1 Mbit/s, 0.26 ms at 50), so a lone message's line crosses zero below
    zero; one queued behind another gets no such credit and takes bytes * b. The slope is the
    shaper's steady rate, measured without that credit, and the line is kept at latency 0 where
    it would go below: a Cluster's latency cannot be negative (and the credit is a shaper's,
    not a wire's). A header alone (under CREDIT) rides the credit whole: it says what a message
    costs besides its bytes, and is left out of the line."""
    big = {n: t for n, t in samples.items() if n > CREDIT}
    xs, ys = (list(big), list(big.values())) if len(big) >= 2 else (list(samples),
                                                                       list(samples.values()))
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)
    if slope <= 0:
        raise RuntimeError(f"the link's times do not grow with the bytes ({samples}): "
                           f"nothing to fit a bandwidth to")
    return max(0.0, my - slope * mx), 1.0 / slope


def calibrate(bandwidth: float, repeats: int = 7, sizes=SIZES, timeout: float = 120.0) -> Link:
    """Measure a link shaped to `bandwidth` bits per second (root only: it makes two hosts,
    removed afterwards, also on failure). About 5 s here, most of it two Pythons importing
    torch.

    Each size's sample is the least of its `repeats` round trips, halved: another program on
    the machine only ever adds time to a round trip (a process waiting for a core before it
    sends or after its data arrived), never takes any away, so the least is the one it
    disturbed least, and the line through them has the link's slope. A median keeps half of
    the disturbed ones: at load 12 it once read 2400 B at 6.5 ms and 4800 B at 5.1, a line
    23 % too steep. The processes run ahead of other programs too (`Hosts.run`)."""
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
    samples = {int(n): min(ts) / 2 for n, ts in measured.items()}
    latency, rate = fit(samples)
    return Link(latency, rate, float(bandwidth), samples)


def transfers(bandwidth: float, plan: Sequence[tuple[int, int, int]], hosts: int,
              repeats: int = 5, timeout: float = 120.0) -> list[list[float]]:
    """Transfers started at one instant on `hosts` hosts, host 0 behind a link shaped to
    `bandwidth` bits per second (a shard's), the others unshaped (workers'). plan: (from host,
    to host, bytes) per transfer, e.g. [(0, 1, n), (2, 0, n)] a fetch and a push at once. Every
    receive is posted before the start, as a shard's and a worker's are (gloo's send waits for
    the receiver's notice, which travels the other way). Returns, per repeat, each transfer's
    seconds from the start until it had arrived. Root only; the hosts are removed afterwards."""
    repeats = integer("repeats", repeats, high=100)
    hosts = integer("hosts", hosts, low=2, high=16)
    plan = [(integer("from host", a, low=0, high=hosts - 1),
             integer("to host", b, low=0, high=hosts - 1), integer("bytes", n, low=4, high=10**8))
            for a, b, n in plan]
    with Hosts(hosts, bandwidth=[bandwidth] + [None] * (hosts - 1)) as made:
        args = [sys.executable, "-m", "pslab.processes.calibrate", "--master", made.addresses[0],
                "--repeats", str(repeats), "--plan", json.dumps(plan), "--world", str(hosts)]
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        procs = [made.run(r, [*args, "--rank", str(r)], env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True) for r in range(hosts)]
        codes = wait_all(procs, timeout)
        if codes != [0] * hosts:
            words = [p.stderr.read()[-500:] if p.poll() is not None else "(still running)"
                     for p in procs]
            raise RuntimeError(f"the transfers failed (exit codes {codes}): {words}")
        arrived = [json.loads(p.stdout.read()) for p in procs]
    return [[next(a[str(i)][k] for a in arrived if str(i) in a) for i in range(len(plan))]
            for k in range(repeats)]


def timed_transfers(rank: int, world: int, master: str, plan: list, repeats: int
                    ) -> dict[int, list[float]]:
    """One host's part of `transfers`: its receives' arrival times, per transfer it receives."""
    import threading

    import torch
    import torch.distributed as dist

    torch.set_num_threads(1)
    os.environ["GLOO_SOCKET_IFNAME"] = "eth0"
    dist.init_process_group("gloo", init_method=f"tcp://{master}:{PORT}", rank=rank,
                            world_size=world, timeout=timedelta(seconds=60))
    times: dict[int, list[float]] = {i: [] for i, (_, b, _) in enumerate(plan) if b == rank}
    try:
        for turn in range(repeats + 1):  # one warm-up: connections, first buffers
            dist.barrier()
            start = torch.tensor([time.perf_counter() + 0.2], dtype=torch.float64)
            dist.broadcast(start, 0)  # CLOCK_MONOTONIC: one clock for every namespace
            t0 = float(start)
            posted = {i: dist.irecv(torch.zeros(n // 4), a, tag=i)
                      for i, (a, b, n) in enumerate(plan) if b == rank}
            time.sleep(max(0.0, t0 - time.perf_counter()))
            sends = [dist.isend(torch.zeros(n // 4), b, tag=i)
                     for i, (a, b, n) in enumerate(plan) if a == rank]
            ends: dict[int, float] = {}

            def arrive(i: int) -> None:
                posted[i].wait()
                ends[i] = time.perf_counter() - t0

            waiting = [threading.Thread(target=arrive, args=(i,)) for i in posted]
            for t in waiting:
                t.start()
            for t in waiting:
                t.join()
            for w in sends:
                w.wait()
            if turn:
                for i, end in ends.items():
                    times[i].append(end)
        dist.barrier()
    finally:
        dist.destroy_process_group()
    return times


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
                                description="one end of a link's ping-pong (see calibrate()), "
                                            "or one host of transfers()")
    p.add_argument("--rank", type=int, required=True)
    p.add_argument("--master", required=True, help="host 0's address")
    p.add_argument("--repeats", type=int, default=7)
    p.add_argument("--sizes", type=int, nargs="+", default=list(SIZES))
    p.add_argument("--plan", default=None, help="transfers() instead: JSON [[from, to, bytes]]")
    p.add_argument("--world", type=int, default=2)
    a = p.parse_args(argv)
    if a.plan is not None:
        print(json.dumps(timed_transfers(a.rank, a.world, a.master, json.loads(a.plan),
                                         a.repeats)))
        return
    times = ping_pong(a.rank, a.master, a.sizes, a.repeats)
    if a.rank == 1:
        print(json.dumps(times))


if __name__ == "__main__":
    main()
