"""The front door's collective modes on real processes: pslab.train(mode=ZeRO(3),
backend="processes") is PyTorch's FSDP2, "allreduce" is its DDP, and both end with the
simulation's weights (bit for bit on 2 workers without accumulation, to float round-off on 3
with it); the stages FSDP2 does not express and the settings that do not apply are refused by
name before any process starts; a dead or silent process is named in the error, and nothing
(process or file) is left behind."""
import multiprocessing
import os
import signal
import threading
import time

import pytest
import torch

import pslab
from pslab.processes import ProcessFailure

dist = pytest.importorskip("torch.distributed")
if not dist.is_available() or not dist.is_gloo_available():
    pytest.skip("torch.distributed with gloo is needed for FSDP2 on CPU", allow_module_level=True)


ZERO3, RING = {"compute", "all-gather", "reduce-scatter"}, {"compute", "push"}


@pytest.mark.processes
@pytest.mark.parametrize("mode, workers, accumulate, kinds", [
    (pslab.ZeRO(3), 2, 1, ZERO3), (pslab.ZeRO(3), 3, 2, ZERO3),
    ("allreduce", 2, 1, RING), ("allreduce", 3, 2, RING),
])
def test_the_front_door_runs_collectives_on_pytorch_with_the_simulated_weights(
        mode, workers, accumulate, kinds, private_tmp, nothing_left):
    real = pslab.train(mode=mode, workers=workers, steps=3, seed=2, accumulate=accumulate,
                       backend="processes")
    sim = pslab.train(mode=mode, workers=workers, steps=3, seed=2, accumulate=accumulate)
    assert real.mode == sim.mode and real.settings.backend == "processes"
    for name, w in sim.weights.items():
        if workers == 2 and accumulate == 1:  # one sum of two numbers: the same in any order
            assert torch.equal(real.weights[name], w), name
        else:
            assert torch.allclose(real.weights[name], w, rtol=0, atol=1e-6), name
    # the history: the loss and test accuracy after each update, scored as the simulation does
    assert [r.step for r in real.history] == [r.step for r in sim.history] == [0, 1, 2]
    for a, b in zip(real.history, sim.history):
        assert a.loss == pytest.approx(b.loss, rel=1e-5) and a.accuracy == pytest.approx(
            b.accuracy, abs=1e-3)
    assert not real.diverged
    # and the parameter server's: ZeRO and all-reduce are sync without a server
    ps = pslab.train(mode="sync", workers=workers, steps=3, seed=2, accumulate=accumulate)
    for name, w in ps.weights.items():
        assert torch.allclose(real.weights[name], w, rtol=0, atol=1e-6), name
    start = pslab.train(workers=1, steps=1, seed=2, lr=1e-12)
    assert not torch.allclose(real.weights["W_h"], start.weights["W_h"], atol=1e-3)
    assert {(s.worker, s.step, s.kind) for s in real.timeline} >= {
        (w, k, kind) for w in range(workers) for k in range(3) for kind in kinds}
    nothing_left(private_tmp)


@pytest.mark.parametrize("stage", [1, 2])
def test_stages_fsdp2_does_not_express_are_refused_by_name(stage):
    with pytest.raises(ValueError, match=rf"FSDP2 does not express ZeRO\({stage}\)"):
        pslab.train(mode=pslab.ZeRO(stage), workers=2, backend="processes")


@pytest.mark.parametrize("mode", [pslab.ZeRO(3), "allreduce"])
@pytest.mark.parametrize("kwargs, name", [
    (dict(time_scale=0.1), "time_scale"), (dict(start_method="spawn"), "start_method"),
    (dict(address="::1"), "address"), (dict(cluster=pslab.Cluster()), "cluster"),
    (dict(checkpoint=pslab.Checkpoint("x.safetensors")), "checkpoint"),
    (dict(workers=17), "workers"), (dict(workers=1), "workers"),
    (dict(numerics=False), "numerics"), (dict(kill={5: 0}), "kill"),
])
def test_settings_that_do_not_apply_are_refused_before_any_process(mode, kwargs, name,
                                                                    private_tmp, nothing_left):
    with pytest.raises(ValueError, match=name):
        pslab.train(mode=mode, **{"workers": 2, **kwargs}, backend="processes")
    nothing_left(private_tmp)


@pytest.mark.processes
def test_a_killed_fsdp_process_is_named_and_nothing_is_left(private_tmp, nothing_left):
    t0 = time.monotonic()
    with pytest.raises(ProcessFailure) as failure:
        pslab.train(mode=pslab.ZeRO(3), workers=3, steps=4, backend="processes", kill={1: 2})
    text = str(failure.value)
    assert "ZeRO(3)" in text and "worker 1 (pid " in text
    assert "killed by signal SIGKILL after 2 steps" in text
    assert "The 2 update(s) finished before are this error's .run" in text
    assert time.monotonic() - t0 < 120  # no hang: the others are stopped, not waited for
    # nothing computed is lost: the two updates made are the error's partial run
    partial = failure.value.run
    assert not partial.complete and [r.step for r in partial.history] == [0, 1]
    sim = pslab.train(mode=pslab.ZeRO(3), workers=3, steps=2)
    for name, w in sim.weights.items():
        assert torch.allclose(partial.weights[name], w, rtol=0, atol=1e-6), name
    assert {s.step for s in partial.timeline} >= {0, 1}
    nothing_left(private_tmp)


