"""Measured across hosts vs simulated: how far figure 000's and 001's timelines, and
the shards sweep, are from real processes on shaped links.

Each case runs twice with one timing model. Measured: one process per host (shards on their own
hosts behind links shaped to `bandwidth`, workers on unshaped hosts: the Cluster's picture, where
only a shard's link costs time), `transfers="wire"` (a transfer takes what the link takes), the
compute the Cluster's time slept for real. Simulated: `pslab.train` with the same Cluster, whose
latency and bandwidth come from `calibrate` on the same kind of link. Per case: makespan, per-step
time, waiting (idle and transfers) and staleness both ways, and the error of the per-step time.

Per-step time: the slowest worker's median step (see step_time); the makespan is reported beside
it as measured, start-up moments and all.
"""
from __future__ import annotations

import json
import statistics
import tempfile
import warnings
from dataclasses import dataclass, field, replace
from typing import Any, Callable

from ..checks import one_of
from .calibrate import Link
from .overhead_keys import ACCUMULATED, COLLECTIVE, overhead_key, overhead_keys
from .runtimes import both_ways, distance, staleness, step_time, waiting

COMPUTE = 0.03  # seconds per minibatch: transfers of ~20 ms at 4 Mbit/s weigh as much
BANDWIDTH = 4e6  # bits per second of a shard's link


MODES = ("sync", "async", "ssp:1", "backup:1", *COLLECTIVE)  # as `python -m pslab.processes`


@dataclass(frozen=True)
class Case:
    """One measured-vs-simulated run. mode: one of MODES ("ssp:1" is SSP(1), "backup:1"
    Backup(1), "zero3" ZeRO(3)); bandwidth: bits per second of each shaped link (a shard's;
    with all-reduce and ZeRO(3) every worker's); compute: seconds per minibatch."""
    name: str
    mode: str = "sync"
    workers: int = 2
    shards: int = 1
    accumulate: int = 1
    speeds: tuple | None = None  # a straggler: (1, 1, 0.5)
    group: str = ""  # the ranking compares the cases of one group
    bandwidth: float = BANDWIDTH
    compute: float = COMPUTE

    def settings(self) -> dict[str, Any]:
        return dict(mode=self.mode, workers=self.workers, shards=self.shards,
                    accumulate=self.accumulate)

    @property
    def collective(self) -> bool:
        return self.mode in COLLECTIVE

    def policy(self):
        """The mode as the clock takes it."""
        from ..modes import ZeRO, policy_for
        from .torchrun import parse_mode

        one_of("mode", self.mode, MODES)
        return policy_for(ZeRO(3) if self.mode == "zero3" else parse_mode(self.mode))


STRAGGLER = (1.0, 1.0, 0.5)
CASES = (
    Case("000 sync, straggler", "sync", 3, speeds=STRAGGLER, group="000"),
    Case("000 async, straggler", "async", 3, speeds=STRAGGLER, group="000"),
    Case("001 accumulate 1", accumulate=1, group="001"),
    Case("001 accumulate 2", accumulate=2, group="001"),
    Case("shards S=1", shards=1, group="shards"),
    Case("shards S=2", shards=2, group="shards"),
    Case("shards S=4", shards=4, group="shards"),
)


LINKS: dict[str, Any] = {}  # the Cluster's link-model arguments the simulated side runs with
BURST = True  # the parameter server's links give the shaper's credit (Link.burst); False: none


def timing(case: Case, link: Link) -> dict[str, Any]:
    """The case's Cluster arguments: compute as set, the link as calibrated, no update cost
    (the server's arithmetic takes ~0.1 ms for real, and is left to the measurement). The
    latency is the one measured for the case's protocol beside the link (`overhead`: the
    collectives' per ring step, the parameter server's per message, by `overhead_key`) where
    the link has it (a collective with a straggler whose link has only the one measured
    without: that one), else the link's own (the ping-pong's); ZeRO(3)'s reduce-scatter carries
    the bytes the link's ring latencies were measured with (gloo's). The parameter server's
    links give the shaper's credit after a pause (Cluster's burst: `Link.burst`, unless BURST
    is False); the ring's transfers take none."""
    measured = link.ring if case.collective else link.messages
    latency = next((measured[k] for k in overhead_keys(case) if k in measured), link.latency)
    scatter = dict(reduce_scatter=link.reduce_scatter) if case.mode == "zero3" else {}
    if BURST and not case.collective and LINKS.get("links", "duplex") == "duplex":
        scatter["burst"] = link.burst
    return dict(compute_time=case.compute, **scatter,
                speeds=None if case.speeds is None else list(case.speeds),
                latency=latency, bandwidth=link.bandwidth, update_time=0.0, **LINKS)


