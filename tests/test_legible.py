"""Every figure a notebook shows reads at >= 10 px in a 590-px cell (1024x768, file browser
open) and fits that screen's 504 px of notebook: each is drawn by the very call its notebook
cell makes, and its smallest text and its height measured where JupyterLab shows it
(tests/legible.py). A new figure cell in a notebook fails the
completeness test until it is listed here."""
from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import matplotlib
import pytest

matplotlib.use("Agg")

import pslab  # noqa: E402
from pslab import nas, plot, processes, replay  # noqa: E402
from pslab.notebook import classic_explore as explore  # noqa: E402
from pslab.notebook import widgets as pw  # noqa: E402
from pslab.options import ProcessOptions  # noqa: E402

from legible import DPI, READABLE_PX, SCREEN_PX, shown_height, texts  # noqa: E402

NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"
WIDGET = "application/vnd.jupyter.widget-view+json"  # dashboards: drawn in the browser


def _measured(sim):
    """A measured run stand-in (notebooks 06, 07): a simulated run labelled as measured."""
    run = processes.scaled(sim, 0.02)
    on_processes = dataclasses.replace(run.settings, processes=ProcessOptions())
    return dataclasses.replace(run, settings=on_processes)


def _processes_stand_in():
    """Notebook 06's measured run, drawn by the same code: a simulated run labelled as
    measured (its time axis says so), so this test needs no processes."""
    sim = pslab.train("sync", workers=3, steps=10)
    return sim, _measured(sim)


def _straggler_pair():
    straggler = pslab.Cluster(speeds=[1, 1, 0.25])
    return [pslab.train(m, workers=3, steps=15, cluster=straggler, numerics=False)
            for m in ("sync", "async")]


# what each figure cell needs defined before it runs, as its notebook defines it
SETUP = {
    "run": lambda: pslab.train(mode="sync", workers=3, steps=20, seed=0),
    "sync, asyn": replay.figure000,
    "every, acc": replay.figure001,
    "s": lambda: pw.PRESETS["default"],
    "async8": lambda: pslab.train(**pw.PRESETS["default"].changed(mode="async").train_kwargs()),
    "result": replay.figure003,
    "found": lambda: nas.duels((0, 1, 2)),
    "sweep": lambda: nas.sweep_servers((1, 2, 4, 8, 20)),
}
for i, name in enumerate(("bounded_delay", "softsync_staleness", "staleness_aware_lr",
                          "async_staleness", "backup_workers", "d2l_transfers",
                          "distbelief_scaling"), start=1):
    SETUP[f"r{i}"] = (lambda n: lambda: getattr(pslab.classic, n)())(name)

SETUP["runs"] = lambda: {"runs": [pslab.train(mode=m, workers=4, steps=3, seed=0) for m in (
    "sync", "allreduce", pslab.ZeRO(1), pslab.ZeRO(2), pslab.ZeRO(3))],
    "memory": __import__("pslab.zero", fromlist=["memory"]).memory}
SETUP["comm_bound"] = lambda: pslab.classic.horovod_scaling("communication")

