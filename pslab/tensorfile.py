"""Safetensors files as pslab writes and reads them back: a JSON header (pslab's own JSON in
its metadata) and raw float32 bytes. A file read back is untrusted, as every file is (see
files.py): its header's length is capped before it is read and decoded into declared types, the
tensors it declares must be exactly the shapes the caller expects, and they must fill the file
exactly, so a sparse or truncated file is refused before any tensor byte is read.
"""
from __future__ import annotations

import json
import os
import struct
from math import prod
from pathlib import Path
from typing import Any, Callable, Optional

import msgspec

from .files import MAX_HEADER, PREFIX, _decode, check_shape, dumps, open_regular, \
    parse_json, read_at, write_atomic

_OPENING = b'{"__metadata__":{"pslab":"'  # how safetensors begins a header with pslab's JSON
ENTRY_BYTES = 160  # a tensor's row in the table: its name, dtype, shape and offsets


def _string_start(escaped: bytes) -> str:
    """The start of a JSON string's body, decoded: cut before an escape sequence left
    unfinished where the window ends (an escape is at most 6 bytes: \\uXXXX)."""
    for cut in range(len(escaped), max(len(escaped) - 7, -1), -1):
        try:
            return json.loads(b'"' + escaped[:cut] + b'"')
        except ValueError:
            continue
    raise ValueError("not a JSON string")


class _Entry(msgspec.Struct, forbid_unknown_fields=True):
    dtype: str
    shape: list[int]
    data_offsets: tuple[int, int]


class TensorFile:
    """A safetensors file whose header is read and checked, its tensor bytes not yet read.
    meta_text: pslab's JSON from the header, as text (`meta` parses it, once: a caller that
    knows how long it may be checks that first, see `json_prefix`); shapes: {name: shape}
    it declares (float32 only). The safetensors header is decoded by msgspec into its declared
    types, so a wrong one is refused at its first wrong value, whatever its size or depth.
    limit: the most bytes the whole file may hold. bound: given the start of pslab's JSON (its
    first PREFIX bytes, decoded), (the longest pslab's JSON may be, the most tensors): a header
    longer than those allow is refused before it is decoded."""

    def __init__(self, path: str | Path, what: str, limit: int = 1 << 62,
                 bound: Callable[[str], tuple[int, int]] | None = None):
        self.path, self.what = Path(path), what
        self.longest = MAX_HEADER  # pslab's header's longest text (`bound` may know better)
        fd, size = open_regular(path, what, limit)
        try:
            head = read_at(fd, 0, 8) if size >= 8 else b""
            length = struct.unpack("<Q", head)[0] if head else -1
            if not 0 < length <= min(MAX_HEADER, size - 8):
                raise self.wrong(f"not a safetensors file with pslab's header ({size} bytes)")
            blob = self._bound(fd, length, bound) if bound is not None else None
            blob = blob or read_at(fd, 8, length)
        finally:
            os.close(fd)
        self.size, self.start = size, 8 + length
        self.meta_text, header = self._split(blob)
        del blob
        if len(self.meta_text) > self.longest:
            raise self.wrong(f"its header is {len(self.meta_text)} characters, more than a run "
                             f"of its settings writes ({self.longest} at most)")
        self._meta = None
        entries = {name: _decode(raw, _Entry, f"{path} (its tensor table: {name[:40]})")
                   for name, raw in header.items()}
        self.entries = entries
        end = 0
        for name, e in sorted(entries.items(), key=lambda kv: kv[1].data_offsets):
            if e.dtype != "F32":
                raise self.wrong(f"tensor {name} is {e.dtype}; pslab's tensors are float32 (F32)")
            if any(n < 0 for n in e.shape) or len(e.shape) > 4:
                raise self.wrong(f"tensor {name} has the shape {e.shape}")
            begin, stop = e.data_offsets
            if begin != end or stop - begin != 4 * prod(e.shape):
                raise self.wrong(f"tensor {name}'s bytes {begin}..{stop} overlap, leave a gap or "
                                 f"do not hold its {e.shape} float32 values")
            end = stop
        if self.start + end != size:
            raise self.wrong(f"its tensors take {end} bytes but the file holds "
                             f"{size - self.start} after its header (truncated, or padded)")

    def _bound(self, fd: int, length: int,
               bound: Callable[[str], tuple[int, int]]) -> bytes | None:
        """Refuse a header longer than the file's own first members allow, before the header is
        decoded: `bound(start of pslab's JSON)` gives (its longest text, the most tensors); the
        header is pslab's JSON string first, as safetensors writes it (every quote inside it
        escaped, at most two bytes per character of pslab's ASCII JSON), then ENTRY_BYTES per
        tensor at most."""
        window = read_at(fd, 8, min(length, PREFIX))
        if not window.startswith(_OPENING):
            raise self.wrong("its safetensors header does not begin with pslab's header")
        end = window.find(b'}"}', len(_OPENING))  # inside the string a quote is always \"
        try:
            start = json.loads(window[len(_OPENING) - 1:end + 2]) if end >= 0 else \
                _string_start(window[len(_OPENING):])
        except ValueError:
            raise self.wrong("its header holds no pslab values (not a JSON string)") from None
        longest, count = bound(start)
        most = len(_OPENING) + 2 * longest + 8 + ENTRY_BYTES * count
        if length > most:
            raise self.wrong(f"its safetensors header is {length} bytes, more than a run of "
                             f"its settings writes ({most} at most, with {count} tensors)")
        whole = None
        if end < 0 and length > PREFIX:  # pslab's string goes on: find its end, then its table
            whole = read_at(fd, 8, length)
            end = whole.find(b'}"}', len(_OPENING))
        if end < 0 or end > len(_OPENING) + 2 * longest:
            raise self.wrong(f"its header is more than a run of its settings writes "
                             f"({longest} characters at most)")
        if length - end > ENTRY_BYTES * count + 8:
            raise self.wrong(f"its tensor table is {length - end} bytes, more than {count} "
                             f"tensors take ({ENTRY_BYTES * count + 8} at most)")
        self.longest = longest
        return whole if whole is not None else window if length <= PREFIX else None

    def _split(self, blob: bytes) -> tuple[str, dict[str, msgspec.Raw]]:
        """(pslab's JSON, the tensor table) of the safetensors header `blob`. As pslab writes
        it (_OPENING, pslab's string, then the table) the string is decoded alone, so the
        header is scanned once; any other layout is decoded whole (pslab's string must be in
        __metadata__ either way)."""
        end = blob.find(b'}"}', len(_OPENING)) if blob.startswith(_OPENING) else -1
        if end >= 0 and blob[end + 3:end + 4] in (b",", b"}"):
            text = _decode(blob[len(_OPENING) - 1:end + 2], str,
                           f"{self.path} (its safetensors header's __metadata__)")
            table = b"{" + blob[end + 3 + (blob[end + 3:end + 4] == b","):]
            return text, _decode(table, dict[str, msgspec.Raw],
                                 f"{self.path} (its safetensors header)")
        header = _decode(blob, dict[str, msgspec.Raw], f"{self.path} (its safetensors header)")
        extra = _decode(header.pop("__metadata__", b"null"), Optional[dict[str, str]],
                        f"{self.path} (its safetensors header's __metadata__)")
        if extra is None or "pslab" not in extra:
            raise self.wrong("not a safetensors file with pslab's header")
        return extra["pslab"], header

    @property
    def meta(self) -> dict[str, Any]:
        if self._meta is None:
            meta = parse_json(self.meta_text, f"{self.path} (pslab's header)")
            if not isinstance(meta, dict):
                raise self.wrong("its header holds no pslab values")
            self._meta = meta
        return self._meta

    @property
    def shapes(self) -> dict[str, tuple[int, ...]]:
        return {name: tuple(e.shape) for name, e in self.entries.items()}

    def wrong(self, why: str) -> ValueError:
        return ValueError(f"{self.path} is not {self.what}: {why}")

    def tensors(self, expected: dict[str, tuple[int, ...]] | None = None) -> dict[str, Any]:
        """The tensors (float32, on the CPU), read only once their names and shapes are exactly
        `expected` (None: whatever the header declares, bounded by the file's size)."""
        import torch

        if expected is not None:
            expected = {k: tuple(v) for k, v in expected.items()}
            missing = sorted(set(expected) - set(self.entries))
            extra = sorted(set(self.entries) - set(expected))
            if missing or extra:
                raise self.wrong(f"tensors missing {missing[:4]}, unexpected {extra[:4]}")
            for name, shape in self.shapes.items():
                if shape != expected[name]:
                    raise self.wrong(f"tensor {name} has the shape {list(shape)}; the run's "
                                     f"settings give {list(expected[name])}")
        fd, size = open_regular(self.path, self.what, self.size)
        try:
            if size != self.size:
                raise self.wrong("it changed while being read")
            out = {}
            for name, e in self.entries.items():
                begin, stop = e.data_offsets
                raw = bytearray(read_at(fd, self.start + begin, stop - begin))
                out[name] = torch.frombuffer(raw, dtype=torch.float32).reshape(e.shape) \
                    if raw else torch.zeros(e.shape)
            return out
        except ValueError as error:
            raise self.wrong(str(error)) from None
        finally:
            os.close(fd)


