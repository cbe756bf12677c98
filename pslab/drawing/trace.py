"""`pslab.chrome_trace(run)` / `pslab.trace.to_chrome_trace(run, path)`: any run's timeline as a
Chrome trace (Perfetto, chrome://tracing). The events are built in pslab/tracefile.py, below
the result layer (so that `run.to_chrome_trace(path)` needs nothing above it); here, the
public entries check their argument first.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from .. import tracefile
from ..result import as_runs
from ..tracefile import LINKS, SHARDS, US, WORKERS  # noqa: F401 - public here, as before


def chrome_trace(run) -> dict[str, Any]:
    """The trace as a dict (what `to_chrome_trace` writes)."""
    return tracefile.chrome_trace(as_runs(run, many=False)[0])


def to_chrome_trace(run, path: str | Path) -> Path:
    """Write the run's timeline as a Chrome trace JSON file; returns the path."""
    return tracefile.to_chrome_trace(as_runs(run, many=False)[0], path)
