"""The schedule of figure 000's async mode written in SimPy, the tool a user would pick instead.

N workers, the server's shards as SimPy resources of capacity one (first come, first served):
a worker fetches from every shard at once, computes, pushes to every shard at once and goes on
as soon as its pushes are sent; each shard applies the update right behind the push it belongs
to. The same costs and compute durations as pslab's timing-only run, so both must give the same
makespan and the same spans: that is checked before any speed is compared.
"""
from __future__ import annotations

import simpy

import pslab


def costs(run: pslab.Run) -> tuple[list[float], list[float]]:
    """Each shard's transfer and update seconds, as pslab charged them in `run`."""
    cluster, total = run.settings.timing, sum(run.shard_bytes)
    return ([cluster.transfer_time(b) for b in run.shard_bytes],
            [cluster.update_duration(b / total) for b in run.shard_bytes])


def simulate(durations: list[list[float]], transfer: list[float], update: list[float],
             steps: int) -> tuple[float, list[tuple]]:
    """Run the async schedule in SimPy; returns (makespan, spans as pslab tuples)."""
    env = simpy.Environment()
    shards = [simpy.Resource(env, capacity=1) for _ in transfer]
    spans: list[tuple] = []

    def fetch(rank: int, step: int, s: int):
        with shards[s].request() as req:
            yield req
            start = env.now
            yield env.timeout(transfer[s])
            spans.append((rank, s, "fetch", start, env.now, step))

    def push(rank: int, step: int, s: int, sent: simpy.Event):
        with shards[s].request() as req:  # held for push + update: the update goes right behind
            yield req
            start = env.now
            yield env.timeout(transfer[s])
            spans.append((rank, s, "push", start, env.now, step))
            sent.succeed()
            start = env.now
            yield env.timeout(update[s])
            spans.append((None, s, "update", start, env.now, step))

    def worker(rank: int):
        for step in range(steps):
            yield env.all_of([env.process(fetch(rank, step, s)) for s in range(len(shards))])
            start = env.now
            yield env.timeout(durations[rank][step])
            spans.append((rank, None, "compute", start, env.now, step))
            sent = [env.event() for _ in shards]
            for s in range(len(shards)):
                env.process(push(rank, step, s, sent[s]))
            yield env.all_of(sent)

    for rank in range(len(durations)):
        env.process(worker(rank))
    env.run()
    return env.now, spans
