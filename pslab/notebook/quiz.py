"""Predict, then run: self-study questions whose answers come from live pslab runs.

    from pslab import quiz
    q = quiz.question("000.finish")   # shows the question
    q.check("async")                  # right or wrong, and why, from the runs themselves

Nothing here stores an answer: each question holds a small experiment (a few `pslab.train`
calls) and reads the answer and the explanation off the runs it makes, the first time they are
needed. Change pslab and the answers follow.

Teachers can hide the answers: set the environment variable PSLAB_HIDE_ANSWERS=1 before
starting Jupyter, or call `quiz.hide_answers()`. Then `check` still says right or wrong (and,
when right, why), but never shows the correct answer; `answer()` refuses.
"""
from __future__ import annotations

import math

import numpy as np

from .. import replay
from ..drawing.dataflow_plot import flows
from ..training import train

__all__ = ["Question", "Truth", "question", "questions", "hide_answers", "show_answers",
           "answers_hidden", "QUESTIONS"]

from .question import (Bank, Question, Truth, answers_hidden, hide_answers,  # noqa: F401
                       show_answers)


# ---- the experiments --------------------------------------------------------------------------
def _start_updates() -> Truth:
    kw = dict(workers=3, steps=4, numerics=False)
    a, s = train(mode="async", **kw), train(mode="sync", **kw)
    return Truth(a.updates, f"in async mode the server applies every push as it arrives: "
                 f"3 workers x 4 pushes = {a.updates} updates (run.updates). In sync mode it "
                 f"averages each round into one update: {s.updates} updates.")


def _dp_rows() -> Truth:
    run = replay.figure002()
    f = flows(run)[0]
    cfg = run.settings
    return Truth(f.rows, f"worker 0 reads one minibatch of {cfg.batch} rows per step, for "
                 f"{cfg.steps} steps: {f.minibatches} x {cfg.batch} = {f.rows} rows. All "
                 f"{run.workers} workers together read {sum(x.rows for x in flows(run))} rows: "
                 f"each step is one global batch of {run.workers * cfg.batch} rows, cut in "
                 f"{run.workers} slices.")


def _dp_double() -> Truth:
    base = replay.figure002()
    kw = {k: getattr(base.settings, k) for k in ("mode", "batch", "steps", "shards", "seed")}
    more = train(workers=6, numerics=False, cluster=base.settings.cluster, **kw)
    ratio = more.makespan / base.makespan
    verdict = "halves" if ratio < 0.7 else "doubles" if ratio > 1.4 else "about the same"
    return Truth(verdict, f"every worker still makes {kw['steps']} steps of one minibatch, so "
                 f"the clock barely moves: {base.makespan:.2f} s with 3 workers, "
                 f"{more.makespan:.2f} s with 6 (x{ratio:.2f}; a little more waiting, since "
                 f"each sync round waits for the slowest of more workers). What doubles is the "
                 f"data per step: a global batch of {6 * kw['batch']} rows instead of "
                 f"{3 * kw['batch']}. Data parallelism saves time only if you then need fewer "
                 f"steps.")


def _dp_bytes() -> Truth:
    run = replay.figure002()
    sizes = {n: int(w.numel()) for n, w in run.weights.items()}
    total = sum(run.shard_bytes)
    parts = " + ".join(f"{sizes[n]} ({n})" for n in ("W_h", "b_h", "W_o", "b_o"))
    return Truth(total, f"a push sends the gradient of every parameter: {parts} = "
                 f"{sum(sizes.values())} float32 values x 4 bytes = {total} bytes, split over "
                 f"the {len(run.shard_bytes)} shards as {run.shard_bytes}.")


def _ps_finish() -> Truth:
    sync, asyn = replay.figure000()
    ms, ma = sync.makespan, asyn.makespan
    verdict = "same" if math.isclose(ms, ma, rel_tol=1e-9) else ("async" if ma < ms else "sync")
    g1 = sum(s.duration for s in asyn.timeline if s.worker == 0 and s.kind == "compute")
    return Truth(verdict, f"makespan sync {ms:.2f} s, async {ma:.2f} s. Both end when G0, the "
                 f"straggler, has computed its two minibatches ({g1:.1f} s of compute) and "
                 f"pushed them: no mode makes G0 faster. What async buys is updates and less "
                 f"waiting: {asyn.updates} updates instead of {sync.updates}, idle "
                 f"{asyn.idle_fraction:.1%} of GPU time instead of {sync.idle_fraction:.1%}.")


