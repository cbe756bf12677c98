"""The collectives' ring latency is calibrated with the case's straggler where it has one
(network.overhead_key / overhead / bench.network.with_overhead): between two collectives every
rank has CPU work, and with no straggler all W ranks queue for the two cores at once, the last
one's wait on the step's path; behind a straggler only the straggler's is. Files measured
before keep their meaning: a straggler case without its own calibration takes the plain one.
All-reduce and ZeRO(3) are calibrated at their case's minibatches a step too
(network.ACCUMULATED)."""
import pytest

from pslab.processes import network
from pslab.processes.calibrate import Link

STRAGGLER = (1.0, 1.0, 1.0, 0.5)
LINK = Link(0.0002, 1e6, 8.8e6, ring={"allreduce 4": 0.0011, "zero3 4": 0.004,
                                      "allreduce 4 speeds 1:1:1:0.5": 0.0007},
            messages={"sync 4 1": 0.0005})


@pytest.mark.parametrize("mode, speeds, latency", [
    ("allreduce", None, 0.0011), ("allreduce", STRAGGLER, 0.0007),
    ("zero3", STRAGGLER, 0.004),  # measured without its straggler only: that one (old files)
    ("zero3", None, 0.004), ("sync", STRAGGLER, 0.0005), ("sync", None, 0.0005)])
def test_a_collective_with_a_straggler_takes_the_ring_latency_measured_with_it(
        mode, speeds, latency):
    case = network.Case("c", mode, 4, 1, speeds=speeds, bandwidth=8.8e6, compute=0.016)
    assert network.timing(case, LINK)["latency"] == latency


def test_the_key_names_the_speeds_of_a_collective_only():
    ring = network.Case("c", "allreduce", 4, speeds=STRAGGLER)
    assert network.overhead_key(ring) == "allreduce 4 speeds 1:1:1:0.5"
    assert network.overhead_key(ring, speeds=False) == "allreduce 4"
    assert network.overhead_key(network.Case("c", "allreduce", 4)) == "allreduce 4"
    assert network.overhead_key(network.Case("c", "sync", 4, 2, speeds=STRAGGLER)) == "sync 4 2"


def test_only_a_collective_is_calibrated_with_a_straggler():
    with pytest.raises(ValueError, match="speeds: only the collectives"):
        network.calibration("sync", 4, LINK, 1, None, 0.01, STRAGGLER)
    case, _, steps, _ = network.calibration("allreduce", 4, LINK, 1, None, 0.01, STRAGGLER)
    assert case.speeds == STRAGGLER and case.compute == 0.01 and steps == 20


@pytest.mark.parametrize("mode", ["allreduce", "zero3", "async"])
def test_the_bench_calibrates_a_collective_with_its_case_s_straggler(monkeypatch, mode):
    import bench.network as grid

    seen = []
    monkeypatch.setattr(network, "overhead", lambda *args, **kwargs: seen.append(kwargs) or 1e-3)
    case = network.Case("c", mode, 4, 1, speeds=STRAGGLER, bandwidth=8.8e6, compute=0.03)
    bare = Link(0.0, 1e6, 8.8e6)
    link = grid.with_overhead(case, bare)
    more = dict(accumulate=1) if mode in network.ACCUMULATED else {}
    assert seen == [dict(compute=0.01, speeds=STRAGGLER if case.collective else None, **more)]
    assert network.timing(case, link)["latency"] == 1e-3
    assert grid.with_overhead(case, link) is link and len(seen) == 1  # measured once


def test_the_collectives_are_calibrated_at_their_case_s_minibatches_and_older_links_serve():
    """A DDP or FSDP2 minibatch has CPU work beside its slept compute: the collectives' ring
    latency is measured at the case's minibatches a step (its own key); the parameter server
    keeps its key; a Link measured before (no such key) gives the key without them."""
    import bench.network as grid

    ring = network.Case("c", "allreduce", 4, accumulate=3, speeds=STRAGGLER, bandwidth=8.8e6)
    assert network.overhead_keys(ring) == ["allreduce 4 k3 speeds 1:1:1:0.5",
                                           "allreduce 4 speeds 1:1:1:0.5", "allreduce 4"]
    for mode, key in (("zero3", "zero3 4 k3"), ("sync", "sync 4 1")):
        assert network.overhead_key(network.Case("c", mode, 4, accumulate=3)) == key
    assert network.timing(ring, LINK)["latency"] == 0.0007  # measured before: its straggler's
    ours = Link(0.0, 1e6, 8.8e6, ring={**LINK.ring, "allreduce 4 k3 speeds 1:1:1:0.5": 0.002})
    assert network.timing(ring, ours)["latency"] == 0.002
    case, _, steps, _ = network.calibration("allreduce", 4, LINK, 1, None, 0.01, None, 3)
    assert case.accumulate == 3 and case.speeds is None and steps == 20
    for mode, k in (("zero3", 0), ("sync", 2), ("allreduce", 0), ("allreduce", True)):
        with pytest.raises(ValueError, match="accumulate"):
            network.calibration(mode, 4, LINK, 1, None, 0.01, None, k)
    seen = []
    calls = lambda *args, **kwargs: seen.append(kwargs) or 1e-3  # noqa: E731
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(network, "overhead", calls)
        link = grid.with_overhead(ring, Link(0.0, 1e6, 8.8e6))
    assert seen == [dict(compute=0.01, speeds=STRAGGLER, accumulate=3)]
    assert link.ring == {"allreduce 4 k3 speeds 1:1:1:0.5": 1e-3}


def test_recorded_all_reduce_steps_cost_more_ring_latency_the_more_minibatches_a_step():
    """Why all-reduce is calibrated at its minibatches: in the quiet grids measured with the
    shaper's credit, the ring latency that brings the clock to each all-reduce row's measured
    step (latency_for, the row's own steps), over the one calibrated at 1 minibatch a step, is
    about 1 at 1 minibatch and well above at 2-3, straggler or not."""
    import statistics
    from dataclasses import replace
    from pathlib import Path

    from bench.network_replay import replay

    ratios: dict[bool, list[float]] = {False: [], True: []}
    results = Path(__file__).resolve().parents[1] / "bench" / "results"
    for seed in (114927, 25644, 957376):
        done, _ = replay(str(next(results.glob(f"network-grid-*-seed{seed}-quiet.json"))))
        for r in (d["row"] for d in done if d["row"].case.mode == "allreduce"):
            calibrated = network.timing(r.case, r.link)["latency"]
            implied = network.latency_for(r.case, replace(r.link, ring={}, latency=0.0),
                                          r.steps, r.measured_step)
            ratios[r.case.accumulate > 1].append(implied / calibrated)
    assert len(ratios[False]) >= 6 and len(ratios[True]) >= 6, ratios
    assert 0.8 < statistics.median(ratios[False]) < 1.25, ratios
    assert statistics.median(ratios[True]) > 1.4, ratios
