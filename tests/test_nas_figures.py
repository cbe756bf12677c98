"""Figure 003 drawn: the tiers' flows counted from a search, the three-tier timeline and its
TikZ export (it compiles), the paper-scale sweep, the replay and the dashboard."""
from __future__ import annotations

import subprocess

import numpy as np
import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

import pslab
from pslab.nas import compare, scale
from pslab.notebook.nas_live import Dashboard
from pslab.notebook.dashboard import is_faded
from pslab.drawing.nas_compare import plot_rewards
from pslab.drawing.nas_diagram import flows, plot_hierarchy
from pslab.drawing.nas_tiers_plot import blocks, rows
from pslab.nas.scale import server_busy
from pslab.drawing.tex import tex_available

SMALL = dict(steps=20)


@pytest.fixture(scope="module")
def result():
    return pslab.nas.search(servers=2, controllers=3, children=2, rounds=4, seed=1, **SMALL)


def test_flows_count_what_went_over_every_edge(result):
    theta_bytes = 4 * result.layout.size
    for f in flows(result):
        assert f.pulls == f.pushes == 4
        assert f.pull_bytes == f.push_bytes == 4 * theta_bytes
        assert f.handed_out == [4, 4]
        for j, mean in enumerate(f.mean_accuracy):
            accs = [s.accuracy for s in result.samples if s.controller == f.controller
                    and s.child == j]
            assert mean == pytest.approx(np.mean(accs))
    assert max(f.max_staleness for f in flows(result)) == max(result.staleness)


def test_hierarchy_labels_come_from_the_run(result):
    fig = plot_hierarchy(result)
    texts = [t.get_text() for t in fig.axes[0].texts]
    assert any("4 pulls\nof Θ" in t for t in texts)
    assert sum("Controller" in t for t in texts) == 3
    assert sum("Child" in t for t in texts) == 6
    with pytest.raises(ValueError, match="pslab.nas.Search"):
        flows("not a search")


def test_no_two_labels_of_the_diagram_overlap_at_any_size():
    """Seeded random tiers (S 1-20, K 1-20, m 1-8): every text box of the diagram (boxes' text,
    flow labels, dots, headings) is clear of every other one, as drawn in a cell; K >= 4 used to
    put a replica's pull label over the next one's push label."""
    rng = np.random.default_rng(29)
    cases = [(2, 3, 2), (1, 4, 4), (8, 8, 8)] + [tuple(int(x) for x in (
        rng.integers(1, 21), rng.integers(1, 21), rng.integers(1, 9))) for _ in range(5)]
    for servers, controllers, children in cases:
        found = pslab.nas.search(servers=servers, controllers=controllers, children=children,
                                 rounds=2, numerics=False)
        fig = plot_hierarchy(found)
        renderer = FigureCanvasAgg(fig).get_renderer()
        fig.draw(renderer)
        boxes = [(t.get_text(), t.get_window_extent(renderer)) for t in fig.axes[0].texts]
        clash = [(a, b) for i, (a, ba) in enumerate(boxes) for b, bb in boxes[i + 1:]
                 if ba.overlaps(bb)]
        assert not clash, (servers, controllers, children, clash[:3])
        width = fig.get_figwidth() * fig.dpi
        assert all(0 <= bb.x0 and bb.x1 <= width for _, bb in boxes), (servers, controllers)


def test_the_timeline_has_a_row_per_shard_replica_and_child(result):
    table = rows(result)
    assert [t for t, _, _ in table] == ["servers"] * 2 + ["controllers"] * 3 + ["children"] * 6
    drawn = blocks(result)
    assert len(drawn["compute"]) == 3 * 2 * 4  # one training block per child per round
    server_rows = {0, 1}
    per_shard = [sum(1 for k in ("fetch", "push", "update") for (_, _, r) in drawn[k] if r == s)
                 for s in server_rows]
    assert per_shard == [3 * 4 * 3] * 2  # pulls, pushes and updates of every replica's round
    assert 0 < server_busy(result) < 1
    assert isinstance(pslab.plot.plot_tiers(result), Figure)


