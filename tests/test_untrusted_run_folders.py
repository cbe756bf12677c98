"""A torchrun run folder is untrusted input, and its files are written new, never through a
link: every case below is refused by a ValueError naming the file (and the line and field), a
flag out of range is a one-line error naming it, and one --out never mixes two runs."""
import json
import math
import os
import shutil
import subprocess
import sys

import pytest

from pslab.processes.torchrun import load_run, run_rank
from untrusted import nested, refused_or_valid

ARGS = ["--shards", "2", "--workers", "3", "--steps", "3", "--mode", "sync"]


@pytest.fixture
def made(torchrun):
    """A real run folder: 2 shards and 3 workers under torchrun, on loopback (the session's)."""
    return torchrun(5, *ARGS)


def copy(made, tmp_path):
    out = tmp_path / "copy"
    shutil.copytree(made, out)
    return out


def lines(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


def write_lines(path, rows):
    path.write_text("".join(json.dumps(r, allow_nan=True) + "\n" for r in rows))


def refused(out, name, *words):
    error = refused_or_valid(lambda: load_run(out), out / name)
    assert error is not None, "accepted"
    for word in words:
        assert word in str(error), str(error)


def messages(rows):
    """(line index, message index in a batch or None, message) of every message."""
    for i, row in enumerate(rows):
        if row[0] == "batch":
            for j, m in enumerate(row[1]):
                yield i, j, m
        else:
            yield i, None, row


def edit(out, rank, kind, change):
    """Apply `change` to the first message of `kind` in rank `rank`'s file."""
    path = out / f"rank{rank}.jsonl"
    rows = lines(path)
    for i, j, m in messages(rows):
        if m[0] == kind:
            change(m)
            break
    else:
        raise AssertionError(f"no {kind} in {path}")
    write_lines(path, rows)


@pytest.mark.processes
def test_the_folder_loads_as_the_run(made):
    run = load_run(made)
    assert run.complete and run.updates == 3


@pytest.mark.parametrize("rank,kind,change,words", [
    (2, "spans", lambda m: m[1][0].__setitem__(2, "nap"), ["spans"]),  # malformed span
    (2, "spans", lambda m: m[1][0].__setitem__(3, math.nan), ["spans"]),
    (2, "spans", lambda m: m[1][0].__setitem__(4, math.inf), ["spans"]),
    (2, "spans", lambda m: m[1][0].__setitem__(0, -1), ["spans"]),  # a negative worker
    (0, "update", lambda m: m[1].pop("keys"), ["keys"]),  # an update without keys
    (0, "update", lambda m: m[1].__setitem__("shard", 99), ["shard"]),
    (0, "update", lambda m: m[1]["keys"].__setitem__("dtype", "<f2"), ["dtype"]),
    (0, "update", lambda m: m[1].__setitem__("time", math.nan), ["time"]),
    (0, "push", lambda m: m[1].__setitem__("worker", -1), ["worker"]),
])
def test_a_malformed_message(made, tmp_path, rank, kind, change, words):
    out = copy(made, tmp_path)
    edit(out, rank, kind, change)
    refused(out, f"rank{rank}.jsonl", *words)


def test_another_ranks_reports_copied(made, tmp_path):
    out = copy(made, tmp_path)
    shutil.copy(out / "rank3.jsonl", out / "rank4.jsonl")
    refused(out, "rank4.jsonl", "rank")


def test_a_corrupt_line_in_the_middle_is_refused_not_a_shorter_run(made, tmp_path):
    out = copy(made, tmp_path)
    path = out / "rank0.jsonl"
    text = path.read_text().splitlines()
    text[2] = text[2][: len(text[2]) // 2]
    path.write_text("\n".join(text) + "\n")
    refused(out, "rank0.jsonl", "line 3")


def test_a_job_asking_for_1e9_steps(made, tmp_path):
    out = copy(made, tmp_path)
    job = json.loads((out / "job.json").read_text())
    job["argv"][job["argv"].index("--steps") + 1] = str(10**9)
    (out / "job.json").write_text(json.dumps(job))
    refused(out, "job.json", "memory")


def test_a_job_nested_100000_deep(made, tmp_path):
    out = copy(made, tmp_path)
    (out / "job.json").write_text('{"format": "pslab-torchrun-job-2", "argv": '
                                  + nested(100_000) + "}")
    refused(out, "job.json", "nested")


@pytest.mark.parametrize("size", [5 * 2**20, 4 * 2**30])
def test_one_huge_line(made, tmp_path, size):
    out = copy(made, tmp_path)
    path = out / "rank1.jsonl"
    with open(path, "ab") as f:
        f.write(b'["spans", [' + b" " * 100)
        f.truncate(size)  # sparse: a few kB on disk
    f = open(path, "ab")
    f.write(b"]]\n")
    f.close()
    refused(out, "rank1.jsonl", "bytes")


def test_a_named_pipe_as_a_rank_file(made, tmp_path):
    out = copy(made, tmp_path)
    os.unlink(out / "rank1.jsonl")
    os.mkfifo(out / "rank1.jsonl")
    refused(out, "rank1.jsonl", "named pipe")


def test_a_rank_file_of_another_run(made, tmp_path):
    out = copy(made, tmp_path)
    job = json.loads((out / "job.json").read_text())
    job["run"] = "another"
    (out / "job.json").write_text(json.dumps(job))
    refused(out, "rank0.jsonl", "another run")


def launch_names(out):
    return [m[1]["job"] for r in range(5) for _, _, m in messages(lines(out / f"rank{r}.jsonl"))
            if m[0] == "ready"]


@pytest.mark.processes
def test_two_launches_of_one_command_are_told_apart(made, torchrun, tmp_path):
    """Two launches of one command: each named by its rank 0 once the group formed, the
    same name on all its ranks; a folder gathering ranks of both is refused, even where the
    run token is the same (a static rendezvous, --master-addr/--master-port, repeated: the
    token holds nothing else that differs, and before they meet the ranks of other hosts
    share nothing else)."""
    again = torchrun(5, *ARGS, again=True)
    first, second = launch_names(made), launch_names(again)
    assert len(first) == len(second) == 5 and len(set(first)) == len(set(second)) == 1
    assert first[0] != second[0] and load_run(again).updates == 3
    out = copy(made, tmp_path)
    token = lines(made / "rank0.jsonl")[0]
    for r in (3, 4):  # the workers of one host, from the other launch, under the same token
        rows = lines(again / f"rank{r}.jsonl")
        rows[0] = ["start", dict(token[1], rank=r)]
        write_lines(out / f"rank{r}.jsonl", rows)
    refused(out, "rank3.jsonl", "ready.job", "two launches")


@pytest.mark.parametrize("change,words", [
    (lambda rows: rows.insert(1, rows[2]), ["ready"]),  # a measurement before it joined
    (lambda rows: rows.append(rows[1]), ["ready"]),  # joined twice
    (lambda rows: rows.__setitem__(1, ["ready", dict(rows[1][1], job="zz")]), ["job"]),
])
def test_a_rank_that_did_not_join_once_before_measuring(made, tmp_path, change, words):
    out = copy(made, tmp_path)
    path = out / "rank2.jsonl"
    rows = lines(path)
    assert rows[1][0] == "ready"
    change(rows)
    write_lines(path, rows)
    refused(out, "rank2.jsonl", *words)


def rank(monkeypatch, capsys, r, argv):
    monkeypatch.setenv("RANK", str(r))
    monkeypatch.setenv("WORLD_SIZE", "5")
    monkeypatch.setenv("MASTER_ADDR", "127.0.0.1")
    monkeypatch.setenv("MASTER_PORT", "1")
    with pytest.raises(SystemExit) as stopped:
        run_rank(argv)
    assert stopped.value.code == 2
    return capsys.readouterr().err


def test_a_planted_link_is_never_written_through(tmp_path, monkeypatch, capsys):
    victim = tmp_path / "victim"
    victim.write_text("mine")
    out = tmp_path / "out"
    out.mkdir()
    os.symlink(victim, out / "rank3.jsonl")
    os.symlink(victim, out / "job.json")
    for r in (0, 3):
        err = rank(monkeypatch, capsys, r, ARGS + ["--out", str(out)])
        assert "already holds" in err and "Traceback" not in err
    assert victim.read_text() == "mine"


def test_the_same_out_twice_is_refused(made, tmp_path, monkeypatch, capsys):
    out = copy(made, tmp_path)
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    for r in range(5):
        assert "already holds" in rank(monkeypatch, capsys, r, ARGS + ["--out", str(out)])
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before
    assert load_run(out).updates == 3


@pytest.mark.parametrize("flag,value", [
    ("--workers", "0"), ("--batch", "0"), ("--lr", "nan"), ("--lr", "-1"), ("--steps", "0"),
    ("--hidden", "0"), ("--accumulate", "0"), ("--seed", "-1")])
def test_a_flag_out_of_range_is_named(tmp_path, monkeypatch, capsys, flag, value):
    err = rank(monkeypatch, capsys, 0, [flag, value, "--out", str(tmp_path / "x")])
    assert flag in err and "Traceback" not in err, err
    assert not (tmp_path / "x").exists()


@pytest.mark.processes
def test_a_flag_out_of_range_from_the_command_line(tmp_path):
    done = subprocess.run([sys.executable, "-m", "pslab.processes", "--workers", "0", "--out",
                           str(tmp_path)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and "--workers" in done.stderr
    assert "Traceback" not in done.stderr
