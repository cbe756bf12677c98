"""A pipeline across network namespaces (pslab.processes.hosts): rank r in host r, gloo over
shaped links, each action sleeping the clock's compute; its weights are the simulation's (to
float round-off, 1e-6 as on one host), its measured step at least the compute it slept, and
nothing is left. Root only (skipped elsewhere with the reason); the per-step error against
the simulation is a bench row (bench/pipeline_speed.py), not a timed assertion."""
import pytest
import torch

import pslab
from pslab.processes.hosts import Hosts, leftovers, own_prefix, unavailable

pytestmark = pytest.mark.skipif(unavailable() is not None, reason=str(unavailable()))


@pytest.mark.processes
@pytest.mark.parametrize("schedule", ["1f1b", "zb-h1"])
def test_a_pipeline_across_hosts_ends_with_the_simulations_weights(schedule, private_tmp,
                                                                   nothing_left):
    from pslab.pipeline.processes import span_time, step_time, train_across

    times = (0.01, 0.02, 0.01)
    pipe = pslab.Pipeline(stages=2, microbatches=4, schedule=schedule, times=times)
    with Hosts(2, bandwidth=8e6) as hosts:
        real = train_across(pipe, [hosts.namespace(r) for r in range(2)], steps=3, batch=32)
    sim = pslab.train(mode=pipe, steps=3, batch=32)
    assert real.complete and list(real.weights) == list(sim.weights)
    for name, w in sim.weights.items():
        torch.testing.assert_close(real.weights[name], w, rtol=0, atol=1e-6)
    free = pslab.train(mode=pipe, steps=3, numerics=False, cluster=pslab.Cluster.free())
    assert step_time(real) >= 0.95 * free.step_time  # the sleeps alone: (m + p − 1)(F + B)
    # the schedule's own span (no checks between steps): at least the sleeps, within the run
    assert 0.95 * free.step_time <= span_time(real) <= real.makespan
    assert leftovers(own_prefix()) == []
    nothing_left(private_tmp)


def test_across_hosts_is_refused_by_name_before_any_host():
    from pslab.pipeline.processes import train_across

    with pytest.raises(ValueError, match="times"):
        train_across(pslab.Pipeline(stages=2, microbatches=4), ["a", "b"])
    with pytest.raises(ValueError, match="hosts"):
        train_across(pslab.Pipeline(stages=2, microbatches=4, times=(1, 1, 0)), ["a"])
