"""Rank 0's FSDP weights file (processes/fsdp.py) is read back as untrusted: a real file made by
`save_tensors` as rank 0 makes it, then given another dtype, shape, name, step, a cut or padded
body, a long or lying header; every read either gives exactly the model's float32 tensors and a
step of the run, or a ValueError naming the file, within a second, memory bounded."""
import json
import math
import struct

import pytest
import torch
from hypothesis import HealthCheck, event, given, settings, strategies as st

from pslab.tensorfile import save_tensors
from pslab.model import init_params, shapes
from pslab.processes.fsdp import read_weights
from pslab.settings import Settings
from untrusted import nested, refused_or_valid

RUN = Settings(mode="allreduce", workers=2, steps=4, hidden=16)
EXPECTED = shapes(features=64, hidden=16, classes=10)
FAST = settings(max_examples=150, deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.function_scoped_fixture])
DTYPES = {"F16": torch.float16, "F64": torch.float64, "I32": torch.int32, "BF16": torch.bfloat16}


def weights(**changed):
    """The model's weights (hidden 16), some replaced by the tensors in `changed`."""
    w = {k: v.contiguous() for k, v in init_params(64, 16, 10, seed=0).items()}
    w.update(changed)
    return {k: v for k, v in w.items() if v is not None}


def raw(tensors, meta):
    from safetensors.torch import save
    return save(tensors, metadata={"pslab": meta if isinstance(meta, str) else json.dumps(meta)})


def check(path):
    """The one rule: a valid read is exactly the model's, else a ValueError naming the file."""
    got = {}

    def read():
        got["read"] = read_weights(str(path), RUN)

    error = refused_or_valid(read, path)
    if error is None:
        step, tensors = got["read"]
        assert 0 <= step < RUN.steps
        assert {k: tuple(v.shape) for k, v in tensors.items()} == EXPECTED
        assert all(v.dtype == torch.float32 for v in tensors.values())
    return error


def test_the_file_rank_0_writes_is_read_back(tmp_path):
    path = tmp_path / "weights.safetensors"
    save_tensors(path, weights(), {"step": 3})
    step, tensors = read_weights(str(path), RUN)
    assert step == 3
    for name, w in weights().items():
        assert torch.equal(tensors[name], w), name


@pytest.mark.parametrize("case, why", [
    (dict(tensors=weights(W_h=torch.zeros(8, 64))), "tensor W_h has the shape [8, 64]"),
    (dict(tensors=weights(b_o=None)), "tensors missing ['b_o']"),
    (dict(tensors=weights(extra=torch.zeros(3))), "unexpected ['extra']"),
    (dict(tensors=weights(W_o=torch.zeros(10, 16, dtype=torch.float64))), "W_o is F64"),
    (dict(meta={"step": 4}), "field step: 4 is not a step of this run"),
    (dict(meta={"step": -1}), "field step: -1"),
    (dict(meta={"step": "3"}), "field step"),
    (dict(meta={"step": 3.0}), "field step"),
    (dict(meta={"step": 1, "note": 1}), "note"),
    (dict(meta={}), "step"),
    (dict(meta=nested(100_000)), "weights"),
    (dict(tensors=weights(W_h=torch.zeros(16, 64 * 4096))), "bytes, more than rank 0's weights"),
])
def test_each_bad_file_is_refused_by_name(tmp_path, case, why):
    path = tmp_path / "weights.safetensors"
    path.write_bytes(raw(case.get("tensors", weights()), case.get("meta", {"step": 1})))
    error = check(path)
    assert error is not None and why in str(error), error


def test_a_sparse_file_claiming_a_huge_tensor_is_refused_before_reading(tmp_path):
    header = json.dumps({"__metadata__": {"pslab": '{"step":1}'},
                         "W_h": {"dtype": "F32", "shape": [2**30],
                                 "data_offsets": [0, 2**32]}}).encode()
    path = tmp_path / "weights.safetensors"
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(header)) + header)
        f.truncate(8 + len(header) + 2**32)
    assert "bytes, more than rank 0's weights can be" in str(check(path))


def test_a_long_header_is_refused_before_it_is_decoded(tmp_path):
    body = (b'{"__metadata__":{"pslab":"{\\"step\\":1}"}' +
            b"".join(b',"t%07d":{"dtype":"F32","shape":[0],"data_offsets":[0,0]}' % i
                     for i in range(40)) + b"}")
    path = tmp_path / "weights.safetensors"
    path.write_bytes(struct.pack("<Q", len(body)) + body)
    assert "more than a run of its settings writes" in str(check(path))


NASTY = [None, True, "1", math.nan, math.inf, -1, 0, 3, 4, 2**63, 0.5, [], {}, [1]]


@st.composite
def bad_files(draw):
    """A weights file with one thing changed: a tensor's dtype, shape or name; the step or an
    extra key in pslab's header; or bytes cut, added or overwritten anywhere."""
    tensors, meta = weights(), {"step": 2}
    how = draw(st.sampled_from(["dtype", "shape", "name", "meta", "cut", "pad", "flip"]))
    event(how)
    name = draw(st.sampled_from(sorted(tensors)))
    if how == "dtype":
        tensors[name] = tensors[name].to(DTYPES[draw(st.sampled_from(sorted(DTYPES)))])
    elif how == "shape":
        dims = draw(st.lists(st.integers(0, 70), min_size=0, max_size=3))
        tensors[name] = torch.zeros(dims)
    elif how == "name":
        tensors[draw(st.sampled_from(["w_h", "W_h ", "server.0", "b_o.1"]))] = tensors.pop(name)
    elif how == "meta":
        key = draw(st.sampled_from(["step", "other"]))
        meta[key] = draw(st.sampled_from(NASTY))
    blob = bytearray(raw(tensors, meta))
    at = draw(st.integers(0, len(blob) - 1))
    if how == "cut":
        blob = blob[:at]
    elif how == "pad":
        blob += bytes(draw(st.integers(1, 64)))
    elif how == "flip":
        blob[at] = draw(st.integers(0, 255))
    return bytes(blob)


@FAST
@given(blob=bad_files())
def test_every_mutated_file_is_the_model_s_weights_or_refused_by_name(tmp_path, blob):
    path = tmp_path / "weights.safetensors"
    path.write_bytes(blob)
    check(path)
