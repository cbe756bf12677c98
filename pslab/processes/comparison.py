"""Measured across hosts vs simulated, as notebook 06 shows it: the table `python -m bench --only
network` wrote (section "network" of bench's JSON), labelled with the machine it was measured on.

`load_comparison(path)` reads such a file (plain JSON, checked: nothing in it runs) and returns a
`Comparison`: a table per case (measured and simulated seconds per step, the error, the share of
the workers' time spent waiting), the calibrated link and the summary. Where hosts cannot be
made (not root) this is how the numbers are seen; they are the file's, never re-measured here.
"""
from __future__ import annotations

import html
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass
class Comparison:
    cases: list[dict[str, Any]]
    links: list[dict[str, Any]]  # one calibrated link per bandwidth
    summary: dict[str, Any]
    machine: dict[str, Any]
    source: str  # the file read

    @property
    def link(self) -> dict[str, Any]:
        return self.links[0]

    @property
    def label(self) -> str:
        m, s = self.machine, self.summary
        loads = s.get("loads") or [s.get("load", float("nan"))] * 2
        when = f"{s['date']}, " if "date" in s else ""
        seed = f"grid seed {s['seed']}, " if "seed" in s else ""
        return (f"measured on {m.get('cpu', '?')}, {m.get('cores', '?')} cores, torch "
                f"{m.get('torch', '?')}, load {loads[0]:.1f}-{loads[1]:.1f}; {when}{seed}"
                f"read from {self.source}, not measured now")

    def measured_link(self):
        """The first calibrated link of the file, as a `calibrate.Link`."""
        from .calibrate import Link

        link = self.link
        asked = link.get("asked") or link["bandwidth"] * 8 / (1 + link["bandwidth_error"])
        return Link(link["latency"], link["bandwidth"], asked)

    def goal(self) -> str:
        s = self.summary
        met = {True: "met", False: "NOT met"}.get(s.get("met"), "")
        return (f"error = simulated / measured - 1; median |error| {s['median_error']:.1%}, worst "
                f"{s['worst_error']:.1%}, ranking "
                f"{'the same' if s['ranking_same'] else 'different'} both ways" + (f" (goal: {s['goal']}: {met})" if "goal" in s else ""))

    def brief(self) -> str:
        """The file's own summary in short lines (a projector's cell is ~64 characters wide):
        when and under what load, the errors, each mode's median, and each pair ordered one way
        measured and the other simulated, with both gaps and whether its cases, measured twice
        more, overlapped (a tie within the measured spread) or stayed apart."""
        s = self.summary
        loads = s.get("loads") or [s.get("load", float("nan"))] * 2
        out = [f"seed {s.get('seed', '?')}: {len(self.cases)} cases, {s.get('date', '?')}, "
               f"load {loads[0]:.1f}-{loads[1]:.1f}",
               f"  median |error| {s['median_error']:.1%}, worst {s['worst_error']:.1%}"]
        modes = ", ".join(f"{MODE_NAMES.get(m, m)}\0{v['median_error']:.1%}"  # (kept whole)
                          for m, v in s.get("by_mode", {}).items())
        out += [line.replace("\0", " ") for line in textwrap.wrap(
            f"by mode: {modes}", 62, initial_indent="  ", subsequent_indent=" " * 11,
            break_on_hyphens=False)
            if modes]
        flips = s.get("flips", [])
        out.append(f"  ordered differently: {len(flips) or 'none'}" + (
            " (gaps measured, simulated; again)" if flips else ""))
        for f in flips:
            a, b = (case_name(dict(name=n)) for n in f["cases"])
            again = {True: "tie", False: "apart"}.get(f.get("within_spread"), "")
            out.append(f"    {a + ' vs ' + b.split(' ', 1)[-1]:28} {f['measured_gap']:4.1%} "
                       f"{f['simulated_gap']:4.1%} {again}")
        return "\n".join(out)

    def lines(self) -> list[str]:
        out = [self.links_line()]
        out.append(f"{'case':22} {'setting':44} {'measured':>9} {'simulated':>9} {'error':>7}")
        for c in self.cases:
            out.append(f"{case_name(c):22} {setting(c):44} {c['measured_step'] * 1e3:7.1f}ms "
                       f"{c['simulated_step'] * 1e3:7.1f}ms {c['error']:+7.1%}")
        return out + [self.goal(), self.label]

    def links_line(self) -> str:
        """The calibrated links in one line: how much of the bandwidth asked each carried, and
        their latency ('0 ms' where the fitted line met zero bytes at or below zero: the fit
        keeps it at 0, see `pslab.processes.calibrate.fit`)."""
        asked = [x for x in self.links if x.get("asked")]
        if not asked:
            return (f"link: {self.link['bandwidth'] * 8 / 1e6:.2f} Mbit/s measured, latency "
                    f"{_ms(self.link['latency'])}")
        shares = [x["bandwidth"] * 8 / x["asked"] for x in asked]
        first = asked[0]
        lat = sorted({_ms(x["latency"]) for x in asked})
        zero = (" on each: a message took its bytes / bandwidth, no measurable time more"
                if lat == ["0 ms"] else "")
        return (f"{len(asked)} links calibrated: each carried {min(shares):.0%}-{max(shares):.0%}"
                f" of the bandwidth asked (e.g. {first['asked'] / 1e6:.1f} Mbit/s asked, "
                f"{first['bandwidth'] * 8 / 1e6:.2f} measured); latency {', '.join(lat)}{zero}")

    def __repr__(self) -> str:
        return "\n".join(self.lines())

    def _repr_html_(self) -> str:
        head = "".join(f"<th>{h}</th>" for h in ("case", "setting", "measured per step",
                                                  "simulated per step", "error"))
        cells = "".join(
            f"<tr><td style='text-align:left'>{html.escape(case_name(c))}</td>"
            f"<td style='text-align:left'>{html.escape(setting(c))}</td>"
            f"<td>{c['measured_step'] * 1e3:.1f} ms</td><td>{c['simulated_step'] * 1e3:.1f} ms"
            f"</td><td><b>{c['error']:+.1%}</b></td></tr>" for c in self.cases)
        first, *rest = self.lines()[:1] + self.lines()[-2:]
        return (f"<p>{html.escape(first)}</p><table><tr>{head}</tr>{cells}</table>"
                + "".join(f"<p style='font-size:90%'>{html.escape(x)}</p>" for x in rest))