# (notebook, the cell's source) -> the names it reads from SETUP
CELLS = {
    ("07_parameter_server_to_zero", 'modes = ["sync", "allreduce", pslab.ZeRO(1), pslab.ZeRO(2), '
     'pslab.ZeRO(3)]\nruns = [pslab.train(mode=m, workers=4, steps=3, seed=0) for m in modes]\n'
     'pslab.plot.stacked(runs)'): [],
    ("07_parameter_server_to_zero", 'paper = [memory(7.5e9, 64, stage) for stage in range(4)]\n'
     'print("paper, GB per GPU:", [round(m.total / 1e9, 1) for m in paper])\nours = '
     '[runs[0].memory[0]] + [r.memory[0] for r in runs[2:]]\npslab.plot.memory_bars({"paper: '
     'Ψ = 7.5 B, N = 64, mixed Adam": paper, "our MLP: N = 4, fp32 SGD": ours})'): ["runs"],
    ("07_parameter_server_to_zero", "pslab.plot.plot_result(comm_bound)"): ["comm_bound"],
    ("07_parameter_server_to_zero", "pslab.plot.plot_zero_flow(runs[4])"): ["runs"],
    ("07_parameter_server_to_zero", 'pslab.plot.compare(ddp, fsdp, labels=("all-reduce on PyTorch '
     'DDP, 2 processes", "ZeRO-3 on PyTorch FSDP2, 2 processes"), stacked=True)'): ["fsdp, ddp"],
    ("00_start_here", "plot.plot_timeline(run)"): ["run"],
    ("08_pipeline_parallelism", 'gpipe = unit("gpipe", 4, 4)\nprint("step:", gpipe.span, "s = '
     '(m + p - 1)(F + B) =", (4 + 4 - 1) * 2)\nplot_pipeline(gpipe)'): ["pipeline"],
    ("08_pipeline_parallelism", 'one = unit("1f1b", 4, 8, times=(1, 2, 0))\n'
     'plot_pipeline(one)'): ["pipeline"],
    ("08_pipeline_parallelism", 'inter = unit("interleaved-1f1b", 4, 8, v=2, times=(1, 2, 0))\n'
     'print("bubble time: 1F1B", one.bubble_time, "s; interleaved, v = 2:", inter.bubble_time, '
     '"s")\nplot_pipeline(inter)'): ["pipeline"],
    ("08_pipeline_parallelism", 'zb = unit("zb-h1", 4, 8, times=(1, 2, 1))\nprint("bubble '
     'time: 1F1B", unit("1f1b", 4, 8, times=(1, 2, 1)).bubble_time, "s; ZB-H1",\n      '
     'zb.bubble_time, "s")\nplot_pipeline(zb)'): ["pipeline"],
    ("08_pipeline_parallelism", 'h2 = unit("zb-h2", 4, 8, times=(1, 2, 1))\nprint("idle inside '
     'each rank\'s window: ZB-H1", zb.rank_idle, "s; ZB-H2", h2.rank_idle, "s")\nprint("synchronous '
     'step: ZB-H1", zb.span, "s; ZB-H2", h2.span, "s; activations held:", h2.activations)\n'
     'plot_pipeline(h2)'): ["pipeline"],
    ("08_pipeline_parallelism", "plot_pipeline(real)  # measured: real times change every "
     "run"): ["pipeline"],
    ("01_data_parallel", "plot.plot_dataflow(run)"): ["run002"],
    ("01_data_parallel", "plot.plot_timeline(run)"): ["run002"],
    ("02_sync_vs_async", 'plot.compare(sync, asyn, labels=("(a) synchronous", "(b) '
                         'asynchronous"), stacked=True)'): ["sync, asyn"],
    ("02_sync_vs_async", 'import warnings\n\ns = pw.PRESETS["default"]\nsync8 = pslab.train('
                         '**s.changed(mode="sync").train_kwargs())\nwith warnings.catch_warnings('
                         'action="ignore", category=RuntimeWarning):  # said below instead\n    '
                         'async8 = pslab.train(**s.changed(mode="async").train_kwargs())\nprint('
                         '"async:", async8.divergence)\nplot.plot_training([sync8, async8], '
                         'labels=["sync", "async"])'): [],
    ("02_sync_vs_async", "plot.plot_staleness(async8)"): ["async8"],
    ("03_gradient_accumulation", 'plot.compare(every, acc, labels=("(a) update every step", '
                                 '"(b) accumulate two steps"), palette="accumulation", '
                                 'stacked=True)'): ["every, acc"],
    ("04_nas_hierarchy", "plot.plot_hierarchy(result)"): ["result"],
    ("04_nas_hierarchy", "plot.plot_tiers(result)"): ["result"],
    ("04_nas_hierarchy", "plot.plot_rewards(found)"): ["found"],
    ("04_nas_hierarchy", "paper = nas.paper_scale(servers=1)\nplot.plot_tiers(paper, "
                         "replicas=2)"): [],
    ("04_nas_hierarchy", "plot.plot_sweep(sweep, floor=nas.lower_bound())"): ["sweep"],
    **{("05_classic_results", f"plot.plot_result(r{i})"): [f"r{i}"] for i in range(1, 8)},
    ("06_real_processes", 'plot.compare(processes.scaled(sim, 0.02), run, stacked=True,\n'
                          '             labels=("simulated, virtual seconds x 0.02", '
                          '"measured on 5 processes, seconds"))'): ["sim, run"],
    ("06_real_processes", 'plot.compare(sync, asyn, labels=("sync, straggler G2", "async, '
                          'straggler G2"), stacked=True)'): ["straggler"],
    ("06_real_processes", "from pslab.drawing.network_plot import errors_plot\n\nerrors_plot("
                          "comparison)  # each case's error against bits the link carries per "
                          "compute"): ["comparison"],
    ("present", 'sync, asyn = replay.figure000()\nplot.compare(sync, asyn, labels=("(a) '
                'synchronous", "(b) asynchronous"), stacked=True)'): [],
    ("present", 'every, acc = replay.figure001()\nplot.compare(every, acc, labels=("(a) update '
                'every step", "(b) accumulate two steps"), palette="accumulation", '
                'stacked=True)'): [],
    ("present", "plot.plot_dataflow(replay.figure002())"): [],
}
SETUP["run002"] = lambda: {"run": replay.figure002()}
SETUP["pipeline"] = lambda: _pipeline_setup()
SETUP["comparison"] = lambda: {"comparison": processes.load_comparison()}


