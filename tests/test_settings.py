"""A run's settings: one frozen object, checked once where it is made, the same way whether the
arguments were typed into `train` or read back from a file (`Settings.from_dict`)."""
import dataclasses
import json
import random

import numpy as np
import pytest

import pslab
from pslab.options import ProcessOptions
from pslab.settings import Settings

from test_validation import BAD_TRAIN


def _plain(kwargs: dict) -> dict:
    """train's keyword arguments as a file would hold them."""
    out = dict(kwargs)
    if isinstance(out.get("cluster"), pslab.Cluster):
        out["cluster"] = out["cluster"].plain()
    if isinstance(out.get("mode"), pslab.Policy):
        out["mode"] = out["mode"].name
    return out


@pytest.mark.parametrize("kwargs, name", BAD_TRAIN)
def test_a_file_read_back_is_refused_as_train_refuses_it(kwargs, name):
    with pytest.raises(ValueError, match=name) as typed:
        pslab.train(**kwargs)
    with pytest.raises(ValueError, match=name) as read:
        Settings.from_dict({**Settings().to_dict(), **_plain(kwargs)})
    if isinstance(kwargs.get("cluster", pslab.Cluster()), pslab.Cluster):  # a file holds a dict
        assert str(read.value) == str(typed.value)


def _random_settings(rng: random.Random) -> Settings:
    mode = rng.choice(["sync", "async", pslab.SSP(rng.randrange(4)), pslab.Backup(1),
                       pslab.SoftSync(1), "allreduce", pslab.ZeRO(rng.randrange(1, 4))])
    workers = rng.randrange(2, 6)
    cluster = rng.choice([None, pslab.Cluster(jitter=0.3, speeds=[1.0] * workers),
                          pslab.Cluster.free(), pslab.Cluster(bandwidth=float("inf"))])
    return Settings(mode=mode, workers=workers, accumulate=rng.randrange(1, 3),
                    lr=rng.uniform(0.01, 1.0), batch=rng.randrange(1, 64),
                    steps=rng.randrange(1, 8), shards=rng.choice(["layers", 1, 3, 7]),
                    seed=rng.randrange(2**64), cluster=cluster, numerics=rng.random() < 0.5,
                    hidden=rng.randrange(1, 40), staleness_lr=rng.random() < 0.5)


@pytest.mark.parametrize("seed", range(40))
def test_settings_go_through_json_and_come_back_the_same(seed):
    settings = _random_settings(random.Random(seed))
    text = json.dumps(settings.to_dict())
    again = Settings.from_dict(json.loads(text))
    assert again.to_dict() == settings.to_dict()
    assert again.mode == settings.mode and again.layout == settings.layout


def test_train_with_settings_read_back_is_the_same_run_bit_for_bit():
    for seed in range(3):
        settings = _random_settings(random.Random(100 + seed))
        settings = dataclasses.replace(settings, steps=3)
        first = pslab.train(**_as_kwargs(settings))
        again = pslab.train(**_as_kwargs(Settings.from_dict(json.loads(json.dumps(
            settings.to_dict())))))
        assert first.settings.to_dict() == again.settings.to_dict() == settings.to_dict()
        assert [tuple(s) for s in first.timeline] == [tuple(s) for s in again.timeline]
        for name, w in first.weights.items():
            assert w.equal(again.weights[name]), name


def _as_kwargs(settings: Settings) -> dict:
    return {f.name: getattr(settings, f.name) for f in dataclasses.fields(settings)
            if f.name != "processes"}


def test_process_options_travel_inside_the_settings():
    settings = Settings.build(workers=2, steps=3, backend="processes", time_scale=0.5,
                              kill={1: 2})
    plain = settings.to_dict()
    assert plain["processes"]["time_scale"] == 0.5 and plain["processes"]["kill"] == {"1": 2}
    again = Settings.from_dict(json.loads(json.dumps(plain)))
    assert again.processes == settings.processes and again.processes.kill == {1: 2}
    assert again.backend == "processes" and Settings().to_dict()["processes"] is None
    with pytest.raises(ValueError, match="kill worker"):
        Settings.from_dict({**plain, "processes": {**plain["processes"], "kill": {"5": 0}}})
    with pytest.raises(ValueError, match="processes must be None or a dict"):
        Settings.from_dict({**plain, "processes": {"turbo": 1}})