@pytest.mark.processes
@pytest.mark.parametrize("mode", [pslab.ZeRO(3), "allreduce"])
def test_an_update_kept_while_another_process_dies_is_in_the_partial_run(
        mode, private_tmp, monkeypatch, nothing_left):
    """Rank 0 is slow to keep update 1 (a second per save) while worker 1 goes on to die at
    step 2: the error is read while rank 0 still writes. The steps the error names are the
    updates its .run holds, every time, not only when rank 0 wins the race."""
    import slow_rank0
    from pslab.processes import fsdp

    monkeypatch.setattr(fsdp, "_worker", slow_rank0.worker)
    with pytest.raises(ProcessFailure) as failure:
        pslab.train(mode=mode, workers=3, steps=4, backend="processes", kill={1: 2})
    text = str(failure.value)
    assert "worker 1 (pid " in text and "killed by signal SIGKILL after 2 steps" in text
    assert "The 2 update(s) finished before are this error's .run" in text
    assert [r.step for r in failure.value.run.history] == [0, 1]
    nothing_left(private_tmp)


@pytest.mark.processes
@pytest.mark.parametrize("mode", [pslab.ZeRO(3), "allreduce"])
def test_a_hung_teardown_after_the_last_step_keeps_the_run(
        mode, private_tmp, monkeypatch, nothing_left):
    """Worker 1's gloo teardown hangs after its last step (seen across shaped links): the run
    is whole, as every process said it was done before tearing down, and the hung process is
    killed, not waited for (the silence limit is 5 s; the teardown would take 60)."""
    import slow_teardown
    from pslab.processes import fsdp

    monkeypatch.setattr(fsdp, "_worker", slow_teardown.worker)
    started = time.monotonic()
    run = pslab.train(mode=mode, workers=3, steps=2, backend="processes", timeout=5.0)
    assert run.complete and [r.step for r in run.history] == [0, 1]
    assert time.monotonic() - started < 50
    nothing_left(private_tmp)


@pytest.mark.processes
def test_a_process_killed_from_outside_mid_run_is_named(private_tmp, nothing_left):
    """Someone kills worker 1 (SIGKILL) while the run goes on: the error names its pid."""
    killed = []

    def kill_worker_one():
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not killed:
            for p in multiprocessing.active_children():
                if p.name == "pslab-ZeRO(3)-1" and p.pid:
                    time.sleep(0.5)
                    os.kill(p.pid, signal.SIGKILL)
                    killed.append(p.pid)
            time.sleep(0.05)

    killer = threading.Thread(target=kill_worker_one)
    killer.start()
    try:
        with pytest.raises(ProcessFailure) as failure:
            pslab.train(mode=pslab.ZeRO(3), workers=2, steps=10**4, backend="processes")
    finally:
        killed.append(None)  # stop looking
        killer.join()
    assert f"worker 1 (pid {killed[0]}) was killed by signal SIGKILL" in str(failure.value)
    nothing_left(private_tmp)


@pytest.mark.processes
def test_a_silent_process_is_named_after_the_timeout(private_tmp, nothing_left):
    with pytest.raises(ProcessFailure, match=r"worker 0 \(pid \d+\) stopped answering after "
                                             r"1 step \(nothing from any worker for 2 s\)"):
        pslab.train(mode="allreduce", workers=2, steps=3, backend="processes", hang={0: 1},
                    timeout=2)
    nothing_left(private_tmp)


STUCK = {
    "stopped": (r"stopped: worker 2 \(pid (\d+)\) was stopped \(SIGSTOP, Ctrl-Z, a debugger\) "
                r"for 1 s before it became ready \(`kill -CONT \1` lets it go on\)"),
    "asleep": (r"stopped: worker 2 \(pid (\d+)\) was asleep, using no CPU time, for 1 s before "
               r"it joined the group: .*py-spy dump --pid \1")}


@pytest.mark.processes
@pytest.mark.parametrize("mode", [pslab.ZeRO(3), "allreduce"])
@pytest.mark.parametrize("how", sorted(STUCK))
def test_a_process_stuck_while_starting_is_named_within_the_timeout(
        mode, how, private_tmp, monkeypatch, nothing_left):
    """Worker 2 is stopped (SIGSTOP) or falls asleep (waiting for something that never comes)
    before it joins the group, while the others have joined and wait for it at the group's
    start, where the silence allowed is the start-up's (120 s): a process stopped for the run's
    timeout, or one that has not said it joins and used no CPU for it, is not starting; the
    error names it and its state, not the worker with the fewest steps."""
    import hung_start
    from pslab.processes import fsdp
    from pslab.processes.child import STARTUP

    monkeypatch.setattr(fsdp, "_worker", getattr(hung_start, f"fsdp_{how}"))
    pslab.processes.warm().join(180)  # timed from a started forkserver, not its cold start
    started = time.monotonic()
    with pytest.raises(ProcessFailure, match=STUCK[how]):
        pslab.train(mode=mode, workers=3, steps=2, backend="processes", timeout=1)
    assert time.monotonic() - started < STARTUP / 4
    nothing_left(private_tmp)


@pytest.mark.processes
def test_warm_starts_the_forkserver_in_the_background_and_a_second_call_is_harmless(
        private_tmp, nothing_left):
    first, again = pslab.processes.warm(), pslab.processes.warm()
    for thread in (first, again):
        thread.join(180)
        assert not thread.is_alive() and thread.daemon
    run = pslab.train(mode=pslab.ZeRO(3), workers=2, steps=1, backend="processes")
    assert run.updates == 1
    nothing_left(private_tmp)
