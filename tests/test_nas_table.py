"""The shipped children table (pslab/nas/children.json) only warms the cache: its accuracies are
`train`'s own (a sample is trained again here), and a search from it equals one trained live."""
import json

import pytest

import pslab
from pslab.nas import child


@pytest.fixture
def fresh_cache():
    yield
    child.clear_cache()
    child._warm["pending"] = True  # later tests start as a user does: table not yet read


def test_a_sample_of_the_table_trains_to_the_same_accuracy_bit_for_bit():
    table = child.read_table()
    assert len(table) >= 200  # notebook 04's children
    keys = sorted(table, key=repr)
    for arch, seed, budget in keys[::len(keys) // 8]:  # 8 or 9 spread over the table
        assert child.train(arch, seed, budget) == table[arch, seed, budget], (arch, seed)


def test_a_search_from_the_table_equals_one_trained_live(fresh_cache):
    child.clear_cache()  # no table: every child trained
    live = pslab.replay.figure003()
    assert live.trained > 0
    child._CACHE.clear()
    child._warm["pending"] = True  # as in a new kernel: the table is read at the first child
    warm = pslab.replay.figure003()
    assert warm.trained == 0
    assert warm.samples == live.samples and warm.history == live.history
    assert warm.timeline == live.timeline and (warm.theta == live.theta).all()


def test_a_file_that_is_not_a_table_is_refused_by_name(tmp_path):
    path = tmp_path / "children.json"
    path.write_text(json.dumps({"format": "something else", "children": []}))
    with pytest.raises(ValueError, match="children.json is not a pslab children table"):
        child.read_table(path)
