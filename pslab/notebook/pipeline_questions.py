"""Notebook 08's predict-then-run questions: each answer read off a pipelined run."""
from __future__ import annotations

from ..cluster import Cluster
from ..pipeline import Pipeline
from ..training import train
from .question import Question, Truth


def _unit(schedule: str, p: int, m: int, times=(1, 1, 0)):
    return train(mode=Pipeline(stages=p, microbatches=m, schedule=schedule, times=times),
                 steps=1, numerics=False, cluster=Cluster.free())


def _bubble() -> Truth:
    run = _unit("1f1b", 8, 32)
    share = round(100 * run.bubble_share, 1)
    return Truth(share, f"the pipeline fills for p − 1 = 7 slots and drains for 7: each rank "
                 f"idles 7 of m + p − 1 = 39 slots, {share}% of its time (GPipe's definition); "
                 f"Megatron divides by the ideal time instead: 7/32 = "
                 f"{100 * run.bubble_ratio:.1f}%.")


def _memory() -> Truth:
    held = _unit("1f1b", 4, 8).activations[0]
    gpipe = _unit("gpipe", 4, 8).activations[0]
    return Truth(held, f"1F1B lets rank 0 run p = 4 forwards before its first backward, then "
                 f"one backward frees one micro-batch for each new forward: {held} held, "
                 f"where GPipe holds all {gpipe}.")


def _zero_bubble() -> Truth:
    zb, one = _unit("zb-h1", 4, 8, (1, 2, 1)), _unit("1f1b", 4, 8, (1, 2, 1))
    ratio = round(zb.bubble_time / one.bubble_time, 2)
    return Truth(ratio, f"ZB-H1 moves the weight-gradient halves W into the drain's idle "
                 f"slots: bubble (p − 1)(F + I − W) = {zb.bubble_time:g} s against 1F1B's "
                 f"(p − 1)(F + B) = {one.bubble_time:g} s, x{ratio}.")


QUESTIONS = [
    Question(
        "08.bubble", "1F1B on p = 8 stages with m = 32 micro-batches, every stage equal: what "
        "percentage of the ranks' time is bubble (idle)?", _bubble, kind="number",
        tolerance=1.0, unit="%", hint="count the slots of a rank: m of work in m + p − 1."),
    Question(
        "08.memory", "1F1B on p = 4 stages, m = 8 micro-batches: how many micro-batches' "
        "activations does rank 0 hold at its peak (GPipe: all 8)?", _memory, kind="number",
        tolerance=0, unit="micro-batches", hint="its warm-up forwards, before any backward."),
    Question(
        "08.zb", "ZB-H1 against 1F1B, F = I = W (the backward's two halves as long as the "
        "forward): its bubble is what fraction of 1F1B's?", _zero_bubble, kind="number",
        tolerance=0.03, unit="x", hint="1F1B's bubble: (p − 1)(F + I + W)."),
]
