"""One sync step on real processes: pslab's parameter server against torch DDP (gloo).

    python bench/processes_vs_ddp.py [--steps 200] [--repeat 3]

Same model (the digits MLP, 64-32-10), same 3 worker processes, same batch (32 rows each),
one torch thread per process, loopback. DDP all-reduces the gradient among the 3 workers;
pslab's sync mode pushes it to 2 server shards (2 more processes) and fetches the averaged
weights back. The process backend runs with time_scale=0 (no sleeping): raw speed. A step is
the steady-state time between consecutive updates (the median over the run, after a warm-up);
the goal is a ratio <= 1.5. Also prints the start-up time of 2 shards + 3 workers.
"""
from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import statistics
import time
from datetime import timedelta

import torch
import torch.distributed as dist

import pslab

WORKERS, BATCH = 3, 32


def ddp_worker(rank: int, port: int, steps: int, out) -> None:
    """One DDP rank: forward, backward (the all-reduce), SGD step; reports its step times."""
    torch.set_num_threads(1)
    os.environ["GLOO_SOCKET_IFNAME"] = "lo"
    store = dist.TCPStore("127.0.0.1", port, is_master=False, timeout=timedelta(seconds=60))
    dist.init_process_group("gloo", store=store, rank=rank, world_size=WORKERS)
    from pslab.data import Digits

    data = Digits.load(0)
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(64, 32), torch.nn.Tanh(), torch.nn.Linear(32, 10))
    ddp = torch.nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.5)
    times = []
    for step in range(steps):
        x, y = data.minibatch(step, rank, 0, WORKERS, 1, BATCH)
        t0 = time.perf_counter()
        opt.zero_grad()
        torch.nn.functional.cross_entropy(ddp(x), y).backward()
        opt.step()
        times.append(time.perf_counter() - t0)
    dist.barrier()
    out.send(times[steps // 5:])  # after a warm-up fifth
    out.close()
    dist.destroy_process_group()


def ddp_step(steps: int) -> float:
    ctx = mp.get_context("forkserver")
    ctx.set_forkserver_preload(["torch", "torch.distributed", "pslab.data"])
    store = dist.TCPStore("127.0.0.1", 0, is_master=True, wait_for_workers=False)
    pipes, procs = [], []
    for rank in range(WORKERS):
        reader, writer = ctx.Pipe(duplex=False)
        p = ctx.Process(target=ddp_worker, args=(rank, store.port, steps, writer), daemon=True)
        p.start()
        writer.close()
        pipes.append(reader)
        procs.append(p)
    try:
        times = [t for r in pipes for t in r.recv()]
    finally:
        for p in procs:
            p.join(30)
            if p.exitcode is None:
                p.kill()
    return statistics.median(times)


def pslab_step(steps: int) -> tuple[float, float]:
    """(median seconds between consecutive sync updates, start-up seconds of the 5 processes)."""
    run = pslab.train("sync", workers=WORKERS, batch=BATCH, steps=steps, shards="layers",
                      backend="processes", time_scale=0, timeout=30)
    times = [r.time for r in run.history]
    gaps = [b - a for a, b in zip(times, times[1:])][steps // 5:]
    return statistics.median(gaps), run.startup_s


def rows(quick: bool) -> list[dict]:
    """Section 5 of `python -m bench`: a sync step on processes vs DDP, and the start-up."""
    steps, repeat = (60, 3) if quick else (200, 5)
    pslab.train("sync", steps=1, backend="processes")  # start the forkserver once, untimed
    ours, startups, theirs = [], [], []
    for _ in range(repeat):
        step, startup = pslab_step(steps)
        ours.append(step)
        startups.append(startup)
        theirs.append(ddp_step(steps))
    ratio = statistics.median(ours) / statistics.median(theirs)

    def stats(xs: list[float]) -> dict:
        return {"median": statistics.median(xs), "min": min(xs), "max": max(xs), "runs": len(xs)}

    return [{"section": "processes", "name": "sync step, pslab 2 shards + 3 workers",
             **stats(ours)},
            {"section": "processes", "name": "sync step, torch DDP gloo (3 workers)",
             **stats(theirs), "ratio": ratio, "goal": "pslab/DDP <= 1.5", "met": ratio <= 1.5},
            {"section": "processes", "name": "start-up, 2 shards + 3 workers (warm)",
             **stats(startups), "goal": "well under 1 s", "met": statistics.median(startups) < 1}]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    pslab.train("sync", steps=1, backend="processes")  # start the forkserver once, untimed
    ours, startups, theirs = [], [], []
    for _ in range(args.repeat):
        step, startup = pslab_step(args.steps)
        ours.append(step)
        startups.append(startup)
        theirs.append(ddp_step(args.steps))
    a, b = statistics.median(ours), statistics.median(theirs)
    ratios = sorted(x / y for x, y in zip(ours, theirs))  # paired: run one after the other
    print(f"start-up of 2 shards + 3 workers (warm forkserver): median "
          f"{statistics.median(startups):.3f} s (min {min(startups):.3f}, max {max(startups):.3f})")
    print(f"sync step, pslab processes (2 shards + 3 workers): {a * 1e3:.3f} ms "
          f"(runs: {', '.join(f'{x * 1e3:.2f}' for x in ours)})")
    print(f"sync step, torch DDP gloo all-reduce (3 workers):  {b * 1e3:.3f} ms "
          f"(runs: {', '.join(f'{y * 1e3:.2f}' for y in theirs)})")
    print(f"ratio pslab / DDP: {statistics.median(ratios):.2f}x median of {args.repeat} paired "
          f"runs (each: {', '.join(f'{r:.2f}' for r in ratios)}); goal <= 1.5x; "
          f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}, {args.steps} steps")


if __name__ == "__main__":
    main()