CALIBRATION_SECONDS = 2.5  # about how long an overhead calibration measures (its steps)


def overhead(mode: str, workers: int, link: Link, shards: int = 1, steps: int | None = None,
             compute: float = 0.01, speeds: tuple | None = None, accumulate: int = 1) -> float:
    """Seconds a message of `mode`'s protocol costs beside its bytes, measured beside the
    link: the protocol across `workers` hosts (and `shards` shard hosts), each shaped link
    like `link` (its `asked` rate), `accumulate` minibatches of `compute` seconds a step,
    no straggler (a collective: `speeds`, below); its per-step time less the clock's at
    latency 0, over the clock's seconds per second of latency (the messages, or ring steps,
    on a step's path). Steps: the collectives 20 unless given; the parameter server as many
    as take CALIBRATION_SECONDS on the clock, 6 to 60, unless given, and where 60 steps take
    less than half of that, the least step of three runs (one run of 5 ms steps gave 0.3 to
    1.1 ms a message at load 6-8: a whole run moves, not single steps; another program on the
    machine only ever adds time to a run, so the least is the run it disturbed least). Root
    only; 2-10 s.

    All-reduce and ZeRO(3) (`ring_latency`): what a step of gloo's ring costs on top of its
    bytes: a send and a receive that wait for each other, processes woken on shared cores, the
    framework's hooks and copies, a message crossing two shapers (both hosts' links), and the
    ranks' CPU work between collectives: with no straggler all W queue for two cores at once
    and the last one's wait is on the step's path; behind a straggler only its own is. So a
    case with a straggler takes the latency measured with its `speeds` (`overhead_key`), and
    a case of k minibatches a step the one measured with `accumulate` k (see ACCUMULATED).
    Parameter server: what a push or an answer costs besides what the ping-pong measured:
    the shard's and the worker's own work per message (Python threads, the update and its
    report, gloo) on shared cores; it grows with the load, so it is measured just before the
    cases it serves, and with the time the processes slept between messages (measured at 43
    Mbit/s, load 6-7: 0.3-0.7 ms a message at 5 ms of compute, 0.8-1.2 ms at 10); the bench
    measures it at 10 ms, never at a case's own compute (that would predict a case of one
    minibatch a step and no straggler from a run of itself). It cannot go below 0 (a Cluster's
    latency cannot); the clock it is measured against gives the shaper's credit as `timing`
    does."""
    case, bare, steps, per_step = calibration(mode, workers, link, shards, steps, compute,
                                              speeds, accumulate)
    runs = 3 if not case.collective and steps * per_step < CALIBRATION_SECONDS / 2 else 1
    measured = min(step_time(measure(case, link, steps)) for _ in range(runs))
    return latency_for(case, bare, steps, measured)


