"""The collectives' ring latency is calibrated with the case's straggler where it has one
(network.overhead_key / overhead / bench.network.with_overhead): between two collectives every
rank has CPU work, and with no straggler all W ranks queue for the two cores at once, the last
one's wait on the step's path; behind a straggler only the straggler's is. Files measured
before keep their meaning: a straggler case without its own calibration takes the plain one."""
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
    assert seen == [dict(compute=0.01, speeds=STRAGGLER if case.collective else None)]
    assert network.timing(case, link)["latency"] == 1e-3
    assert grid.with_overhead(case, link) is link and len(seen) == 1  # measured once
