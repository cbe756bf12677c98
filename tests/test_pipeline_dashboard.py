"""Notebook 08's dashboard, headless: a change redraws the step's timeline from the clock, the
numbers say both bubbles, a refused combination names its reason and keeps the last run, and
the figure of a step draws every action."""
import pytest

from pslab.notebook.browser_plots import column
from pslab.notebook.pipeline_dashboard import PipelineDashboard


def test_a_change_redraws_the_timeline_and_the_numbers():
    d = PipelineDashboard(settle_delay=None)
    assert "Pipeline(1f1b, p=4, m=8)" in d.numbers.value and not d.errors
    d.set(schedule="gpipe", stages=8, microbatches=32)
    assert "bubble" in d.describe() and "Pipeline(gpipe, p=8, m=32)" in d.describe()
    panel = d.figures["timeline"].panels[0] if hasattr(d.figures["timeline"], "panels") else None
    run = d.run
    assert run.activations == [32] * 8
    assert len(run.history) == 30 and run.history[-1].loss < run.start_loss
    if panel is not None:
        assert len(column(panel["rects"]["x0"])) == 8 + len(run.ops)


def test_a_refused_combination_names_why_and_keeps_the_last_run():
    d = PipelineDashboard(settle_delay=None)
    before = d.run
    d.set(schedule="zbv")  # zbv takes 2 chunks, the controls say 1
    assert "chunks must be 2" in d.status.value and d.run is before
    d.set(chunks=2)
    assert 'data-state="ready"' in d.status.value and "zbv" in d.describe()


def test_the_start_is_checked_by_name():
    with pytest.raises(ValueError, match="microbatches must be >= stages"):
        PipelineDashboard(settle_delay=None, stages=8, microbatches=4)


def test_the_step_figure_draws_every_action():
    import pslab
    from pslab.drawing.pipeline_plot import plot_pipeline

    run = pslab.train(mode=pslab.Pipeline(stages=4, microbatches=8, schedule="zb-h1",
                                          times=(1, 2, 1)), steps=1, numerics=False,
                      cluster=pslab.Cluster.free())
    fig = plot_pipeline(run)
    ax = fig.axes[0]
    assert len(ax.patches) == 4 + len(run.ops) == 4 + 4 * 8 * 3
    assert "11.1% of the ranks' time" in fig.texts[0].get_text()
