"""Any run's timeline (figures 000 and 001) as a standalone TikZ picture, for slides and papers.

`tikz(run)` writes the same blocks the matplotlib timeline draws, with the styles of figures/
(`pslab.drawing.tex.style_preamble()`, colours from `pslab.drawing.palette`), so a replayed or modified run drops
straight into a LaTeX deck. The document compiles on its own: the style is inlined.
"""
from __future__ import annotations

from os import PathLike
from pathlib import Path
from typing import Sequence

from ..checks import flag, number, run_labels
from .palette import LABELS, PALETTES, TEX_PREFIX
from .timeline_plot import SHORT, numbers_line, worker_label
from ..nas.result import Search
from ..result import Run, as_runs
from .tex import coordinate as _num, escape as _esc, round_ticks as _ticks, style_preamble
from ..files import write_atomic

ROW = 0.55  # cm per timeline row
WIDEST = 500.0  # cm: TeX's largest dimension is 575 cm (16383 pt)
CHAR_CM = 0.13  # width of one \tiny character (generous), to decide which blocks get a label


def _shard_label(run: Run, s: int) -> str:
    names = ", ".join(f"${n}$" for n in run.shards[s]) if s < len(run.shards) else ""
    head = "server" if len(run.shard_bytes) == 1 else f"S{s}"
    return f"{head}: {names}"


def _title(run: Run, label: str | None, column: bool) -> str:
    return f"\\textbf{{{_esc(label or run.mode)}}}: {_esc(numbers_line(run, column))}"


def _panel(run: Run, y0: float, xs: float, right: float, palette: str, column: bool,
           label: str | None) -> tuple[list[str], float]:
    """The lines of one run's timeline with its top at y0 (in rows); returns them and the
    y of its bottom."""
    prefix, labels = TEX_PREFIX[palette], LABELS[palette]
    shard_rows = 0 if column else len(run.shard_bytes)
    rows = [worker_label(w, palette) for w in range(run.workers)]
    rows += [_shard_label(run, s) for s in range(shard_rows)]
    out = [f"  % {_esc(label or run.mode)}: {len(run.timeline)} spans",
           f"  \\node[anchor=south west, font=\\footnotesize, inner sep=1pt] "
           f"at (0,{_num(y0 + 0.1)}) {{{_title(run, label, column)}}};"]
    for i, name in enumerate(rows):
        out.append(f"  \\node[anchor=east, font=\\scriptsize] at (-0.1,{_num(y0 - i - 0.5)}) "
                   f"{{{name}}};")
    texts = []
    for sp in sorted(run.timeline, key=lambda s: s.kind == "update"):  # columns on top
        if sp.end <= sp.start:
            continue
        if sp.worker is not None:
            top = bottom = sp.worker
        elif column:
            top, bottom = 0, run.workers - 1
        else:
            top = bottom = run.workers + sp.shard
        gap = 0.0 if column else 0.1  # figure 001's rows touch, so its sync column is one block
        ya, yb = y0 - top - gap, y0 - bottom - 1 + gap
        out.append(f"  \\draw[{prefix} {sp.kind}] ({_num(sp.start)},{_num(ya)}) rectangle "
                   f"({_num(sp.end)},{_num(yb)});")
        cm = (sp.end - sp.start) * xs
        mid = f"({_num((sp.start + sp.end) / 2)},{_num((ya + yb) / 2)})"
        if column and sp.kind == "update":
            if cm >= 0.3:
                texts.append(f"  \\node[font=\\tiny, rotate=90] at {mid} "
                             f"{{{SHORT.get(labels['update'], 'sync')}}};")
            continue
        text = (f"{sp.end - sp.start:.1f}" if palette == "accumulation" and sp.kind != "idle"
                else None if palette == "accumulation" else labels[sp.kind])
        for cand in (text, SHORT.get(text or "", "")):
            if cand and len(cand) * CHAR_CM + 0.1 <= cm:
                texts.append(f"  \\node[font=\\tiny, inner sep=0pt] at {mid} {{{_esc(cand)}}};")
                break
    bottom = y0 - len(rows) - 0.3
    out += texts
    out.append(f"  \\draw[->, thick] (0,{_num(bottom)}) -- ({_num(right * 1.04)},{_num(bottom)}) "
               f"node[anchor=west, font=\\scriptsize] {{time (s)}};")
    for t in _ticks(right):
        out.append(f"  \\draw ({_num(t)},{_num(bottom)}) -- ++(0,-0.15) "
                   f"node[below, font=\\tiny] {{{_num(t)}}};")
    out.append(f"  \\draw[densely dashed, gray] ({_num(run.makespan)},{_num(y0)}) -- "
               f"({_num(run.makespan)},{_num(bottom)});")
    return out, bottom - 1.6




def tikz(run: Run | Sequence[Run], path: str | Path | None = None, palette: str = "ps",
         labels: Sequence[str] | None = None, column: bool | None = None,
         width: float = 14.0) -> str:
    """A standalone LaTeX document drawing the timeline of `run` (or of several runs, stacked
    on one time scale); written to `path` when given. width: cm of the longest makespan.
    palette/column as in `pslab.plot.TimelinePlot`. A `pslab.nas.Search` (figure 003) gets its
    three-tier timeline (`pslab.drawing.nas_tikz.tikz`).
    """
    width = number("width (cm)", width, positive=True, high=WIDEST)
    if path is not None and not isinstance(path, (str, PathLike)):
        raise ValueError(f"path must be a file name (str or Path) or None (got {path!r})")
    if isinstance(run, Search):  # figure 003: its three tiers (nas_tikz builds on this module)
        from .nas_tikz import tikz as three_tiers

        return three_tiers(run, path, width=width)
    if palette not in PALETTES:
        raise ValueError(f"palette must be one of {sorted(PALETTES)} (got {palette!r})")
    runs = as_runs(run)
    labels = run_labels(labels, len(runs))
    column = flag("column", column, none=True)
    column = palette == "accumulation" if column is None else column
    right = max(r.makespan for r in runs) or 1.0
    xs = width / right  # cm per virtual second
    body, y = [], 0.0
    for r, lab in zip(runs, labels):
        lines, y = _panel(r, y, xs, right, palette, column, lab)
        body += lines
    doc = "\n".join([
        "% Generated by pslab.tikz: a run's timeline, one row per GPU and per server shard.",
        "\\documentclass[tikz,border=4pt]{standalone}",
        style_preamble(),
        "\\begin{document}",
        f"\\begin{{tikzpicture}}[x={_num(xs)}cm, y={ROW}cm]",
        *body,
        "\\end{tikzpicture}",
        "\\end{document}",
        ""])
    if path is not None:
        write_atomic(path, doc.encode("utf-8"))
    return doc
