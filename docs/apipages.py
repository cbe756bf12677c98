"""The API reference's pages, written at every build from what pslab exports today.

`pslab.__all__` gives the top-level page; each public subpackage or module named there, or in
`MODULES`, gets a page of its own listing its `__all__` (or, without one, the public functions
and classes it defines). A name added, renamed or removed in the code changes the pages at the
next build; nothing here lists a name by hand.
"""
from __future__ import annotations

import importlib
import inspect
import re
from pathlib import Path
from types import ModuleType

# Public modules beyond those that pslab.__all__ names (any that is gone is skipped).
MODULES = ["pslab.processes", "pslab.nas", "pslab.classic", "pslab.pipeline", "pslab.replay", "pslab.zero",
           "pslab.drawing.plot", "pslab.notebook.quiz", "pslab.notebook.widgets",
           "pslab.settings", "pslab.options", "pslab.notebook.dashboard",
           # the core, for a reader of the code: the clock, the arithmetic, the actors
           "pslab.engine", "pslab.server", "pslab.worker", "pslab.layout", "pslab.timeline",
           "pslab.simulation"]


def _kind(obj: object) -> str:
    if inspect.isclass(obj):
        return "autoclass"
    if callable(obj):
        return "autofunction"
    return "py:data"  # a constant: its type's docstring (dict's, tuple's) says nothing about it


def _names(module: ModuleType) -> list[str]:
    if hasattr(module, "__all__"):
        return list(module.__all__)
    return [n for n, o in vars(module).items()
            if not n.startswith("_") and (inspect.isclass(o) or inspect.isfunction(o))
            and getattr(o, "__module__", None) == module.__name__]


def _page(module: ModuleType, modules: dict[str, str], seen: dict[int, str]) -> str:
    """One module's page; an object already documented under another name (`seen`: id ->
    that name) is a line pointing there, so each thing is described once."""
    name = module.__name__
    lines = [name, "=" * len(name), "", f".. automodule:: {name}", "   :no-members:", ""]
    entries, links, same = [], [], []
    for n in _names(module):
        obj = getattr(module, n, None)
        if obj is None:
            continue
        if inspect.ismodule(obj):
            if obj.__name__ in modules:
                links.append(f"- :doc:`{name}.{n} <{modules[obj.__name__]}>`"
                             f" — `{obj.__name__}`")
            continue
        directive = _kind(obj)
        if directive != "py:data" and id(obj) in seen:
            same.append(f"- `{name}.{n}`: the same as :py:obj:`{seen[id(obj)]}`")
            continue
        seen.setdefault(id(obj), f"{name}.{n}")
        entries += [f".. {directive}:: {name}.{n}"]
        if directive == "py:data":
            entries.append(f"   :type: {type(obj).__name__}")
        entries.append("")
    if same:
        lines += ["Also here", "---------", "", *same, ""]
    if links:
        lines += ["Modules", "-------", "", *links, ""]
    if entries:
        lines += ["Names", "-----", "", *entries]
    return "\n".join(lines) + "\n"


def public_modules() -> list[ModuleType]:
    """pslab, the modules pslab.__all__ names, and MODULES that import: the reference's pages."""
    import pslab

    found = {"pslab": pslab}
    for n in pslab.__all__:
        obj = getattr(pslab, n)
        if inspect.ismodule(obj):
            found.setdefault(obj.__name__, obj)
    for m in MODULES:
        try:
            found.setdefault(m, importlib.import_module(m))
        except ImportError:
            continue
    return list(found.values())


def write(folder: Path) -> None:
    """Write one page per public module into `folder`, and its index; stale pages removed."""
    folder.mkdir(exist_ok=True)
    modules = public_modules()
    pages = {m.__name__: f"api_{m.__name__.replace('.', '_')}" for m in modules}
    wanted = {f"{p}.rst" for p in pages.values()}
    for old in folder.glob("api_*.rst"):
        if old.name not in wanted:
            old.unlink()
    seen: dict[int, str] = {}
    for module in modules:
        _write_if_changed(folder / f"{pages[module.__name__]}.rst", _page(module, pages, seen))
    index = ["# API reference", "",
             "Generated from the docstrings at every build: `pslab` is the front door, the rest",
             "are the modules it names and the other public entries.", "",
             "```{toctree}", ":maxdepth: 1", "", *pages.values(), "```", ""]
    _write_if_changed(folder / "index.md", "\n".join(index))


def _write_if_changed(path: Path, text: str) -> None:
    # Unchanged pages keep their time stamp, so an incremental build rereads only what moved.
    if not path.exists() or path.read_text() != text:
        path.write_text(text)


BULLET = re.compile(r"^ *([-*+]|\d+[.)]) +")


def _paragraphs(lines: list[str]) -> list[list[str]]:
    """Blocks between blank lines, and a list written straight under (or over) a sentence split
    from it, as reST wants a blank line there."""
    out: list[list[str]] = [[]]
    listed = False  # whether the block being read is a list
    for line in lines:
        if not line.strip():
            out.append([])
            continue
        bullet = BULLET.match(line) is not None
        starts = _indent(line) == (_indent(out[-1][0]) if out[-1] else _indent(line))
        if out[-1] and starts and bullet != listed:
            out.append([])  # a list begins under a sentence, or a sentence after a list
        if not out[-1]:
            listed = bullet
        out[-1].append(line)
    return [p for p in out if p]


STARRED = re.compile(r"(?<![\w*\\])(\*{1,2})(?=[A-Za-z_]\w*\b(?!\*))")


def _escape_stars(line: str) -> str:
    """`fn(*args, **kw)` outside backquotes: the stars are not emphasis."""
    parts = line.split("`")
    parts[::2] = [STARRED.sub(lambda m: "\\" + "\\".join(m.group(1)), s) for s in parts[::2]]
    return "`".join(parts)


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _reflowed(paragraph: list[str]) -> bool:
    """True when reST reads the paragraph as written: no line deeper than the first, except a
    list item's own continuation lines (indented to the item's text)."""
    base, item = _indent(paragraph[0]), None
    for line in paragraph:
        bullet = BULLET.match(line)
        if bullet and _indent(line) == base:
            item = bullet.end()
        elif _indent(line) > base and (item is None or _indent(line) != item):
            return False
    return True


def plain_docstrings(app, what, name, obj, options, lines: list[str]) -> None:  # noqa: ANN001
    """autodoc-process-docstring: pslab's docstrings are plain text as PEP 257 writes them, with
    parameter lists whose long entries hang indented and examples indented under a paragraph.
    reST would fail on those or read them as quotes, so: a paragraph indented as a whole is shown
    as code (an example), a paragraph with hanging lines line by line as written (a list of
    names and what they mean); every other paragraph, list and directive is left to reST."""
    out: list[str] = []
    for paragraph in _paragraphs(lines):
        first = paragraph[0]
        if out and out[-2].rstrip().endswith("::") or first.lstrip().startswith(("..", ">>>")):
            out += paragraph  # already a literal block, a directive or a doctest
        elif _indent(first) > 0:
            out += ["::", ""] + ["    " + line for line in paragraph]
        elif not _reflowed(paragraph):
            out += ["| " + _escape_stars(line) for line in paragraph]
        else:
            out += [_escape_stars(line) for line in paragraph]
        out.append("")
    lines[:] = out
