"""Measured vs simulated across hosts: the transfers="wire" mode (a transfer takes what
the network takes, not the timing model's time), a link's calibration, a shaped link measured
beside the model (both directions at once, n pushes in one), the shard's answers and the hosts'
priority. The grids of cases are in test_network_grid.py. The parts that need network
namespaces are root only and skip with the reason elsewhere."""
import json
import statistics

import pytest
import torch

import pslab
from pslab.processes.calibrate import fit
from pslab.processes.hosts import leftovers, own_prefix, unavailable
from pslab.processes.launcher import launch
from pslab.options import ProcessOptions
from pslab.processes.protocol import header, message, pack
from pslab.processes.torchrun import Usage, parse
from pslab.settings import Settings

# in the process-test set (tests/processwatch.py): most tests here start hosts and processes
pytestmark = pytest.mark.processes

root_only = pytest.mark.skipif(unavailable() is not None, reason=str(unavailable()))


def test_a_message_carries_when_it_was_sent_to_well_under_a_microsecond():
    buf = message(4)
    for sent in (0.0, 0.0123456789, 3.25, 987.654321):
        got = header(pack(buf, 1.0, 7, 5, torch.ones(4), sent=sent))
        assert (got.kind, got.step, got.version) == (1.0, 7, 5)
        assert abs(got.sent - sent) < 1e-9


def test_transfers_must_be_model_or_wire():
    assert ProcessOptions().transfers == "model" and ProcessOptions(transfers="wire").wire
    with pytest.raises(ValueError, match="transfers must be one of 'model', 'wire'"):
        ProcessOptions(transfers="network")
    with pytest.raises(ValueError, match="only apply to backend='processes'"):
        Settings.build(workers=2, steps=3, transfers="wire")


def test_the_command_line_takes_the_timing_model_and_the_wire(tmp_path):
    job, _ = parse(["--out", str(tmp_path), "--workers", "2", "--shards", "1", "--steps", "3",
                    "--transfers", "wire", "--cluster",
                    json.dumps(dict(compute_time=0.03, speeds=[1, 0.5], latency=0.001))])
    assert job.options.wire and job.settings.processes.transfers == "wire"
    assert job.durations[1][0] == pytest.approx(0.06) and job.transfer[0] > 0.001
    for bad in ("[1, 2]", "{\"compute\": 1}", "not json"):
        with pytest.raises(Usage, match="--cluster"):
            parse(["--out", str(tmp_path), "--cluster", bad])


def test_a_line_through_the_samples_gives_latency_and_bandwidth():
    latency, bandwidth = fit({n: 0.002 + n / 5e5 for n in (2400, 4800, 9600)})
    assert latency == pytest.approx(0.002) and bandwidth == pytest.approx(5e5)
    # a token bucket's credit (the first frame free after a pause) puts the line below zero:
    # the slope is the steady rate, the latency 0 (never negative), a header alone left out
    shaped = {n: max(0.0003, (n - 1600) / 1.2e5) for n in (64, 2400, 4800, 9600, 19200)}
    latency, bandwidth = fit(shaped)
    assert latency == 0.0 and bandwidth == pytest.approx(1.2e5)
    with pytest.raises(RuntimeError, match="do not grow with the bytes"):
        fit({2400: 0.002, 4800: 0.002})


def test_on_the_wire_transfers_take_what_the_network_takes_and_sync_keeps_its_weights():
    """Loopback, a timing model whose transfers would take 1 s (10 ms scaled): on the wire they
    take what loopback takes, and the weights are still the simulated ones bit for bit."""
    cluster = pslab.Cluster(compute_time=1.0, latency=1.0, update_time=0.0)
    run = launch(Settings.build(workers=2, steps=4, shards=2, cluster=cluster,
                                backend="processes", time_scale=0.01, transfers="wire"))
    sim = pslab.train(mode="sync", workers=2, shards=2, steps=4, cluster=cluster)
    assert run.complete and pslab.processes.same_weights(run, sim)
    moves = [s for s in run.timeline if s.kind in ("fetch", "push")]
    assert len(moves) == 2 * 2 * 2 * 4 and all(s.worker in (0, 1) for s in moves)
    assert all(s.end >= s.start for s in moves)
    assert statistics.median(s.end - s.start for s in moves) < 0.005  # the model: 0.01 s
    assert run.settings.processes.transfers == "wire"



