"""The data the browser draws the dashboards from: exact columns, z-order, drawable curves."""
from __future__ import annotations

import math

import numpy as np
import pytest

import pslab
from pslab.drawing.palette import EVERY_KIND, PALETTES
from pslab.drawing.timeline_plot import ZORDER, shard_label
from pslab.notebook.browser_figure import BrowserFigure
from pslab.notebook.browser_plots import (column, curves, packed, timeline_panel,
                                          timeline_rows)


def test_packed_columns_come_back_exactly():
    x = np.array([0.0, 1 / 3, 87.25, 1e-9])
    assert column(packed(x)).tolist() == x.tolist()  # float64: no digit lost
    assert column(packed(np.array([-1, 0, 7]), "i4")).tolist() == [-1, 0, 7]
    y = np.array([0.1, 123.456789, 1e4 / 3])  # float32: 7 significant digits, 4 bytes each
    assert len(packed(y, "f4")["data"]) == 12
    assert column(packed(y, "f4")) == pytest.approx(y, rel=1e-7)
    for values, dtype in (([-1, 0, 127], "i1"), ([-1, 128], "i2"), ([0, 40000], "i4"),
                          ([], "i1"), ([True, False], "i1")):
        got = packed(np.array(values), "int")
        assert got["dtype"] == dtype and column(got).tolist() == [int(v) for v in values]
    with pytest.raises(ValueError, match="values must fit in 32-bit integers"):
        packed(np.array([2**40]), "int")
    assert column([1, 2]).tolist() == [1, 2]  # a plain list reads as it is


@pytest.mark.parametrize("palette", ["ps", "accumulation"])
def test_timeline_blocks_are_drawn_in_the_matplotlib_plots_order(palette):
    """Idle under compute under transfers under updates, as matplotlib stacks them: the block a
    hover finds (the last drawn under the pointer) is the one on top."""
    run = pslab.train(workers=3, steps=4, numerics=False)
    rows = timeline_rows(run, palette, shard_label)
    panel = timeline_panel(run, palette, rows, 20.0)
    kinds = [EVERY_KIND[c] for c in column(panel["rects"]["c"])]
    assert [ZORDER[k] for k in kinds] == sorted(ZORDER[k] for k in kinds)
    assert panel["colours"] == [PALETTES[palette][k] for k in EVERY_KIND]
    assert len(rows) == 3 + (0 if palette == "accumulation" else len(run.shard_bytes))


def test_a_diverged_loss_stays_drawable_on_the_log_axis():
    good = pslab.train(workers=2, steps=5)
    bad = pslab.train(workers=2, steps=5)
    bad.history[-1] = bad.history[-1]._replace(loss=math.inf)
    (loss, acc), legend = curves([good, bad], ["now", "before"])
    ys = [y for line in loss["lines"] for y in line["y"]]
    assert all(math.isfinite(y) and y > 0 for y in ys)
    assert 0 < loss["ylim"][0] < min(ys) and loss["ylim"][1] > max(ys)
    assert acc["ylim"] == [0.0, 1.0] and [x["label"] for x in legend] == ["now", "before"]


def test_a_figure_sends_its_data_only_when_it_changed():
    fig = BrowserFigure({"height": 100, "font": 12, "panels": [{"share": 1.0}]})
    panels = [{"xlim": [0, 1], "ylim": [0, 1], "lines": []}]
    fig.show(panels, [])
    fig.show([dict(panels[0])], [])  # equal data: nothing new to send
    assert fig.sends == 1
    fig.show([dict(panels[0], xlim=[0, 2])])
    assert fig.sends == 2 and fig.panels[0]["xlim"] == [0, 2]
