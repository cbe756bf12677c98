"""The same run under torchrun (or any launcher that sets RANK and WORLD_SIZE): many machines.

    torchrun --nnodes 2 --nproc-per-node 3 --rdzv-backend c10d --rdzv-endpoint HOST:29400 \\
        -m pslab.processes --shards 2 --workers 4 --mode sync --steps 50 --out runs/a

Every rank parses the same command line, so every rank builds the same `Job`; its role follows
from its rank (0..S-1 shards, then workers). Each rank writes its reports to `OUT/rank<r>.pkl`
(rank 0 also writes the job); `load_run(OUT)` turns the files, gathered in one folder, into a Run.
"""
from __future__ import annotations

import argparse
import os
import pickle
from pathlib import Path

from ..modes import SSP, Backup, SoftSync, policy_for
from ..run import Run
from .child import main as play
from .job import Job, make_job
from .measured import assemble
from .options import check_options
from .report import read_file


def parse(argv: list[str] | None = None) -> tuple[Job, Path]:
    p = argparse.ArgumentParser(prog="python -m pslab.processes",
                                description="one rank of a pslab run (start it with torchrun)")
    p.add_argument("--mode", default="sync", help="sync, async, ssp:S, backup:B or softsync:C")
    for name, kind, default in (("workers", int, 3), ("shards", str, "layers"),
                                ("steps", int, 20), ("accumulate", int, 1), ("lr", float, 0.5),
                                ("batch", int, 32), ("seed", int, 0), ("hidden", int, 32),
                                ("time-scale", float, 0.01), ("timeout", float, 10.0),
                                ("address", str, "127.0.0.1")):
        p.add_argument(f"--{name}", type=kind, default=default)
    p.add_argument("--out", required=True, help="folder for this run's report files")
    a = p.parse_args(argv)
    mode = parse_mode(a.mode)
    shards = int(a.shards) if a.shards.isdigit() else a.shards
    options = check_options("processes", a.workers, a.steps, time_scale=a.time_scale,
                            timeout=a.timeout, address=a.address)
    config = dict(workers=a.workers, accumulate=a.accumulate, lr=a.lr, batch=a.batch,
                  steps=a.steps, shards=shards, seed=a.seed, hidden=a.hidden)
    from ..cluster import Cluster

    return make_job(policy_for(mode), dict(config, cluster=Cluster()), options), Path(a.out)


def parse_mode(text: str):
    """'sync', 'async', 'ssp:S', 'backup:B' or 'softsync:C' as a mode for pslab.train."""
    name, _, number = text.partition(":")
    kinds = {"ssp": SSP, "backup": Backup, "softsync": SoftSync}
    if name in kinds and number.isdigit():
        return kinds[name](int(number))
    return text  # train names anything else it does not know


def run_rank(argv: list[str] | None = None) -> None:
    job, out = parse(argv)
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    if world != job.world:
        raise SystemExit(f"WORLD_SIZE is {world} but --shards/--workers make {job.world} ranks")
    out.mkdir(parents=True, exist_ok=True)
    if rank == 0:
        (out / "job.pkl").write_bytes(pickle.dumps(job))
    play(job, rank, None, str(out / f"rank{rank}.pkl"))


def load_run(folder: str | Path) -> Run:
    """The Run of a torchrun launch, from the report files its ranks wrote into `folder`."""
    folder = Path(folder)
    job: Job = pickle.loads((folder / "job.pkl").read_bytes())
    spans, updates, pushes, errors, done = [], [], [], [], 0
    for rank in range(job.world):
        for kind, payload in read_file(folder / f"rank{rank}.pkl"):
            if kind == "spans":
                spans.extend(payload)
            elif kind == "update":
                updates.append(payload)
            elif kind == "push":
                pushes.append(payload)
            elif kind == "error":
                errors.append(payload["message"])
            elif kind == "done":
                done += 1
    return assemble(job, spans, updates, done == job.world,
                    dict(launcher="torchrun", failures=errors), pushes)
