"""Replaying a saved network grid with today's timing model: `python -m bench.network --replay
FILE.json [...]` (bench/network.py's command) re-simulates each saved case on its setting's
calibrated link, the measured step as it was measured, and prints the grid's summary for it,
labelled a replay. No root needed: nothing is measured.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Any

from .network import by_mode, case_row, goal_met, print_case, print_summary, steps_for


def replay(path: str, ring: dict[str, float] | None = None) -> tuple[list, dict[str, Any]]:
    """The measured rows of a saved grid file re-simulated with today's model: (Rows, the
    file's summary row). Each case's steps are the file's (or, in files that lack them, what
    steps_for gives now); its link is the file's calibration for its bandwidth, with the ring
    latencies measured beside it, or, where the file has none, `ring`'s by mode (assumed:
    seconds per ring step, not measured then; default 0). The file is read as untrusted
    (load_comparison: bounded in size), every field checked before use."""
    from pslab.checks import number, text
    from pslab.processes import load_comparison, network
    from pslab.processes.calibrate import Link

    saved = load_comparison(path)
    links = {}
    for r in saved.links:
        if "asked" in r:
            asked = number("asked", r["asked"], positive=True)
            rings, messages = r.get("ring", {}), r.get("messages", {})
            if not isinstance(rings, dict) or not isinstance(messages, dict):
                raise ValueError(f"{path}: a link's ring and message latencies must be dicts")
            # ring latencies measured before the clock had gloo's reduce-scatter: the paper's
            scatter = number("reduce_scatter", r.get("reduce_scatter", 1.0), low=1.0, high=100.0)
            links[asked] = Link(number("latency", r["latency"], high=1.0),
                                number("bandwidth", r["bandwidth"], positive=True), asked,
                                ring={text("ring key", k, none=False): number("ring", v, high=1.0)
                                      for k, v in rings.items()},
                                messages={text("message key", k, none=False):
                                          number("message latency", v, high=1.0)
                                          for k, v in messages.items()},
                                reduce_scatter=scatter)
            if "burst" not in r and network.BURST:  # measured against a clock without it
                links[asked] = replace(links[asked], messages={
                    k: remeasured(k, v, links[asked]) for k, v in links[asked].messages.items()})
    try:
        return [_replayed(r, links, ring or {}) for r in saved.cases], saved.summary
    except (KeyError, TypeError) as error:
        raise ValueError(f"{path}: a case row lacks or mistypes {error}") from None


def remeasured(key: str, latency: float, link) -> float:
    """A parameter server's overhead (Link.messages[key], "mode W S") measured against the
    clock without the shaper's credit (files from before Cluster's burst), brought to today's
    `timing`: the step it measured is the old clock's at that latency, and the latency that
    gives that step with the credit is the one today's bench would have found. Where it was 0
    the step measured was at most the old clock's at 0: taken as that (an upper bound)."""
    from pslab.processes import network

    mode, workers, shards = key.split()
    burst, network.BURST = network.BURST, False
    try:
        case, bare, steps, _ = network.calibration(mode, int(workers), link, int(shards), None,
                                                   0.01)
        measured = network.step_time(network.simulate(case, replace(bare, latency=latency),
                                                      steps))
    finally:
        network.BURST = burst  # as it was: False where a user switched the credit off
    return network.latency_for(case, bare, steps, measured)


def _replayed(r: dict[str, Any], links: dict, ring: dict[str, float]) -> dict[str, Any]:
    """One saved case row re-simulated (see replay)."""
    from pslab.checks import integer, number, one_of, text
    from pslab.processes import network

    speeds = r.get("speeds")
    if speeds is not None:
        speeds = tuple(number("speeds", v, positive=True) for v in speeds)
    case = network.Case(text("name", r["name"], none=False),
                        one_of("mode", r["mode"], network.MODES),
                        integer("workers", r["workers"], high=64),
                        integer("shards", r["shards"], high=64),
                        integer("accumulate", r["accumulate"], high=64), speeds,
                        text("group", r["group"], none=False),
                        number("bandwidth", r["bandwidth"], positive=True),
                        number("compute", r["compute"], positive=True, high=10.0))
    if case.bandwidth not in links:
        raise ValueError(f"no calibrated link for {case.name}'s bandwidth")
    link = links[case.bandwidth]
    keys = network.overhead_keys(case)  # (older files have none with the speeds or minibatches)
    if case.collective and not any(k in link.ring for k in keys):
        link = replace(link, ring={**link.ring, keys[-1]: ring.get(case.mode, 0.0)})
    steps = integer("steps", r["steps"], low=2, high=1000) if "steps" in r \
        else steps_for(case, link)
    sim = network.simulate(case, link, steps)
    return dict(row=network.Row(
        case, number("measured_step", r["measured_step"], positive=True),
        network.step_time(sim), number("measured_makespan", r["measured_makespan"]),
        sim.makespan, number("measured_waiting", r["measured_waiting"], low=-1.0),
        network.waiting(sim), link=link, steps=steps), load=number("load", r.get("load", 0.0)),
        was=number("simulated_step", r["simulated_step"], positive=True))


def print_replay(path: str, ring: dict[str, float] | None = None) -> dict[str, Any]:
    """Print a replay of `path` (see replay) as the grid prints itself; returns its summary."""
    from pslab.processes import network

    done, saved = replay(path, ring)
    rows = [d["row"] for d in done]
    loads = [d["load"] for d in done]
    print(f"REPLAY of {path}: measured {saved.get('date', '(date not saved)')} at load "
          f"{min(loads):.1f}-{max(loads):.1f}, seed {saved.get('seed', '?')}; simulated now "
          f"with today's model (the file's own simulated step in brackets); ring latency "
          f"where the file measured none: {ring or 0} (assumed, seconds per ring step); the "
          f"shaper's credit {'on' if network.BURST else 'off'}")
    for d in done:
        print_case(dict(case_row(d["row"]), load=d["load"]), end=f" [{d['was'] * 1e3:7.1f}]\n")
    summary = network.summary(rows)
    out = dict(summary, seed=saved.get("seed", "?"), cases=len(rows), by_mode=by_mode(rows),
               loads=[min(loads), max(loads)], links=network.LINKS)
    out["met"] = goal_met(out)
    print_summary(out)
    return out
