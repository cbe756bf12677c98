"""The process backend on real OS processes (2 shards + 2-3 workers on loopback, seconds each).

Every test ends by looking for what it started: no process may be left but multiprocessing's
own two helpers (the forkserver and the resource tracker), and every pid the run used is gone.
"""
import _thread
import os
import signal
import subprocess
import sys
import time

import pytest
import torch

import pslab
from pslab.processes import ProcessFailure
from pslab.tracefile import chrome_trace
from proctree import alive, command, descendants, parent, status
from test_trace import check_trace

pytestmark = pytest.mark.timeout(120)  # a hang fails the test instead of stalling the suite
HELPERS = ("multiprocessing.forkserver", "multiprocessing.resource_tracker")


def helpers(pid: int) -> set[int]:
    """multiprocessing's forkserver and resource tracker: children of `pid` that live as long as
    it does. The run's processes are the forkserver's children (they share its command line)."""
    return {p for p in descendants(pid) if parent(p) == pid
            and any(h in command(p) for h in HELPERS)}


def leftovers(pid: int = os.getpid()) -> list[str]:
    skip = helpers(pid)
    return [f"{p}: {command(p)}" for p in descendants(pid) if alive(p) and p not in skip]


@pytest.fixture(autouse=True)
def no_process_left():
    yield
    assert leftovers() == []


def processes(**kwargs):
    kwargs = {"workers": 3, "steps": 6, "backend": "processes", "timeout": 5, **kwargs}
    return pslab.train(**kwargs)


def gone(run):
    return all(not alive(p) for p in run.pids)


@pytest.mark.processes
@pytest.mark.parametrize("mode, kwargs", [
    ("sync", dict()), ("sync", dict(accumulate=2, workers=2)),
    ("sync", dict(shards=3, cluster=pslab.Cluster(speeds=[0.5, 1, 1]))),
    (pslab.SSP(0), dict(staleness_lr=True))])  # BSP: sync's barrier, gradients added
def test_barrier_modes_on_processes_end_with_the_simulated_weights(mode, kwargs):
    run = processes(mode=mode, **kwargs)
    sim = pslab.train(mode=mode, steps=6, **{"workers": 3, **kwargs})
    assert run.settings.backend == "processes" and gone(run) and run.complete
    assert set(run.weights) == set(sim.weights)
    assert all(torch.equal(run.weights[n], sim.weights[n]) for n in sim.weights)
    assert [r.loss for r in run.history] == [r.loss for r in sim.history]
    assert run.staleness == sim.staleness == [0] * 6
    assert run.push_staleness == sim.push_staleness
    assert run.start_loss == sim.start_loss


@pytest.mark.processes
def test_train_takes_transfers_wire_and_keeps_the_simulated_weights():
    """transfers="wire" (a transfer takes what the network takes) is a train() setting too:
    only the timing changes, the arithmetic is sync's, bit for bit."""
    run = processes(mode="sync", workers=2, steps=4, transfers="wire")
    sim = pslab.train(mode="sync", workers=2, steps=4)
    assert run.complete and gone(run)
    assert all(torch.equal(run.weights[n], sim.weights[n]) for n in sim.weights)
    assert {s.kind for s in run.timeline} >= {"fetch", "compute", "push", "update"}


@pytest.mark.processes
def test_measured_timeline_has_every_kind_and_real_compute_times():
    cluster = pslab.Cluster(speeds=[1, 1, 0.25])  # worker 2 computes 4x longer: 40 ms a step
    run = processes(mode="sync", cluster=cluster, time_scale=0.01)
    kinds = {s.kind for s in run.timeline}
    assert kinds == {"fetch", "compute", "push", "update", "idle"}
    compute = {w: [s.duration for s in run.timeline if s.kind == "compute" and s.worker == w]
               for w in range(3)}
    assert all(d >= 0.04 for d in compute[2])  # slept the model's time, at least
    idle = {w: sum(s.duration for s in run.timeline if s.kind == "idle" and s.worker == w)
            for w in range(3)}
    assert idle[0] > idle[2] and idle[1] > idle[2]  # the fast ones wait for the straggler
    # ... and that wait is the barrier's, as in the simulation: it ends at a step's first fetch
    barrier = {w: sum(s.duration for s in run.timeline if s.note == "barrier" and s.worker == w)
               for w in range(3)}
    assert barrier[0] > barrier[2] and barrier[1] > barrier[2] and run.barrier_time > 0
    fetches = {(s.worker, s.start) for s in run.timeline if s.kind == "fetch"}
    assert all((s.worker, s.end) in fetches for s in run.timeline if s.note == "barrier")
    assert run.makespan == max(s.end for s in run.timeline)
    check_trace(chrome_trace(run), run)  # a measured run opens in Perfetto like a simulated one


