"""The same run under torchrun (or any launcher that sets RANK and WORLD_SIZE): many machines.

    torchrun --nnodes 2 --nproc-per-node 3 --rdzv-backend c10d --rdzv-endpoint HOST:29400 \\
        -m pslab.processes --shards 2 --workers 4 --mode sync --steps 50 --out runs/a

Every rank parses the same command line, so every rank builds the same `Job`; its role follows
from its rank (0..S-1 shards, then workers). Each rank writes its reports to `OUT/rank<r>.jsonl`
(rank 0 also writes the command line to `OUT/job.json`); `load_run(OUT)` turns the files,
gathered in one folder, into a Run. All of them are plain data (JSON): loading a run folder
someone else wrote runs no code of theirs. Every file carries the run token (`run_token`: the
command line and torchrun's rendezvous, all a rank knows before the group forms) and, from each
rank's "ready" line on, the launch's name that rank 0 drew once the group formed: files of
two launches of one command, gathered into one folder, are refused.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
from pathlib import Path

from typing import Literal

from msgspec import Struct

from ..files import check_shape, parse_json, read_small, write_atomic
from ..modes import SSP, Backup, SoftSync
from ..result import Run
from ..settings import Settings
from .child import main as play
from .job import Job, make_job
from .measured import assemble
from .rankfile import launch_of, read_rank
from .report import start_file


FLAGS = ("mode", "workers", "shards", "steps", "accumulate", "lr", "batch", "seed", "hidden",
         "time_scale", "timeout", "address", "transfers", "cluster")


def parse(argv: list[str] | None = None) -> tuple[Job, Path]:
    p = argparse.ArgumentParser(prog=PROG,
                                description="one rank of a pslab run (start it with torchrun)")
    p.error = lambda message: _usage(message)  # one line, not argparse's usage block
    p.add_argument("--mode", default="sync", help="sync, async, ssp:S, backup:B or softsync:C")
    for name, kind, default in (("workers", int, 3), ("shards", str, "layers"),
                                ("steps", int, 20), ("accumulate", int, 1), ("lr", float, 0.5),
                                ("batch", int, 32), ("seed", int, 0), ("hidden", int, 32),
                                ("time-scale", float, 0.01), ("timeout", float, 10.0),
                                ("address", str, "127.0.0.1")):
        p.add_argument(f"--{name}", type=kind, default=default)
    p.add_argument("--transfers", default="model", help="model (sleep the timing model's "
                   "transfer times) or wire (a transfer takes what the network takes)")
    p.add_argument("--cluster", default="{}", help="the timing model: Cluster's arguments as "
                   "JSON, e.g. '{\"compute_time\": 0.03, \"speeds\": [1, 0.5]}'")
    p.add_argument("--out", required=True, help="folder for this run's report files")
    a = p.parse_args(argv)
    mode = parse_mode(a.mode)
    shards = int(a.shards) if a.shards.isdigit() else a.shards
    try:
        settings = Settings.build(
            mode=mode, workers=a.workers, accumulate=a.accumulate, lr=a.lr, batch=a.batch,
            steps=a.steps, shards=shards, seed=a.seed, hidden=a.hidden,
            cluster=cluster_from(a.cluster), backend="processes", time_scale=a.time_scale,
            timeout=a.timeout, address=a.address, transfers=a.transfers)
    except Usage:
        raise
    except ValueError as error:  # the settings' own checks, named by the flag they came from
        raise Usage(as_flag(str(error))) from None
    return make_job(settings), Path(a.out)


def as_flag(message: str) -> str:
    """A settings check's message, its leading setting named as the command line's flag."""
    name, _, rest = message.partition(" ")
    return f"--{name.replace('_', '-')} {rest}" if name in FLAGS else message


def cluster_from(text: str):
    """The Cluster a --cluster JSON object describes (plain data, checked as typed in)."""
    from ..cluster import Cluster

    try:
        values = json.loads(text)
    except ValueError:
        values = None
    if not isinstance(values, dict):
        raise Usage(f"--cluster must be a JSON object of Cluster's arguments (got {text!r})")
    try:
        return Cluster(**values)
    except TypeError as error:  # an argument Cluster does not have
        raise Usage(f"--cluster: {error}") from None


def _usage(message: str):
    raise Usage(message)


def rank_and_world() -> tuple[int, int]:
    """RANK and WORLD_SIZE as torchrun sets them (with MASTER_ADDR and MASTER_PORT)."""
    missing = [k for k in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")
               if k not in os.environ]
    if missing:
        raise Usage(f"{', '.join(missing)} not set: start each rank with torchrun (or set "
                    f"RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT), e.g. torchrun "
                    f"--nproc-per-node 5 -m pslab.processes --out runs/a")
    try:
        rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    except ValueError:
        raise Usage(f"RANK and WORLD_SIZE must be whole numbers (got "
                    f"{os.environ['RANK']!r}, {os.environ['WORLD_SIZE']!r})") from None
    if not 0 <= rank < world:
        raise Usage(f"RANK must be from 0 to WORLD_SIZE - 1 (got {rank} of {world})")
    return rank, world


def parse_mode(text: str):
    """'sync', 'async', 'ssp:S', 'backup:B' or 'softsync:C' as a mode for pslab.train."""
    name, _, number = text.partition(":")
    kinds = {"ssp": SSP, "backup": Backup, "softsync": SoftSync}
    if name in kinds and number.isdigit():
        return kinds[name](int(number))
    return text  # train names anything else it does not know


JOB_FORMAT = "pslab-torchrun-job-2"  # 2: a run token, in job.json and every rank file


PROG = "python -m pslab.processes"


class Usage(ValueError):
    """A mistake on the command line or in the launcher's environment."""


