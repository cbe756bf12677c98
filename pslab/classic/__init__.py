"""The classic results of distributed training, re-derived live (notebook 05).

    pslab.classic.bounded_delay()      # Li et al., OSDI'14: waiting vs the delay bound τ
    pslab.classic.softsync_staleness() # Zhang et al. 2016: staleness ≈ n under n-softsync
    pslab.classic.staleness_aware_lr() # Zhang et al. 2016: fixed lr diverges, lr/τ converges
    pslab.classic.async_staleness()    # TensorFlow: async staleness averages N − 1
    pslab.classic.backup_workers()     # Chen et al. 2016: N of N + b is faster
    pslab.classic.d2l_transfers()      # d2l: 60 / 80 / 15 ms, a ring ≈ 6 ms
    pslab.classic.distbelief_scaling() # Dean et al. 2012: communication-bound stops scaling
    pslab.classic.horovod_scaling()    # Sergeev & Del Balso 2018: PS vs ring vs ZeRO over N

Each returns a Result: the paper's number beside pslab's (a table) and its sweep,
drawn by `pslab.plot.plot_result`.
Layer: a tier above the front door (`pslab.train`), headless: drawn by pslab/drawing/classic_plot.py,
explored with the knobs of pslab/notebook/classic_explore.py.
"""
from .papers import (async_staleness, backup_workers, bounded_delay, d2l_transfers,
                     distbelief_scaling, softsync_staleness, staleness_aware_lr)
from .result import Result, Row
from .scaling import horovod_scaling

__all__ = ["Result", "Row", "bounded_delay", "softsync_staleness", "staleness_aware_lr",
           "async_staleness", "backup_workers", "d2l_transfers", "distbelief_scaling",
           "horovod_scaling"]