@pytest.mark.processes
def test_async_races_and_records_staleness_per_push():
    run = processes(mode="async", workers=3, steps=8)
    assert run.updates == 24 and len(run.staleness) == 24
    assert run.barrier_time == 0  # nothing holds an async worker
    assert all(s >= 0 for s in run.staleness) and max(run.staleness) >= 1
    assert sorted((r.worker, r.step) for r in run.history) == [
        (w, t) for w in range(3) for t in range(8)]


@pytest.mark.processes
def test_backup_workers_carry_the_rounds_past_a_killed_worker():
    # Backup(1): each round takes the first 2 of 3 pushes, so losing one worker is survivable
    run = processes(mode=pslab.Backup(1), kill={2: 2})
    assert "worker 2" in run.failures[0] and gone(run)
    assert run.updates == 6 and all(r.worker is None for r in run.history)
    dropped = [s for s in run.timeline if s.kind == "push" and s.note == "dropped"]
    used = sum(1 for s in run.timeline if s.kind == "push" and s.note is None)
    assert used == 2 * 6 * 2  # 2 pushes a round, 6 rounds, 2 shards: the rest were dropped
    assert len(dropped) + used == sum(1 for s in run.timeline if s.kind == "push")


@pytest.mark.processes
def test_softsync_averages_every_c_pushes_as_they_come():
    run = processes(mode=pslab.SoftSync(3), steps=4)
    assert run.updates == 4 and len(run.push_staleness) == 12
    assert all(r.worker is None for r in run.history)


@pytest.mark.processes
def test_ssp_no_worker_runs_more_than_s_steps_ahead():
    s = 1
    run = processes(mode=pslab.SSP(s), cluster=pslab.Cluster(speeds=[1, 1, 0.25]), steps=6)
    pushed = {}  # (worker, step) -> when its last shard had the push
    for sp in run.timeline:
        if sp.kind == "push":
            pushed[sp.worker, sp.step] = max(pushed.get((sp.worker, sp.step), 0), sp.end)
    for sp in run.timeline:
        if sp.kind == "compute" and sp.step > s:
            t = sp.step - s - 1
            assert all(pushed[w, t] <= sp.start for w in range(3)), (sp, t)
    assert run.updates == 18


@pytest.mark.processes
def test_async_goes_on_without_a_killed_worker():
    run = processes(mode="async", kill={1: 2}, steps=6)
    assert gone(run) and not run.complete
    assert "worker 1" in run.failures[0] and "SIGKILL" in run.failures[0]
    assert sorted({r.worker for r in run.history}) == [0, 1, 2]
    assert sum(r.worker == 1 for r in run.history) == 2  # steps 0 and 1, then it died
    assert sum(r.worker != 1 for r in run.history) == 12  # the others finished every step


@pytest.mark.processes
def test_sync_with_a_killed_worker_stops_with_a_clear_error():
    with pytest.raises(ProcessFailure, match=r"worker 1 .*SIGKILL after 2 steps. Sync waits"
                       ) as err:
        processes(mode="sync", kill={1: 2}, timeout=3)
    partial = err.value.run
    assert not partial.complete and partial.updates == 2 and gone(partial)


@pytest.mark.processes
def test_a_worker_slow_to_start_is_not_taken_for_a_silent_one(monkeypatch):
    """Start-up has its own allowance: a worker 6 s late (past timeout=3 and gloo's 5 s) is
    waited for, and what stops the run is the fault asked for, with every update before it."""
    import slow_start

    from pslab.processes import launcher

    monkeypatch.setattr(launcher, "main", slow_start.main)
    started = time.perf_counter()
    with pytest.raises(ProcessFailure, match=r"worker 1 .*SIGKILL after 2 steps") as err:
        processes(mode="sync", kill={1: 2}, timeout=3)
    assert time.perf_counter() - started > slow_start.LATE
    assert err.value.run.updates == 2 and gone(err.value.run)


