"""Chrome trace export: any run opens in Perfetto / chrome://tracing as figure 000's rows."""
import json
from collections import defaultdict

import pytest

import pslab
from pslab.tracefile import chrome_trace


def check_trace(trace: dict, run) -> None:
    """What Perfetto needs: complete events with µs times, nesting on every track, names for
    every track, flows in matched pairs inside slices."""
    events = trace["traceEvents"]
    slices = [e for e in events if e["ph"] == "X"]
    assert len(slices) == len(run.timeline)
    assert sorted(e["dur"] for e in slices) == pytest.approx(
        sorted(s.duration * 1e6 for s in run.timeline))
    by_track = defaultdict(list)
    for e in slices:
        assert e["ts"] >= 0 and e["dur"] >= 0
        by_track[e["pid"], e["tid"]].append((e["ts"], e["ts"] + e["dur"]))
    for track, spans in by_track.items():  # no partial overlap on one track
        spans.sort()
        assert all(b[0] >= a[1] - 1e-6 for a, b in zip(spans, spans[1:])), track
    named = {(e["pid"], e["tid"]) for e in events if e["ph"] == "M" and e["name"] == "thread_name"}
    assert set(by_track) <= named
    starts = {e["id"]: e for e in events if e["ph"] == "s"}
    ends = {e["id"]: e for e in events if e["ph"] == "f"}
    assert starts.keys() == ends.keys()
    assert bool(starts) == any(s.kind == "update" for s in run.timeline)  # no server, no arrows
    for fid in starts:
        for e in (starts[fid], ends[fid]):
            assert any(a <= e["ts"] <= b for a, b in by_track[e["pid"], e["tid"]])
        assert starts[fid]["ts"] <= ends[fid]["ts"]


@pytest.mark.parametrize("mode", ["sync", "async", pslab.SSP(1)])
def test_simulated_runs_make_valid_traces(mode, tmp_path):
    run = pslab.train(mode=mode, workers=3, steps=6, accumulate=2,
                      cluster=pslab.Cluster(speeds=[1, 1, 0.5]))
    path = run.to_chrome_trace(tmp_path / "run.json")
    trace = json.loads(path.read_text())
    check_trace(trace, run)
    pushes = sum(s.kind == "push" for s in run.timeline)
    assert sum(e["ph"] == "s" for e in trace["traceEvents"]) == pushes  # every push has its arrow
    counters = [e for e in trace["traceEvents"] if e["ph"] == "C" and e["name"] == "loss"]
    assert [c["args"]["loss"] for c in counters] == [r.loss for r in run.history]
    assert trace["otherData"]["pslab"]["mode"] == run.mode


def test_a_ring_allreduce_has_no_server_rows():
    run = pslab.train(mode="allreduce", workers=3, steps=4)
    trace = chrome_trace(run)
    check_trace(trace, run)
    assert {e["pid"] for e in trace["traceEvents"] if e["ph"] == "X"} == {1}  # workers only


def test_overlapping_transfers_get_their_own_tracks():
    # Many workers on a slow link: fetches queue and overlap on the links' rows.
    run = pslab.train(mode="sync", workers=6, steps=3, shards=1,
                      cluster=pslab.Cluster(latency=0.5))
    check_trace(chrome_trace(run), run)
    compute = {(e["pid"], e["tid"]) for e in chrome_trace(run)["traceEvents"]
               if e.get("name") == "compute"}
    assert len(compute) == 6  # one GPU row per worker


def test_a_timing_only_run_and_a_bad_argument():
    run = pslab.train(mode="async", workers=4, steps=5, numerics=False)
    trace = chrome_trace(run)
    check_trace(trace, run)
    assert not [e for e in trace["traceEvents"] if e["ph"] == "C" and e["name"] == "loss"]
