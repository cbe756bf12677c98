"""Files pslab writes and reads back: whole or not at all, plain data only, checked before use.

A shared course server has many users and full disks. So every file pslab writes goes to a
private temporary file beside its target and is renamed into place (the target is the old good
file or the new complete one, never half of either; a link planted at the target is replaced,
never written through), and every file pslab reads back is untrusted plain data:

- only a regular file is opened (a named pipe or a device is refused from its `stat`, before
  any open that could block), and it is opened non-blocking, then checked again (`fstat`);
- its size is bounded before anything is read (a cap from the caller; a safetensors header's
  own length capped, the header decoded by msgspec straight into its declared types; the
  tensors it declares must be exactly the shapes the caller expects, float32 only, and fill
  the file exactly, so a sparse 4 GiB file costs nothing; a caller can read a file's leading
  members alone, `json_prefix`, to bound the rest by them before parsing it);
- JSON is parsed only after its nesting depth is measured (MAX_DEPTH) without recursion;
- its shape is then checked by a msgspec type (see `check_shape`): keys, types (a bool is not
  an int, "8" is not an int), ranges.

Every refusal is a ValueError naming the file (and, for a value, the field).
"""
from __future__ import annotations

import json
import os
import re
import stat
import tempfile
from pathlib import Path
from typing import Any, Callable

import msgspec
import numpy as np

MAX_HEADER = 100_000_000  # safetensors' own limit on a header
MAX_DEPTH = 32  # pslab's files nest a handful of levels; 100,000 would exhaust a parser's stack
# a JSON string: runs of plain bytes taken whole between escapes (a 7 kB base64 string in one
# step of the regex engine, not one alternation per byte: ~40x faster on a shard's update line)
_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.S)
_DEPTH_STEP = np.zeros(256, np.int8)
_DEPTH_STEP[[ord("["), ord("{")]] = 1
_DEPTH_STEP[[ord("]"), ord("}")]] = -1
_CHUNK = 1 << 20
PREFIX = 1 << 22  # bytes: a file's leading members (a checkpoint's settings) lie within these


def write_atomic(path: str | Path, data: bytes | Callable[[Any], None],
                 new: bool = False) -> None:
    """Write `data` (bytes, or a function writing to a binary file) to `path` whole: a private
    temporary file in the same folder (created exclusively), flushed to disk, then renamed over
    the target (a rename replaces a link planted there; it never writes through it), or with
    new=True linked in place only if nothing is there yet (FileExistsError otherwise, a link
    included). Any other failure (a full disk, a folder where the file should be, no
    permission) raises an OSError naming `path` and leaves the old file as it was and no
    temporary file behind."""
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
        if new:
            os.link(aside, path)  # fails if anything, even a dangling link, is at path
        else:
            os.replace(aside, path)
            aside = None
    except FileExistsError:
        raise
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
    """The permissions the written file gets: the old file's when it replaces a regular file
    this user owns, else what the user's umask gives a new file (a link planted at the path,
    say to /dev/null, passes on nothing: its target's 0666 would make the file world-writable)."""
    try:
        old = path.lstat()
        if stat.S_ISREG(old.st_mode) and old.st_uid == os.geteuid():
            return old.st_mode & 0o777
    except OSError:
        pass
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


# --- reading --------------------------------------------------------------------------------

def open_regular(path: str | Path, what: str, limit: int) -> tuple[int, int]:
    """(fd, size) of a regular file of at most `limit` bytes, opened read-only; a ValueError
    naming it for a missing path, a folder, a named pipe or device (refused from stat, never
    opened for a blocking read) or a larger file. The caller closes fd."""
    path = Path(path)
    try:
        found = os.stat(path)
    except FileNotFoundError:
        raise ValueError(f"{path} does not exist (expected {what})") from None
    except OSError as error:
        raise ValueError(f"{path} cannot be read ({error.strerror}; expected {what})") from None
    _check_regular(path, found, what)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as error:
        raise ValueError(f"{path} cannot be read ({error.strerror}; expected {what})") from None
    found = os.fstat(fd)  # the file opened, not the one stat saw a moment ago
    try:
        _check_regular(path, found, what)
        if found.st_size > limit:
            raise ValueError(f"{path} is {found.st_size} bytes, more than {what} can be "
                             f"({limit} bytes at most)")
    except ValueError:
        os.close(fd)
        raise
    return fd, found.st_size