def calibration(mode: str, workers: int, link: Link, shards: int, steps: int | None,
                compute: float, speeds: tuple | None = None,
                accumulate: int = 1) -> tuple[Case, Link, int, float]:
    """`overhead`'s case, its link at latency 0, its steps and the clock's step there."""
    one_of("mode", mode, MODES)
    if speeds is not None and mode not in COLLECTIVE:
        raise ValueError(f"speeds: only the collectives ({', '.join(COLLECTIVE)}) are "
                         f"calibrated with a straggler (got mode={mode!r})")
    if accumulate != 1 and (mode not in ACCUMULATED or isinstance(accumulate, bool)
                            or not isinstance(accumulate, int) or not 1 <= accumulate <= 64):
        raise ValueError(f"accumulate: only {', '.join(ACCUMULATED)} is calibrated with more "
                         f"than 1 minibatch a step, 1-64 (got {accumulate!r} for mode={mode!r})")
    case = Case("overhead", mode, workers, 1 if mode in COLLECTIVE else shards, accumulate,
                compute=compute, bandwidth=link.asked,
                speeds=None if speeds is None else tuple(speeds))
    bare = Link(0.0, link.bandwidth, link.asked, reduce_scatter=link.reduce_scatter)
    per_step = step_time(simulate(case, bare, 4))
    if steps is None and case.collective:
        steps = 20
    elif steps is None:  # (a round of 6 workers at 1 Mbit/s takes ~1 s, at 50 Mbit/s ~15 ms)
        steps = max(6, min(60, int(CALIBRATION_SECONDS / per_step)))
    return case, bare, steps, per_step


def latency_for(case: Case, bare: Link, steps: int, measured: float) -> float:
    """The latency that brings the clock's step of `case` to `measured` (>= 0)."""
    at = [step_time(simulate(case, replace(bare, latency=x), steps)) for x in (0.0, 1e-3)]
    per_second = (at[1] - at[0]) / 1e-3
    if per_second <= 0:  # no message on a step's path costs time: nothing to measure
        return 0.0
    return max(0.0, (measured - at[0]) / per_second)


def ring_latency(mode: str, workers: int, link: Link, steps: int = 20, compute: float = 0.01,
                 speeds: tuple | None = None, accumulate: int = 1) -> float:
    """Seconds a ring step of all-reduce's or ZeRO(3)'s collectives costs beside its bytes,
    measured beside the link: `overhead` of DDP ("allreduce") or FSDP2 ("zero3") across
    `workers` hosts, with `speeds` (a straggler) and `accumulate` minibatches where given."""
    one_of("mode", mode, COLLECTIVE)
    return overhead(mode, workers, link, steps=steps, compute=compute, speeds=speeds,
                    accumulate=accumulate)


def measure(case: Case, link: Link, steps: int, bandwidth: float | None = None):
    """The case across hosts. Parameter server modes: S shard hosts behind links shaped to
    the case's bandwidth, W unshaped worker hosts; the ranks are forked from the warm
    forkserver into their hosts (hosts_fork.py): no Python started and no torch imported per
    host, which on two cores was most of a case's time. All-reduce and ZeRO(3): W worker
    hosts, each behind a shaped link, DDP / FSDP2 in them (fsdp.train_across)."""
    bandwidth = case.bandwidth if bandwidth is None else bandwidth
    from .hosts import Hosts, run_across

    if case.collective:
        from .fsdp import train_across

        compute = [case.compute / v for v in case.speeds or [1.0] * case.workers]
        with Hosts(case.workers, bandwidth=bandwidth) as hosts:
            return train_across("fsdp" if case.mode == "zero3" else "ddp",
                                [hosts.namespace(r) for r in range(case.workers)], compute,
                                steps, case.accumulate)

    s, w = case.shards, case.workers
    with tempfile.TemporaryDirectory(prefix="pslab-network-") as out:
        return run_across(hosts=s + w, bandwidth=[bandwidth] * s + [None] * w, shards=s,
                          mode=case.mode, steps=steps, time_scale=1.0, timeout=20.0, out=out,
                          launcher="fork",
                          extra=["--transfers", "wire", "--accumulate", str(case.accumulate),
                                 "--cluster", json.dumps(timing(case, link))])


def simulate(case: Case, link: Link, steps: int):
    """The case on the virtual clock, with the settings the measured ranks take by default
    (python -m pslab.processes: lr 0.5, batch 32, seed 0, hidden 32)."""
    from ..cluster import Cluster
    from ..settings import Settings
    from ..simulate import simulate as on_the_clock

    given = dict(case.settings(), mode=case.policy(), shards=1 if case.collective else case.shards)
    with warnings.catch_warnings():  # a diverging loss (async at lr 0.5) times the same
        warnings.simplefilter("ignore", RuntimeWarning)
        return on_the_clock(Settings(**given, steps=steps, lr=0.5, batch=32, seed=0,
                                     hidden=32, cluster=Cluster(**timing(case, link))))


