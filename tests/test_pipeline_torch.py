"""Each rank's action list equals what PyTorch's torch.distributed.pipelining runs for the same
(schedule, p, m, v), over p <= 8, m <= 32, v <= 4; where PyTorch refuses a case, so does
pslab. PyTorch builds its lists without GPUs or processes: a stand-in stage object carries
the only attributes the schedules read (rank, group size, stage count)."""
from __future__ import annotations

import logging
import warnings
from unittest import mock

import pytest

from pslab.pipeline.schedules import CHUNKS, ON_TORCH, SCHEDULES, orders, refusal

S = pytest.importorskip("torch.distributed.pipelining.schedules")

TORCH = {"gpipe": S.ScheduleGPipe, "1f1b": S.Schedule1F1B,
         "interleaved-1f1b": S.ScheduleInterleaved1F1B, "looped-bfs": S.ScheduleLoopedBFS,
         "zb-h1": S.ScheduleInterleavedZeroBubble, "zbv": S.ScheduleZBVZeroBubble}
# ScheduleDualPipeV overlaps a forward and a backward in one action ("(0F7;7B3)OVERLAP_F_B"):
# two micro-batches on one rank at once, which a rank that runs one action at a time (this
# clock, the papers' figures) does not express; it is left out, as its own schedule.


class Stand:
    """What a schedule's constructor reads of a PipelineStage."""

    def __init__(self, p: int, v: int):
        self.group_rank, self.group_size, self.num_stages = 0, p, p * v
        self.submod, self.stage_index = None, 0


