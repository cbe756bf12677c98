"""One classic result re-derived live: the paper's number beside pslab's, and the sweep behind it.

A `Result` is what notebook 05 shows for each paper and what tests/test_classic.py checks: a
table (quantity, the paper's number, pslab's number measured on the runs just made) and the
sweep those runs trace (x against one or more y series), drawn by `plot()`.
"""
from __future__ import annotations

import html
from dataclasses import dataclass, field
from typing import Any

from matplotlib.figure import Figure


@dataclass
class Row:
    quantity: str
    paper: str  # as the paper states it, words and all
    value: float  # pslab's live number
    unit: str = ""  # "%", " ms", "x", "" ...

    @property
    def pslab(self) -> str:
        if self.unit == "%":
            return f"{self.value:.1%}"
        return f"{self.value:.3g}{self.unit}"


@dataclass
class Result:
    title: str  # "OSDI'14 (Li et al.): bounded delay"
    source: str  # the paper and where in it
    rows: list[Row]
    x: str  # the sweep's knob
    xs: list[Any]
    series: dict[str, list[float]]  # label -> one y per x
    ylabel: str
    note: str = ""  # how pslab's setup maps onto the paper's, and what differs
    runs: dict[Any, Any] = field(default_factory=dict, repr=False)  # the runs, by x
    scale: str = "linear"  # "log": both axes logarithmic (speed-ups over machines)
    twin: str | None = None  # a series with other units, drawn against a right-hand axis

    def value(self, quantity: str) -> float:
        """pslab's number for one row of the table (the tests read these)."""
        for row in self.rows:
            if row.quantity == quantity:
                return row.value
        raise KeyError(f"no row {quantity!r}; rows: {[r.quantity for r in self.rows]}")

    def __repr__(self) -> str:
        width = max(len(r.quantity) for r in self.rows)
        paper = max(len(r.paper) for r in self.rows)
        lines = [self.title, f"{'':{width}}  {'paper':{paper}}  pslab (live)"]
        lines += [f"{r.quantity:{width}}  {r.paper:{paper}}  {r.pslab}" for r in self.rows]
        return "\n".join(lines + ([self.note] if self.note else []))

    def _repr_html_(self) -> str:
        cells = "".join(f"<tr><td style='text-align:left'>{html.escape(r.quantity)}</td>"
                        f"<td>{html.escape(r.paper)}</td><td><b>{html.escape(r.pslab)}</b></td>"
                        f"</tr>" for r in self.rows)
        note = f"<p style='font-size:90%'>{html.escape(self.note)}</p>" if self.note else ""
        return (f"<p><b>{html.escape(self.title)}</b> — {html.escape(self.source)}</p>"
                f"<table><tr><th></th><th>paper</th><th>pslab (live)</th></tr>{cells}</table>"
                f"{note}")

    def plot(self, figsize: tuple[float, float] = (7.0, 3.6)) -> Figure:
        """The sweep: lines over a numeric knob, grouped bars over named cases."""
        fig = Figure(figsize=figsize, layout="constrained")
        ax = fig.add_subplot()
        numeric = all(isinstance(x, (int, float)) for x in self.xs)
        for i, (label, ys) in enumerate(self.series.items()):
            if numeric:
                on = ax.twinx() if label == self.twin else ax
                on.plot(self.xs, ys, marker="o", label=label, color=f"C{i}")
                if on is not ax:
                    on.set_ylabel(label, color=f"C{i}")
                    on.set_ylim(bottom=0)
            else:
                width = 0.8 / len(self.series)
                pos = [j + (i - (len(self.series) - 1) / 2) * width for j in range(len(self.xs))]
                bars = ax.bar(pos, ys, width, label=label)
                ax.bar_label(bars, fmt="%.3g", fontsize=9)
        if self.scale == "log":
            ax.set_xscale("log", base=2)
            ax.set_yscale("log", base=2)
        if not numeric:
            ax.set_xticks(range(len(self.xs)), [str(x) for x in self.xs], fontsize=9)
        ax.set_xlabel(self.x)
        ax.set_ylabel(self.ylabel)
        ax.set_title(self.title, fontsize=10)
        ax.grid(alpha=0.3)
        if len(self.series) > 1 and self.twin is None:
            ax.legend(fontsize=9, frameon=False)
        return fig