def run_rank(argv: list[str] | None = None) -> None:
    """One rank of the run; a usage mistake is one line on stderr naming it, and exit code 2."""
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        job, out = parse(argv)
        rank, world = rank_and_world()
        if world != job.world:
            raise Usage(f"WORLD_SIZE is {world} but --shards/--workers make {job.world} ranks")
    except ValueError as error:  # Usage, and train's own checks of the settings
        print(f"{PROG}: error: {error}", file=sys.stderr)
        raise SystemExit(2) from None
    out.mkdir(parents=True, exist_ok=True)
    run = run_token(argv)
    try:
        if rank == 0:
            write_atomic(out / "job.json", json.dumps(dict(
                format=JOB_FORMAT, argv=without_address(argv), run=run)).encode(), new=True)
        start_file(out / f"rank{rank}.jsonl", ("start", dict(rank=rank, run=run)))
    except FileExistsError as error:
        print(f"{PROG}: error: --out {out} already holds {Path(error.filename).name}: give "
              f"each run a folder of its own", file=sys.stderr)
        raise SystemExit(2) from None
    play(job, rank, None, str(out / f"rank{rank}.jsonl"))


def run_token(argv: list[str]) -> str:
    """One launch's token, the same on every rank: torchrun's run id, its rendezvous address,
    port and restart count, and the command line (less --address, each host's own)."""
    parts = [os.environ.get(k, "") for k in ("TORCHELASTIC_RUN_ID", "MASTER_ADDR",
                                             "MASTER_PORT", "TORCHELASTIC_RESTART_COUNT")]
    return hashlib.sha256("\0".join(parts + without_address(argv)).encode()).hexdigest()[:16]


def load_run(folder: str | Path) -> Run:
    """The Run of a torchrun launch, from the report files its ranks wrote into `folder`, each
    checked (rankfile.read_rank) before any value is used; a ValueError naming the file, the
    line and the field otherwise."""
    job, run = read_job(folder)
    spans, updates, pushes, errors, done, seen = [], [], [], [], 0, set()
    first = None  # (rank, launch name) of the first rank that joined
    for rank in range(job.world):
        path = Path(folder) / f"rank{rank}.jsonl"
        messages = read_rank(path, job, rank, run)
        launch = launch_of(messages)
        first = first or (launch and (rank, launch))
        if launch is not None and launch != first[1]:
            raise ValueError(f"{path}: field ready.job: launch {launch!r}, but rank {first[0]} "
                             f"joined launch {first[1]!r}: the files of two launches of the "
                             f"same command (gathered into one folder?)")
        for kind, payload in messages:
            if kind == "spans":
                spans.extend(payload)
            elif kind == "update":
                if (payload["shard"], payload["version"]) in seen:
                    raise ValueError(f"{path}: field update.version: shard "
                                     f"{payload['shard']}'s update {payload['version']} twice")
                seen.add((payload["shard"], payload["version"]))
                updates.append(payload)
            elif kind == "push":
                pushes.append(payload)
            elif kind == "error":
                errors.append(payload["message"])
            elif kind == "done":
                done += 1
    return assemble(job, spans, updates, done == job.world,
                    dict(failures=errors), pushes)


def without_address(argv: list[str]) -> list[str]:
    """The command line less --address: where a host's processes listen is that host's own
    setting (checked there), not part of the job a folder is read back as elsewhere."""
    out, skip = [], False
    for arg in argv:
        if skip:
            skip = False
        elif arg == "--address":
            skip = True
        elif not arg.startswith("--address="):
            out.append(arg)
    return out


class JobFile(Struct, forbid_unknown_fields=True):
    """job.json: the command line every rank ran, and the run's token."""
    format: Literal[JOB_FORMAT]
    argv: list[str]
    run: str


JOB_LIMIT = 1 << 20  # bytes: a command line, with a --cluster table of durations at most


def read_job(folder: str | Path) -> tuple[Job, str]:
    """(Job, run token) of a run folder, the Job rebuilt from the command line its job.json
    holds (checked as the ranks checked it); a ValueError naming the file for anything else."""
    if not isinstance(folder, (str, os.PathLike)):
        raise TypeError(f"folder must be a str or pathlib.Path (got {folder!r})")
    path = Path(folder) / "job.json"
    if not os.path.lexists(path):
        raise ValueError(f"{folder} is not a pslab torchrun run folder: it has no job.json")
    what = f"a pslab torchrun job ({JOB_FORMAT})"
    blob = read_small(path, what, JOB_LIMIT)
    try:
        blob.decode("utf-8")
    except UnicodeDecodeError:
        raise ValueError(f"{path} is not {what}: not UTF-8 text") from None
    saved = check_shape(parse_json(blob, f"{path} is not {what}"), JobFile,
                        f"{path} is not {what}")
    try:
        return parse(saved.argv)[0], saved.run
    except (ValueError, SystemExit) as error:  # SystemExit: --help or --version in it
        raise ValueError(f"{path} holds a command line pslab cannot run ({error}): "
                         f"{saved.argv}") from None