@root_only
def test_the_calibration_recovers_the_shaped_bandwidth():
    from pslab.processes.calibrate import calibrate

    link = calibrate(8e6)
    assert abs(link.error) < 0.10, (link.bandwidth * 8, link.samples)
    assert link.latency >= 0 and len(link.samples) == 5
    assert leftovers(own_prefix()) == []


@root_only
def test_measured_vs_simulated_gives_every_case_both_ways():
    from pslab.processes import network
    from pslab.processes.calibrate import Link

    link = Link(latency=0.0005, bandwidth=4.8e5, asked=4e6)  # as calibrated here (not timed)
    rows = network.compare(link, steps=3)
    assert [r.case.name for r in rows] == [c.name for c in network.CASES]
    for r in rows:
        assert r.measured_step > 0 and r.simulated_step > 0 and abs(r.error) < 1.0
        assert 0 <= r.measured_waiting < 1 and 0 <= r.simulated_waiting < 1
        if r.case.mode == "sync":  # the shards add each round's gradients in the clock's order
            assert r.same_weights is True and set(r.measured_staleness) == {0}
        plain = r.plain()
        assert plain["measured_step"] == r.measured_step and "simulated_step" in plain
    asynchronous = next(r for r in rows if r.case.mode == "async")
    assert sum(asynchronous.measured_staleness.values()) == pytest.approx(1.0)
    summary = network.summary(rows)
    assert set(summary["ranking"]) == {"000", "001", "shards"}
    assert leftovers(own_prefix()) == []


# --- a shaped link, measured and modelled: both directions at once, n in one direction -----
SIZE = 12_000  # bytes: a model-sized message (under TCP's first window: it enters the shaper
# whole), 90-100 ms at 1 Mbit/s, long beside the ms of wake-up noise of a loaded machine
RATE = 1e6


def _simulated_pushes(workers: int, link) -> list[float]:
    """The model's answer for `workers` pushes of SIZE bytes sent to one shard at one moment:
    the seconds from then until each had arrived. A simulated sync step whose compute ends
    for every worker at the same moment C (its fetch, which the workers wait for in line,
    shortens its compute), so that all push at C. The shard's link gives the shaper's credit
    after a pause (Link.burst), as the bench's model does: the first push ends that much sooner."""
    one = link.latency + SIZE / link.bandwidth
    start = (workers + 1) * one
    cluster = pslab.Cluster(durations=[[start - (k + 1) * one] for k in range(workers)],
                            latency=link.latency, bandwidth=link.bandwidth, update_time=0.0,
                            model_bytes=SIZE, burst=link.burst)
    run = pslab.train(mode="sync", workers=workers, shards=1, steps=1, cluster=cluster)
    ends = {round(s.end, 9) for s in run.timeline if s.kind == "compute"}
    assert len(ends) == 1, ends  # every worker pushes at one moment C
    (pushed,) = ends
    return sorted(s.end - pushed for s in run.timeline if s.kind == "push")


def test_the_model_carries_a_fetch_and_a_push_at_once_each_in_the_time_of_one():
    """On a duplex link a fetch and a push overlap and neither is stretched; on a
    one-at-a-time link they never overlap."""
    from pslab.processes.network import both_ways

    for links, overlapping in (("duplex", True), ("one-at-a-time", False)):
        cluster = pslab.Cluster(compute_time=0.03, speeds=[1.0, 0.7], latency=0.001,
                                bandwidth=2.5e5, update_time=0.0, links=links)
        run = pslab.train(mode="async", workers=2, shards=1, steps=12, cluster=cluster)
        moves = [s for s in run.timeline if s.kind in ("fetch", "push")]
        one = cluster.latency + run.shard_bytes[0] / cluster.bandwidth
        assert all(abs((s.end - s.start) - one) < 1e-9 for s in moves)
        assert (both_ways(run) > 0.05) is overlapping, (links, both_ways(run))


