"""Notebook 08's dashboard, headless: a change redraws the step's timeline from the clock, the
numbers say both bubbles, a refused combination names its reason and keeps the last run, and
the figure of a step draws every action."""
import pytest

from pslab.notebook.browser_plots import column
from pslab.notebook.pipeline_dashboard import PipelineDashboard


def test_a_change_redraws_the_timeline_and_the_numbers():
    d = PipelineDashboard(settle_delay=None)
    assert "1f1b, p = 4, m = 8 on 4 workers" in d.numbers.value and not d.errors
    assert "rank 0: 4, rank 1: 3, rank 2: 2, rank 3: 1." in d.why.value  # min(p − s, m)
    assert "The model: 4 layers, 1 a stage" in d.why.value
    d.set(schedule="gpipe", stages=8, microbatches=32)
    assert "bubble" in d.describe() and "gpipe, p = 8, m = 32 on 8 workers" in d.describe()
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


def test_two_schedules_give_the_same_loss_and_a_line_says_why():
    """The weights of every schedule are one worker's: the previous run's curve is drawn wide
    and pale under the current one (not hidden by it), and a line says why they agree."""
    d = PipelineDashboard(settle_delay=None)
    d.set(schedule="gpipe")
    assert "Same loss at every step as before" in d.why.value
    assert "it does not change the gradient" in d.why.value
    lines = d.figures["training"].panels[0]["lines"]
    assert [line["label"].split(":")[0] for line in lines] == ["before", "now"]
    assert lines[0]["width"] > lines[1].get("width", 2) and lines[0]["y"] == lines[1]["y"]
    d.set(microbatches=4)  # a smaller batch: another loss, no such line
    assert "Same loss" not in d.why.value


def test_replicas_draw_the_flush_all_reduce_and_say_its_cost():
    d = PipelineDashboard(settle_delay=None, stages=2, microbatches=4)
    d.set(replicas=2, bandwidth=1e3)
    run = d.run
    assert run.workers == 4 and "1f1b, p = 2, m = 4 on 2 replicas × 2 = 4 workers" in d.describe()
    panel = d.figures["timeline"].panels[0]
    ring = [s for s in run.timeline if s.kind in ("reduce-scatter", "all-gather")
            and s.step == 0 and s.worker < 2]
    assert len(ring) == 4  # replica 0's two ranks, each a reduce-scatter and an all-gather
    assert len(column(panel["rects"]["x0"])) == 2 + len([o for o in run.ops if o.rank < 2]) + 4
    assert panel["xlim"][1] == max(s.end for s in ring) > run.span
    assert "each stage's 2 copies all-reduce its gradient" in d.why.value.replace("&#x27;", "'")
    assert "of the step" in d.why.value
    assert "d·m = 8 micro-batches" in d.why.value
    alone = PipelineDashboard(settle_delay=None, stages=2, microbatches=4, bandwidth=1e3).run
    assert run.step_time > alone.step_time  # the ring at the flush lengthens the step
    assert run.history[-1].loss != alone.history[-1].loss  # d·m micro-batches a step


def test_the_numbers_label_both_bubbles_and_the_bars_are_each_ranks_peak():
    """The status line gives the run's two bubbles, each named by its definition, and the
    memory panel one bar per rank: its peak activation bytes (kB), its micro-batches held."""
    d = PipelineDashboard(settle_delay=None, schedule="gpipe", stages=4, microbatches=8)
    run = d.run
    assert (f"{run.bubble_share:.1%} of the ranks' time (GPipe), {run.bubble_ratio:.1%} of "
            f"the ideal time (Megatron)") in d.numbers.value.replace("&#x27;", "'")
    d.set(schedule="1f1b")
    run, panel = d.run, d.figures["memory"].panels[0]
    assert run.activations == [4, 3, 2, 1]
    bars = column(panel["rects"]["y1"])
    assert list(bars) == [round(b / 1e3, 3) for b in run.activation_peak_bytes]
    assert bars[0] > bars[1] > bars[2] > bars[3] > 0
    assert list(column(panel["hover"]["cols"]["held"])) == [4, 3, 2, 1]