@dataclass
class Row:
    case: Case
    measured_step: float
    simulated_step: float
    measured_makespan: float
    simulated_makespan: float
    measured_waiting: float  # share of the workers' time not computing (see waiting())
    simulated_waiting: float
    measured_staleness: dict[int, float] = field(default_factory=dict)
    simulated_staleness: dict[int, float] = field(default_factory=dict)
    same_weights: bool | None = None  # sync: the measured run ends with the simulated weights
    both_ways: float = 0.0  # measured: share of link time with a fetch and a push at once
    link: Link | None = field(default=None, repr=False)  # the simulated side's, and its steps
    steps: int | None = None

    @property
    def error(self) -> float:
        """(simulated - measured) / measured of the per-step time."""
        return self.simulated_step / self.measured_step - 1

    @property
    def per_minibatch(self) -> tuple[float, float]:
        """Measured and simulated seconds per minibatch a worker computes: what the ranking
        compares (accumulate 2 does twice the minibatches per step)."""
        k = self.case.accumulate
        return self.measured_step / k, self.simulated_step / k

    def plain(self) -> dict[str, Any]:
        return dict(name=self.case.name, **self.case.settings(), group=self.case.group,
                    bandwidth=self.case.bandwidth, compute=self.case.compute,
                    speeds=None if self.case.speeds is None else list(self.case.speeds),
                    measured_step=self.measured_step,
                    simulated_step=self.simulated_step, error=self.error,
                    measured_makespan=self.measured_makespan,
                    simulated_makespan=self.simulated_makespan,
                    measured_waiting=self.measured_waiting,
                    simulated_waiting=self.simulated_waiting,
                    measured_staleness={str(k): v for k, v in self.measured_staleness.items()},
                    simulated_staleness={str(k): v for k, v in self.simulated_staleness.items()},
                    staleness_distance=distance(self.measured_staleness,
                                                self.simulated_staleness),
                    same_weights=self.same_weights, measured_both_ways=self.both_ways)


def compare_case(case: Case, link: Link, steps: int, bandwidth: float | None = None) -> Row:
    from .measured import same_weights

    m, s = measure(case, link, steps, bandwidth), simulate(case, link, steps)
    return Row(case, step_time(m), step_time(s), m.makespan, s.makespan, waiting(m),
               waiting(s), staleness(m), staleness(s),
               same_weights(m, s) if case.mode == "sync" else None,
               0.0 if case.collective else both_ways(m), link, steps)


def compare(link: Link | Callable[[float], Link], cases=CASES, steps: int | Callable = 20,
            bandwidth: float | None = None) -> list[Row]:
    """Every case measured and simulated. link: the calibrated link, or a function from a
    case's bandwidth (bits per second) to its calibrated link; steps: a number, or a function
    of the case. bandwidth: one shaping for every case (default: each case's own). A case
    with the settings of one already run reuses its runs ("001 accumulate 1" is "shards S=1")."""
    done: dict[tuple, Row] = {}
    rows = []
    for case in cases:
        rate = case.bandwidth if bandwidth is None else bandwidth
        key = (tuple(case.settings().items()), case.speeds, rate, case.compute)
        if key not in done:
            calibrated = link(rate) if callable(link) else link
            done[key] = compare_case(case, calibrated, steps(case) if callable(steps) else steps,
                                     rate)
        rows.append(Row(**dict(vars(done[key]), case=case)))
    return rows


def ranking(rows: list[Row]) -> dict[str, tuple[list[str], list[str]]]:
    """Per group, the case names fastest first (seconds per minibatch), measured and
    simulated."""
    out = {}
    for group in dict.fromkeys(r.case.group for r in rows):
        mine = [r for r in rows if r.case.group == group]
        out[group] = tuple([r.case.name for r in sorted(mine, key=lambda r: r.per_minibatch[i])]
                           for i in (0, 1))
    return out


