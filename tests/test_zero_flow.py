"""The ZeRO ring diagram (figure 002's style, notebook 07): every edge's label is what flowed in
the run, read off its timeline; the bytes each worker sends its neighbour are the paper's,
2Ψ(N−1)/N (stages 1, 2, and the ring all-reduce) or 3Ψ(N−1)/N (stage 3) per step, exactly."""
import pytest

import pslab
from pslab.collectives import bytes_per_worker
from pslab.drawing.dataflow_plot import fmt_bytes
from pslab.drawing.plot import plot_zero_flow, ring_flows

PSI = 9640  # the digits MLP's fp32 bytes at hidden=32


@pytest.mark.parametrize("mode, stage", [(pslab.ZeRO(1), 1), (pslab.ZeRO(2), 2),
                                         (pslab.ZeRO(3), 3), ("allreduce", 1)])
@pytest.mark.parametrize("workers, steps, accumulate", [(2, 3, 1), (4, 2, 3), (5, 3, 2)])
def test_each_worker_sends_its_neighbour_the_papers_bytes(mode, stage, workers, steps,
                                                          accumulate):
    run = pslab.train(mode=mode, workers=workers, steps=steps, accumulate=accumulate,
                      numerics=False)
    found = ring_flows(run)
    assert [f.to for f in found] == [(w + 1) % workers for w in range(workers)]
    for f in found:
        assert f.minibatches == steps * accumulate
        assert f.reduce_scatters == steps
        # stage 3 gathers for every minibatch's forward and backward
        assert f.all_gathers == (2 * accumulate if stage == 3 else 1) * steps
        sent = f.reduce_scatter_bytes + f.all_gather_bytes
        assert sent == pytest.approx(steps * bytes_per_worker(stage, PSI, workers, accumulate),
                                     rel=1e-12)


def test_the_diagram_writes_those_numbers_on_its_edges():
    run = pslab.train(mode=pslab.ZeRO(3), workers=4, steps=3, seed=0)
    fig = plot_zero_flow(run)
    texts = [t.get_text() for t in fig.axes[0].texts] + [fig.axes[0].get_title()]
    for f in ring_flows(run):
        assert f"{f.reduce_scatters} reduce-scatters to W{f.to}: " \
               f"{fmt_bytes(f.reduce_scatter_bytes)}" in texts
        assert f"{f.all_gathers} all-gathers to W{f.to}: {fmt_bytes(f.all_gather_bytes)}" in texts
    assert "3 reduce-scatters to W0: 21.7 kB" in texts  # 3 steps x 3/4 x 9640 B
    assert any("shard 3: keys 1807–2409" in t for t in texts)
    assert "3 × 9.6 kB × 3/4 = 21.7 kB" in fig.axes[0].get_title()


@pytest.mark.parametrize("kwargs", [dict(mode="sync"), dict(mode="async")])
def test_a_parameter_server_run_is_refused_by_name(kwargs):
    with pytest.raises(ValueError, match="run must be a simulated ZeRO"):
        plot_zero_flow(pslab.train(workers=2, steps=1, numerics=False, **kwargs))
