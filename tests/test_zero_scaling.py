"""Horovod's scaling sweep with ZeRO: PS saturates where the ring keeps scaling, ZeRO-1/2 are
the ring's bytes and ZeRO-3 1.5x, and the crossover sits where the link loads say."""
import math

import pytest

import pslab
from pslab.classic.scaling import crossover, horovod_scaling


@pytest.fixture(scope="module")
def comm():
    return horovod_scaling("communication", workers=(1, 2, 4, 8, 16, 32))


def test_ps_saturates_where_the_ring_keeps_scaling(comm):
    ps, ring = comm.series["PS, 4 shards"], comm.series["ring all-reduce"]
    # PS throughput (efficiency x N) stops growing; the ring's keeps growing
    ps_tp = [e * n for e, n in zip(ps, comm.xs)]
    ring_tp = [e * n for e, n in zip(ring, comm.xs)]
    assert ps_tp[-1] < 1.2 * ps_tp[-2] and ring_tp[-1] > 1.5 * ring_tp[-2]
    assert comm.series["ZeRO-1"][1:] == comm.series["ZeRO-2"][1:] == ring[1:]  # same bytes
    assert math.isnan(comm.series["ZeRO-3"][0])  # nothing to shard over one worker
    assert all(z3 < r for z3, r in zip(comm.series["ZeRO-3"][1:], ring[1:]))
    assert comm.value("ZeRO-3 over ZeRO-1: communication time per step") == pytest.approx(1.5)
    # 4 shards beat one ring link at N = 2, 4; from 8 workers the ring is ahead
    assert comm.value("ring all-reduce overtakes PS from N =") == 8


def test_compute_bound_keeps_everyone_near_full_efficiency():
    r = horovod_scaling("compute", workers=(1, 2, 8))
    assert all(e > 0.95 for ys in r.series.values() for e in ys if not math.isnan(e))


def test_crossover_is_the_first_n_from_which_the_other_stays_ahead():
    assert crossover([1, 2, 4, 8], [1, 0.9, 0.5, 0.2], [1, 0.8, 0.6, 0.5]) == 4
    assert math.isnan(crossover([1, 2], [1, 0.9], [1, 0.8]))


@pytest.mark.parametrize("kwargs, name", [(dict(bound="network"), "bound"),
                                          (dict(workers=[2]), "workers"),
                                          (dict(workers=[1, 0]), "workers")])
def test_bad_sweeps_are_refused_by_name(kwargs, name):
    with pytest.raises(ValueError, match=name):
        pslab.classic.horovod_scaling(**kwargs)
