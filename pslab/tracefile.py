"""Any run's timeline as a Chrome trace: open it in Perfetto (ui.perfetto.dev) or chrome://tracing.

The Trace Event Format (the one torch.profiler writes): a JSON object whose "traceEvents" are
complete events ("ph": "X", "ts" and "dur" in microseconds) on tracks named by (pid, tid). The
tracks are figure 000's rows: one per worker (GPU: compute, idle), one per server shard
(updates), one per worker-shard link (fetch, push: a worker's transfers to two shards overlap in
time, and events on one track must nest). Arrows ("flows") lead from each push to the update
that applied it; counters carry loss, accuracy and staleness per update. Simulated runs are in
virtual seconds, measured runs in real ones; both are written as seconds (1 s = 10^6 µs).
"""
from __future__ import annotations

import json
import math
from collections import defaultdict
from pathlib import Path
from typing import Any

from .files import check_writable_path, write_atomic
from .timeline import Span

WORKERS, SHARDS, LINKS = 1, 2, 3  # pids: one process row per kind of track
US = 1e6  # microseconds per second


def chrome_trace(run) -> dict[str, Any]:
    """The trace as a dict (what `to_chrome_trace` writes); `run` already checked (a Run)."""
    events: list[dict[str, Any]] = []
    names: dict[tuple[int, int], str] = {}
    lanes: dict[tuple[int, int], list[float]] = defaultdict(list)  # track -> end of each lane
    slices: dict[tuple, dict] = {}
    for span in sorted(run.timeline, key=lambda s: (s.start, s.end)):
        pid, tid, name = _track(span, run)
        lane = _lane(lanes[pid, tid], span)
        key = (pid, tid * 16 + lane)
        names[key] = name if lane == 0 else f"{name} ({lane + 1})"
        event = dict(name=span.kind, cat=span.kind, ph="X", pid=key[0], tid=key[1],
                     ts=span.start * US, dur=span.duration * US, args=_args(span))
        events.append(event)
        slices[span.kind, span.worker, span.shard, span.step, span.micro] = event
        slices[span.kind, span.worker, span.shard, span.step, span.micro, span.start] = event
    events += _flows(run.timeline, slices, run)
    events += _counters(run)
    meta = [dict(name="process_name", ph="M", pid=p, tid=0, args=dict(name=n))
            for p, n in ((WORKERS, "workers (GPUs)"), (SHARDS, "server shards"),
                         (LINKS, "links (fetch, push)"))]
    meta += [dict(name="process_sort_index", ph="M", pid=p, tid=0, args=dict(sort_index=p))
             for p in (WORKERS, SHARDS, LINKS)]
    for (pid, tid), name in sorted(names.items()):
        meta.append(dict(name="thread_name", ph="M", pid=pid, tid=tid, args=dict(name=name)))
        meta.append(dict(name="thread_sort_index", ph="M", pid=pid, tid=tid,
                         args=dict(sort_index=tid)))
    config = {k: (v if isinstance(v, (int, float, str, bool, type(None))) else repr(v))
              for k, v in run.settings.to_dict().items()}
    clock = "measured seconds" if run.settings.backend == "processes" else "virtual seconds"
    return dict(traceEvents=meta + events, displayTimeUnit="ms",
                otherData=dict(pslab=config, time=f"{clock}, written as 1 s = 1e6 us"))


def to_chrome_trace(run, path: str | Path) -> Path:
    """Write the run's timeline as a Chrome trace JSON file; returns the path."""
    path = check_writable_path(path, "path")
    write_atomic(path, json.dumps(chrome_trace(run)).encode())
    return path


def _track(span: Span, run) -> tuple[int, int, str]:
    if span.kind in ("fetch", "push") and span.shard is not None:
        tid = span.worker * (len(run.shard_bytes) or 1) + span.shard
        return LINKS, tid, f"worker {span.worker} - shard {span.shard}"
    if span.worker is None:
        return SHARDS, span.shard, f"shard {span.shard}"
    return WORKERS, span.worker, f"worker {span.worker} (GPU {span.worker})"


def _lane(ends: list[float], span: Span) -> int:
    """The first lane of the track free at span.start (events on one track must nest)."""
    for i, end in enumerate(ends):
        if end <= span.start:
            ends[i] = span.end
            return i
    ends.append(span.end)
    return len(ends) - 1


def _args(span: Span) -> dict[str, Any]:
    args = {"step": span.step}
    if span.shard is not None:
        args["shard"] = span.shard
    if span.worker is not None:
        args["worker"] = span.worker
    if span.micro is not None:
        args["minibatch"] = span.micro
    return args


def _flows(timeline: list[Span], slices: dict, run) -> list[dict[str, Any]]:
    """An arrow from every push to the update that took it in: a sync round's update takes all
    the round's pushes; async updates take one push each, in the order they came."""
    pushes, updates = defaultdict(list), defaultdict(list)
    for s in timeline:
        if s.kind == "push":
            pushes[s.shard, s.step].append(s)
        elif s.kind == "update":
            updates[s.shard, s.step].append(s)
    out = []
    for key, ps in pushes.items():
        us = sorted(updates.get(key, []), key=lambda s: s.start)
        ps = sorted(ps, key=lambda s: s.end)
        pairs = [(p, us[0]) for p in ps] if len(us) == 1 else \
            list(zip(ps, us)) if len(us) == len(ps) else []
        for p, u in pairs:
            a = slices["push", p.worker, p.shard, p.step, p.micro]
            b = _slice_of(slices, u)
            common = dict(name="push", cat="flow", id=len(out) // 2)
            out.append(dict(common, ph="s", pid=a["pid"], tid=a["tid"], ts=a["ts"] + a["dur"] / 2))
            out.append(dict(common, ph="f", bp="e", pid=b["pid"], tid=b["tid"],
                            ts=b["ts"] + b["dur"] / 2))
    return out


def _slice_of(slices: dict, span: Span) -> dict:
    return slices[span.kind, span.worker, span.shard, span.step, span.micro, span.start]


def _counters(run) -> list[dict[str, Any]]:
    out = []
    for r in run.history:
        values = {"loss": r.loss, "test accuracy": r.accuracy, "staleness": r.staleness}
        for name, value in values.items():
            if not math.isnan(value):
                out.append(dict(name=name, ph="C", pid=SHARDS, tid=0, ts=r.time * US,
                                args={name: value}))
    return out
