"""Measured across hosts vs simulated, as notebook 06 shows it: the table `python -m bench --only
network` wrote (section "network" of bench's JSON), labelled with the machine it was measured on.

`load_comparison(path)` reads such a file (plain JSON, checked: nothing in it runs) and returns a
`Comparison`: a table per case (measured and simulated seconds per step, the error, the share of
the workers' time spent waiting), the calibrated link and the summary. Where hosts cannot be
made (not root) this is how the numbers are seen; they are the file's, never re-measured here.
"""
from __future__ import annotations

import html
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass
class Comparison:
    cases: list[dict[str, Any]]
    link: dict[str, Any]
    summary: dict[str, Any]
    machine: dict[str, Any]
    source: str  # the file read

    @property
    def label(self) -> str:
        m = self.machine
        return (f"measured on {m.get('cpu', '?')}, {m.get('cores', '?')} cores, torch "
                f"{m.get('torch', '?')}, load {self.summary.get('load', float('nan')):.1f}; "
                f"read from {self.source}, not measured now")

    def measured_link(self):
        """The link the file's calibration measured, as a `calibrate.Link`."""
        from .calibrate import Link

        asked = self.link.get("asked") or self.link["bandwidth"] * 8 / (
            1 + self.link["bandwidth_error"])
        return Link(self.link["latency"], self.link["bandwidth"], asked)

    def lines(self) -> list[str]:
        link, s = self.link, self.summary
        out = [f"link: {link['bandwidth'] * 8 / 1e6:.2f} Mbit/s measured for 4 asked, latency "
               f"{link['latency'] * 1e3:.2f} ms",
               f"{'case':22} {'measured':>9} {'simulated':>9} {'error':>7} {'waiting m/s':>11}"]
        for c in self.cases:
            out.append(f"{c['name']:22} {c['measured_step'] * 1e3:7.1f}ms "
                       f"{c['simulated_step'] * 1e3:7.1f}ms {c['error']:+7.1%} "
                       f"{c['measured_waiting']:5.0%}/{c['simulated_waiting']:4.0%}")
        out.append(f"error = simulated / measured - 1; "
                   f"median |error| {s['median_error']:.1%}, worst {s['worst_error']:.1%}, "
                   f"ranking {'the same' if s['ranking_same'] else 'different'} both ways")
        return out + [self.label]

    def __repr__(self) -> str:
        return "\n".join(self.lines())

    def _repr_html_(self) -> str:
        head = "".join(f"<th>{h}</th>" for h in ("case", "measured per step",
                                                  "simulated per step", "error",
                                                  "waiting (measured / simulated)"))
        cells = "".join(
            f"<tr><td style='text-align:left'>{html.escape(c['name'])}</td>"
            f"<td>{c['measured_step'] * 1e3:.1f} ms</td><td>{c['simulated_step'] * 1e3:.1f} ms"
            f"</td><td><b>{c['error']:+.1%}</b></td><td>{c['measured_waiting']:.0%} / "
            f"{c['simulated_waiting']:.0%}</td></tr>" for c in self.cases)
        first, *rest = self.lines()[:1] + self.lines()[-2:]
        return (f"<p>{html.escape(first)}</p><table><tr>{head}</tr>{cells}</table>"
                + "".join(f"<p style='font-size:90%'>{html.escape(x)}</p>" for x in rest))


# the file notebook 06 shows: measured here with `python -m bench --only network` (as root)
COMMITTED = (Path(__file__).resolve().parents[2] / "bench" / "results"
             / "reference-network-20261125.json")


def load_comparison(path: str | Path = COMMITTED) -> Comparison:
    """The comparison in a bench result file (default: the one committed beside pslab in its
    repository, bench/results/); a ValueError naming the file if it has none."""
    path = Path(path)
    try:
        saved = json.loads(path.read_text(encoding="utf-8"))
        rows = [r for r in saved["rows"] if r.get("section") == "network"]
        cases = [r for r in rows if "measured_step" in r]
        link = next(r for r in rows if "bandwidth" in r)
        summary = next(r for r in rows if "median_error" in r)
        machine = saved["machine"]
    except (OSError, ValueError, KeyError, TypeError, StopIteration, AttributeError):
        raise ValueError(f"{path} is not a bench result with a measured 'network' section "
                         f"(python -m bench --only network writes one, as root)") from None
    return Comparison(cases, link, summary, machine, path.name)