@pytest.mark.processes
@pytest.mark.parametrize("where, mode", [("stopped", "async"), ("stopped", "sync"),
                                         ("stopped_joining", "async")])
def test_a_worker_stuck_before_ready_is_named_within_the_runs_timeout(monkeypatch, where, mode):
    """A start-up that makes no progress (worker 2 stopped before the meeting point, or after
    it but before its first message) is not waited for the start-up's allowance (STARTUP,
    120 s), nor reported as gloo's timeout naming nobody: once it has used no CPU for the run's
    timeout the run stops, naming it, its state and what to check; even async, which goes on
    without a worker lost later, cannot start without it."""
    import hung_start

    from pslab.processes import launcher

    monkeypatch.setattr(launcher, "main", getattr(hung_start, where))
    started = time.perf_counter()
    with pytest.raises(ProcessFailure, match=r"^worker 2 \(pid \d+\), stopped, never became "
                       r"ready: no CPU time used for 3 s \(timeout=3\).*kill -CONT") as err:
        processes(mode=mode, timeout=3)
    took = time.perf_counter() - started
    assert took < launcher.STARTUP / 4, took
    assert err.value.run.updates == 0 and gone(err.value.run)


@pytest.mark.processes
def test_a_worker_killed_before_ready_stops_even_async_at_once(monkeypatch):
    import hung_start

    from pslab.processes import launcher

    monkeypatch.setattr(launcher, "main", hung_start.killed)
    started = time.perf_counter()
    with pytest.raises(ProcessFailure, match=r"^worker 2 \(pid \d+\) was killed by signal "
                       r"SIGKILL after 0 steps before it became ready. No process of a run can "
                       r"start without all the others") as err:
        processes(mode="async", timeout=3)
    assert time.perf_counter() - started < launcher.STARTUP / 4
    assert err.value.run.updates == 0 and gone(err.value.run)


@pytest.mark.processes
def test_sync_with_a_hung_worker_stops_within_its_timeout():
    start = time.perf_counter()
    with pytest.raises(ProcessFailure, match=r"no push of step 2 came from worker 1"):
        processes(mode="sync", hang={1: 2}, timeout=1)
    print(f"hung worker noticed after {time.perf_counter() - start:.1f} s")


@pytest.mark.processes
def test_async_with_a_hung_worker_finishes_without_it():
    run = processes(mode="async", hang={2: 1}, timeout=1, steps=4)
    assert "worker 2" in run.failures[0] and "stopped answering" in \
        run.failures[0]
    assert sum(r.worker == 2 for r in run.history) == 1 and run.updates == 9


@pytest.mark.processes
def test_interrupt_returns_the_partial_run_and_stops_every_process(ctrl_c_works, monkeypatch):
    """The stop button once 3 updates have reached every shard (after updates, not after
    seconds: a cold start on a loaded machine may take longer than any fixed wait)."""
    from collections import Counter

    from pslab.processes.launcher import Launch

    handle, shards_reached, pressed = Launch.handle, Counter(), []

    def counting(self, rank, kind, payload):
        handle(self, rank, kind, payload)
        if kind == "update" and not pressed:
            shards_reached[payload["worker"], payload["step"]] += 1
            if sum(n == self.job.num_shards for n in shards_reached.values()) == 3:
                pressed.append(True)
                _thread.interrupt_main()  # what the stop button does to Python

    monkeypatch.setattr(Launch, "handle", counting)
    with pytest.warns(UserWarning, match="interrupted"):
        run = processes(mode="async", steps=1000, time_scale=0.01)
    assert not run.complete and 3 <= run.updates < 3000 and gone(run)