def _pipeline_setup() -> dict:
    """Notebook 08's helpers, its 1F1B run, and a measured stand-in (a simulated run drawn
    from its timeline, as a measured one is)."""
    import dataclasses

    from pslab.drawing.pipeline_plot import plot_pipeline

    def unit(schedule, p, m, v=1, times=(1, 1, 0)):
        mode = pslab.Pipeline(stages=p, microbatches=m, schedule=schedule, chunks=v, times=times)
        return pslab.train(mode=mode, steps=1, numerics=False, cluster=pslab.Cluster.free())

    from pslab.options import ProcessOptions

    sim = pslab.train(mode=pslab.Pipeline(stages=2, microbatches=4), steps=3)
    real = dataclasses.replace(sim, settings=dataclasses.replace(sim.settings,
                                                                 processes=ProcessOptions()))
    return {"unit": unit, "plot_pipeline": plot_pipeline,
            "one": unit("1f1b", 4, 8, times=(1, 2, 0)), "real": real,
            "zb": unit("zb-h1", 4, 8, times=(1, 2, 1))}
SETUP["sim, run"] = _processes_stand_in
SETUP["fsdp, ddp"] = lambda: {name: _measured(pslab.train(mode, workers=2, steps=3))
                              for name, mode in (("fsdp", pslab.ZeRO(3)), ("ddp", "allreduce"))}
SETUP["straggler"] = lambda: dict(zip(("sync", "asyn"), _straggler_pair()))


def figure_cells() -> set[tuple[str, str]]:
    """(notebook, source) of every code cell whose saved output is a static picture."""
    out = set()
    for path in sorted(NOTEBOOKS.glob("*.ipynb")):
        for cell in json.loads(path.read_text())["cells"]:
            kinds = {k for o in cell.get("outputs", []) for k in o.get("data", {})}
            if cell["cell_type"] == "code" and "image/png" in kinds and WIDGET not in kinds:
                out.add((path.stem, "".join(cell["source"])))
    return out


def test_every_figure_a_notebook_shows_is_listed_here():
    missing = figure_cells() - set(CELLS)
    assert not missing, f"figure cells this test does not draw: {sorted(missing)}"


@pytest.fixture(scope="module")
def namespace():
    matplotlib.rcParams["figure.dpi"] = DPI  # as pw.setup() sets it
    cache: dict = {}

    def make(names: list[str]) -> dict:
        ns = {"pslab": pslab, "plot": plot, "replay": replay, "nas": nas, "pw": pw,
              "processes": processes}
        for name in names:
            if name not in cache:
                cache[name] = SETUP[name]()
            value = cache[name]
            if isinstance(value, dict):
                ns.update(value)
            elif ", " in name:
                ns.update(zip(name.split(", "), value))
            else:
                ns[name] = value
        return ns
    return make


def _last_value(source: str, ns: dict):
    *body, last = source.strip().splitlines()
    head = "\n".join(body)
    if last.startswith(" "):  # a call continued over lines: the whole cell is the expression
        head, last = "", source
    exec(head, ns)
    return eval(last, ns)


def _check(fig) -> None:
    small = [(round(px, 2), text) for px, text in texts(fig) if px < READABLE_PX - 1e-6]
    assert not small, f"text under {READABLE_PX} px in a 590-px cell: {small[:5]}"


@pytest.mark.parametrize("cell", sorted(CELLS), ids=lambda c: f"{c[0]}:{c[1][:40]}")
def test_notebook_figure_reads_at_10_px_in_a_590_px_cell(cell, namespace):
    _check(_last_value(cell[1], namespace(CELLS[cell])))


