"""Pipeline schedules as per-rank action lists: which forward and backward each rank runs, in
what order, for one training step of m micro-batches over p ranks holding v chunks each.

An action is (stage, kind, micro): `stage` the virtual stage (0 .. p·v − 1, in model order),
`kind` F (forward), B (the whole backward), I (its input-gradient half) or W (its
weight-gradient half), `micro` the micro-batch. A rank runs its list in order, each action as
soon as its input has arrived (pslab/pipeline/clock.py): the list is the schedule, the times
follow from it. The lists are the ones PyTorch's torch.distributed.pipelining runs (the same
formulas, written out here; tests/test_pipeline_torch.py compares them over a grid):

| schedule | chunks v | placement | PyTorch | paper |
|---|---|---|---|---|
| gpipe | 1 | loop | ScheduleGPipe | Huang et al. 2019 |
| 1f1b | 1 | loop | Schedule1F1B | PipeDream-Flush, Narayanan et al. 2021 |
| interleaved-1f1b | 1-4 | loop | ScheduleInterleaved1F1B | Narayanan et al. 2021 (Megatron) |
| looped-bfs | 1-4 | loop | ScheduleLoopedBFS | Lamy-Poirier 2023 (Breadth-First PP) |
| zb-h1 | 1-4 | loop | ScheduleInterleavedZeroBubble | Qi et al. 2024 (ZB-H1; v > 1: ZB1P) |
| zbv | 2 | V | ScheduleZBVZeroBubble | Qi et al. 2024 (ZB-V) |
| zb-h2 | 1 | loop | none (torch 2.13 has no ZB-H2) | Qi et al. 2024 (ZB-H2) |

Placement "loop": virtual stage k lives on rank k mod p; "V": rank r holds stages r and
2p − 1 − r, so the model goes down the ranks and back up.
"""
from __future__ import annotations

from typing import Callable, NamedTuple

SCHEDULES = ("gpipe", "1f1b", "interleaved-1f1b", "looped-bfs", "zb-h1", "zbv", "zb-h2")
CHUNKS = {"gpipe": (1,), "1f1b": (1,), "interleaved-1f1b": (1, 2, 3, 4), "looped-bfs": (1, 2, 3, 4),
          "zb-h1": (1, 2, 3, 4), "zbv": (2,), "zb-h2": (1,)}
SPLIT = ("zb-h1", "zbv", "zb-h2")  # the schedules that split the backward into I and W
ON_TORCH = SCHEDULES[:6]  # the ones torch.distributed.pipelining has (processes run those)


class Action(NamedTuple):
    """One step of a rank's list: virtual stage, kind (F, B, I, W) and micro-batch."""

    stage: int
    kind: str
    micro: int

    def __str__(self) -> str:  # PyTorch's spelling: 3F1 is stage 3's forward of micro-batch 1
        return f"{self.stage}{self.kind}{self.micro}"


def refusal(schedule: str, ranks: int, micro: int, chunks: int) -> str | None:
    """Why (schedule, p, m, v) cannot run, in a sentence naming the parameter, or None."""
    if schedule not in SCHEDULES:
        return f"schedule must be one of {', '.join(map(repr, SCHEDULES))} (got {schedule!r})"
    if chunks not in CHUNKS[schedule]:
        allowed = ", ".join(map(str, CHUNKS[schedule]))
        return f"chunks must be {allowed} for schedule {schedule!r} (got {chunks})"
    if schedule == "1f1b" and micro < ranks:
        return (f"microbatches must be >= stages for '1f1b': its warm-up fills the pipeline "
                f"(got microbatches={micro} with stages={ranks})")
    if schedule in ("interleaved-1f1b", "zb-h1") and micro % rounds(micro, ranks):
        return (f"microbatches must be a multiple of {rounds(micro, ranks)} (microbatches // "
                f"stages rounds of equal size) for {schedule!r} (got {micro})")
    return None