def _ps_stale() -> Truth:
    _, asyn = replay.figure000()
    rec = next(r for r in asyn.history if r.worker == 0 and r.step == 0)
    before = [f"G{r.worker}" for r in asyn.history if r.version < rec.version]
    return Truth(rec.staleness, f"G0 fetched version 0 and computed on it; by the time its "
                 f"push is applied (t = {rec.time:.2f} s) the server has already applied "
                 f"{' and '.join(before)}'s pushes, so G0's gradient is {rec.staleness} "
                 f"versions behind (run.history[{rec.version - 1}].staleness).")


def _ps_accuracy() -> Truth:
    from .dashboard_settings import PRESETS

    s = PRESETS["default"]
    runs = {m: train(**s.changed(mode=m).train_kwargs()) for m in ("sync", "async")}
    best = max(runs, key=lambda m: runs[m].final_accuracy)
    a = runs["async"]
    return Truth(best, f"after {s.steps} steps per worker, test accuracy sync "
                 f"{runs['sync'].final_accuracy:.1%}, async {a.final_accuracy:.1%}. Async made "
                 f"{a.updates} updates (sync {runs['sync'].updates}), but each gradient was "
                 f"computed on weights {np.mean(a.staleness):.1f} versions old on average (at "
                 f"most {max(a.staleness)}); at lr {s.lr} these stale steps overshoot and the "
                 f"loss climbs. Try a smaller lr, or SSP, on the dashboard.")


def _ps_ssp() -> Truth:
    from .dashboard_settings import PRESETS

    s = PRESETS["default"]
    ssp = train(numerics=False, **s.changed(mode="SSP", ssp=1).train_kwargs())
    asyn = train(numerics=False, **s.changed(mode="async").train_kwargs())
    m_ssp, m_async = float(np.mean(ssp.staleness)), float(np.mean(asyn.staleness))
    verdict = ("the same" if math.isclose(m_ssp, m_async, rel_tol=0.02)
               else "lower" if m_ssp < m_async else "higher")
    return Truth(verdict, f"mean staleness {m_ssp:.2f} versions under SSP(1), {m_async:.2f} "
                 f"under async: SSP(1) lets no worker start step t+2 before every worker has "
                 f"pushed step t, so the fast workers wait for G0 instead of running ahead "
                 f"(idle {ssp.idle_fraction:.1%} vs {asyn.idle_fraction:.1%} of GPU time). The "
                 f"bound is on steps, not versions: with {s.workers} workers pushing, one step "
                 f"is already up to {s.workers} versions, and single updates can still be "
                 f"{max(ssp.staleness)} versions stale (async: {max(asyn.staleness)}).")


def _acc_idle() -> Truth:
    every, _ = replay.figure001(sync_time=0.0)
    d = np.array(replay.FIGURE001_DURATIONS)
    waits = [(d[:, k].max() - d[:, k]) for k in range(d.shape[1])]
    detail = "; ".join(f"in step {k + 1} the slowest block is {d[:, k].max():g} s, so GPU0-3 "
                       f"wait " + " + ".join(f"{w:.1f}" for w in waits[k]) + " s"
                       for k in range(len(waits)))
    return Truth(round(every.idle_time, 6), f"every step ends with a sync that waits for the "
                 f"slowest GPU: {detail}. Total {every.idle_time:.1f} GPU-seconds "
                 f"(run.idle_time).")


def _acc_saving() -> Truth:
    every, acc = replay.figure001(sync_time=1.0)
    saved = every.makespan - acc.makespan
    return Truth(round(saved, 6), f"makespan {every.makespan:.1f} s updating every step, "
                 f"{acc.makespan:.1f} s accumulating two: one gradient sync instead of two "
                 f"(1 s saved), and the GPUs wait once, for the slowest sum of two blocks, "
                 f"instead of twice for the slowest block (white idle "
                 f"{every.idle_time - every.sync_wait:.1f} -> {acc.idle_time - acc.sync_wait:.1f} "
                 f"GPU-seconds, waiting in the sync {every.sync_wait:.1f} -> {acc.sync_wait:.1f})."
                 f" Saved: {saved:.1f} s.")


def _acc_same() -> Truth:
    kw = dict(mode="sync", workers=4, steps=10, seed=2)
    a = train(accumulate=2, batch=16, **kw)
    b = train(accumulate=1, batch=32, **kw)
    diff = max(float((a.weights[n] - b.weights[n]).abs().max()) for n in a.weights)
    same = diff < 1e-5
    return Truth("yes" if same else "no", f"each worker reads the same 32 rows either way "
                 f"(two minibatches of 16 are the two halves of one of 32), and the mean of two "
                 f"half-batch mean gradients is the full-batch mean gradient: after 10 updates "
                 f"the weights differ by at most {diff:.1e} (float rounding). Accumulation "
                 f"trades memory for time, not the result.")


