"""Figure 003 on one clock: servers, controller replicas and child replicas as actors.

Each controller replica k, each round r: pulls Θ from all S shards (queueing behind other
replicas' jobs on a busy shard), samples m children from the Θ it got, hands them to its m
child replicas, waits for all m (sync within a replica), turns their rewards into one
REINFORCE gradient and pushes it to the shards. Across replicas the pushes are asynchronous
(each applied when it arrives, so Θ is stale by the updates other replicas landed meanwhile),
or, with mode="sync", averaged into one update per round behind a barrier.

Time and arithmetic are kept apart as in the core: the core `Clock` orders the events and the
core `Resource`s are the shards; the core `ParameterServer` does Θ ← Θ − lr·g at the moment a
push is booked; a child's training runs when the clock reaches its end. A child's virtual
time is its FLOPs: steps × seconds-per-step of the reference MLP × its relative cost.
Each shard is one `Resource` for its pulls, pushes and updates alike: the links of
`Cluster(links="one-at-a-time")`, whatever the cluster's `links` says (figure 003's
pictures and the NAS tables are drawn that way; duplex links are not modelled here).
"""
from __future__ import annotations

import math
from typing import Callable, NamedTuple

import numpy as np
import torch

from ..cluster import Cluster
from ..engine import Clock, Resource
from ..layout import Params
from ..server import ParameterServer
from ..timeline import Span, gaps
from . import child, reinforce
from .policies import SOFTMAX, Policy
from .space import Arch, Space

_SAMPLE = 11  # random stream id: the children a replica samples (per replica and round)


class Sample(NamedTuple):
    """One child trained: who sampled it, what it was, how it did, when it ran."""

    controller: int
    round: int
    child: int
    arch: Arch
    accuracy: float  # held-out accuracy R (nan in timing-only runs)
    start: float
    end: float


class Update(NamedTuple):
    """One update of Θ on the servers."""

    time: float  # when the last shard finished applying it
    controller: int | None  # whose gradient (None: a sync round of all replicas)
    round: int
    staleness: int  # server version when applied minus the version the gradient was taken at
    version: int  # updates applied so far, this one included
    reward: float  # mean accuracy of the children behind the gradient


