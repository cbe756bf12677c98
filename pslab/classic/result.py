"""One classic result re-derived live: the paper's number beside pslab's, and the sweep behind it.

A `Result` is what notebook 05 shows for each paper and what tests/test_classic.py checks: a
table (quantity, the paper's number, pslab's number measured on the runs just made) and the
sweep those runs trace (x against one or more y series), drawn by `plot()`.
"""
from __future__ import annotations

import html
from dataclasses import dataclass, field
from typing import Any


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