def torch_lists(schedule: str, p: int, m: int, v: int) -> list[list[str]]:
    cls = TORCH[schedule]
    stages = Stand(p, 1) if issubclass(cls, S.PipelineScheduleSingle) else \
        [Stand(p, v) for _ in range(v)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        logging.disable(logging.WARNING)
        try:  # the lists only: the runtime's send/recv plan built from them is not needed
            with mock.patch.object(S._PipelineScheduleRuntime, "_prepare_schedule_with_comms"):
                order = cls(stages, m).pipeline_order
        finally:
            logging.disable(logging.NOTSET)
    return [[str(a) for a in order[r] if a is not None
             and a.computation_type.name != "REDUCE_GRAD"] for r in range(p)]


def cases(schedule: str):
    return [(p, m, v) for p in range(1, 9) for m in range(1, 33) for v in CHUNKS[schedule]]


def test_pytorch_has_every_schedule_but_zb_h2():
    """torch 2.13's schedule classes: ZB-H2 is not among them (nor is it a mode of
    ScheduleInterleavedZeroBubble), so its order cannot be compared and it runs on the
    virtual clock only (refused on processes by name, tests/test_pipeline_validation.py)."""
    names = {n for n in dir(S) if n.startswith("Schedule")}
    assert set(TORCH) == set(ON_TORCH) == set(SCHEDULES) - {"zb-h2"}
    assert {cls.__name__ for cls in TORCH.values()} | {"ScheduleDualPipeV"} == names


@pytest.mark.parametrize("schedule", ON_TORCH)
def test_every_rank_runs_pytorchs_list(schedule):
    """The whole grid. 1F1B's last rank: see the test below (PyTorch's list has a bug there;
    its runtime runs pslab's order)."""
    compared = refused = 0
    for p, m, v in cases(schedule):
        try:
            want = torch_lists(schedule, p, m, v)
        except (ValueError, AssertionError):
            want = None
        why = refusal(schedule, p, m, v)
        assert (want is None) == (why is not None), (schedule, p, m, v, why)
        if want is None:
            refused += 1
            continue
        got = [[str(a) for a in rank] for rank in orders(schedule, p, m, v)]
        if schedule == "1f1b":  # compared with the runtime below
            got, want = got[:-1], want[:-1]
        assert got == want, (schedule, p, m, v)
        compared += 1
    assert compared > 100 or schedule == "zbv" and compared == len(cases(schedule)) - refused


def runtime_order(p: int, m: int, rank: int) -> list[str]:
    """The actions Schedule1F1B's step() really runs on `rank`: its _step_microbatches with a
    stage that records forward_one_chunk / backward_one_chunk and no communication."""
    done: list[str] = []
    stage = mock.MagicMock()
    stage.stage_index, stage.num_stages, stage.group_size = rank, p, p
    stage.is_first, stage.is_last = rank == 0, rank == p - 1
    stage.forward_one_chunk.side_effect = lambda i, *a, **k: done.append(f"{rank}F{i}")
    stage.backward_one_chunk.side_effect = lambda i, *a, **k: done.append(f"{rank}B{i}")
    for name in ("get_fwd_recv_ops", "get_fwd_send_ops", "get_bwd_recv_ops",
                 "get_bwd_send_ops"):
        getattr(stage, name).return_value = []
    schedule = S.Schedule1F1B(stage, m)
    with mock.patch.object(S, "_batch_p2p", return_value=[]), \
            mock.patch.object(S, "_wait_batch_p2p"), \
            mock.patch.object(schedule, "_initialize_stage"), \
            mock.patch.object(schedule, "_maybe_compute_loss"), \
            mock.patch.object(schedule, "_maybe_get_loss"), \
            mock.patch.object(schedule, "_update_losses"):
        schedule._step_microbatches([()] * m, [{}] * m, None, None)
    return done


@pytest.mark.parametrize("p,m", [(1, 1), (2, 2), (4, 8), (4, 4), (3, 7), (8, 32), (8, 9)])
def test_1f1b_pytorchs_runtime_runs_pslabs_order_not_its_list(p, m):
    """PyTorch 2.13's Schedule1F1B.pipeline_order (what get_schedule_ops shows) gives the last
    rank 3F1, 3B0, 3F2, ..., 3F8, 3B7 for p=4, m=8: no F0, an F8 that does not exist (its
    _get_pipeline_order starts counting forwards at 1 when the rank has no warm-up). Its
    runtime (Schedule1F1B._step_microbatches, what step() runs) does F0, B0, F1, B1, ...:
    pslab's list, on every rank."""
    ours = [[str(a) for a in r] for r in orders("1f1b", p, m)]
    for rank in range(p):
        assert runtime_order(p, m, rank) == ours[rank]
    listed = torch_lists("1f1b", p, m, 1)[-1]
    assert listed != ours[-1]
    assert f"{p - 1}F{m}" in listed and f"{p - 1}F0" not in listed


def test_1f1b_pytorchs_runtime_runs_pslabs_last_rank_over_the_whole_grid():
    """The last rank, where PyTorch's list and its runtime differ, on every p <= 8, m <= 32 that
    1F1B takes (m >= p: 228 cases); the other ranks' lists equal PyTorch's on the whole grid
    (test_every_rank_runs_pytorchs_list) and its runtime on the cases above."""
    compared = 0
    for p in range(1, 9):
        for m in range(p, 33):
            last = [str(a) for a in orders("1f1b", p, m)[-1]]
            assert runtime_order(p, m, p - 1) == last, (p, m)
            compared += 1
    assert compared == 228


def test_gpipe_runtime_is_its_list():
    """ScheduleGPipe's list and pslab's agree; so does its runtime (all F, then all B)."""
    p, m = 4, 8
    assert torch_lists("gpipe", p, m, 1) == [[str(a) for a in r] for r in orders("gpipe", p, m)]


@pytest.mark.parametrize("schedule,p,m,v", [("interleaved-1f1b", 3, 6, 2), ("zb-h1", 4, 8, 1),
                                            ("looped-bfs", 2, 4, 2), ("zbv", 3, 6, 2)])
def test_the_runtimes_receives_are_posted_ahead_and_the_clock_posts_them_there(schedule, p, m,
                                                                              v):
    """processes.receives_of reads where PyTorch's runtime posts each receive off its own plan:
    every input that crosses ranks is asked for once, at or before the action that needs it, and
    a clock posting them there is no faster than one posting all at once. (Not always faster
    than posting each at its action: a receive posted early lets a message in, and the
    receiving host's own notices then wait behind what it sends: looped-bfs p=2 m=4 v=2,
    0.51 s against 0.44.)"""
    import pslab
    from pslab.pipeline.clock import execute
    from pslab.pipeline.processes import receives_of
    from pslab.pipeline.schedules import rank_of
    from pslab.pipeline.simulated import durations

    mode = pslab.Pipeline(stages=p, microbatches=m, schedule=schedule, chunks=v,
                          times=(0.02, 0.04, 0.02))
    lists, where = orders(schedule, p, m, v), rank_of(schedule, p, v)
    posts = receives_of(mode)
    for r, actions in enumerate(lists):
        asked = {key: i for i, keys in posts[r].items() for key in keys}
        assert sum(map(len, posts[r].values())) == len(asked)  # once each
        for i, (k, kind, mb) in enumerate(actions):
            key = ("F", k, mb) if kind == "F" else ("B", k, mb)
            crosses = (kind == "F" and k and where[k - 1] != r) or \
                (kind in "BI" and k < p * v - 1 and where[k + 1] != r)
            if crosses:
                assert asked[key] <= i, (r, i, key)
    seconds = durations(mode, pslab.Cluster(), 32)
    ends = [max(o.end for o in execute(lists, where, seconds, 0.01, {}, 0.0, receives=way)[0])
            for way in ("early", posts)]
    assert ends[0] <= ends[1]
