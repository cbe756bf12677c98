"""pslab — the parameter-server lab: the classic figures of distributed training, runnable.

    run = pslab.train(mode="sync", workers=3, steps=50, cluster=pslab.Cluster())
    run.timeline, run.history, run.weights, run.makespan
"""
from .cluster import Cluster
from .modes import SSP, Async, Policy, Sync
from .run import Run, train
from .server import ParameterServer
from .simulation import Record
from .timeline import KINDS, Span
from .worker import Worker

__all__ = ["Cluster", "SSP", "Sync", "Async", "Policy", "Run", "train", "ParameterServer",
           "Record", "Span", "KINDS", "Worker"]
