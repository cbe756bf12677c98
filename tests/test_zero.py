"""ZeRO(1/2/3) on the clock: sync's weights (bit-exact as all-reduce's; sync's to round-off
where the gradients arrive in another order), the paper's bytes per worker, its own span kinds
drawn by every drawing, and bad stages refused by name."""
import json

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import pslab
from pslab.collectives import bytes_per_worker
from test_equivalences import FREE, assert_same_weights

STAGES = (1, 2, 3)


def straggly(n: int) -> pslab.Cluster:
    return pslab.Cluster(speeds=[1.0, 0.5, 1.0, 0.8, 0.9][:n], jitter=0.3)


@pytest.mark.parametrize("n", [2, 3, 5])
@pytest.mark.parametrize("accumulate", [1, 3])
def test_every_stage_has_sync_weights_and_allreduce_weights_bit_for_bit(n, accumulate):
    kw = dict(workers=n, steps=6, seed=1, accumulate=accumulate, cluster=straggly(n))
    sync, ring = pslab.train(mode="sync", **kw), pslab.train(mode="allreduce", **kw)
    for stage in STAGES:
        zero = pslab.train(mode=pslab.ZeRO(stage), **kw)
        # the same sums in the same order (compute-finish order) as the ring: bit for bit;
        # stage 3 with accumulate > 1 gathers before every minibatch, all workers together, so
        # its finish order is the last minibatch's, not the whole step's: float round-off
        assert_same_weights(zero, ring, exact=stage < 3 or accumulate == 1)
        # sync sums in push-arrival order, which the links may reorder: float round-off
        assert_same_weights(zero, sync)
        assert zero.updates == 6 and [r.time for r in zero.history] == sorted(
            r.time for r in zero.history)


def test_equal_workers_give_sync_weights_bit_for_bit():
    """With equal workers every order is rank order, so nothing is left to round differently."""
    kw = dict(workers=4, steps=8, seed=3)
    sync = pslab.train(mode="sync", **kw)
    for stage in STAGES:
        assert_same_weights(pslab.train(mode=pslab.ZeRO(stage), **kw), sync, exact=True)


def test_zero_keeps_the_accumulation_and_batch_equivalences():
    """ZeRO with N workers x b rows == one worker with N.b rows; accumulate k == batch k.b."""
    one = pslab.train(mode="sync", workers=1, batch=48, steps=10, seed=2, cluster=FREE)
    for stage in STAGES:
        many = pslab.train(mode=pslab.ZeRO(stage), workers=3, batch=16, steps=10, seed=2,
                           cluster=FREE)
        assert_same_weights(many, one)
        acc = pslab.train(mode=pslab.ZeRO(stage), workers=2, batch=8, accumulate=3, steps=10,
                          seed=2, cluster=FREE)
        big = pslab.train(mode=pslab.ZeRO(stage), workers=2, batch=24, steps=10, seed=2,
                          cluster=FREE)
        assert_same_weights(acc, big)
    assert not torch.allclose(one.weights["W_h"], pslab.train(
        mode="sync", workers=1, steps=1, seed=2, lr=1e-12).weights["W_h"], atol=1e-3)


@pytest.mark.parametrize("n", [2, 3, 4, 8, 64])
def test_bytes_per_worker_per_step_are_the_papers(n):
    """On a free-latency link every collective second is bytes / bandwidth: ZeRO-1/2 move
    2Ψ(N−1)/N per worker per step (an all-reduce's volume), ZeRO-3 3Ψ(N−1)/N (1.5x)."""
    bandwidth, steps = 1e5, 3
    net = pslab.Cluster(latency=0.0, bandwidth=bandwidth, update_time=0.0)
    ring = pslab.train(mode="allreduce", workers=n, steps=steps, cluster=net, numerics=False)
    psi = 9640  # the digits MLP's fp32 bytes at hidden=32: (64*32 + 32 + 32*10 + 10) * 4
    moved = {}
    for stage in STAGES:
        run = pslab.train(mode=pslab.ZeRO(stage), workers=n, steps=steps, cluster=net,
                          numerics=False)
        for w in range(n):
            seconds = sum(s.duration for s in run.timeline if s.worker == w
                          and s.kind in ("reduce-scatter", "all-gather"))
            assert seconds * bandwidth / steps == pytest.approx(
                (3 if stage == 3 else 2) * psi * (n - 1) / n, rel=1e-12)
        moved[stage] = seconds * bandwidth / steps
        assert moved[stage] == pytest.approx(bytes_per_worker(stage, psi, n), rel=1e-12)
    ring_bytes = sum(s.duration for s in ring.timeline if s.worker == 0
                     and s.kind in ("push", "fetch")) * bandwidth / steps
    assert moved[1] == moved[2] == pytest.approx(ring_bytes, rel=1e-12)
    assert moved[3] == pytest.approx(1.5 * ring_bytes, rel=1e-12)


def test_timeline_is_compute_then_the_collectives_one_after_another():
    net = pslab.Cluster(compute_time=1.0, latency=0.01, bandwidth=1e5, update_time=0.3)
    n, steps = 4, 3
    phase = (n - 1) * (0.01 + 9640 / n / 1e5)
    for stage, count in ((1, 2), (2, 2), (3, 3)):
        run = pslab.train(mode=pslab.ZeRO(stage), workers=n, steps=steps, cluster=net,
                          numerics=False)
        assert run.makespan == pytest.approx(steps * (1.0 + count * phase))
        assert {s.kind for s in run.timeline} == {"compute", "reduce-scatter", "all-gather"}
        assert run.shards == [] and run.shard_bytes == []  # no server rows
        mine = sorted((s for s in run.timeline if s.worker == 0 and s.step == 0),
                      key=lambda s: s.start)
        kinds = [(s.kind, s.note) for s in mine]
        if stage == 3:
            assert kinds == [("all-gather", "forward"), ("compute", None),
                             ("all-gather", "backward"), ("reduce-scatter", None)]
        else:
            assert kinds == [("compute", None), ("reduce-scatter", None), ("all-gather", None)]
        for a, b in zip(mine, mine[1:]):  # back to back, no overlap with compute
            assert b.start == pytest.approx(a.end)