def save_tensors(path: str | Path, tensors: dict[str, Any], meta: dict[str, Any]) -> None:
    """One safetensors file, written atomically: the tensors, and `meta` as JSON in its header."""
    from safetensors.torch import save

    # a copy each: safetensors refuses tensors that share memory (a worker's fetched keys are
    # the server's own tensor; a gradient's shards are views of one vector)
    blob = save({k: t.detach().cpu().clone() for k, t in tensors.items()},
                metadata={"pslab": dumps(meta)})
    write_atomic(path, blob)


def load_tensors(path: str | Path, what: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """(meta, tensors) of a file `save_tensors` wrote (see TensorFile); a ValueError naming the
    file and saying it is not `what` for anything else."""
    found = TensorFile(path, what)
    return found.meta, found.tensors()


class _Kept(msgspec.Struct, forbid_unknown_fields=True):
    """What a process's weights file says besides its tensors."""
    step: int


def read_kept(path: str | Path, what: str, expected: dict[str, tuple[int, ...]],
              steps: int) -> tuple[int, dict[str, Any]]:
    """(the step, the weights) a process kept in `path` with `save_tensors(path, tensors,
    {"step": step})`, read as untrusted: the file's size bounded by the `expected` tensors'
    before anything is read, its header by one step number and that many tensors, the tensors
    exactly `expected`'s names, shapes and float32 before their bytes are read, the step one of
    the run's `steps`; a ValueError naming the file and `what` it is otherwise."""
    limit = 4 * sum(prod(shape) for shape in expected.values()) + 8 + 4096
    found = TensorFile(path, what, limit=limit, bound=lambda start: (64, len(expected)))
    step = check_shape(found.meta, _Kept, f"{path} ({what})").step
    if not 0 <= step < steps:
        raise found.wrong(f"field step: {step} is not a step of this run (0..{steps - 1})")
    return step, found.tensors(expected)