def test_settings_are_frozen_and_a_changed_copy_is_checked_again():
    settings = Settings(workers=4, steps=2)
    with pytest.raises(dataclasses.FrozenInstanceError):
        settings.workers = 5
    with pytest.raises(ValueError, match="workers"):
        dataclasses.replace(settings, workers=0)
    with pytest.raises(ValueError, match="numerics=False only applies"):
        dataclasses.replace(settings, numerics=False, processes=ProcessOptions())


def test_a_file_with_unknown_or_malformed_settings_is_refused_by_name():
    with pytest.raises(ValueError, match="unknown setting"):
        Settings.from_dict({**Settings().to_dict(), "turbo": True})
    with pytest.raises(ValueError, match="settings must be a dict"):
        Settings.from_dict(["sync", 3])
    with pytest.raises(ValueError, match="cluster"):
        Settings.from_dict({**Settings().to_dict(), "cluster": {"warp": 9}})


def test_numpy_bools_count_as_flags_as_numpy_ints_count_as_counts():
    run = pslab.train(workers=np.int64(2), steps=np.int32(2), numerics=np.bool_(False),
                      staleness_lr=np.True_)
    assert run.settings.numerics is False and run.settings.staleness_lr is True
    assert type(run.settings.workers) is int and run.updates == 2
    with pytest.raises(ValueError, match="numerics"):
        pslab.train(numerics=np.array([True, False]))
    with pytest.raises(ValueError, match="numerics"):
        pslab.train(numerics=np.int64(1))


def test_measurements_are_the_runs_not_the_settings():
    run = pslab.train(steps=2, numerics=False)
    assert run.pids == [] and run.failures == [] and run.startup_s is None
    assert not {"pids", "failures", "startup_s"} & set(run.settings.to_dict())


SHARED = [("seed", -1), ("seed", 2**64), ("seed", 1.5), ("seed", "0"), ("batch", 0),
          ("batch", 10**6), ("batch", True), ("cluster", {"compute_time": 1.0}),
          ("cluster", "fast")]


@pytest.mark.parametrize("name, value", SHARED)
def test_a_search_and_a_run_refuse_a_shared_setting_with_the_same_words(name, value):
    with pytest.raises(ValueError, match=name) as run:
        Settings(**{name: value})
    with pytest.raises(ValueError, match=name) as search:
        pslab.nas.search(numerics=False, **{name: value})
    assert str(search.value) == str(run.value)


@pytest.mark.parametrize("seed", range(20))
def test_a_search_carries_its_checked_settings_frozen(seed):
    """Seeded grid: the settings a search returns are the ones its arguments make, as given
    (numpy ints read as ints), frozen; a changed copy is checked again."""
    from pslab.nas import SearchSettings

    rng = random.Random(seed)
    kw = dict(servers=rng.randrange(1, 4), controllers=rng.randrange(1, 4),
              children=rng.randrange(1, 3), rounds=int(np.int64(rng.randrange(1, 4))),
              seed=rng.randrange(2**32), mode=rng.choice(["async", "sync"]),
              policy=rng.choice(["softmax", "lstm"]), decay=rng.random() * 0.99,
              numerics=False)
    entry = rng.choice([pslab.nas.search, pslab.nas.random_search])
    result = entry(**kw)
    assert result.settings == SearchSettings(**kw)
    assert all(getattr(result.settings, k) == v for k, v in kw.items())
    assert result.method == ("reinforce" if entry is pslab.nas.search else "random")
    with pytest.raises(dataclasses.FrozenInstanceError):
        result.settings.rounds = 5
    with pytest.raises(ValueError, match="controllers"):
        dataclasses.replace(result.settings, controllers=0)
    with pytest.raises(ValueError, match="cluster speeds"):  # the table's shape: per child
        dataclasses.replace(result.settings, cluster=pslab.Cluster(speeds=[1.0]),
                            controllers=2)
