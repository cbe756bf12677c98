"""A rank's reports read back: untrusted plain data, checked line by line (a torchrun rank's
file here; a notebook run's pipe messages, one line each, by the launcher with `read_message`).

Each rank writes `rank<r>.jsonl` (report.py): a first "start" line with its rank and the run's
token (the same token job.json holds), then one JSON line per message, the first of them once
it has joined the group its "ready" line, with the launch's name (drawn by rank 0 then; the
same on every rank of one launch, `launch_of`). `read_rank` refuses a
file that is not this run's or not this rank's, and checks every line before it is used: its
length (at most `line_limit` bytes, so one 4 GiB line costs nothing), its nesting depth, its
shape (`Message` and the payload types below: keys, types, finite times), and every index
against the job (a worker's spans are its own, a shard's updates its own shard's, steps and
versions within the run, keys float32 and exactly the shard's size). Only the last line may be
cut short (a killed rank's half-written message: dropped); a bad line anywhere else is a
ValueError naming the file, the line and the field, never a silently shorter run.
"""
from __future__ import annotations

import base64
import binascii
import os
from pathlib import Path
from typing import Annotated, Any, Literal, Optional

import numpy as np
from msgspec import Meta, Struct
from msgspec.structs import astuple

from ..files import check_shape, open_regular, parse_json
from ..timeline import EVERY_KIND, NOTES, Span
from .job import Job

Seconds = Annotated[float, Meta(ge=-1e300, le=1e300)]  # finite: NaN and infinities refused
Count = Annotated[int, Meta(ge=0, le=2**53)]
LINE_SLACK = 1 << 16  # a line's JSON around its keys: spans, numbers, names


class Array(Struct, forbid_unknown_fields=True):
    array: str  # base64 of the values
    dtype: Literal["<f4"]  # float32, as the shards hold their keys
    shape: list[Count]


class Start(Struct, forbid_unknown_fields=True):
    rank: Count
    run: str


class Ready(Struct, forbid_unknown_fields=True):
    rank: Count
    pid: int
    role: Literal["shard", "worker"]
    index: Count
    job: Annotated[str, Meta(pattern="^[0-9a-f]{12}$")]  # the launch's name (child.join)


class Update(Struct, forbid_unknown_fields=True):
    shard: Count
    version: Count
    start: Seconds
    time: Seconds
    staleness: int
    step: Count
    keys: Array
    worker: Optional[Count]


class Push(Struct, forbid_unknown_fields=True):
    worker: Count
    step: Count
    staleness: int
    time: Seconds


class Failed(Struct, forbid_unknown_fields=True):
    rank: Count
    role: Literal["shard", "worker"]
    index: Count
    message: str


class Done(Struct, forbid_unknown_fields=True):
    rank: Count


class SpanRow(Struct, array_like=True, forbid_unknown_fields=True):
    """A Span, every field, written as a JSON array. A Struct, not a tuple type: msgspec
    keeps what it learns of a Struct's fields, while a nested tuple[...] of Literals is
    hashed anew at every convert (38x slower on a line of spans)."""
    worker: Optional[Count]
    shard: Optional[Count]
    kind: Literal[EVERY_KIND]
    start: Seconds
    end: Seconds
    step: Count
    micro: Optional[Count]
    note: Optional[Literal[tuple(NOTES)]]


PAYLOADS = dict(start=Start, arrived=Done, ready=Ready, spans=list[SpanRow], update=Update,
                push=Push, error=Failed, done=Done)  # (arrived: only its rank, as done)
Message = tuple[Literal[tuple(PAYLOADS)], Any]
Batch = tuple[Literal["batch"], list[Message]]


def line_limit(job: Job) -> int:
    """The longest line a rank of `job` writes: an update with its shard's keys in base64,
    and the spans and pushes held back to ride with it."""
    layout = job.layout()
    largest = max(layout.keys(s) for s in range(layout.shards))
    return 4 * (4 * largest + 2) // 3 + LINE_SLACK * (1 + job.workers)


def file_limit(job: Job) -> int:
    """The largest rank file `job` can make: a line per message, a few messages per step."""
    return line_limit(job) * (8 + 4 * job.steps * job.workers * job.accumulate)


