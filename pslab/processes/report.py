"""How a process tells the launcher what it did: small messages, sent as they happen.

Each process sends `(kind, payload)` pairs: "arrived" (at the meeting point, waiting for the
others; to a launcher only), "ready" (joined the group), "spans" (a list of
timeline spans), "update" (one shard update, with the shard's new keys), "error" (why it is
about to stop) and "done". Sent as they happen, so when a process dies or the run is stopped
nothing already measured is lost. Each message is one line of JSON (plain data: reading it runs
no code; arrays as base64; rankfile.py checks it back): from a notebook down one pipe per
process as bytes (a pipe has no lock to leave held by a killed process, unlike a queue); under
torchrun, to one file per rank. A rank's file is created new by `start_file` (never through a
link, never over an older file, so two runs never share one) and only appended to after.
"""
from __future__ import annotations

import base64
import json
import os
import stat
import threading
from pathlib import Path
from typing import Any

import numpy as np



class Report:
    """Thread-safe sender (a shard's threads share one). `hold` keeps a message for the next
    send (a shard's transfers ride along with its next update: one write per update instead of
    five, which on two cores shared by six processes is most of a step's cost)."""

    def __init__(self, conn: Any = None, path: str | Path | None = None):
        self._conn = conn
        self._file = _append_to(path) if path is not None else None
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
            line = json.dumps(_plain(message), allow_nan=True)
            if self._conn is not None:
                self._conn.send_bytes(line.encode())
            else:
                self._file.write(line + "\n")
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


def start_file(path: str | Path, first: tuple[str, Any]) -> None:
    """Create a rank's report file, new (O_EXCL: an existing file, or a link planted at the
    path, is refused with an OSError), holding its `first` message; permissions from the
    umask."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                 0o666)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(json.dumps(_plain(first), allow_nan=True) + "\n")


def _append_to(path: str | Path):
    """The report file `start_file` made, opened to append (never through a link; a file that
    is no longer this user's own regular file is refused)."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC)
    found = os.fstat(fd)
    if not stat.S_ISREG(found.st_mode) or found.st_uid != os.geteuid():
        os.close(fd)
        raise OSError(f"{path} is no longer the report file this rank made")
    return os.fdopen(fd, "w", encoding="utf-8")


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

