"""A pipeline's span kinds are pslab's kinds: every timeline drawing, legend, trace and time
split knows them (the same run drawn by plot_timeline, the browser and a Chrome trace)."""
import json

import pytest

import pslab
from pslab.drawing import palette
from pslab.drawing.timeline_plot import legend_kinds
from pslab.notebook.browser_plots import KIND_CODE, column, timeline_panel, timeline_rows
from pslab.timeline import COMPUTES, EVERY_KIND, NOTES, PIPELINE, TRANSFERS


@pytest.fixture(scope="module", params=["gpipe", "zb-h1"])
def run(request):
    return pslab.train(mode=pslab.Pipeline(stages=4, microbatches=8, schedule=request.param),
                       steps=2, numerics=False, cluster=pslab.Cluster(bandwidth=1e6))


def test_every_kind_a_pipeline_run_draws_is_a_kind_with_a_colour_and_a_label(run):
    kinds = {s.kind for s in run.timeline}
    assert kinds - {"update", "idle"} <= set(PIPELINE) and {"forward", "send", "recv"} <= kinds
    assert kinds <= set(EVERY_KIND)
    assert {s.note for s in run.timeline if s.kind == "idle"} == {"bubble"} and "bubble" in NOTES
    for name in palette.PALETTES:
        for k in PIPELINE:
            assert palette.colour(k, name) and palette.label(k, name)
            assert palette.tex_colour_name(k, name).isalpha()
    fills = [palette.colour(k) for k in PIPELINE]
    assert len(set(fills)) == len(fills)  # told apart in one legend


def test_the_legend_lists_the_runs_kinds_only(run):
    kinds = legend_kinds("ps", [run])
    assert set(kinds) == {s.kind for s in run.timeline}
    plain = pslab.train(mode="sync", workers=2, steps=2, numerics=False)
    assert not set(legend_kinds("ps", [plain])) & set(PIPELINE)


def test_the_time_split_counts_a_stages_compute_and_its_sends(run):
    for w, share in enumerate(run.shares()):
        assert share["compute"] + share["transfer"] + share["idle"] == pytest.approx(run.makespan)
        busy = sum(s.duration for s in run.timeline if s.worker == w and s.kind in COMPUTES)
        assert share["compute"] == pytest.approx(busy)  # a rank's actions never overlap
    assert sum(s["transfer"] for s in run.shares()) > 0 and "send" in TRANSFERS


def test_plot_timeline_the_browser_and_a_trace_draw_it(run, tmp_path):
    fig = pslab.plot.plot_timeline(run)
    drawn = {c.get_label()[1:] for c in fig.axes[0].collections if len(c.get_paths())}
    assert {"forward", "send", "recv"} <= drawn
    panel = timeline_panel(run, "ps", timeline_rows(run, "ps", str), run.makespan)
    codes = set(column(panel["rects"]["c"]))
    assert {KIND_CODE["forward"], KIND_CODE["recv"]} <= codes
    path = run.to_chrome_trace(tmp_path / "trace.json")
    names = {e["name"] for e in json.loads(path.read_text())["traceEvents"] if e["ph"] == "X"}
    assert names == {s.kind for s in run.timeline}
