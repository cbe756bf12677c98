"""Key-range sharding (ps-lite's key ranges): S shards of near-equal bytes, for any S; the
figure's per-layer layout stays available by name. The arithmetic never depends on the layout."""
import pytest
import torch

import pslab
from pslab.layout import Layout
from pslab.model import LAYERS, shapes
from test_equivalences import FREE, assert_same_weights

SHAPES = shapes(features=64, hidden=32, classes=10)  # 2,410 keys


@pytest.mark.parametrize("S", [1, 2, 3, 7, 20, 64])
def test_key_ranges_cover_every_key_once_in_near_equal_parts(S):
    layout = Layout.key_range(SHAPES, S)
    starts, stops = zip(*layout.ranges)
    assert starts[0] == 0 and stops[-1] == 2410 == layout.size
    assert list(starts[1:]) == list(stops[:-1])  # contiguous, no gap, no overlap
    sizes = [layout.keys(s) for s in range(S)]
    assert max(sizes) - min(sizes) <= 1


def test_layers_layout_is_figure_000s_two_shards():
    layout = Layout.by_layer(SHAPES, LAYERS)
    assert [layout.names_in(s) for s in range(2)] == [["W_o", "b_o"], ["W_h", "b_h"]]
    assert [4 * layout.keys(s) for s in range(2)] == [1320, 8320]
    run = pslab.train(steps=1, numerics=False)  # the default
    assert run.shards == [["W_o", "b_o"], ["W_h", "b_h"]] and run.shard_bytes == [1320, 8320]


def test_flatten_and_split_round_trip_without_losing_a_key():
    params = {n: torch.randn(d, generator=torch.Generator().manual_seed(i))
              for i, (n, d) in enumerate(SHAPES.items())}
    layout = Layout.key_range(SHAPES, 9)
    flat = layout.flatten(params)
    back = layout.unflatten(torch.cat(layout.split(flat)))
    assert all(torch.equal(back[n], params[n]) for n in params)
    # a shard cut through W_h names it, and W_h is cut into several shards
    assert sum("W_h" in layout.names_in(s) for s in range(9)) > 1


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_the_weights_do_not_depend_on_how_the_keys_are_sharded(mode):
    kw = dict(mode=mode, workers=3, steps=15, seed=4, cluster=FREE)
    ref = pslab.train(shards="layers", **kw)
    for S in (1, 5, 64):
        assert_same_weights(pslab.train(shards=S, **kw), ref, exact=True)


def test_sync_n_by_b_equals_one_by_n_b_on_key_range_shards():
    many = pslab.train(mode="sync", workers=4, batch=8, steps=20, shards=6, seed=2, cluster=FREE)
    one = pslab.train(mode="sync", workers=1, batch=32, steps=20, shards=6, seed=2, cluster=FREE)
    assert_same_weights(many, one)


def test_s_key_range_shards_move_the_model_s_times_faster():
    """d2l's arithmetic: each shard carries 1/S of the bytes over its own link, in parallel."""
    net = pslab.Cluster(latency=0.0, bandwidth=1e4, update_time=0.0)
    fetch = {}
    for S in (1, 4, 16):
        run = pslab.train(mode="sync", workers=1, steps=1, shards=S, cluster=net,
                          numerics=False)
        spans = [s for s in run.timeline if s.kind == "fetch"]
        assert len(spans) == S
        assert [s.duration for s in spans] == pytest.approx([b / 1e4 for b in run.shard_bytes])
        fetch[S] = max(s.end for s in spans) - min(s.start for s in spans)
    assert fetch[1] / fetch[4] == pytest.approx(4, rel=1e-3)
    assert fetch[1] / fetch[16] == pytest.approx(16, rel=0.01)


@pytest.mark.parametrize("bad", [0, 257, "rows", 2.0, True])
def test_bad_shards_are_refused_by_name(bad):
    with pytest.raises(ValueError, match="shards"):
        pslab.train(shards=bad, steps=1)


def test_more_shards_than_keys_is_refused():
    with pytest.raises(ValueError, match="shards must be from 1 to 85"):
        pslab.train(shards=100, hidden=1, steps=1)
