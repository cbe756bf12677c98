"""Which measured latency of a Link a case of the across-hosts comparison takes (network.Case:
its mode, workers, shards, minibatches a step and speeds), under the key its calibration was
saved with in Link.ring (the collectives, per ring step) or Link.messages (the parameter
server, per message)."""
COLLECTIVE = ("allreduce", "zero3")  # no server: every worker's own link is shaped
# Calibrated at the case's minibatches a step: each minibatch has CPU work beside its slept
# compute (forward, backward, DDP's no_sync hooks, FSDP2's unshard/reshard) that a 1-minibatch
# calibration spreads over its one step's ring steps; quiet recorded rows, implied / calibrated
# ring latency: all-reduce median 1.0 at k=1, 1.4 at k=2, 2.0 at k=3; ZeRO(3), whose clock has
# a gather per minibatch, ~1.0 at k=1 and 1.0-1.6 at k=3 (seed 550639, an Intel Xeon: 1.17-1.62
# at k=3, the case -5..-12 % clock-fast).
ACCUMULATED = ("allreduce", "zero3")


def overhead_key(case, speeds: bool = True, accumulate: bool = True) -> str:
    """Which measured latency of a Link a case takes: all-reduce and ZeRO(3) by mode, workers,
    the minibatches a step where more than one (ACCUMULATED) and, with a straggler,
    its speeds ("allreduce 4", "allreduce 4 k3 speeds 1:1:1:0.5", in Link.ring; speeds=False,
    accumulate=False: the key without them), the parameter server by mode, workers and shards
    ("sync 4 2", in Link.messages)."""
    if not case.collective:
        return f"{case.mode} {case.workers} {case.shards}"
    pattern = f" speeds {':'.join(f'{v:g}' for v in case.speeds)}" if speeds and case.speeds \
        else ""
    k = f" k{case.accumulate}" if accumulate and case.accumulate > 1 \
        and case.mode in ACCUMULATED else ""
    return f"{case.mode} {case.workers}{k}{pattern}"


def overhead_keys(case) -> list[str]:
    """The keys a case's latency may be found under, its own first: then without all-reduce's
    minibatches, then without the speeds too (Links measured before either)."""
    return list(dict.fromkeys([overhead_key(case), overhead_key(case, accumulate=False),
                               overhead_key(case, speeds=False, accumulate=False)]))
