"""Predict, then run, for figure 003: questions whose answers come from live searches.

They are `pslab.quiz.Question`s (same checking, same hidden-answers switch for teachers); only
the experiments are NAS ones.

    q = pslab.notebook.nas_questions.question("003.updates"); q.check(30)
"""
from __future__ import annotations

from .question import Bank, Question, Truth
from ..nas import compare, scale
from ..nas.front import search
from ..nas.scale import server_busy

SEEDS = (0, 1, 2)  # the seeds the notebook compares on: their children are already cached


def _updates() -> Truth:
    r = search(numerics=False)
    s = search(numerics=False, mode="sync")
    return Truth(len(r.history), f"in async mode every replica's push is one update: 3 replicas "
                 f"x 10 rounds = {len(r.history)} updates, staleness up to "
                 f"{max(r.staleness)} versions. With mode='sync' the servers average the 3 "
                 f"gradients of a round into one update: {len(s.history)} updates, none stale.")


def _best() -> Truth:
    rows = compare.table(compare.duels(SEEDS))
    mean = {m: sum(r[4] for r in rows if r[1] == m) / len(SEEDS) for m in ("REINFORCE", "random")}
    learnt = {m: sum(r[3] for r in rows if r[1] == m) / len(SEEDS) for m in ("REINFORCE",
                                                                               "random")}
    diff = mean["REINFORCE"] - mean["random"]
    value = "about the same" if abs(diff) < 0.01 else "REINFORCE" if diff > 0 else "random"
    return Truth(value, f"over seeds {list(SEEDS)} the best child found averages "
                 f"{mean['REINFORCE']:.1%} for REINFORCE and {mean['random']:.1%} for random "
                 f"search (60 children each). What REINFORCE changes is the typical child: in "
                 f"the last 3 rounds its samples average {learnt['REINFORCE']:.1%}, random "
                 f"search's {learnt['random']:.1%}. With 14,424 architectures and many good "
                 f"ones, 60 random draws already include a good one.")


def _shards() -> Truth:
    few, many = scale.sweep_servers((1, 20))
    floor = scale.lower_bound()
    ratio = few.makespan / many.makespan
    value = ("about 20 times shorter" if ratio > 15 else "about the same" if ratio < 1.5
             else "shorter, but less than 20 times")
    return Truth(value, f"S=1: makespan {few.makespan:.0f} s, its one shard busy "
                 f"{server_busy(few):.0%} of the time; S=20: {many.makespan:.0f} s, busiest shard "
                 f"{server_busy(many):.0%} ({ratio:.1f}x shorter). 20 shards move and update "
                 f"20x less each, but every replica still talks to every shard (the latency "
                 f"of each request stays) and the children alone need {floor:.0f} s.")


QUESTIONS = Bank([
    Question(
        "003.updates", "S=2 shards, K=3 controller replicas, m=2 children each, 10 rounds, "
        "async. How many times is Θ updated on the servers?", _updates, kind="number",
        unit="updates", hint="how many gradients does one replica push per round?"),
    Question(
        "003.best", "Same budget (3 replicas x 2 children x 10 rounds = 60 children), "
        "averaged over 3 seeds: whose best child is more accurate?", _best,
        choices=("REINFORCE", "random", "about the same"),
        aliases={"reinforce": "REINFORCE", "random search": "random", "same": "about the same",
                 "the same": "about the same"}, hint="how rare is a good child in this space?"),
    Question(
        "003.shards", "The paper's scale, K=100 replicas x m=8 children, timing only: going "
        "from S=1 to S=20 server shards, the time to finish 5 rounds gets...", _shards,
        choices=("about 20 times shorter", "shorter, but less than 20 times",
                 "about the same"),
        aliases={"20x": "about 20 times shorter", "same": "about the same",
                 "shorter": "shorter, but less than 20 times"},
        hint="what does a shard still do per request, however small its slice of Θ?"),
])


def question(key: str) -> Question:
    """A fresh question by key: "003.updates", "003.best" or "003.shards"."""
    return QUESTIONS.question(key)
