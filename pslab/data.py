"""The data of figure 002: the digits, a seeded shuffle, and global batch t cut into worker slices.

Update t reads global batch t: the next workers·accumulate·batch rows of a stream made of one
seeded permutation of the training set per epoch. Worker i takes its contiguous accumulate·batch
rows of it, as `accumulate` minibatches of `batch` rows. Because the slice depends only on
(t, i), async worker i's t-th push reads the same rows it would read in sync mode, and
sync N×b reads exactly the rows of 1×N·b: the equivalence tests rest on this.
"""
from __future__ import annotations

import gzip
import importlib.util

from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import numpy as np
import torch

TEST_FRACTION = 0.2
KEEP_EPOCHS = 4  # shuffled copies of the training split a Digits keeps (about 0.4 MB each)
_SPLIT, _EPOCH = 1, 2  # stream ids, so the split and the epoch shuffles never share random numbers


@lru_cache(maxsize=1)
def _digits() -> tuple[np.ndarray, np.ndarray]:
    # scikit-learn ships the 8x8 digits inside the package: no download at run time.
    table = _digits_table()
    return (table[:, :-1] / 16.0).astype(np.float32), table[:, -1].astype(np.int64)


def _digits_table() -> np.ndarray:
    """scikit-learn's digits.csv.gz (64 pixels and the label per row) as `load_digits` reads
    it, read with numpy from where the package keeps it: importing sklearn.datasets to get it
    costs ~1 s of CPU per process (a notebook's kernel and each process backend's forkserver),
    the file 0.02 s. Falls back to `load_digits` where the file is not found
    (tests/test_fast_paths.py checks both give the same bits)."""
    spec = importlib.util.find_spec("sklearn")  # finds the package without importing it
    for folder in (spec.submodule_search_locations or []) if spec else []:
        path = Path(folder) / "datasets" / "data" / "digits.csv.gz"
        if path.is_file():
            with gzip.open(path, "rt", encoding="utf-8") as rows:
                return np.loadtxt(rows, delimiter=",")
    from sklearn.datasets import load_digits

    d = load_digits()
    return np.column_stack([d.data, d.target])


DIGITS_ROWS = 1797  # scikit-learn's load_digits, fixed: checking `batch` needs no loading


def dataset_size() -> int:
    """How many rows the training split holds (what `batch` may not exceed)."""
    return DIGITS_ROWS - int(round(DIGITS_ROWS * TEST_FRACTION))


@dataclass
class Digits:
    """Train/test split of the digits, drawn from the run's seed, as torch tensors on the CPU."""

    x_train: torch.Tensor
    y_train: torch.Tensor
    x_test: torch.Tensor
    y_test: torch.Tensor
    seed: int
    # epoch -> the training split in that epoch's shuffled order (a few kept: workers in
    # different epochs), so a minibatch within one epoch is a slice of it, not a gather
    _shuffled: dict = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def load(cls, seed: int) -> "Digits":
        x, y = _digits()
        order = np.random.default_rng([seed, _SPLIT]).permutation(len(y))
        n_test = len(y) - dataset_size()
        test, train = order[:n_test], order[n_test:]
        t = torch.from_numpy
        return cls(t(x[train]), t(y[train]), t(x[test]), t(y[test]), seed)

    @property
    def features(self) -> int:
        return self.x_train.shape[1]

    @property
    def classes(self) -> int:
        return 10

    def rows(self, start: int, count: int) -> np.ndarray:
        """Indices of stream rows [start, start + count); the stream reshuffles every epoch."""
        n = len(self.y_train)
        epoch, offset = divmod(start, n)
        if offset + count <= n:  # within one epoch, as most minibatches are: a slice
            return self._epoch(epoch)[offset:offset + count].copy()
        pos = np.arange(start, start + count)
        epochs, offsets = np.divmod(pos, n)
        out = np.empty(count, dtype=np.int64)
        for e in np.unique(epochs):
            mask = epochs == e
            out[mask] = self._epoch(int(e))[offsets[mask]]
        return out

    def _epoch(self, e: int) -> np.ndarray:
        # Each epoch's permutation comes from its own seed, so any batch can be read on its own.
        return _permutation(self.seed, e, len(self.y_train))

    def minibatch(self, update: int, worker: int, micro: int, workers: int, accumulate: int,
                  batch: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Rows of minibatch `micro` of worker `worker` in global batch `update` (views of a
        cached shuffled copy when they lie in one epoch: the same values, not to be written)."""
        start = (update * workers + worker) * accumulate * batch + micro * batch
        n = self.y_train.shape[0]  # not len(): Tensor.__len__ is a Python-level call
        epoch, offset = divmod(start, n)
        if offset + batch <= n:  # within one epoch, as most minibatches are
            x, y = self.shuffled(epoch)
            return x[offset:offset + batch], y[offset:offset + batch]
        idx = torch.from_numpy(self.rows(start, batch))
        # index_select: the same rows copied as x[idx] does, without advanced indexing's parsing
        return self.x_train.index_select(0, idx), self.y_train.index_select(0, idx)

    def shuffled(self, epoch: int) -> tuple[torch.Tensor, torch.Tensor]:
        """The training split in epoch `epoch`'s order: one gather per epoch instead of one per
        minibatch (a run takes thousands of minibatches of a few dozen rows)."""
        held = self._shuffled.get(epoch)
        if held is None:
            if len(self._shuffled) >= KEEP_EPOCHS:
                self._shuffled.pop(min(self._shuffled), None)
            idx = torch.from_numpy(self._epoch(epoch))
            held = self._shuffled[epoch] = (self.x_train.index_select(0, idx),
                                            self.y_train.index_select(0, idx))
        return held


@lru_cache(maxsize=64)
def _permutation(seed: int, epoch: int, n: int) -> np.ndarray:
    return np.random.default_rng([seed, _EPOCH, epoch]).permutation(n)
