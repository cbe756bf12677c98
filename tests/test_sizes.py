"""Every size a user can type is bounded by what this machine can do: refused at
once, naming the parameter and the range, before any child trains or any run starts."""
import time

import pytest

import pslab


@pytest.mark.parametrize("call, words", [
    (lambda: pslab.nas.search(space={"widths": [10**9]}), "widths must be .* from 1 to 1024"),
    (lambda: pslab.nas.search(space={"depths": [10**6]}), "depths must be .* from 1 to 8"),
    (lambda: pslab.nas.search(controllers=1000, children=1000, rounds=1),
     "controllers x children x rounds must be at most 100,000"),
    (lambda: pslab.nas.random_search(controllers=1000, children=1000, rounds=1),
     "at most 100,000"),
    (lambda: pslab.widgets.dashboard(steps=10**6), "steps must be an integer from 1 to 1000"),
])
def test_sizes_beyond_the_machine_are_refused_at_once(call, words):
    pslab.nas.search, pslab.widgets.dashboard  # the imports are not what is timed
    started = time.perf_counter()
    with pytest.raises(ValueError, match=words):
        call()
    assert time.perf_counter() - started < 0.5


def test_the_largest_allowed_space_still_builds():
    space = pslab.nas.Space(depths=(8,), widths=(1024,))
    assert space.max_depth == 8