def _check_regular(path: Path, found: os.stat_result, what: str) -> None:
    if stat.S_ISDIR(found.st_mode):
        raise ValueError(f"{path} is a folder, not {what}")
    if not stat.S_ISREG(found.st_mode):
        kind = "a named pipe (FIFO)" if stat.S_ISFIFO(found.st_mode) else "not a regular file"
        raise ValueError(f"{path} is {kind}, not {what}: refused without reading it")


def read_at(fd: int, offset: int, size: int) -> bytes:
    """Exactly `size` bytes at `offset` (a file cut short since it was measured: ValueError)."""
    first = os.pread(fd, min(size, 1 << 30), offset) if size else b""
    if len(first) == size:  # the whole at once (a regular file's usual answer)
        return first
    parts, done = [first], len(first)
    while done < size:
        part = os.pread(fd, min(size - done, 1 << 24), offset + done)
        if not part:
            raise ValueError(f"ended {size - done} bytes early")
        parts.append(part)
        done += len(part)
    return b"".join(parts)


def read_small(path: str | Path, what: str, limit: int) -> bytes:
    """The whole of a regular file of at most `limit` bytes (see open_regular)."""
    fd, size = open_regular(path, what, limit)
    try:
        return read_at(fd, 0, size)
    except ValueError as error:
        raise ValueError(f"{path} is not {what}: it {error}") from None
    finally:
        os.close(fd)


def json_depth(blob: bytes) -> int:
    """How deep the arrays and objects of a JSON text nest, measured without parsing it (no
    recursion; memory a few MB whatever the size): strings are blanked, then brackets counted."""
    text = _STRING.sub(b'""', blob)
    depth = top = 0
    for start in range(0, len(text), _CHUNK):
        steps = _DEPTH_STEP[np.frombuffer(text, np.uint8, min(_CHUNK, len(text) - start), start)]
        running = np.cumsum(steps, dtype=np.int64) + depth
        top, depth = max(top, int(running.max())), int(running[-1])
    return top


def parse_json(blob: bytes | str, where: str, depth: int = MAX_DEPTH) -> Any:
    """JSON text as plain values (NaN and infinities as pslab writes them), its depth checked
    first; a ValueError naming `where` for anything else."""
    if isinstance(blob, str):
        blob = blob.encode("utf-8", "surrogatepass")
    if json_depth(blob) > depth:
        raise ValueError(f"{where}: JSON nested deeper than {depth} levels")
    try:
        return json.loads(blob)
    except (ValueError, RecursionError) as error:
        raise ValueError(f"{where}: not JSON ({str(error)[:80]})") from None


def check_shape(value: Any, kind: Any, where: str, field: str = "") -> Any:
    """`value` (plain values) as `kind`, a msgspec type (Struct, list[...], Literal, Annotated
    with Meta bounds), strictly: missing or unknown keys, a wrong type (a bool where an int
    goes, "8"), a number out of range: a ValueError naming `where` and the field (its path
    inside `value`, after `field`)."""
    try:
        return msgspec.convert(value, kind, strict=True)
    except msgspec.ValidationError as error:
        raise ValueError(f"{where}: {_field_first(str(error), field)}") from None


def _decode(blob: bytes | str, kind: Any, where: str) -> Any:
    """JSON without NaN (safetensors' own header) decoded straight into `kind` by msgspec:
    the first wrong value stops it (nothing else is built); its depth is msgspec's to bound."""
    try:
        return msgspec.json.decode(blob, type=kind)
    except (msgspec.DecodeError, RecursionError, UnicodeError) as error:
        why = "JSON nested too deep" if isinstance(error, RecursionError) else \
            "not UTF-8 text" if isinstance(error, UnicodeError) else str(error)
        raise ValueError(f"{where}: {_field_first(why, '')}") from None