def read_rank(path: Path, job: Job, rank: int, run: str) -> list[tuple[str, Any]]:
    """The checked messages of rank `rank`'s file (see the module's docstring)."""
    what = f"rank {rank}'s report of a pslab torchrun run"
    fd, size = open_regular(path, what, file_limit(job))
    limit = line_limit(job)
    out: list[tuple[str, Any]] = []
    with os.fdopen(fd, "rb") as f:
        number = 0
        while True:
            line = f.readline(limit + 1)
            if not line:
                break
            number += 1
            where = f"{path} line {number}"
            if not line.endswith(b"\n"):
                if len(line) > limit:
                    raise ValueError(f"{where}: longer than {limit} bytes, the most a rank "
                                     f"of this run writes")
                break  # a killed rank's half-written last message: what came before stands
            if number == 1:
                _first(_messages(parse_json(line, where), where, job), where, rank, run)
            else:
                out += read_message(line, where, job, rank)
    if number == 0:
        raise ValueError(f"{path} is empty: rank {rank} never started")
    kinds = [kind for kind, _ in out]
    joined = kinds.index("ready") if "ready" in kinds else len(kinds)
    if kinds.count("ready") > 1 or any(k not in ("error", "ready") for k in kinds[:joined]):
        raise ValueError(f"{path}: field ready: not one 'ready' line before rank {rank}'s "
                         f"first measurement")
    return out


def launch_of(messages: list[tuple[str, Any]]) -> str | None:
    """The launch's name a rank's checked messages carry (its 'ready' line; None: it never
    joined the group, so it measured nothing, `read_rank` checks)."""
    return next((payload["job"] for kind, payload in messages if kind == "ready"), None)


def read_message(line: bytes, where: str, job: Job, rank: int) -> list[tuple[str, Any]]:
    """The messages in one JSON line rank `rank` of `job` sent (a batch holds several), each
    checked as `read_rank` checks a file's lines; a ValueError naming `where` and the field."""
    return [(kind, _checked(kind, payload, where, job, rank))
            for kind, payload in _messages(parse_json(line, where), where, job)]


def _messages(value: Any, where: str, job: Job) -> list[tuple[str, Any]]:
    if isinstance(value, list) and value[:1] == ["batch"]:
        return [tuple(m) for m in check_shape(value, Batch, where)[1]]
    return [tuple(check_shape(value, Message, where))]


def _first(messages: list, where: str, rank: int, run: str) -> None:
    if len(messages) != 1 or messages[0][0] != "start":
        raise ValueError(f"{where}: field kind: the first line of a rank's report is its "
                         f"'start' line")
    start = check_shape(messages[0][1], Start, where)
    if start.rank != rank:
        raise ValueError(f"{where}: field rank: {start.rank}, in rank {rank}'s file (a copy of "
                         f"another rank's report?)")
    if start.run != run:
        raise ValueError(f"{where}: field run: {start.run!r} is another run than job.json's "
                         f"{run!r} (two runs in one --out folder?)")


def _checked(kind: str, payload: Any, where: str, job: Job, rank: int) -> Any:
    """One message's payload checked against the job and the rank whose file holds it."""
    value = check_shape(payload, PAYLOADS[kind], where, field=kind)
    role, index = job.role(rank)

    def need(ok: bool, field: str, why: str) -> None:
        if not ok:
            raise ValueError(f"{where}: field {kind}.{field}: {why} (rank {rank} is {role} "
                             f"{index} of {job.num_shards} shards, {job.workers} workers, "
                             f"{job.steps} steps)")

    if kind == "start":
        need(False, "kind", "a second 'start' line")
    if kind in ("arrived", "ready", "done", "error"):
        need(value.rank == rank, "rank", f"{value.rank} in rank {rank}'s file")
    if kind == "spans":
        spans = [Span(*astuple(row)) for row in value]
        for i, s in enumerate(spans):
            own = s.worker == index if role == "worker" else s.shard == index
            need(own and (s.worker is None or s.worker < job.workers)
                 and (s.shard is None or s.shard < job.num_shards) and s.step < job.steps
                 and s.start <= s.end and (s.micro is None or s.micro < job.accumulate),
                 f"[{i}]", f"{list(s)} is not rank {rank}'s or out of range")
        return spans
    if kind == "push":
        need(role == "shard" and value.worker < job.workers and value.step < job.steps,
             "worker", "out of range, or in a worker's file")
    if kind == "update":
        need(role == "shard" and value.shard == index, "shard", f"{value.shard} in rank "
             f"{rank}'s file")
        need(value.step < job.steps and value.version <= job.steps * job.workers
             and (value.worker is None or value.worker < job.workers) and value.start <= value.time,
             "step", "a step, version, worker or time out of range")
        keys = job.layout().keys(index)
        need(value.keys.shape == [keys], "keys", f"shape {value.keys.shape}; shard {index} "
             f"holds {keys} keys")
        try:
            raw = base64.b64decode(value.keys.array, validate=True)
        except (binascii.Error, ValueError):
            raw = b""
        need(len(raw) == 4 * keys, "keys", f"not {keys} float32 values in base64")
        payload = dict(payload, keys=np.frombuffer(raw, "<f4").astype(np.float32))
        return payload
    return payload
