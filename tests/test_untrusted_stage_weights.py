"""A pipeline stage's weights file (pipeline/processes.py) is read back as untrusted, as rank 0's
FSDP file is: a file holds exactly its rank's layers (names, shapes, float32) and a step of the
run, or the read is a ValueError naming the file - over every schedule's placement of layers on
ranks, and over generated files (a rank's file given to another rank, a layer dropped or added,
a shape or dtype changed, the step out of the run)."""
import pytest
import torch
from hypothesis import given, settings, strategies as st

import pslab
from pslab.model import init_params
from pslab.pipeline.processes import read_stage, stage_shapes
from pslab.tensorfile import save_tensors
from untrusted import refused_or_valid

HIDDEN, STEPS = 16, 4
PIPES = [pslab.Pipeline(stages=2, microbatches=4, schedule="1f1b", layers=4),
         pslab.Pipeline(stages=2, microbatches=4, schedule="interleaved-1f1b", chunks=2, layers=4),
         pslab.Pipeline(stages=2, microbatches=4, schedule="zbv", chunks=2, layers=4),
         pslab.Pipeline(stages=4, microbatches=4, schedule="gpipe", layers=4)]


def params(layers):
    return {k: v.contiguous() for k, v in init_params(64, HIDDEN, 10, seed=0,
                                                      layers=layers).items()}


@pytest.mark.parametrize("pipe", PIPES, ids=lambda p: p.schedule)
def test_every_rank_holds_its_own_layers_and_all_ranks_the_whole_model(pipe):
    held = [stage_shapes(pipe, HIDDEN, r) for r in range(pipe.stages)]
    names = [n for h in held for n in h]
    assert sorted(names) == sorted(params(pipe.layers)) and len(names) == len(set(names))


@settings(max_examples=60, deadline=None, derandomize=True)
@given(pipe=st.sampled_from(PIPES), data=st.data())
def test_a_stage_file_is_its_rank_s_layers_or_refused_by_name(tmp_path_factory, pipe, data):
    rank = data.draw(st.integers(0, pipe.stages - 1), label="rank read")
    writer = data.draw(st.integers(0, pipe.stages - 1), label="rank written")
    every = params(pipe.layers)
    tensors = {n: every[n] for n in stage_shapes(pipe, HIDDEN, writer)}
    change = data.draw(st.sampled_from(["none", "drop", "add", "shape", "dtype"]), label="change")
    name = data.draw(st.sampled_from(sorted(tensors)), label="tensor")
    if change == "drop" and len(tensors) > 1:
        del tensors[name]
    elif change == "add":
        tensors.update({n: v for n, v in every.items() if n not in tensors}
                       or {"extra": torch.zeros(3)})
    elif change == "shape":
        tensors[name] = torch.zeros(tuple(d + 1 for d in tensors[name].shape))
    elif change == "dtype":
        tensors[name] = tensors[name].double()
    step = data.draw(st.integers(-2, STEPS + 2), label="step")
    path = tmp_path_factory.mktemp("stage") / "stage.safetensors"
    save_tensors(path, tensors, {"step": step})
    got = {}
    error = refused_or_valid(
        lambda: got.update(read=read_stage(str(path), pipe, HIDDEN, STEPS, rank)), path)
    whole = change == "none" or (change == "drop" and len(tensors) == len(every))
    if error is None:
        step_read, read = got["read"]
        assert 0 <= step_read < STEPS and step_read == step
        assert {k: tuple(v.shape) for k, v in read.items()} == stage_shapes(pipe, HIDDEN, rank)
        assert all(v.dtype == torch.float32 for v in read.values())
    else:
        assert not (whole and writer == rank and 0 <= step < STEPS), error
