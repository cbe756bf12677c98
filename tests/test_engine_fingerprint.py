"""The engine's speed-ups change no result: every span (in order), every record, the makespan
and the per-push staleness of a spread of runs hash to what the engine of commit 1111cc9 (before
issue 13's speed work) produced.

The pins were computed by running this file's `fingerprint` on that commit's pslab. Timing-only
runs are pure float arithmetic on numpy's seeded durations, so they are pinned bit for bit;
runs with numerics pin their timeline and history bit for bit too, but the loss and accuracy
to 9 significant digits (the last bits of a matmul may differ from one CPU to another).
"""
from __future__ import annotations

import hashlib

import pytest

import pslab

JITTER = pslab.Cluster(jitter=0.3)
SLOW_LINKS = pslab.Cluster(jitter=0.2, bandwidth=2e3, latency=0.01)
UNEVEN = pslab.Cluster(jitter=0.4, speeds=[1, 0.5, 2, 1, 1.5, 0.7])
FREE = pslab.Cluster.free()  # no jitter, no network: every event ties with others

CASES = {
    "sync": dict(mode="sync", workers=5, steps=12),
    "async jitter shards4": dict(mode="async", workers=7, steps=15, cluster=JITTER, shards=4),
    "SSP(2) uneven shards1": dict(mode=pslab.SSP(2), workers=6, steps=15, cluster=UNEVEN,
                                  shards=1),
    "SSP(0) jitter": dict(mode=pslab.SSP(0), workers=4, steps=8, cluster=JITTER),
    "SSP(1) free": dict(mode=pslab.SSP(1), workers=5, steps=8, cluster=FREE),
    "Backup(1) jitter": dict(mode=pslab.Backup(1), workers=5, steps=10, cluster=JITTER),
    "Backup(2) colocated": dict(mode=pslab.Backup(2), workers=6, steps=6, shards=4,
                                cluster=pslab.Cluster(jitter=0.3, colocated=True)),
    "SoftSync(2) accumulate3": dict(mode=pslab.SoftSync(2), workers=6, steps=10, accumulate=3,
                                    cluster=JITTER),
    "allreduce jitter": dict(mode="allreduce", workers=4, steps=10, cluster=JITTER),
    "async colocated shards4": dict(mode="async", workers=4, steps=12, shards=4,
                                    cluster=pslab.Cluster(jitter=0.2, colocated=True)),
    "async slow links accumulate3": dict(mode="async", workers=10, steps=8, accumulate=3,
                                         cluster=SLOW_LINKS),
    "sync slow links shards4 accumulate3": dict(mode="sync", workers=6, steps=6, shards=4,
                                                accumulate=3, cluster=SLOW_LINKS),
    "sync free": dict(mode="sync", workers=4, steps=5, cluster=FREE),
    "async free shards4": dict(mode="async", workers=5, steps=6, shards=4, cluster=FREE),
    "async 800 busy shards": dict(mode="async", workers=800, steps=3, cluster=JITTER),
    "SSP(2) 200 busy shards": dict(mode=pslab.SSP(2), workers=200, steps=4, cluster=JITTER,
                                   shards=4),
}
NUMERIC_CASES = {
    "sync": dict(mode="sync", workers=3, steps=6, batch=16),
    "async jitter": dict(mode="async", workers=4, steps=6, batch=16, cluster=JITTER),
    "SSP(2) shards4": dict(mode=pslab.SSP(2), workers=6, steps=5, batch=16, cluster=UNEVEN,
                           shards=4),
    "Backup(1)": dict(mode=pslab.Backup(1), workers=4, steps=5, batch=16, cluster=JITTER),
    "SoftSync(2) accumulate3": dict(mode=pslab.SoftSync(2), workers=4, steps=4, batch=16,
                                    accumulate=3, cluster=JITTER),
    "allreduce": dict(mode="allreduce", workers=3, steps=5, batch=16, cluster=JITTER),
    "async staleness_lr colocated": dict(mode="async", workers=4, steps=6, batch=16,
                                         staleness_lr=True, shards=4,
                                         cluster=pslab.Cluster(jitter=0.3, colocated=True)),
    "sync slow links shards1": dict(mode="sync", workers=3, steps=4, batch=16, shards=1,
                                    cluster=SLOW_LINKS),
}


def fingerprint(run: pslab.Run, digits: int | None = None) -> str:
    """sha256 of everything the engine decides, floats by their exact repr."""
    def number(x: float) -> str:
        return repr(x) if digits is None else f"{x:.{digits}g}"

    history = [(r.time, number(r.loss), number(r.accuracy), r.staleness, r.version, r.worker,
                r.step) for r in run.history]
    text = repr((list(map(tuple, run.timeline)), history, run.makespan, run.push_staleness,
                 run.complete))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def fingerprints() -> dict[str, str]:
    """What the pins below hold (run this on the engine to pin)."""
    out = {name: fingerprint(pslab.train(numerics=False, seed=1, **kw))
           for name, kw in CASES.items()}
    out.update({f"numerics {name}": fingerprint(pslab.train(seed=1, **kw), digits=9)
                for name, kw in NUMERIC_CASES.items()})
    return out


PINNED = {  # fingerprints() on commit 1111cc9
    "sync": "c922740825412452",
    "async jitter shards4": "c7d69dc5f3025947",
    "SSP(2) uneven shards1": "ff0e7bab20a590b5",
    "SSP(0) jitter": "dc2f97d0c3c1e092",
    "SSP(1) free": "9f63a7264743f266",
    "Backup(1) jitter": "0b0fd7d0f848d3d0",
    "Backup(2) colocated": "5db37c4214f305b9",
    "SoftSync(2) accumulate3": "76ceb32698adfe5b",
    "allreduce jitter": "de89e8b72b0d6e98",
    "async colocated shards4": "04f94bf933f55d1d",
    "async slow links accumulate3": "6da8be187ec3cebf",
    "sync slow links shards4 accumulate3": "caa7a4906a4485a2",
    "sync free": "be24c39430db3acb",
    "async free shards4": "17c065c9f5fa6cee",
    "async 800 busy shards": "4305086ed62ca3f7",
    "SSP(2) 200 busy shards": "9b96c7afdab08ce6",
    "numerics sync": "c01c664ce641e884",
    "numerics async jitter": "fc5f79ff322d5ab5",
    "numerics SSP(2) shards4": "c77f4300d05f9390",
    "numerics Backup(1)": "0d944e948e635ff7",
    "numerics SoftSync(2) accumulate3": "e71f4b1735013503",
    "numerics allreduce": "7b72019b3fedac32",
    "numerics async staleness_lr colocated": "c207d1584648eb87",
    "numerics sync slow links shards1": "1244adec3778cea2",
}


@pytest.mark.parametrize("name", CASES)
def test_timing_only_runs_are_unchanged(name):
    assert fingerprint(pslab.train(numerics=False, seed=1, **CASES[name])) == PINNED[name]


@pytest.mark.parametrize("name", NUMERIC_CASES)
def test_runs_with_numerics_are_unchanged(name):
    run = pslab.train(seed=1, **NUMERIC_CASES[name])
    assert fingerprint(run, digits=9) == PINNED[f"numerics {name}"]