@pytest.mark.processes
def test_tikz_draws_every_block_and_compiles(result, tmp_path):
    doc = pslab.tikz(result, tmp_path / "nas.tex")
    assert doc.count("[ps compute]") == 3 * 2 * 4 + 1  # + the legend's swatch
    assert "\\begin{tikzpicture}" in doc and (tmp_path / "nas.tex").exists()
    if not tex_available(svg=False):
        pytest.skip("pdflatex not installed")
    proc = subprocess.run(["pdflatex", "-interaction=nonstopmode", "-halt-on-error", "nas.tex"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stdout[-2000:]
    assert (tmp_path / "nas.pdf").stat().st_size > 1000


def test_paper_scale_loads_the_servers_and_more_shards_relieve_them():
    few, many = scale.sweep_servers((1, 20), rounds=2)
    assert few.controllers == 100 and len(few.samples) == 100 * 8 * 2
    assert server_busy(few) > 0.95  # one shard serves every replica: it never rests
    assert many.makespan < few.makespan / 3
    assert scale.lower_bound(rounds=2) <= many.makespan


def test_reinforce_against_random_table_has_both_methods_per_seed():
    found = compare.duels((0,), rounds=3, **SMALL)
    table = compare.table(found, first=1)
    assert [r[1] for r in table] == ["REINFORCE", "random"]
    d = found[0]
    assert table[0][2] == pytest.approx(d.reinforce.curve[0])
    assert table[1][4] == d.random.best[0].accuracy
    assert isinstance(plot_rewards(found), Figure)


def test_replay_figure003_repeats_exactly():
    a, b = pslab.replay.figure003(), pslab.replay.figure003()
    assert (a.servers, a.controllers, a.children, a.rounds) == (2, 3, 2, 10)
    assert a.samples == b.samples and a.timeline == b.timeline
    assert isinstance(pslab.plot.plot_figure(a), Figure)


def test_dashboard_timeline_follows_the_sliders_and_settles():
    dash = Dashboard(settle_delay=None, rounds=3)
    assert dash.errors == [] and dash.result.settings.numerics
    before = dash.figures["timeline"].panels
    sends = dash.figures["timeline"].sends
    dash.set(controllers=4)
    assert dash.result.controllers == 4 and dash.figures["timeline"].panels != before
    assert dash.figures["timeline"].sends > sends
    assert dash.baseline.method == "random" and len(dash.baseline.samples) == 4 * 2 * 3
    assert "K=4" in dash.numbers.value and 'data-state="ready"' in dash.status.value
    assert "pslab-workers" in dash.controls["controllers"]._dom_classes
    with pytest.raises(ValueError, match="no control"):
        dash.set(workers=3)


def test_nas_dashboard_refuses_what_its_sliders_cannot_show():
    from pslab.notebook.nas_live import Dashboard

    dash = Dashboard(settle_delay=None)
    with pytest.raises(ValueError, match="servers must be a number from"):
        dash.set(servers=1000)  # a slider would clamp it without a word
    with pytest.raises(ValueError, match="mode must be one of"):
        dash.set(mode="bsp")
    assert dash.controls["servers"].value != 1000


def test_nas_dashboard_is_ready_only_for_the_values_its_controls_show():
    """Moved while the search was running (servers 3 -> 8): the reward curve and the numbers
    fade, 'ready' waits until they are of S = 8, and the numbers then say S=8."""
    import asyncio

    from pslab.notebook.nas_live import Dashboard

    async def scenario():
        dash = Dashboard(settle_delay=0.05, rounds=3)
        dash.controls["servers"].value = 3
        faded = (is_faded(dash.numbers), is_faded(dash.figures["rewards"]),
                 'data-state="ready"' in dash.status.value)
        run = dash._search

        def search_and_move(numerics):  # the key press to 8 lands during the search for 3
            result = run(numerics)
            if numerics and dash.controls["servers"].value == 3:
                dash.controls["servers"].value = 8
            return result

        dash._search = search_and_move
        for _ in range(200):
            await asyncio.sleep(0.05)
            if 'data-state="ready"' in dash.status.value:
                break
        return faded, dash

    faded, dash = asyncio.run(scenario())
    assert faded == (True, True, False)
    assert 'data-state="ready"' in dash.status.value
    assert dash.settings["servers"] == dash.result.servers == 8 and "S=8," in dash.numbers.value
    assert dash.numbers_for == dash.settings and not is_faded(dash.numbers)


def test_nas_dashboard_text_reads_at_10_px_in_a_590_px_cell():
    import re

    from legible import READABLE_PX, texts
    from pslab.notebook.nas_live import Dashboard

    dash = Dashboard(settle_delay=None, rounds=3, controllers=8, servers=8, children=4)
    timeline, curves = dash.snapshot_figures()  # the picture a saved notebook keeps
    for fig in (timeline, curves):
        smallest = texts(fig)[0]
        assert smallest[0] >= READABLE_PX, smallest
    labels = [t.get_text() for t in timeline.axes[0].get_yticklabels()]
    assert 0 < len(labels) < 8 + 4 + 16  # 28 rows: every k-th named, none overlapping
    # the browser's plots: 12-px text (browser_figure.js names every k-th of the 28 rows)
    assert all(f.layout_spec["font"] >= 12 for f in dash.figures.values())
    assert len(dash.figures["timeline"].panels[0]["yticks"]) == 8 + 4 + 16
    html_px = [int(px) for w in (dash.caption, dash.why, dash.numbers)
               for px in re.findall(r"font-size:(\d+)px", w.value)]
    assert all(px >= 12 for px in html_px)


def test_nas_dashboard_explains_async_ending_later_than_sync_only_when_it_does():
    from pslab.notebook.nas_live import Dashboard
    from pslab.nas import search

    dash = Dashboard(settle_delay=None, rounds=3)  # async 13.2 s, sync 11.8 s here
    sync = search(seed=dash.seed, numerics=True, **dict(dash.settings, mode="sync"))
    assert dash.result.makespan > sync.makespan
    assert (f"Why async ends later than sync ({dash.result.makespan:.1f} s vs "
            f"{sync.makespan:.1f} s)") in dash.why.value
    assert "queue at the 2 shards" in dash.why.value
    dash.set(rounds=10)  # async first here (27.9 s against 35.3 s): no line
    assert dash.result.makespan < search(seed=dash.seed, numerics=True,
                                         **dict(dash.settings, mode="sync")).makespan
    assert dash.why.value == ""
    dash.set(mode="sync")
    assert dash.why.value == ""


def _hover(panel: dict) -> list[dict]:
    """Each block of a browser-drawn panel with what its hover shows (as browser_figure.js
    fills the templates: a line whose column is -1 is left out)."""
    from pslab.notebook.browser_plots import column

    cols = {k: column(v).tolist() for k, v in panel["hover"]["cols"].items()}
    x0, x1 = column(panel["rects"]["x0"]), column(panel["rects"]["x1"])
    tables = panel["hover"]["tables"]
    return [dict(row=tables["rows"][cols["who"][i]], kind=tables["kinds"][cols["kind"][i]],
                 round=cols["step"][i], start=x0[i], end=x1[i],
                 shard=None if cols["shard"][i] < 0 else cols["shard"][i],
                 child=None if cols["child"][i] < 0 else tables["children"][cols["child"][i]])
            for i in range(len(x0))]


def test_nas_timeline_hover_says_what_each_child_was_and_how_it_did():
    """The browser-drawn timeline has the matplotlib plot's blocks, row for row; a hover on a
    child's training block names the architecture its controller sampled that round and the
    held-out accuracy it reached; a pull or push names its shard; updates are drawn last."""
    from pslab.nas.space import describe
    from collections import Counter

    from pslab.drawing.nas_tiers_plot import NAMES

    dash = Dashboard(settle_delay=None, rounds=3, controllers=5)
    result, panel = dash.result, dash.figures["timeline"].panels[0]
    shown = _hover(panel)
    table = rows(result, replicas=4)
    assert [label for _, label, _ in table] == panel["hover"]["tables"]["rows"]
    expected = Counter((NAMES[k], np.float32(a), np.float32(b), table[r][1])  # sent as f4
                       for k, found in blocks(result, replicas=4).items() for a, b, r in found)
    assert Counter((b["kind"], b["start"], b["end"], b["row"]) for b in shown) == expected
    kinds = [b["kind"] for b in shown]
    assert kinds.index(NAMES["update"]) > max(i for i, k in enumerate(kinds)
                                              if k != NAMES["update"])
    children = [b for b in shown if b["child"] is not None]
    assert children and all(b["kind"] == NAMES["compute"] and "." in b["row"]
                            for b in children)
    assert len(children) == sum(1 for b in shown if b["kind"] == NAMES["compute"])
    for b in children:  # each one is the sample of its row and round
        k, j = (int(x) for x in b["row"][1:].split("."))
        sample = next(s for s in result.samples
                      if (s.controller, s.child, s.round) == (k, j, b["round"]))
        assert b["child"] == f"{describe(sample.arch)}, held-out accuracy {sample.accuracy:.1%}"
        assert (b["start"], b["end"]) == (np.float32(sample.start), np.float32(sample.end))
    assert {b["shard"] for b in shown if b["kind"] in (NAMES["fetch"], NAMES["push"])} == {0, 1}
    assert "C4" not in panel["hover"]["tables"]["rows"]  # the first 4 of 5 replicas shown


def test_nas_reward_curves_are_the_searches_own():
    """The browser's reward curves: each replica's row of `rewards`, their mean, and random
    search's mean, against rounds from 0 (what plot_curves draws, and the hover says)."""
    dash = Dashboard(settle_delay=None, rounds=4)
    lines = dash.figures["rewards"].panels[0]["lines"]
    result, baseline = dash.result, dash.baseline
    assert len(lines) == result.controllers + 2
    for line, row in zip(lines, result.rewards):
        assert line["x"] == [0, 1, 2, 3] and line["y"] == pytest.approx(row, abs=5e-5)
    assert lines[-2]["y"] == pytest.approx(result.curve, abs=5e-5) and lines[-2]["width"] == 3
    assert lines[-1]["y"] == pytest.approx(baseline.curve, abs=5e-5) and lines[-1]["dash"]
    before = dash.figures["rewards"].panels
    dash.set(lr=0.5)  # another controller learning rate: another search, other rewards
    assert dash.figures["rewards"].panels != before


def test_nas_dashboard_keeps_a_matplotlib_snapshot_for_a_saved_notebook():
    import base64
    import io

    from PIL import Image

    dash = Dashboard(settle_delay=None, rounds=3)
    bundle = dash._repr_mimebundle_()
    png = base64.b64decode(bundle["image/png"])
    picture = Image.open(io.BytesIO(png))
    timeline, curves = dash.snapshot_figures()
    heights = [round(f.get_figheight() * f.dpi) for f in (timeline, curves)]
    assert picture.size[1] == sum(heights)  # the timeline over the reward curves
    assert "application/vnd.jupyter.widget-view+json" in bundle
