"""Processes as /proc shows them (Linux), for the tests that start some: who descends from whom,
what each runs, which are alive, and in what state a survivor is (for a failure's message)."""
from __future__ import annotations

from pathlib import Path


def fields(pid: int) -> list[str] | None:
    """/proc/<pid>/stat after the command's name (which may hold spaces and parentheses):
    [state, parent, ...]; None when the process is gone."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None


def parent(pid: int) -> int | None:
    found = fields(pid)
    return int(found[1]) if found else None


def descendants(pid: int) -> list[int]:
    """Every process below `pid`, found by reading /proc (not assumed)."""
    parents = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            found = fields(int(entry.name))
            if found:
                parents[int(entry.name)] = int(found[1])
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        kids = [c for c, pp in parents.items() if pp == p]
        out += kids
        todo += kids
    return out


def command(pid: int) -> str:
    """The command line of `pid`, "(gone)" once it has ended."""
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(
            errors="replace")
    except OSError:
        return "(gone)"


def alive(pid: int) -> bool:
    """Running (a zombie has ended: it only waits for its parent to read its status)."""
    found = fields(pid)
    return found is not None and found[0] != "Z"


def status(pid: int) -> str:
    """State, parent and what it waits in (wchan) of a process, for a failure's message."""
    found = fields(pid)
    try:
        wchan = Path(f"/proc/{pid}/wchan").read_text()
    except OSError:
        found = None
    if found is None:
        return "gone"
    return f"state {found[0]}, parent {found[1]}, waiting in {wchan or '-'}"