@settings(max_examples=40, deadline=None)
@given(n=st.integers(2, 5), k=st.integers(1, 4), steps=st.integers(1, 3),
       speeds=st.lists(st.sampled_from([0.5, 0.8, 1.0]), min_size=5, max_size=5))
def test_stage_3_gathers_again_for_every_minibatch_all_workers_together(n, k, steps, speeds):
    """FSDP frees a layer's weights after using them: with accumulate k, stage 3 gathers before
    each minibatch's forward and backward (2k gathers a step), each gather waiting for every
    worker, and reduce-scatters once: a step is k x (slowest minibatch) + (2k + 1) phases."""
    net = pslab.Cluster(compute_time=1.0, speeds=speeds[:n], latency=0.01, bandwidth=1e5,
                        update_time=0.3)
    phase = (n - 1) * (0.01 + 9640 / n / 1e5)
    run = pslab.train(mode=pslab.ZeRO(3), workers=n, steps=steps, accumulate=k, cluster=net,
                      numerics=False)
    assert run.makespan == pytest.approx(steps * (k / min(speeds[:n]) + (2 * k + 1) * phase))
    for w in range(n):
        mine = sorted((s for s in run.timeline if s.worker == w and s.step == 0
                       and s.kind != "idle"), key=lambda s: s.start)
        kinds = [(s.kind, s.note if s.kind != "compute" else s.micro) for s in mine]
        assert kinds == [("all-gather", "forward"), ("compute", 0)] + [
            x for m in range(1, k) for x in (("all-gather", "backward"),
                                             ("all-gather", "forward"), ("compute", m))] + [
            ("all-gather", "backward"), ("reduce-scatter", None)]
        gathers = [s for s in mine if s.kind == "all-gather"]
        for a, b in zip(gathers, [s for s in run.timeline if s.worker == 0 and s.step == 0
                                  and s.kind == "all-gather"]):
            assert a.start == b.start  # every worker gathers at once


@pytest.mark.parametrize("bad", [0, 4, -1, 1.5, "3", True, None])
def test_bad_stages_are_refused_by_name(bad):
    with pytest.raises(ValueError, match="stage"):
        pslab.ZeRO(bad)


def test_zero_with_one_worker_is_refused_by_name():
    with pytest.raises(ValueError, match="workers >= 2.*ZeRO"):
        pslab.train(mode=pslab.ZeRO(2), workers=1, steps=1)


def test_zero_names_round_trip():  # (checkpoints: tests/test_checkpoint.py's MODES)
    from pslab.modes import policy_from_name
    for stage in STAGES:
        assert policy_from_name(f"ZeRO({stage})") == pslab.ZeRO(stage)
        assert repr(pslab.ZeRO(stage)) == f"ZeRO({stage})"


def test_zero_timelines_draw_in_every_drawing(tmp_path):
    run = pslab.train(mode=pslab.ZeRO(3), workers=3, steps=2)
    fig = pslab.plot.plot_timeline(run)
    labels = [t.get_text() for t in fig.legends[0].get_texts()]
    assert "reduce-scatter (RS)" in labels and "all-gather (AG)" in labels
    assert "push (P)" not in labels  # no server, no push: the legend fits a cell
    drawn = fig.pslab_plots[0].collections
    assert len(drawn["all-gather"].get_paths()[0].vertices) > 0
    # a parameter-server run keeps figure 000's five-kind legend
    ps = pslab.plot.plot_timeline(pslab.train(mode="sync", workers=2, steps=2))
    assert [t.get_text() for t in ps.legends[0].get_texts()] == [
        "fetch (F)", "minibatch", "push (P)", "Update", "idle"]
    tex = pslab.tikz([run])
    assert r"\draw[ps all-gather]" in tex and r"\draw[ps reduce-scatter]" in tex
    assert "ps all-gather/.style" in tex
    trace = run.to_chrome_trace(tmp_path / "z.json")
    names = {e["name"] for e in json.loads(trace.read_text())["traceEvents"]}
    assert {"reduce-scatter", "all-gather"} <= names


@pytest.mark.processes
def test_a_zero_timeline_compiles_in_tikz(tmp_path):
    from pslab.drawing.tex import compile_tex, tex_available
    if not tex_available(svg=False):
        pytest.skip("pdflatex not installed")
    runs = [pslab.train(mode=pslab.ZeRO(s), workers=2, steps=2, numerics=False) for s in (1, 3)]
    pslab.tikz(runs, tmp_path / "zero.tex", labels=["ZeRO-1", "ZeRO-3"])
    out = compile_tex(tmp_path / "zero.tex", tmp_path / "out", svg=False)
    assert out["pdf"].stat().st_size > 1000


@pytest.mark.parametrize("stage", [1, 2])  # ZeRO(3) runs on FSDP2: test_zero_processes.py
def test_zero_on_processes_is_refused_by_name_before_any_work(stage):
    with pytest.raises(ValueError, match=rf"mode=ZeRO\({stage}\)"):
        pslab.train(mode=pslab.ZeRO(stage), workers=2, steps=1, backend="processes")
