"""Plain-text tables for printed run numbers (notebook cells compare them exactly, so no widths
that depend on a font): one small helper every layer may use."""
from __future__ import annotations

from typing import Any, Sequence


def table(rows: Sequence[Sequence[Any]], header: Sequence[str]) -> str:
    """A plain-text table (fixed widths), for printing run numbers that compare exactly."""
    cells = [[str(h) for h in header]] + [[str(c) for c in r] for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]
    lines = ["  ".join(c.rjust(w) for c, w in zip(r, widths)) for r in cells]
    return "\n".join([lines[0], "  ".join("-" * w for w in widths), *lines[1:]])