# A cell's output sits in a margin of about 12 px above and below (JupyterLab's output area).
FIGURE_PX = SCREEN_PX - 24
KNOB_PX = FIGURE_PX - 34  # under a knob's slider row (28 px and its margins)


@pytest.mark.parametrize("cell", sorted(CELLS), ids=lambda c: f"{c[0]}:{c[1][:40]}")
def test_notebook_figure_fits_one_screen_at_1024x768(cell, namespace):
    fig = _last_value(cell[1], namespace(CELLS[cell]))
    assert shown_height(fig) <= FIGURE_PX, f"{shown_height(fig):.0f} px > {FIGURE_PX} px"


def test_seed_pictures_fit_one_screen_in_a_markdown_cell():
    """Each picture notebooks 01-04 embed (notebooks/img, one per page of a seed) is at most
    one screen high where a markdown cell shows it (MARKDOWN_PX wide at most): figure 000's
    two panels are two pictures (together they were 840 px)."""
    from PIL import Image

    from legible import MARKDOWN_PX
    from pslab.drawing.seeds import NOTEBOOK_IMG

    seeds = sorted(NOTEBOOK_IMG.glob("00[0-9]_*.png"))
    assert len(seeds) >= 5
    with_heights = {}
    for png in seeds:
        with Image.open(png) as im:
            with_heights[png.name] = round(im.height * min(MARKDOWN_PX, im.width) / im.width)
    assert all(h <= FIGURE_PX for h in with_heights.values()), with_heights


@pytest.mark.parametrize("draw", [lambda: explore.delay_timeline(16),
                                  lambda: explore.backup_timeline(4),
                                  lambda: explore.lr_rule("fixed lr", 0.5)],
                         ids=["delay 16", "backup 4 (the most rows)", "lr rule"])
def test_notebook_05_knobs_fit_one_screen_with_their_slider(draw, namespace):
    namespace([])
    fig = draw()
    assert shown_height(fig) <= KNOB_PX, f"{shown_height(fig):.0f} px > {KNOB_PX} px"


@pytest.mark.parametrize("draw", [lambda: explore.delay_timeline(0),
                                  lambda: explore.delay_timeline(16),
                                  lambda: explore.backup_timeline(2),
                                  lambda: explore.lr_rule("fixed lr", 0.5),
                                  lambda: explore.lr_rule("lr/τ", 0.01)],
                         ids=["delay 0", "delay 16", "backup 2", "lr fixed 0.5", "lr rule 0.01"])
def test_notebook_05_explore_widgets_read_at_10_px(draw, namespace):
    namespace([])  # the dpi pw.setup() sets
    _check(draw())


@pytest.mark.processes
def test_seed_figures_read_at_10_px_in_a_markdown_cell(tmp_path):
    """The seeds at the top of notebooks 01-04 (notebooks/img). Notebook 00's map.png is their
    thumbnails, two to a row: an index, not a figure to read; each is shown full size in its
    own notebook."""
    import shutil

    from pslab.drawing.seeds import seeds_renderable
    from pslab.drawing.tex import FIGURES_DIR, compile_tex

    from legible import seed_texts

    if not (seeds_renderable() and shutil.which("pdftotext")):
        pytest.skip("pdflatex and poppler-utils are needed to measure the seeds (make system)")
    small = {}
    for tex in sorted(FIGURES_DIR.glob("00[0-9]_*.tex")):
        words = seed_texts(compile_tex(tex, tmp_path, svg=False)["pdf"])
        assert len(words) > 20, tex.name  # the measure sees the figure's text
        small[tex.stem] = [(round(px, 1), t) for px, t in words if px < READABLE_PX]
    assert not any(small.values()), {k: v[:5] for k, v in small.items() if v}


@pytest.mark.parametrize("figure", ["figure000", "figure001"])
def test_compare_side_by_side_reads_at_10_px_too(figure, namespace):
    """No notebook draws two timelines side by side now, but a student may: their titles wrap
    over half a cell's width instead of widening (and so shrinking) the picture."""
    namespace([])
    a, b = getattr(replay, figure)()
    _check(plot.compare(a, b, labels=("(a) first run", "(b) second run"),
                        palette="accumulation" if figure == "figure001" else "ps"))
