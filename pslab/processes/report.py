"""How a process tells the launcher what it did: small messages, sent as they happen.

Each process sends `(kind, payload)` pairs: "ready" (joined the group), "spans" (a list of
timeline spans), "update" (one shard update, with the shard's new keys), "error" (why it is
about to stop) and "done". Sent as they happen, so when a process dies or the run is stopped
nothing already measured is lost. From a notebook they go down one pipe per process (a pipe has
no lock to leave held by a killed process, unlike a queue); under torchrun, to one file per rank,
one JSON line per message (plain data: reading a rank's file runs no code; arrays as base64).
"""
from __future__ import annotations

import base64
import json
import threading
from pathlib import Path
from typing import Any, Iterator

import numpy as np

from ..timeline import Span


class Report:
    """Thread-safe sender (a shard's threads share one). `hold` keeps a message for the next
    send (a shard's transfers ride along with its next update: one write per update instead of
    five, which on two cores shared by six processes is most of a step's cost)."""

    def __init__(self, conn: Any = None, path: str | Path | None = None):
        self._conn = conn
        self._file = open(path, "a", encoding="utf-8") if path is not None else None
        self._lock = threading.Lock()
        self._closed = False
        self._held: list[tuple[str, Any]] = []

    def hold(self, kind: str, payload: Any = None) -> None:
        with self._lock:
            self._held.append((kind, payload))

    def __call__(self, kind: str, payload: Any = None) -> None:
        with self._lock:
            if self._closed:  # a thread still talking as its process ends: nobody listens
                return
            message = (kind, payload)
            if self._held:
                message, self._held = ("batch", self._held + [message]), []
            if self._conn is not None:
                self._conn.send(message)
            else:
                self._file.write(json.dumps(_plain(message), allow_nan=True) + "\n")
                self._file.flush()

    def close(self) -> None:
        if self._held:
            self("spans", [])  # what is still held goes out with an empty last message
        with self._lock:
            self._closed = True
            if self._conn is not None:
                self._conn.close()
            if self._file is not None:
                self._file.close()


def read_file(path: str | Path) -> Iterator[tuple[str, Any]]:
    """The messages of one rank's file, up to the last complete one (a killed rank may have
    left half a message at the end). A line that is not such a message ends the reading."""
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            try:
                kind, payload = json.loads(line, object_hook=_unplain)
            except (ValueError, TypeError):
                return
            if kind == "batch" and not isinstance(payload, list):
                return
            for k, p in unbatch((kind, payload)):
                yield k, ([Span(*s) for s in p] if k == "spans" else p)


def _plain(value: Any) -> Any:
    """A message as JSON values: numpy arrays as {"array": base64, dtype, shape}."""
    if isinstance(value, np.ndarray):
        return {"array": base64.b64encode(np.ascontiguousarray(value).tobytes()).decode(),
                "dtype": value.dtype.str, "shape": list(value.shape)}
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def _unplain(value: dict) -> Any:
    if set(value) == {"array", "dtype", "shape"}:
        dtype = np.dtype(value["dtype"])
        if dtype.kind not in "fiub":  # numbers only: an object dtype would mean pickles
            raise ValueError(f"not a number array: {dtype}")
        raw = base64.b64decode(value["array"])
        return np.frombuffer(raw, dtype=dtype).reshape(value["shape"]).copy()
    return value


def unbatch(message: tuple[str, Any]) -> list[tuple[str, Any]]:
    """The messages inside one sent message (a batch holds several)."""
    kind, payload = message
    return payload if kind == "batch" else [message]
