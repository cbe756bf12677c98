"""`python -m bench.table RESULT.json`: docs/benchmarks.md's table, rewritten from a run's JSON.

The table sits between the two marker lines below in docs/benchmarks.md; everything else in
that page is prose and stays. Its caption names the file, the machine, the load average at the
end of the run and the bare 10^7-step loop before and after (the yardstick a reader needs: wall
goals move with the load). Each row is one row of the JSON: the median with min and max, the
ratio, the goal and whether it held. The file is this repository's own output, still read as
untrusted data: a JSON object under 2 MB with a list of rows; cells are shown as text.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from pslab.files import write_atomic

PAGE = Path(__file__).resolve().parents[1] / "docs" / "benchmarks.md"
START = "<!-- bench-table: written by `python -m bench.table`; edit the JSON's run, not here -->"
END = "<!-- bench-table end -->"
MAX_BYTES = 2_000_000


def _time(seconds: Any) -> str:
    if not isinstance(seconds, (int, float)):
        return ""
    return f"{seconds * 1e3:.1f} ms" if seconds < 1 else f"{seconds:.2f} s"


def _cell(value: Any) -> str:
    return str(value).replace("|", "\\|").replace("\n", " ")[:200]


def table(result: dict[str, Any], name: str) -> list[str]:
    """The caption and the rows of one `python -m bench` result, as Markdown lines."""
    about = result.get("machine") if isinstance(result.get("machine"), dict) else {}
    before, after = about.get("python_loop_1e7_s_before"), about.get("python_loop_1e7_s")
    lines = [f"`{_cell(name)}` (`python -m bench{' --quick' if result.get('quick') else ''}`): "
             f"{_cell(about.get('cpu', '?'))}, {_cell(about.get('cores', '?'))} cores, Python "
             f"{_cell(about.get('python', '?'))}, torch {_cell(about.get('torch', '?'))}; load "
             f"average {_cell(about.get('load_average', '?'))} at the end (1, 5, 15 min); a bare "
             f"10^7-step loop {_time(before)} before the sections, {_time(after)} after.", "",
             "| section | what | median (min–max) | ratio | goal | met |", "|---|---|---|---|---|---|"]
    for r in result["rows"]:
        if not isinstance(r, dict):
            continue
        spread = (f"{_time(r.get('median'))} ({_time(r.get('min'))}–{_time(r.get('max'))})"
                  if isinstance(r.get("median"), (int, float)) else "")
        ratio = f"{r['ratio']:.2f}×" if isinstance(r.get("ratio"), (int, float)) else ""
        met = {True: "met", False: "**NOT met**"}.get(r.get("met"), "") if r.get("goal") else ""
        lines.append(f"| {_cell(r.get('section', ''))} | {_cell(r.get('name', ''))} | {spread} | "
                     f"{ratio} | {_cell(r.get('goal', ''))} | {met} |")
    return lines


def rewrite(page: str, lines: list[str]) -> str:
    """`page` with the text between the markers replaced by `lines`."""
    if page.count(START) != 1 or page.count(END) != 1 or page.index(START) > page.index(END):
        raise ValueError(f"the page must hold the two marker lines once each, in order: "
                         f"{START!r} and {END!r}")
    head, rest = page.split(START)
    return head + "\n".join([START, *lines, END]) + rest.split(END, 1)[1]


def load(path: Path) -> dict[str, Any]:
    """A result file, checked: a JSON object under 2 MB with a list of rows."""
    if path.stat().st_size > MAX_BYTES:
        raise ValueError(f"{path}: over {MAX_BYTES} bytes: not a bench result")
    try:
        result = json.loads(path.read_bytes())
    except (ValueError, UnicodeDecodeError):
        raise ValueError(f"{path}: not JSON: not a bench result") from None
    if not isinstance(result, dict) or not isinstance(result.get("rows"), list):
        raise ValueError(f"{path}: no list of rows: not a bench result")
    return result


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.table", description=__doc__.splitlines()[0])
    ap.add_argument("result", type=Path, help="a JSON file `python -m bench` wrote")
    ap.add_argument("--page", type=Path, default=PAGE, help="the page to rewrite (default: "
                    "docs/benchmarks.md)")
    args = ap.parse_args(argv)
    try:
        text = rewrite(args.page.read_text(), table(load(args.result), args.result.name))
    except ValueError as error:
        print(f"python -m bench.table: error: {error}", file=sys.stderr)
        return 2
    write_atomic(args.page, text.encode("utf-8"))
    print(f"rewritten: {args.page}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
