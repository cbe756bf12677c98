"""Files pslab writes and reads back: whole or not at all, and plain data only.

A shared course server has many users and full disks. So every file pslab writes goes to a
temporary file beside its target and is renamed into place (the target is the old good file or
the new complete one, never half of either), and every file pslab reads back is plain data: a
safetensors file (a JSON header and raw tensor bytes, nothing that runs) whose header carries
pslab's own JSON. Unpickling a file would run whatever code a crafted one holds.
"""
from __future__ import annotations

import json
import os
import struct
import tempfile
from pathlib import Path
from typing import Any, Callable

MAX_HEADER = 100_000_000  # safetensors' own limit on a header


def write_atomic(path: str | Path, data: bytes | Callable[[Any], None]) -> None:
    """Write `data` (bytes, or a function writing to a binary file) to `path` whole: a
    temporary file in the same folder, flushed to disk, then renamed over the target. Any
    failure (a full disk, a folder where the file should be, no permission) raises an OSError
    naming `path` and leaves the old file as it was and no temporary file behind."""
    path = Path(path)
    fd, aside = None, None
    try:
        fd, aside = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".part")
        os.fchmod(fd, _mode_for(path))  # mkstemp's 0600, made what a plain open() would give
        with os.fdopen(fd, "wb") as f:
            fd = None
            if callable(data):
                data(f)
            else:
                f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(aside, path)
        aside = None
    except OSError as error:
        raise OSError(error.errno, f"could not write {path}: {error.strerror or error}") from error
    finally:
        if fd is not None:
            os.close(fd)
        if aside is not None:
            try:
                os.unlink(aside)
            except OSError:
                pass


def _mode_for(path: Path) -> int:
    """The permissions the written file gets: the old file's when it replaces one, else what
    the user's umask gives a new file (a teacher's exported figure readable as usual; a
    student who wants private files sets umask 077)."""
    try:
        return path.stat().st_mode & 0o777
    except OSError:
        mask = os.umask(0)
        os.umask(mask)
        return 0o666 & ~mask


def check_writable_path(path: Any, name: str) -> Path:
    """`path` as a Path for a file pslab will write, or a ValueError naming `name` now (before
    any work) when it cannot be one: not a path, a folder, or in a folder that does not exist."""
    if not isinstance(path, (str, os.PathLike)) or str(path) == "":
        raise TypeError(f"{name} must be a file name, a str or pathlib.Path (got {path!r})")
    path = Path(path)
    if path.is_dir():
        raise ValueError(f"{name} {path} is a folder: give a file name inside it")
    if not path.parent.is_dir():
        raise ValueError(f"{name} {path}: its folder {path.parent} does not exist")
    return path


def dumps(value: Any) -> str:
    """JSON of plain values; floats by their exact repr (inf and nan included)."""
    return json.dumps(value, separators=(",", ":"), allow_nan=True)


def save_tensors(path: str | Path, tensors: dict[str, Any], meta: dict[str, Any]) -> None:
    """One safetensors file, written atomically: the tensors, and `meta` as JSON in its header."""
    from safetensors.torch import save

    # a copy each: safetensors refuses tensors that share memory (a worker's fetched keys are
    # the server's own tensor; a gradient's shards are views of one vector)
    blob = save({k: t.detach().cpu().clone() for k, t in tensors.items()},
                metadata={"pslab": dumps(meta)})
    write_atomic(path, blob)


def load_tensors(path: str | Path, what: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """(meta, tensors) of a file `save_tensors` wrote; a ValueError naming the file and saying
    it is not `what` for anything else (empty, truncated, random bytes, a pickle, a folder)."""
    from safetensors import SafetensorError
    from safetensors.torch import load

    path = Path(path)
    if path.is_dir():
        raise ValueError(f"{path} is a folder, not {what}")
    if not path.is_file():
        raise ValueError(f"{path} does not exist (expected {what})")
    blob = path.read_bytes()
    meta = _header_meta(blob)
    if meta is None:
        raise ValueError(f"{path} is not {what}: not a safetensors file with pslab's header "
                         f"({len(blob)} bytes)")
    try:
        return meta, load(blob)
    except SafetensorError as error:
        raise ValueError(f"{path} is not {what}: its tensors cannot be read ({error})") from None


def _header_meta(blob: bytes) -> dict[str, Any] | None:
    """pslab's JSON from a safetensors header, or None if the bytes are not such a file."""
    if len(blob) < 8:
        return None
    (size,) = struct.unpack("<Q", blob[:8])
    if size > min(MAX_HEADER, len(blob) - 8):
        return None
    try:
        header = json.loads(blob[8:8 + size])
        meta = json.loads(header["__metadata__"]["pslab"])
    except (ValueError, KeyError, TypeError, UnicodeDecodeError):
        return None
    return meta if isinstance(meta, dict) else None