@root_only
def test_a_fetch_and_a_push_at_once_each_take_the_time_of_one_alone():
    from pslab.processes.calibrate import transfers

    fetch, push = (0, 1, SIZE), (2, 0, SIZE)  # host 0 is the shard
    alone = [statistics.median(r[0] for r in transfers(RATE, [t], 3)) for t in (fetch, push)]
    both = transfers(RATE, [fetch, push], 3)
    at_once = [statistics.median(r[i] for r in both) for i in (0, 1)]
    for a, b in zip(alone, at_once):
        assert abs(b / a - 1) < 0.10, (alone, at_once, both)
    assert abs(alone[0] / (SIZE * 8 / RATE) - 1) < 0.25  # and the link is as slow as shaped
    assert leftovers(own_prefix()) == []


@root_only
def test_n_pushes_at_once_to_one_shard_take_what_the_model_says():
    """The n pushes take the model's time all together (the last arrival, n transfers, within
    10 %), and the link serves them one after another as the model's line of pushes says: the
    first arrives after one transfer (within 10 %), where a link that shared its bandwidth among
    them would deliver none before about n transfers, and each later one within a transfer of
    its place in the line. Pushes written at the same instant sometimes interleave their frames
    in the shaper's queue and end together, more often when the machine is busy (measured at
    load 4, 4 pushes, the mean arrival over 5 repeats: 2.53 transfers on most tries, 2.96 on
    some, the line's 2.5; one repeat [0.95, 3.03, 4.09, 4.15]): an arrival may then be a
    transfer late, never the first or the last."""
    from pslab.processes.calibrate import calibrate, transfers

    link = calibrate(RATE)
    for n in (2, 4):
        measured = transfers(RATE, [(w, 0, SIZE) for w in range(1, n + 1)], n + 1)
        model = _simulated_pushes(n, link)
        assert len(model) == n and model == sorted(model)
        one = model[1] - model[0]  # a transfer: the second waits for the first
        # per place in the line (first, second, ...), the median over the repeats
        arrivals = [statistics.median(place) for place in zip(*map(sorted, measured))]
        assert abs(arrivals[0] / model[0] - 1) < 0.10, (n, measured, model, link)
        assert abs(arrivals[-1] / model[-1] - 1) < 0.10, (n, measured, model, link)
        assert all(abs(a - m) < 1.1 * one for a, m in zip(arrivals, model)), (n, measured, model)
    assert leftovers(own_prefix()) == []


@root_only
def test_async_is_faster_than_sync_at_2_mbits_measured_and_simulated():
    from pslab.processes import network
    from pslab.processes.calibrate import calibrate

    cases = [network.Case(mode, mode, 4, 2, group="2 Mbit/s", bandwidth=2e6)
             for mode in ("sync", "async")]
    rows = network.compare(calibrate(2e6), cases, steps=12)
    measured, simulated = network.ranking(rows)["2 Mbit/s"]
    assert measured == simulated == ["async", "sync"], [(r.measured_step, r.simulated_step)
                                                        for r in rows]
    assert leftovers(own_prefix()) == []


def test_a_backup_round_s_workers_get_their_weights_in_rank_order_on_every_shard():
    """Backup(1): after a round's update each shard answers the round's members in rank order
    (the late, dropped worker at once), as the simulated server books their fetches; in thread
    wake-up order, which differs per shard, a worker waits for its last shard (measured at 1.5
    Mbit/s, 6 workers, 3 shards: 240 ms a step where the clock says 198; in order: 205-208)."""
    run = pslab.train(mode=pslab.Backup(1), workers=4, shards=2, steps=6, backend="processes",
                      timeout=10, cluster=pslab.Cluster(compute_time=1.0, speeds=[1, 1, 1, 0.4]))
    checked = 0
    for t in range(1, 6):
        for s in range(2):
            members = sorted(x.worker for x in run.timeline if x.kind == "push" and
                             x.step == t - 1 and x.shard == s and x.note is None)
            fetches = sorted((x for x in run.timeline if x.kind == "fetch" and x.step == t
                              and x.shard == s and x.worker in members), key=lambda x: x.start)
            assert [x.worker for x in fetches] == members, (t, s)
            checked += len(members) > 1
    assert checked >= 8


