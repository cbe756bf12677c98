"""Every committed benchmark reference (bench/results/reference-*.json) as a table, at every build.

The files are this repository's own output of `python -m bench`, but read as untrusted data:
each must be a JSON object under 2 MB with a list of row objects; a row's cells are shown as
text, never evaluated.
"""
from __future__ import annotations

import json
from pathlib import Path

RESULTS = Path(__file__).resolve().parents[1] / "bench" / "results"
MAX_BYTES = 2_000_000
COLUMNS = ("section", "name", "median", "min", "max", "ratio", "goal", "met")


def _cell(value: object) -> str:
    if isinstance(value, float):
        text = f"{value:.4g}"
    elif value is None:
        text = ""
    else:
        text = str(value)
    return text.replace("|", "\\|").replace("\n", " ")[:200]


def _table(path: Path) -> list[str]:
    if path.stat().st_size > MAX_BYTES:
        return [f"*{path.name}: over {MAX_BYTES} bytes, not shown.*", ""]
    try:
        data = json.loads(path.read_text())
    except (ValueError, UnicodeDecodeError):
        return [f"*{path.name}: not valid JSON, not shown.*", ""]
    rows = data.get("rows") if isinstance(data, dict) else None
    if not isinstance(rows, list):
        return [f"*{path.name}: no list of rows, not shown.*", ""]
    out = []
    machine = data.get("machine")
    if isinstance(machine, dict):
        out += ["Machine: " + ", ".join(f"{_cell(k)} {_cell(v)}" for k, v in machine.items()), ""]
    out += ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    for row in rows:
        if isinstance(row, dict):
            out.append("| " + " | ".join(_cell(row.get(c)) for c in COLUMNS) + " |")
    return out + [""]


def write(folder: Path) -> None:
    """docs/reference/bench_results.md: one section per reference file, newest first."""
    folder.mkdir(exist_ok=True)
    lines = ["# Benchmark references, as committed", "",
             "Each file under `bench/results/` that `python -m bench` wrote and was kept as a",
             "reference, row by row (times in seconds unless the name says otherwise; `met` says",
             "whether the row's goal held in that run).", ""]
    for path in sorted(RESULTS.glob("reference-*.json"), reverse=True):
        lines += [f"## {path.name}", "", *_table(path)]
    text = "\n".join(lines)
    target = folder / "bench_results.md"
    if not target.exists() or target.read_text() != text:
        target.write_text(text)