def flips(rows: list[Row], alike_too: bool = False) -> list[dict[str, Any]]:
    """The pairs of one group whose order differs measured and simulated, with both gaps
    (slower / faster - 1 of seconds per minibatch): a flip on a 1 % measured gap is a near
    tie; one on 20 % is the model being wrong. A pair the clock times `alike` is none (with
    alike_too, only those are listed)."""
    return [f for f, both in _differing(rows) if both == alike_too]


def _differing(rows: list[Row]) -> list[tuple[dict[str, Any], bool]]:
    """Each pair ordered differently measured and simulated (neither side tied), and whether
    the clock times it `alike` (asked once a pair: it simulates both cases again)."""
    out = []
    for group in dict.fromkeys(r.case.group for r in rows):
        mine = [r for r in rows if r.case.group == group]
        for i, a in enumerate(mine):
            for b in mine[i + 1:]:
                (ma, sa), (mb, sb) = a.per_minibatch, b.per_minibatch
                if (ma < mb) != (sa < sb) and not tied(ma, mb) and not tied(sa, sb):
                    out.append((dict(group=group, cases=(a.case.name, b.case.name),
                                     measured_gap=max(ma, mb) / min(ma, mb) - 1,
                                     simulated_gap=max(sa, sb) / min(sa, sb) - 1),
                                alike(a, b)))
    return out


def tied(a: float, b: float) -> bool:
    """Equal to round-off: the clock times two modes alike along different sums (async and
    SSP(1) whose bound never binds: 6.7e-16 apart, seed 236586 #0)."""
    return abs(a - b) <= 1e-9 * max(abs(a), abs(b))


def alike(a: Row, b: Row) -> bool:
    """The clock times the two cases alike given one calibration: each, simulated with the
    other's link and the latency the other took (its measured cost per message or ring step),
    takes the other's step to round-off. Their simulated steps then differ only as two
    measurements of that one cost do, so their simulated order is no prediction of the model
    (seed 496514 #0: SSP(1), whose bound never binds, and async, 0.826 and 0.818 ms a message
    calibrated, 127.31 and 127.30 ms a step simulated). False where a Row lacks its link."""
    if a.link is None or b.link is None:
        return False
    for x, y in ((a, b), (b, a)):
        latency = timing(y.case, y.link)["latency"]
        link = replace(y.link, **{"ring" if x.case.collective else "messages":
                                  {overhead_key(x.case): latency}})
        if not tied(step_time(simulate(x.case, link, y.steps)), y.simulated_step):
            return False
    return True


def summary(rows: list[Row]) -> dict[str, Any]:
    """Median and worst |error|, the rankings, and whether they are the same: no pair of one
    group ordered one way measured and the other way simulated (flips). A pair tied on one
    side (two modes the clock times alike, e.g. async and Backup(1) with 2 workers; to
    round-off, `tied`, or given one calibration, `alike`: listed apart, "alike") is no flip,
    though the sorted lists may list it in either order."""
    errors = [abs(r.error) for r in rows]
    differing = _differing(rows)  # each pair's `alike` simulated once, not once a list
    flipped = [f for f, both in differing if not both]
    return dict(median_error=statistics.median(errors), worst_error=max(errors),
                ranking_same=not flipped, ranking=ranking(rows), flips=flipped,
                alike=[f for f, both in differing if both])


def live_check(link: Link, steps: int = 4) -> str:
    """One case (sync, 2 workers, 1 shard) measured across 3 hosts now and simulated with
    `link` (e.g. a committed file's calibration), in one sentence on two lines of at most 66
    characters (a projector's cell); where hosts cannot be made here, the reason."""
    from .hosts import unavailable

    why = unavailable()
    if why:
        return f"not measured here: {why}"
    row = compare_case(CASES[2], link, steps, link.asked)
    return (f"live, across 3 hosts: sync ends with the simulated weights: {row.same_weights};\n"
            f"measured {row.measured_step * 1e3:.1f} ms per step, simulated "
            f"{row.simulated_step * 1e3:.1f} ms ({row.error:+.1%})")