@root_only
def test_a_push_does_not_wait_for_the_shard_s_answers_to_the_other_workers():
    """Sync at 1 Mbit/s, 5 workers, 2 shards (a grid case): a round's answers leave a shard
    one after another over ~200 ms, while the first workers already compute and push. gloo
    sends only into a posted receive, whose notice travels the answers' way; the shard posts
    the receive of a worker's next push before answering it, so a push waits only for the
    pushes ahead of it (the model's line), not for the other workers' answers. With the
    receive posted after the answer, the pushes took ~110 ms (median) instead of ~35 and a
    step was measured 22-28 % slower than the clock's (quiet, load 1.5-3.7). The clock
    predicts the step as the bench does: with the per-message cost measured beside the link
    at 10 ms of compute (`network.overhead`, never a run of the case itself); without it, and
    with the shaper's credit that the clock now gives, the clock read 10.2 % fast quietly."""
    from dataclasses import replace

    from pslab.processes import network
    from pslab.processes.calibrate import calibrate

    link = calibrate(RATE)
    case = network.Case("sync 1 Mbit/s", "sync", 5, 2, 2, bandwidth=RATE, compute=0.019)
    cost = network.overhead("sync", 5, link, 2, compute=0.01)
    ours = replace(link, messages={network.overhead_key(case): cost})
    measured = network.measure(case, link, steps=8)
    row_error = network.step_time(network.simulate(case, ours, 8)) / network.step_time(
        measured) - 1
    one = (measured.shard_bytes[0] + 20) / link.bandwidth  # one message alone on the line
    pushes = [s.end - s.start for s in measured.timeline if s.kind == "push"]
    assert statistics.median(pushes) < 1.3 * one, (statistics.median(pushes), one)
    assert abs(row_error) < 0.10, (row_error, cost)
    assert leftovers(own_prefix()) == []


@root_only
def test_a_host_s_processes_run_ahead_of_other_programs_and_the_caller_keeps_its_priority():
    """A command on a host (Hosts.run) and a process that enters a host (hosts_fork.enter, as
    forked ranks do) run PRIORITY ahead of their caller's nice value, in a session of their
    own whose autogroup (the kernel shares the cores among sessions first) has it too; the
    caller's nice value and session are what they were."""
    import os
    import subprocess
    import sys

    from pslab.processes.hosts import Hosts
    from pslab.processes.hosts_fork import PRIORITY

    show = ("import os; p = '/proc/self/autogroup'; "
            "ag = open(p).read().split()[-1] if os.path.exists(p) else 'none'; "
            "print(os.nice(0), os.getsid(0) == os.getpid(), ag)")
    mine, session = os.nice(0), os.getsid(0)
    grouped = PRIORITY if os.path.exists("/proc/self/autogroup") else "none"
    want = f"{max(-20, mine + PRIORITY)} True {grouped}"
    with Hosts(2, bandwidth=[1e6, None]) as hosts:
        out = hosts.run(0, [sys.executable, "-c", show], stdout=subprocess.PIPE, text=True)
        assert out.communicate(timeout=60)[0].split() == want.split()
        entered = subprocess.run(
            [sys.executable, "-c", f"from pslab.processes.hosts_fork import enter; "
                                   f"enter({hosts.namespace(1)!r}); {show}"],
            capture_output=True, text=True, timeout=60)
        assert entered.stdout.split() == want.split(), entered.stderr
    assert (os.nice(0), os.getsid(0)) == (mine, session) and PRIORITY < 0
    assert leftovers(own_prefix()) == []