def rounds(micro: int, ranks: int) -> int:
    """How many rounds the interleaved schedules cut the micro-batches into."""
    return max(1, micro // ranks)


def rank_of(schedule: str, ranks: int, chunks: int) -> list[int]:
    """The rank each virtual stage lives on (placement loop, or V for zbv)."""
    stages = ranks * chunks
    if schedule == "zbv":
        return [k if k < ranks else stages - 1 - k for k in range(stages)]
    return [k % ranks for k in range(stages)]


def orders(schedule: str, ranks: int, micro: int, chunks: int = 1) -> list[list[Action]]:
    """Every rank's list of actions for one step. Raises ValueError on a refusal()."""
    why = refusal(schedule, ranks, micro, chunks)
    if why:
        raise ValueError(why)
    make = {"gpipe": _gpipe, "1f1b": _one_f_one_b, "interleaved-1f1b": _interleaved,
            "looped-bfs": _looped_bfs, "zb-h1": _zero_bubble, "zbv": _zbv}.get(schedule)
    if make is None:  # zb-h2: the ranks' lists are made together
        return _zb_h2(ranks, micro)
    return [make(r, ranks, micro, chunks) for r in range(ranks)]


def _gpipe(r: int, p: int, m: int, v: int) -> list[Action]:
    """All forwards, then all backwards (GPipe's flush)."""
    return [Action(r, "F", i) for i in range(m)] + [Action(r, "B", i) for i in range(m)]


def _one_f_one_b(r: int, p: int, m: int, v: int) -> list[Action]:
    """p − r forwards to fill the pipeline, then one backward, one forward, ..., then the
    backwards left: stage r holds at most p − r micro-batches' activations."""
    warm = min(m, p - r)
    out = [Action(r, "F", i) for i in range(warm)]
    f = warm
    for b in range(m):
        out.append(Action(r, "B", b))
        if f < m:
            out.append(Action(r, "F", f))
            f += 1
    return out


def _looped_bfs(r: int, p: int, m: int, v: int) -> list[Action]:
    """Every chunk's forwards, chunk by chunk, then the backwards in reverse (breadth first)."""
    mine = range(r, p * v, p)
    out = [Action(k, "F", i) for k in mine for i in range(m)]
    return out + [Action(k, "B", i) for k in reversed(mine) for i in reversed(range(m))]


def _warmup(r: int, p: int, m: int, v: int, factor: int) -> int:
    """Forwards before the first backward on rank r: (v − 1) rounds, plus `factor` per hop
    from the last rank, at most all of them."""
    per_round = m // rounds(m, p)
    return min((v - 1) * per_round + factor * (p - 1 - r), m * v)


def _interleaved(r: int, p: int, m: int, v: int) -> list[Action]:
    """Megatron's interleaved 1F1B: chunks taken a round of micro-batches at a time."""
    return _one_f_one_b_chunks(r, p, m, v, _warmup(r, p, m, v, 2), split=False)


def _zero_bubble(r: int, p: int, m: int, v: int) -> list[Action]:
    """ZB-H1 (v = 1; ZB1P for v > 1): 1F1B with the backward split into I and W, rank r
    deferring its W by r micro-batches to fill the drain's bubbles."""
    return _one_f_one_b_chunks(r, p, m, v, _warmup(r, p, m, v, 1), split=True, late=r)


def _one_f_one_b_chunks(r: int, p: int, m: int, v: int, warm: int, split: bool,
                        late: int = 0) -> list[Action]:
    """Warm-up forwards, then a forward and a backward (I with split) per step, each W
    `late` steps after its I, then the backwards left and the W's left."""
    per_round = m // rounds(m, p)
    total = v * m

    def fwd_stage(op: int) -> int:
        return (op // per_round) % v * p + r

    def bwd_stage(op: int) -> int:
        return (v - 1 - ((op - warm) // per_round) % v) * p + r

    done: dict[tuple[int, str], int] = {}

    def act(stage: int, kind: str) -> Action:
        i = done.get((stage, kind), 0)
        done[(stage, kind)] = i + 1
        return Action(stage, kind, i)

    back = "I" if split else "B"
    out: list[Action] = []
    backs: list[int] = []  # ops whose backward ran, in order: their W's follow in that order
    weights = 0
    for op in range(total + warm):
        if op < total:
            out.append(act(fwd_stage(op), "F"))
        if op >= warm:
            out.append(act(bwd_stage(op), back))
            backs.append(op)
            if split and op - warm >= late:
                out.append(act(bwd_stage(backs[weights]), "W"))
                weights += 1
    while split and weights < len(backs):
        out.append(act(bwd_stage(backs[weights]), "W"))
        weights += 1
    return out


def _zbv(r: int, p: int, m: int, v: int) -> list[Action]:
    """ZB-V: two chunks per rank in a V (stages r and 2p − 1 − r), I and W split, written for
    max(m, 2p − 1) micro-batches and the ones past m dropped (PyTorch's construction)."""
    n = max(2 * p - 1, m)
    down, up = r, 2 * p - 1 - r
    count = {(s, k): 0 for s in (down, up) for k in "FIW"}
    out: list[Action] = []

    def add(stage: int, kind: str) -> None:
        out.append(Action(stage, kind, count[(stage, kind)]))
        count[(stage, kind)] += 1

    for _ in range(2 * (p - r) - 1):
        add(down, "F")
    for _ in range(r):
        add(up, "F")
        add(down, "F")
    for _ in range(p - r):
        add(up, "F")
        add(up, "I")
        add(up, "W")
    while count[(up, "F")] < count[(down, "F")] or count[(down, "F")] < n:
        if count[(down, "F")] < n:
            add(down, "F")
        add(down, "I")
        add(down, "W")
        add(up, "F")
        add(up, "I")
        add(up, "W")
    for _ in range(r):
        add(down, "I")
        add(up, "I")
    weights_down = count[(down, "W")]
    for _ in range(p - r):
        add(down, "I")
        out.append(Action(down, "W", weights_down))
        weights_down += 1
    count[(down, "W")] = weights_down
    while count[(up, "W")] < count[(up, "I")]:
        add(up, "W")
    while count[(down, "W")] < count[(down, "I")]:
        add(down, "W")
    return [a for a in out if a.micro < m]


def _zb_h2(p: int, m: int) -> list[list[Action]]:
    """ZB-H2: zero-bubble with more warm-up forwards. Written by running the ranks at unit
    times (F = I = W = 1, free links), each rank at every tick taking the first of: its next
    I if the gradient is there, else its next F if its input is there and it holds fewer than
    2p − 1 activations, else its oldest pending W. Rank r so runs 2(p − 1 − r) + 1 forwards
    before its first I, and its W's gather at the tail: the step is a parallelogram, every
    rank busy from its first action to its last (Qi et al. 2024, Fig. 4), 2p − 1 activations
    held on every rank when m >= 2p − 1."""
    cap, late = 2 * p - 1, 3 * m * p + 2 * p  # nothing can still be waiting by then
    f_end: dict[tuple[int, int], int] = {}
    i_end: dict[tuple[int, int], int] = {}
    next_f, next_i, held = [0] * p, [0] * p, [0] * p
    pending: list[list[int]] = [[] for _ in range(p)]
    out: list[list[Action]] = [[] for _ in range(p)]
    left, t = 3 * m * p, 0
    while left:
        if t > late:
            raise RuntimeError(f"zb-h2 stalled at p={p}, m={m}")  # cannot happen: a guard
        for r in range(p):
            i, f = next_i[r], next_f[r]
            grad = f_end.get((r, i)) if r == p - 1 else i_end.get((r + 1, i))
            if i < f and grad is not None and grad <= t:
                kind, j = "I", i
                i_end[(r, i)], next_i[r] = t + 1, i + 1
                pending[r].append(i)
            elif f < m and held[r] < cap and (r == 0 or f_end.get((r - 1, f), t + 1) <= t):
                kind, j = "F", f
                f_end[(r, f)], next_f[r], held[r] = t + 1, f + 1, held[r] + 1
            elif pending[r]:
                kind, j = "W", pending[r].pop(0)
                held[r] -= 1
            else:
                continue
            out[r].append(Action(r, kind, j))
            left -= 1
        t += 1
    return out


def check_complete(lists: list[list[Action]], stages: int, micro: int,
                   where: Callable[[int], int]) -> None:
    """Raise ValueError unless every (stage, micro) has its forward and its backward (B, or
    I and W) exactly once, on the rank that holds the stage."""
    seen: dict[tuple[int, str, int], int] = {}
    for rank, actions in enumerate(lists):
        for a in actions:
            if where(a.stage) != rank:
                raise ValueError(f"action {a} is on rank {rank}, its stage on {where(a.stage)}")
            seen[(a.stage, a.kind, a.micro)] = seen.get((a.stage, a.kind, a.micro), 0) + 1
    for k in range(stages):
        for i in range(micro):
            full = seen.get((k, "B", i), 0)
            split = (seen.get((k, "I", i), 0), seen.get((k, "W", i), 0))
            if seen.get((k, "F", i)) != 1 or not (full == 1 and split == (0, 0)
                                                   or full == 0 and split == (1, 1)):
                raise ValueError(f"stage {k} micro-batch {i} is not run exactly once")