# the bench's mode names as the notebooks write the modes (pslab.SSP(1), pslab.ZeRO(3))
MODE_NAMES = {"ssp:1": "SSP(1)", "backup:1": "Backup(1)", "allreduce": "all-reduce",
              "zero3": "ZeRO(3)"}


def case_name(case: dict[str, Any]) -> str:
    """'#0 SSP(1)' for the bench's '#0 ssp:1'."""
    head, _, mode = str(case["name"]).rpartition(" ")
    return f"{head} {MODE_NAMES.get(mode, mode)}".strip()


def _ms(seconds: float) -> str:
    """Milliseconds as measured: '0 ms' only for an exact zero, '< 0.01 ms' below that."""
    ms = float(seconds) * 1e3
    return "0 ms" if ms == 0 else "< 0.01 ms" if ms < 0.01 else f"{ms:.2f} ms"


def setting(case: dict[str, Any]) -> str:
    """A case's setting in words: its link, compute, workers, shards, accumulate, straggler."""
    parts = []
    if "bandwidth" in case:
        parts += [f"{case['bandwidth'] / 1e6:.1f} Mbit/s", f"{case['compute'] * 1e3:.0f} ms"]
    parts += [f"W={case['workers']}", f"S={case['shards']}", f"k={case['accumulate']}"]
    if case.get("speeds"):
        parts.append("straggler")
    return ", ".join(parts)


# the file notebook 06 shows: a grid measured here with `python -m bench --only network` (as root)
COMMITTED = (Path(__file__).resolve().parents[2] / "bench" / "results"
             / "network-grid-20261128-seed477910-quiet.json")


MAX_FILE = 20_000_000  # bytes: a 42-case grid's file is ~100 KB


def load_comparison(path: str | Path = COMMITTED) -> Comparison:
    """The comparison in a bench result file (default: the one committed beside pslab in its
    repository, bench/results/); a ValueError naming the file if it has none."""
    from ..files import parse_json, read_small

    path = Path(path)
    try:
        saved = parse_json(read_small(path, "a bench result file", MAX_FILE), str(path))
        rows = [r for r in saved["rows"] if r.get("section") == "network"]
        cases = [r for r in rows if "measured_step" in r]
        links = [r for r in rows if "latency" in r and "measured_step" not in r]
        summary = next(r for r in rows if "median_error" in r)
        machine = saved["machine"]
        for c in cases:  # checked before use: the numbers the table formats
            float(c["measured_step"]) + float(c["simulated_step"]) + float(c["error"])
            str(c["name"]) + setting(c)
        float(summary["median_error"]) + float(summary["worst_error"])
        if not links or not isinstance(machine, dict):
            raise ValueError("no link or machine")
    except (OSError, ValueError, KeyError, TypeError, StopIteration, AttributeError):
        raise ValueError(f"{path} is not a bench result with a measured 'network' section "
                         f"(python -m bench --only network writes one, as root)") from None
    return Comparison(cases, links, summary, machine, path.name)
