"""The command line's work: `figures` (every replayed seed figure as PNG, SVG and TikZ) and
`demo` (a short sync-vs-async run, summarised in the terminal). `python -m pslab` parses its
arguments first and imports this module (torch, matplotlib) only for a valid command.

Headless (matplotlib's Agg, no display) and deterministic: fixed figure sizes, a fixed SVG hash
salt and no dates in the metadata, so regenerated files only change when the figures do.
"""
from __future__ import annotations

from pathlib import Path
from typing import Callable

import matplotlib

matplotlib.use("Agg")  # before anything imports pyplot: no display needed

from matplotlib.figure import Figure  # noqa: E402
from tqdm import tqdm  # noqa: E402

from . import replay  # noqa: E402
from .cluster import Cluster  # noqa: E402
from .files import write_atomic  # noqa: E402
from .notebook.explain import later_causes  # noqa: E402
from .drawing.export import tikz  # noqa: E402
from .drawing.plot import compare, plot_dataflow  # noqa: E402
from .drawing.seeds import render_seeds, seeds_renderable  # noqa: E402
from .drawing.tex import FIGURES_DIR  # noqa: E402
from .result import Run  # noqa: E402
from .training import train  # noqa: E402

DOCS_FIGURES = FIGURES_DIR.parent / "docs" / "figures"  # what README.md embeds
FIGURE000_LABELS = ("(a) synchronous update", "(b) asynchronous update")
FIGURE001_LABELS = ("(a) update every step", "(b) accumulate two steps, then update")


def _figure000() -> tuple[Figure, str]:
    sync, asyn = replay.figure000()
    return (compare(sync, asyn, FIGURE000_LABELS, stacked=True),
            tikz([sync, asyn], labels=FIGURE000_LABELS))


def _figure001() -> tuple[Figure, str]:
    every, accumulated = replay.figure001()
    return (compare(every, accumulated, FIGURE001_LABELS, palette="accumulation", stacked=True),
            tikz([every, accumulated], labels=FIGURE001_LABELS, palette="accumulation"))


def _figure002() -> tuple[Figure, str]:
    run = replay.figure002()
    return plot_dataflow(run), tikz(run, labels=["figure 002 run"])


def _figure003() -> tuple[Figure, str]:
    from .drawing.nas_diagram import plot_figure

    result = replay.figure003()
    return plot_figure(result), tikz(result)


JOBS: dict[str, Callable[[], tuple[Figure, str]]] = {
    "figure000": _figure000, "figure001": _figure001, "figure002": _figure002,
    "figure003": _figure003}


def save(fig: Figure, path: Path) -> None:
    """PNG or SVG by suffix, byte-stable across runs (no dates, fixed SVG ids)."""
    with matplotlib.rc_context({"svg.hashsalt": "pslab"}):
        meta = {"Date": None} if path.suffix == ".svg" else {"Software": None}
        # whole or not at all: a failed export leaves the previous picture as it was
        write_atomic(path, lambda f: fig.savefig(f, format=path.suffix[1:], dpi=150,
                                                 metadata=meta, bbox_inches="tight"))


def figures(out: Path) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for name in tqdm(JOBS, desc="replaying figures", unit="figure"):
        fig, tex = JOBS[name]()
        for suffix in (".svg", ".png"):  # SVG on the first draw: its clip ids depend on layout
            save(fig, out / f"{name}{suffix}")
            written.append(out / f"{name}{suffix}")
        write_atomic(out / f"{name}.tex", tex.encode("utf-8"))
        written.append(out / f"{name}.tex")
    return written


def docs_figures() -> tuple[list[Path], str | None]:
    """Re-make every picture README.md and the notebooks embed: docs/figures (the replays) and
    notebooks/img (the seeds). Returns the paths written and, when the seeds could not be
    rendered (no pdflatex or pdftoppm), why."""
    if not DOCS_FIGURES.parent.is_dir():
        raise FileNotFoundError(f"--docs writes into a source checkout's docs/figures; "
                                f"{DOCS_FIGURES.parent} is not there (use --out DIR)")
    written = figures(DOCS_FIGURES)
    if not seeds_renderable():
        return written, ("notebooks/img not re-rendered: it needs pdflatex and pdftoppm "
                         "(make system)")
    return written + render_seeds(), None


def time_to(run: Run, accuracy: float) -> float:
    """Virtual seconds until the test accuracy first reaches `accuracy` (inf: never)."""
    return next((r.time for r in run.history if r.accuracy >= accuracy), float("inf"))


def demo(workers: int = 4, steps: int = 30, target: float = 0.8) -> tuple[Run, Run]:
    """Sync vs async on the same cluster with one straggler: the trade of figure 000."""
    cluster = Cluster(speeds=[0.5] + [1.0] * (workers - 1), jitter=0.1)
    runs = tuple(train(mode=m, workers=workers, steps=steps, cluster=cluster, seed=0)
                 for m in ("sync", "async"))
    print(f"{workers} workers (G0 at half speed), {steps} steps each, same seed and data:")
    print(f"{'mode':>6} {'makespan':>9} {'idle':>6} {'updates':>8} {'updates/s':>9} "
          f"{'max stale':>9} {'test acc':>9} {f'to {target:.0%}':>8}")
    for r in runs:
        print(f"{r.mode:>6} {r.makespan:8.1f}s {r.idle_fraction:6.1%} {r.updates:8d} "
              f"{r.updates / r.makespan:9.2f} {max(r.staleness, default=0):9d} "
              f"{r.final_accuracy:9.1%} {time_to(r, target):7.1f}s")
    print(verdict(*runs, target))
    return runs


def verdict(sync: Run, asyn: Run, target: float) -> str:
    """What the two rows above say, in words: true of these runs whichever way they went."""
    rate = (asyn.updates / asyn.makespan) / (sync.updates / sync.makespan)
    lines = [f"async never waits at a barrier: {rate:.1f}x the updates per second, each on "
             f"weights up to {max(asyn.staleness, default=0)} versions old."]
    first, second = (asyn, sync) if time_to(asyn, target) < time_to(sync, target) else (sync,
                                                                                          asyn)
    if time_to(first, target) < float("inf"):
        lines.append(f"{first.mode} reaches {target:.0%} first ({time_to(first, target):.1f} s "
                     f"against {time_to(second, target):.1f} s) and ends at "
                     f"{first.final_accuracy:.1%} against {second.final_accuracy:.1%}.")
    if asyn.makespan > sync.makespan:
        causes = later_causes(asyn, sync, straggler=True, links=asyn.settings.timing.links)
        lines.append(f"async still finishes later ({asyn.makespan:.1f} s against "
                     f"{sync.makespan:.1f} s): " + "; ".join(causes) + ".")
    return "\n".join(lines)