@pytest.mark.processes
def test_children_die_with_their_launcher(tmp_path):
    # The kernel killed outright (SIGKILL, as an out-of-memory kill or a restart does): the
    # forkserver's children are not its children, so only their watchdog can stop them.
    script = ("import pslab\nif __name__ == '__main__':\n"
              "    pslab.train(steps=2000, backend='processes', time_scale=0.1)\n")  # ~5 min
    # (not 100000 steps: train first simulates the run's timing, 88 s at load 10)
    (tmp_path / "launcher.py").write_text(script)
    private = tmp_path / "tmp"  # its temporary folder: others' runs put theirs in /tmp meanwhile
    private.mkdir()
    launcher = subprocess.Popen([sys.executable, str(tmp_path / "launcher.py")],
                                env=dict(os.environ, TMPDIR=str(private)))
    try:
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            skip = helpers(launcher.pid)
            kids = [p for p in descendants(launcher.pid) if p not in skip]
            if len(kids) >= 5:
                break
            time.sleep(0.2)
        assert len(kids) >= 5, "the run never started"
        everything = descendants(launcher.pid)
        launcher.send_signal(signal.SIGKILL)
        launcher.wait(10)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and any(alive(p) for p in everything):
            time.sleep(0.1)
        left = [p for p in everything if alive(p)]  # the forkserver went too
        assert left == [], [(p, status(p), command(p)[:120]) for p in left]
        # the killed launcher could not remove its private meeting folder (in its pymp-*
        # folder): its forkserver did, with that folder, once all its processes had ended
        assert [p.name for p in private.rglob("*")] == []
    finally:
        launcher.kill()
        launcher.wait(10)


@pytest.mark.processes
def test_a_process_whose_meeting_folder_is_gone_stops_at_once(tmp_path):
    """torch's FileStore waits 5 min for a folder that is not there, holding the GIL: no thread
    of the process runs meanwhile, not even the watchdog that ends it with its launcher. So a
    process still starting when its launcher was killed, opening its meeting point after
    another had removed the folder, outlived the launcher (test_children_die_with_their_launcher
    once: it, the forkserver and the resource tracker, both kept by its pipes, 20 s on). The
    folders are no longer removed that way (Launch.tempdir); and a folder gone stops the
    process at once."""
    gone = str(tmp_path / "gone" / "store")
    code = ("import time\nfrom datetime import timedelta\n"
            "from pslab.processes.child import Meeting\n"
            "started = time.monotonic()\ntry:\n"
            f"    Meeting('127.0.0.1', file={gone!r}).store(2, timedelta(seconds=60))\n"
            "except RuntimeError as error:\n"
            "    print(f'{time.monotonic() - started:.2f}', error)\n")
    # (the store's wait is 5 min: 60 s bound the test, an import of torch under load included)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=60)
    took, _, words = out.stdout.strip().partition(" ")
    assert "meeting folder" in words and "is gone" in words, out.stderr[-1500:]
    assert float(took) < 1.0


@pytest.mark.processes
def test_a_torchrun_launch_on_loopback_gives_the_same_run(torchrun):
    """The session's torchrun launch (tests/test_untrusted_run_folders.py reads it too)."""
    run = pslab.processes.load_run(torchrun(5, "--shards", "2", "--workers", "3", "--steps", "3",
                                            "--mode", "sync"))
    sim = pslab.train(mode="sync", workers=3, steps=3)
    assert run.complete and run.updates == 3
    assert all(torch.equal(run.weights[n], sim.weights[n]) for n in sim.weights)


@pytest.mark.processes
def test_the_server_checkpoints_its_rounds_and_a_new_set_of_processes_resumes(tmp_path):
    path = tmp_path / "server.ckpt"
    with pytest.raises(ProcessFailure):
        processes(mode="sync", steps=8, kill={1: 4}, checkpoint=pslab.Checkpoint(path))
    assert pslab.checkpoint.load(path)["step"] == 4  # rounds 0-3 were complete on every shard
    resumed = pslab.resume(path, backend="processes")  # new processes, from round 4; the
    # fault is not asked again; without backend="processes" a file never starts processes:
    with pytest.raises(ValueError, match="backend=.processes."):
        pslab.resume(path)
    sim = pslab.train(mode="sync", workers=3, steps=8)
    assert all(torch.equal(resumed.weights[n], sim.weights[n]) for n in sim.weights)
    assert [r.version for r in resumed.history] == [5, 6, 7, 8]
    assert [r.loss for r in resumed.history] == [r.loss for r in sim.history[4:]]
    assert gone(resumed) and pslab.checkpoint.load(path)["step"] == 8
    with pytest.raises(ValueError, match="finished run"):
        pslab.resume(path, backend="processes")