class Tiers:
    """The actors of one search. Rows of the timeline (`Span.worker`): controllers 0..K−1,
    then child j of controller k at K + k·m + j; server rows are spans with worker None."""

    def __init__(self, server: ParameterServer, policy: Policy, theta0: Params, space: Space,
                 cluster: Cluster,
                 controllers: int, children: int, rounds: int, seed: int, *, sync: bool,
                 learn: bool, numerics: bool, budget: child.Budget, cube: bool, decay: float):
        self.server, self.layout, self.space = server, server.layout, space
        self.K, self.m, self.rounds, self.seed = controllers, children, rounds, seed
        self.sync, self.learn, self.numerics = sync, learn, numerics
        self.budget, self.cube = budget, cube
        self.policy = policy
        # children drawn without a pulled Θ: from the initial policy when timing a search;
        # uniformly for random search, whatever controller it stands beside (an LSTM's
        # initial Θ is random, so its first draws are not uniform; softmax's Θ = 0 is)
        self.draw0 = (policy.sampler(theta0, space) if learn else
                      SOFTMAX.sampler(SOFTMAX.init(space, seed), space))
        layout = self.layout
        self.resources = [Resource() for _ in range(layout.shards)]
        self._transfers = [(s, r, cluster.transfer_time(b))
                           for s, (r, b) in enumerate(zip(self.resources, layout.shard_bytes()))]
        self._updates = [(s, r, cluster.update_duration(layout.keys(s) / layout.size))
                         for s, r in enumerate(self.resources)]
        # seconds per step of a reference-size child, per child replica and round
        self.step_time = cluster.compute_durations(controllers * children, rounds, seed)
        self.baselines = [reinforce.Baseline(decay) for _ in range(controllers)]
        self.clock = Clock()
        self.timeline: list[Span] = []
        self.samples: list[Sample] = []
        self.history: list[Update] = []
        self.gradients: list[tuple[int, int, list]] = []  # (controller, round, [shard grads])
        self._pulled: list[tuple[list[int], Params | None]] = [([], None)] * controllers
        self._batch: dict[int, list[Sample]] = {}
        self._waiting: list[tuple[int, float]] = []  # sync: replicas that pushed, and when
        self.on_update: Callable[[Update], None] | None = None
        self.tick: Callable[[int], object] = lambda n: None  # n more children are in
        self.sampled: Callable[[int], object] = lambda n: None  # n more children sampled

    def run(self) -> float:
        for k in range(self.K):  # events (at 0, in replica order, before any they schedule):
            self.clock.at(0.0, self.start_round, k, 0)  # Ctrl-C stops between two of them
        return self.clock.run()

    # --- a replica's round: pull Θ, sample, hand out ---------------------------------------
    def start_round(self, k: int, r: int) -> None:
        if r == self.rounds:
            return
        t = self.clock.now
        if self.learn:
            t = self._transfer("fetch", k, r)
            pulls = [self.server.pull(s) for s in range(self.layout.shards)]
            theta = self.layout.unflatten(torch.cat([p for _, p in pulls])) \
                if self.numerics else None
            self._pulled[k] = ([v for v, _ in pulls], theta)
        theta = self._pulled[k][1]  # None: timing only, or random search (never learns)
        draw = self.draw0 if theta is None else self.policy.sampler(theta, self.space)
        rng = np.random.default_rng([self.seed, _SAMPLE, k, r])
        batch, last = [], t
        for j in range(self.m):
            arch = self.space.arch(draw(rng))
            row = self.K + k * self.m + j
            d = self.budget.steps * self.step_time[row - self.K, r] * child.relative_cost(arch)
            self.timeline.append(Span(row, None, "compute", t, t + d, r))
            batch.append(Sample(k, r, j, arch, math.nan, t, t + d))
            last = max(last, t + d)
        self._batch[k] = batch
        self.sampled(len(batch))
        for s in batch:  # children that finish early wait for their replica's slowest
            if s.end < last:
                self.timeline.append(Span(self.K + k * self.m + s.child, None, "idle", s.end,
                                          last, r))
        if last > t:
            self.timeline.append(Span(k, None, "idle", t, last, r))
        self.clock.at(last, self.children_done, k, r)

    def _transfer(self, kind: str, k: int, r: int) -> float:
        """Book one job per shard, all asked for now (as the core's workers do); time spent
        queued behind other replicas becomes idle. Returns when the last job ends."""
        now, end, jobs = self.clock.now, self.clock.now, []
        for s, shard, cost in self._transfers:
            a, b = shard.book(now, cost)
            self.timeline.append(Span(k, s, kind, a, b, r))
            jobs.append((a, b))
            end = max(end, b)
        for a, b in gaps(jobs, now, end):
            self.timeline.append(Span(k, None, "idle", a, b, r))
        return end

    # --- rewards back, gradient up ------------------------------------------------------
    def children_done(self, k: int, r: int) -> None:
        batch = self._batch.pop(k)
        if self.numerics:  # each child trains now (or comes from the cache)
            trained = []
            for s in batch:
                if self.clock.stopping:  # Ctrl-C: this round of replica k is left out whole
                    return  # (the children trained so far stay in the cache)
                trained.append(s._replace(accuracy=child.accuracy(s.arch, self.seed,
                                                                  self.budget)))
                self.tick(1)
            batch = trained
        else:
            self.tick(len(batch))
        self.samples += batch
        if not self.learn:
            self.start_round(k, r + 1)
            return
        grad = None
        if self.numerics:
            rewards = [reinforce.reward(s.accuracy, self.cube) for s in batch]
            adv = self.baselines[k].advantages(rewards)
            choices = [self._choices(s.arch) for s in batch]
            grad = self.layout.split(self.policy.gradient(self._pulled[k][1], self.layout,
                                                          self.space, choices, adv))
            self.gradients.append((k, r, grad))
        self._push(k, r, grad, float(np.mean([s.accuracy for s in batch])))

    def _choices(self, arch: Arch) -> tuple[int, ...]:
        sp = self.space
        out = [sp.depths.index(len(arch))]
        for w, a in arch:
            out += [sp.widths.index(w), sp.activations.index(a)]
        return tuple(out)

    def _push(self, k: int, r: int, grad: list | None, mean_acc: float) -> None:
        now, server = self.clock.now, self.server
        done = self._transfer("push", k, r)
        applied_at, stale, applied = now, 0, False
        fetched = self._pulled[k][0]
        for s, shard, cost in self._updates:
            stale = max(stale, server.versions[s] - fetched[s])
            if server.push(s, None if grad is None else grad[s]):
                u0, u1 = shard.book(now, cost)  # right behind this push
                self.timeline.append(Span(None, s, "update", u0, u1, r))
                applied, applied_at = True, max(applied_at, u1)
        if not self.sync:
            self._record(Update(applied_at, k, r, stale, server.versions[0], mean_acc))
            self.clock.at(done, self.start_round, k, r + 1)
            return
        self._waiting.append((k, done))
        if applied:  # the last replica's push completed the round
            mean = float(np.mean([s.accuracy for s in self.samples if s.round == r]))
            self._record(Update(applied_at, None, r, stale, server.versions[0], mean))
            self.clock.at(applied_at, self.round_applied, r)

    def _record(self, update: Update) -> None:
        self.history.append(update)
        if self.on_update is not None:
            self.on_update(update)

    def round_applied(self, r: int) -> None:
        """Sync mode: every replica waited for the round's one update; all start round r+1."""
        now, waiting = self.clock.now, self._waiting
        self._waiting = []
        for k, done in waiting:
            if done < now:
                self.timeline.append(Span(k, None, "idle", done, now, r))
            self.start_round(k, r + 1)