QUESTIONS = Bank([
    Question(
        "start.updates", "3 workers each push 4 gradients in async mode. How many updates "
        "does the parameter server apply?", _start_updates, kind="number", tolerance=0,
        hint="what does the server do with each push in async mode?"),
    Question(
        "002.rows", "In the replay of figure 002 (3 workers, batch 32, 20 steps), how many "
        "training rows does worker 0 read?", _dp_rows, kind="number", unit="rows",
        hint="one minibatch per step, per worker."),
    Question(
        "002.double", "Double the workers of figure 002 from 3 to 6, same batch and steps. "
        "The makespan...", _dp_double, choices=("halves", "about the same", "doubles"),
        aliases={"same": "about the same", "stays the same": "about the same",
                 "half": "halves", "double": "doubles"},
        hint="how many steps does each worker make, and how long is one?"),
    Question(
        "002.bytes", "The MLP is 64 -> 32 -> 10 (W_h, b_h, W_o, b_o in float32). How many bytes "
        "does one worker push per step, over all shards?", _dp_bytes, kind="number",
        unit="bytes", hint="count the parameters; a float32 is 4 bytes."),
    Question(
        "000.finish", "Replay figure 000 (G0 computes at half speed, 2 steps each). Which mode "
        "finishes first?", _ps_finish, choices=("sync", "async", "same"),
        aliases={"synchronous": "sync", "asynchronous": "async", "both": "same",
                 "the same": "same", "equal": "same"},
        hint="who finishes last in each mode?"),
    Question(
        "000.stale", "In the async replay of figure 000, how many versions behind is G0's "
        "first gradient when the server applies it?", _ps_stale, kind="number",
        unit="versions", hint="which pushes reach the server before G0's?"),
    Question(
        "000.accuracy", "8 workers, G0 two times slower, lr 0.5, 30 steps each. Which mode "
        "reaches the higher test accuracy?", _ps_accuracy, choices=("sync", "async"),
        aliases={"synchronous": "sync", "asynchronous": "async"},
        hint="async makes more updates; on what weights is each one computed?"),
    Question(
        "000.ssp", "Same set-up, SSP(1) instead of async. The mean staleness of the applied "
        "updates is...", _ps_ssp, choices=("lower", "the same", "higher"),
        aliases={"same": "the same", "less": "lower", "more": "higher"},
        hint="what does SSP make a fast worker do when it is ahead of G0?"),
    Question(
        "001.idle", "Figure 001, updating after every step, with a free gradient sync: how "
        "many GPU-seconds are idle in total?", _acc_idle, kind="number", tolerance=0.05,
        unit="GPU-seconds", hint="in each step every GPU waits for the slowest one."),
    Question(
        "001.saving", "Figure 001 with a gradient sync of 1 s: how many seconds sooner does "
        "'accumulate two steps' finish than 'update every step'?", _acc_saving, kind="number",
        tolerance=0.05, unit="s", hint="count the syncs, and the waits before them."),
    Question(
        "001.same", "Sync, 4 workers: do 2 accumulated minibatches of 16 rows give the same "
        "weights as 1 minibatch of 32 rows?", _acc_same, choices=("yes", "no"),
        aliases={"y": "yes", "n": "no", "true": "yes", "false": "no", "same": "yes"},
        hint="which rows does each worker read, and what is a mean of means?"),
])


def question(key: str) -> Question:
    """A fresh question by key (see `questions()`)."""
    return QUESTIONS.question(key)


def questions(prefix: str = "") -> list[Question]:
    """All questions whose key starts with `prefix` ("000", "001", "002", "start")."""
    if not isinstance(prefix, str):
        raise ValueError(f"prefix must be a string such as '000', '001', '002' or 'start' "
                         f"(got {prefix!r})")
    return [question(k) for k in QUESTIONS if k.startswith(prefix)]



# ---- notebook 05: the classic results (pslab.classic) ----------------------------------------
def _classic_delay() -> Truth:
    from ..classic import bounded_delay

    r = bounded_delay(converge=())
    wait = r.series["waiting (% of worker time)"]
    sweep = ", ".join(f"τ = {t}: {w:.1f} %" for t, w in zip(r.xs, wait))
    return Truth(round(wait[0]), f"at τ = 0 (BSP) the workers wait {wait[0]:.1f} % of their "
                 f"time for the slowest one; {sweep}. Li et al. measured ≈ 50 % falling to "
                 "≈ 2 % at τ = 16.")


