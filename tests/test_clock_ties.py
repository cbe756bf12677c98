"""A pair the clock times alike given one calibration is no flip (network.alike): each case,
simulated with the other's link and latency, takes the other's step to round-off, so the gap
of their simulated steps is the gap of two measurements of one cost, not the model's. Checked
on a recorded grid: seed 496514 #0, SSP(1) (its bound never binds) and async, calibrated
0.826 and 0.818 ms a message, simulated 127.31 and 127.30 ms, measured 127.3 and 127.9."""
import json
from dataclasses import replace
from pathlib import Path

from pslab.processes import network
from pslab.processes.calibrate import Link

GRID = Path(__file__).resolve().parents[1] / "bench" / "results" / \
    "network-grid-20261128-seed496514-quiet.json"


def rows_of(setting: str, asked: str) -> list[network.Row]:
    """The setting's cases as the bench made its Rows: measured as recorded, simulated now with
    the recorded link and per-message costs (the shaper's credit off, as they were measured)."""
    saved = json.loads(GRID.read_text())["rows"]
    lk = next(r for r in saved if r["name"] == f"link calibrated ({asked} Mbit/s asked)")
    link = Link(lk["latency"], lk["bandwidth"], lk["asked"], messages=lk["messages"])
    out = []
    for r in (r for r in saved if r.get("name", "").startswith(setting + " ")):
        case = network.Case(r["name"], r["mode"], r["workers"], r["shards"], r["accumulate"],
                            None if r["speeds"] is None else tuple(r["speeds"]), r["group"],
                            r["bandwidth"], r["compute"])
        sim = network.step_time(network.simulate(case, link, r["steps"]))
        out.append(network.Row(case, r["measured_step"], sim, 1, 1, 0, 0, link=link,
                               steps=r["steps"]))
    return out


def test_a_pair_the_clock_times_alike_given_one_calibration_is_no_flip(monkeypatch):
    monkeypatch.setattr(network, "BURST", False)
    ssp, asyn, backup = rows_of("#0", "11.89")
    assert ssp.simulated_step != asyn.simulated_step  # two calibrations: 0.826 vs 0.818 ms
    assert (ssp.measured_step < asyn.measured_step) != (ssp.simulated_step < asyn.simulated_step)
    assert network.alike(ssp, asyn) and network.alike(asyn, ssp)
    assert not network.alike(ssp, backup) and not network.alike(asyn, backup)
    summary = network.summary([ssp, asyn, backup])
    assert summary["flips"] == [] and summary["ranking_same"]
    assert [f["cases"] for f in summary["alike"]] == [("#0 ssp:1", "#0 async")]


def test_a_pair_the_clock_orders_by_its_protocols_stays_a_flip(monkeypatch):
    """Backup(1) against async, the measured steps swapped: the clock's gap (3 %) is the
    protocols', so that is a flip; without its link a Row is never alike."""
    monkeypatch.setattr(network, "BURST", False)
    _, asyn, backup = rows_of("#0", "11.89")
    swapped = [replace(asyn, measured_step=backup.measured_step),
               replace(backup, measured_step=asyn.measured_step)]
    assert [f["cases"] for f in network.flips(swapped)] == [("#0 async", "#0 backup:1")]
    assert not network.alike(replace(asyn, link=None), asyn)


def test_a_committed_grid_s_brief_fits_a_projector_s_cell():
    """Notebook 06 prints each committed grid's summary with Comparison.brief: lines of at
    most 64 characters (a cell at 1024x768 with the file browser open), the file's numbers."""
    from pslab.processes import load_comparison
    from pslab.processes.comparison import COMMITTED

    for name in (COMMITTED.name, "network-grid-20261128-seed3844-quiet.json"):
        grid = load_comparison(COMMITTED.with_name(name))
        text = grid.brief()
        assert max(len(line) for line in text.splitlines()) <= 64, text
        s = grid.summary
        assert f"median |error| {s['median_error']:.1%}, worst {s['worst_error']:.1%}" in text
        flips = len(s["flips"])
        assert (f"ordered differently: {flips} (" if flips else "ordered differently: none") \
            in text
        assert text.count(" tie\n") + text.endswith(" tie") == s["flips_within_spread"]