def json_prefix(text: str, keys: tuple[str, ...], where: str) -> dict[str, Any]:
    """The first members of the JSON object `text`, which must be `keys` in that order within
    its first PREFIX bytes, parsed without reading the rest (their depth checked first): what
    the file's later, larger members may be is then known before they are parsed."""
    return json_members(text, keys, where)[0]


def json_members(text: str, keys: tuple[str, ...], where: str) -> tuple[dict[str, Any], int]:
    """(`json_prefix`'s members, the offset in `text` just after the last of them). The members
    are looked for in the first 64 kB, then (not found there) in the first PREFIX bytes: a
    window's depth is measured before it is parsed, and the small one is measured fast."""
    try:
        return _members(text[:1 << 16], keys, where)
    except ValueError:
        if len(text) <= 1 << 16:
            raise
    return _members(text[:PREFIX], keys, where)


def _members(window: str, keys: tuple[str, ...], where: str) -> tuple[dict[str, Any], int]:
    if json_depth(window.encode("utf-8", "surrogatepass")) > MAX_DEPTH:
        raise ValueError(f"{where}: JSON nested deeper than {MAX_DEPTH} levels")
    decoder, out, at = json.JSONDecoder(), {}, 0
    for i, key in enumerate(keys):
        at = _skip_space(window, at)
        try:
            if window[at:at + 1] != ("{" if i == 0 else ","):
                raise ValueError
            name, at = decoder.raw_decode(window, _skip_space(window, at + 1))
            at = _skip_space(window, at)
            if name != key or window[at:at + 1] != ":":
                raise ValueError
            out[key], at = decoder.raw_decode(window, _skip_space(window, at + 1))
        except ValueError:
            raise ValueError(f"{where}: does not begin with the members {', '.join(keys)} "
                             f"(plain JSON, in its first {PREFIX} bytes)") from None
    return out, _skip_space(window, at)


NOT_FINITE = ("NaN", "Infinity", "-Infinity")  # as JSON text from Python; strings for msgspec


def decode_rest(text: str, at: int, kind: Any, where: str) -> Any:
    """The members of the JSON object `text` after offset `at` (where `json_members` stopped)
    decoded by msgspec straight into `kind` (a Struct of exactly those members), strictly, at
    C speed and without building anything else. msgspec reads no NaN or Infinity, which Python
    wrote for a loss not measured yet (today's `snapshot` writes the strings itself): each such
    bare word becomes the string of NOT_FINITE it is, so it passes only where `kind` declares
    one may stand (elsewhere the field is named); a string holding one is spoilt, never
    something pslab writes."""
    if text[at:at + 1] not in (",", "}"):
        raise ValueError(f"{where}: not a JSON object after its first members")
    rest = "{" + text[at + (text[at] == ","):]
    try:
        return _decode(rest, kind, where)
    except ValueError:
        if "NaN" not in rest and "Infinity" not in rest:
            raise
    for word in NOT_FINITE[::-1]:  # -Infinity before Infinity
        for before in ",:[ \n\t\r":
            rest = rest.replace(before + word, f'{before}"{word}"')
    return _decode(rest, kind, where)


def _skip_space(text: str, at: int) -> int:
    while at < len(text) and text[at] in " \t\n\r":
        at += 1
    return at


def _field_first(message: str, prefix: str) -> str:
    """msgspec's "Expected `int`, got `str` - at `$.state.seq`" as "field state.seq: expected
    ..." ("Object missing required field `events` - at `$.state`": "field state: object ...")."""
    what, _, path = message.partition(" - at `$")
    path = (prefix + path.rstrip("`")).lstrip(".")
    return f"field {path}: {what[0].lower()}{what[1:]}" if path else what
