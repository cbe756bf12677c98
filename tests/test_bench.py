"""The benchmarks compare like with like: the SimPy model runs pslab's schedule span for span,
and the plain torch loops end with pslab's weights. (Speeds are printed by `python -m bench`,
never asserted: the machines are noisy.)"""
import pytest
import torch

pytest.importorskip("simpy")
from bench import clock_vs_simpy, numerics_vs_torch  # noqa: E402


@pytest.mark.parametrize("workers", [1, 8, 40])
def test_simpy_model_gives_pslabs_makespan_and_spans(workers):
    run = clock_vs_simpy.same_schedule(workers)  # raises if makespan or spans differ
    assert run.makespan > 0 and len(run.timeline) >= workers * clock_vs_simpy.STEPS * 4


def test_simpy_model_would_notice_another_schedule():
    run = clock_vs_simpy.same_schedule(4)
    durations = clock_vs_simpy.CLUSTER.compute_durations(4, 100, 2).tolist()  # another seed
    makespan, _ = clock_vs_simpy.simulate(durations, *clock_vs_simpy.costs(run), 100)
    assert makespan != pytest.approx(run.makespan, rel=1e-9)


@pytest.mark.parametrize("loop", ["plain_loop", "plain_with_evaluations", "same_arithmetic"])
def test_plain_torch_loops_end_with_pslabs_weights(loop):
    ours = numerics_vs_torch.pslab_run().weights
    theirs = getattr(numerics_vs_torch, loop)()
    for name, w in ours.items():
        torch.testing.assert_close(theirs[name], w, rtol=1e-4, atol=1e-5)
    assert not torch.equal(ours["W_h"], numerics_vs_torch.init_params(64, 32, 10, 0)["W_h"])


def test_the_no_evaluation_row_is_the_same_run_without_its_numbers():
    bare = numerics_vs_torch.pslab_without_evaluations()
    ours = numerics_vs_torch.pslab_run()
    for name, w in ours.weights.items():
        assert torch.equal(bare.weights[name], w)  # the evaluation never feeds the arithmetic
    assert {r.loss for r in bare.history} == {0.0} and ours.history[-1].loss > 0


def test_python_m_bench_prints_and_writes_every_ratio(tmp_path, capsys):
    """The entry point itself, in its quick mode on one section, so it cannot rot."""
    import json

    from bench.__main__ import main

    out = tmp_path / "bench.json"
    assert main(["--quick", "--only", "numerics", "--out", str(out)]) == 0
    written = json.loads(out.read_text())
    rows = written["rows"]
    assert [r["section"] for r in rows] == ["numerics vs torch"] * 5
    assert all(r["min"] <= r["median"] <= r["max"] for r in rows)
    assert all(r["ratio"] > 0 for r in rows[1:])  # every comparison carries its ratio
    assert written["machine"]["python_loop_1e7_s"] > 0 and written["machine"]["torch"]
    printed = capsys.readouterr().out
    assert "like for like: pslab/plain <= 1.2" in printed and f"{rows[2]['ratio']:.2f}x" in printed
    assert rows[2]["met"] == (rows[2]["ratio"] <= 1.2)  # the goal row says whether it is met
    assert ("(met)" if rows[2]["met"] else "(NOT met)") in printed


def test_the_dashboard_bench_builds_its_dashboards():
    """Its settings must stay within what a dashboard accepts (they are checked up front)."""
    import asyncio

    from bench import widget_latency

    res = asyncio.run(widget_latency.measure("001", changes=1))
    assert set(res) == set(widget_latency.SWEEPS) and all(r["median"] > 0 for r in res.values())


@pytest.mark.processes
def test_the_c_loop_is_pslabs_schedule_or_the_row_says_why():
    """bench/c_clock.c (what a compiled loop would give) is checked against pslab before it
    is timed: same makespan bit for bit, same span count; with a wrong cost it would differ."""
    import shutil

    import numpy as np

    from bench import c_clock

    (got,) = c_clock.rows(True, workers=40, steps=20, seed=3)
    if not (shutil.which("cc") or shutil.which("gcc")):
        assert "no C compiler" in got["name"]
        return
    run = pslab_run_async(40, 20, 3)
    assert got["makespan"] == run.makespan and got["spans"] == len(run.timeline)
    durations = clock_vs_simpy.CLUSTER.compute_durations(40, 20, 3)
    transfer, update = clock_vs_simpy.costs(run)
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory() as folder:
        dll = c_clock.compile_loop(Path(folder))
        room = np.empty(3 * 40 * 20 * 11)
        slower = c_clock.run_c(dll, np.ascontiguousarray(durations), transfer,
                               [u * 2 for u in update], room)
    assert slower[0] != run.makespan


def pslab_run_async(workers, steps, seed):
    import pslab

    return pslab.train(mode="async", workers=workers, steps=steps, numerics=False,
                       cluster=clock_vs_simpy.CLUSTER, seed=seed)


def test_measure_in_turn_runs_each_function_once_a_round():
    from bench.timing import measure_in_turn

    calls = []
    times = measure_in_turn({"a": lambda: calls.append("a"), "b": lambda: calls.append("b")},
                            repeat=3, warmup=1)
    assert calls == ["a", "b"] + ["a", "b"] * 3  # warm-ups, then one of each per round
    assert set(times) == {"a", "b"}
    assert all(t["runs"] == 3 and t["min"] <= t["median"] <= t["max"] for t in times.values())


def test_pipeline_bench_rows_time_what_they_say():
    """bench/pipeline_speed.py's big run is 8 x 64 x 100 and its rows carry goals and met."""
    from bench import pipeline_speed

    run = pipeline_speed.big("1f1b", 1)
    assert (run.workers, run.pipeline.microbatches, run.updates) == (8, 64, 100)
    share, ratio, held, spans = pipeline_speed.slider()
    assert 0 < share < 1 and ratio > 0 and held == [8, 7, 6, 5, 4, 3, 2, 1] and spans > 0


def test_the_pipeline_grid_is_drawn_from_its_seed_and_reads_the_link_at_the_message_size():
    """The across-hosts grid's cases come from the seed alone (the same seed, the same cases;
    every case one the schedule takes), and a message's time is read off the calibration's
    medians between the sizes around it (a ValueError outside them)."""
    from bench import pipeline_speed
    from pslab.pipeline.schedules import refusal

    cases = pipeline_speed.draw_across(55159)
    assert cases == pipeline_speed.draw_across(55159) != pipeline_speed.draw_across(7)
    assert len(cases) == pipeline_speed.ACROSS_CASES
    for schedule, v, p, m, rate, (f, b, w) in cases:
        assert refusal(schedule, p, m, v) is None and 1e6 <= rate <= 1e7
        assert 0.01 <= f <= 0.03 and b == 2 * f and w == f
    samples = {2400: 0.004, 4800: 0.014, 9600: 0.034}
    assert pipeline_speed.at_size(samples, 4800) == 0.014
    assert pipeline_speed.at_size(samples, 3600) == pytest.approx(0.009)
    with pytest.raises(ValueError, match="size must lie within"):
        pipeline_speed.at_size(samples, 20_000)