def _classic_backup() -> Truth:
    from ..classic import backup_workers

    r = backup_workers(bs=(0, 2))
    t0, t2 = r.series["step time (s)"]
    verdict = "faster" if t2 < t0 else "the same" if t2 == t0 else "slower"
    return Truth(verdict, f"{t0:.2f} s per update with 8 of 8, {t2:.2f} s with 8 of 10: the "
                 "round closes at the 8th push, so the two slowest minibatches of each round "
                 "no longer set its pace (their pushes are dropped).")


def _classic_ring() -> Truth:
    from ..classic import d2l_transfers

    ms = d2l_transfers().value("ring, 8 GPUs")
    return Truth(round(ms, 1), f"a ring moves 2(N−1)/N = 1.75 times the model per GPU in 14 "
                 f"steps of 20 MB: 1.75 · 160 MB / 54 GB/s = {ms:.2f} ms; d2l's ≈ 6 ms is 2 · 160 MB / "
                 f"54 GB/s = 5.93 ms.")


QUESTIONS.add([
    Question(
        "classic.delay", "4 workers whose minibatch times vary a lot, BSP (SSP(0)). What "
        "percentage of their time do they spend waiting for each other?", _classic_delay,
        kind="number", tolerance=10, unit="%", hint="each step waits for the slowest of 4."),
    Question(
        "classic.backup", "Sync over 8 workers; add 2 backup workers (the server averages the "
        "first 8 of 10 pushes). Time per update is...", _classic_backup,
        choices=("faster", "the same", "slower"),
        aliases={"same": "the same", "shorter": "faster", "longer": "slower"},
        hint="who decides when a round ends?"),
    Question(
        "classic.ring", "d2l's ≈ 6 ms counts twice the model, 2 × 160 MB, over 54 GB/s (three "
        "NVLink rings). A ring all-reduce over 8 GPUs sends each GPU only 2(N−1)/N of the "
        "model. How many milliseconds then?", _classic_ring, kind="number", tolerance=0.4,
        unit="ms", hint="each GPU sends 2(N−1) chunks of M/N bytes."),
])


# ---- notebook 07: from the parameter server to ZeRO (pslab.collectives, pslab.zero) ----------
def _zero_bytes() -> Truth:
    from ..modes import ZeRO

    kw = dict(workers=4, steps=2, numerics=False)
    ring, three = train(mode="allreduce", **kw), train(mode=ZeRO(3), **kw)
    moved = [sum(s.duration for s in r.timeline if s.worker == 0 and s.kind not in
                 ("compute", "idle")) for r in (ring, three)]
    ratio = moved[1] / moved[0]
    return Truth(round(ratio, 2), f"all-reduce is a reduce-scatter plus an all-gather, "
                 f"2Ψ(N−1)/N per worker; ZeRO-3 all-gathers the weights twice (forward and "
                 f"backward) and reduce-scatters once: 3Ψ(N−1)/N. Worker 0 spends "
                 f"{moved[0]:.3f} s against {moved[1]:.3f} s per run: x{ratio:.2f}.")


def _zero_memory() -> Truth:
    from ..zero import memory

    n = next(n for n in range(1, 1025) if memory(7.5e9, n, 3).total < memory(7.5e9, n, 1).total)
    one, three = memory(7.5e9, n, 1).total / 1e9, memory(7.5e9, n, 3).total / 1e9
    return Truth(n, f"stage 1 keeps the fp16 weights and gradients whole (4Ψ) and shards only "
                 f"the optimizer state (12Ψ/N); stage 3 shards all of it (16Ψ/N). 16/N < 4 + "
                 f"12/N as soon as N > 1: at N = {n}, {three:.1f} GB against {one:.1f} GB.")


QUESTIONS.add([
    Question(
        "zero.bytes", "Per step, ZeRO-3 moves how many times the bytes of a ring all-reduce?",
        _zero_bytes, kind="number", tolerance=0.05, unit="x",
        hint="count the collectives; each moves Ψ(N−1)/N per worker."),
    Question(
        "zero.memory", "The paper's model (Ψ = 7.5 B, mixed-precision Adam): from how many GPUs "
        "N on is ZeRO-3's memory per GPU below ZeRO-1's?", _zero_memory, kind="number",
        tolerance=0, unit="GPUs", hint="stage 1: 4Ψ + 12Ψ/N; stage 3: 16Ψ/N."),
])


# ---- notebook 08: pipeline parallelism (pslab.pipeline) ----------------------------------------
from .pipeline_questions import QUESTIONS as _PIPELINE  # noqa: E402

QUESTIONS.add(_PIPELINE)
