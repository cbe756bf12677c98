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
from . import plot, quiz, replay, widgets
from .export import tikz
from .widgets import Dashboard, dashboard
from .plot import (StalenessPlot, TimelinePlot, TrainingPlot, compare, plot_dataflow,
                   plot_staleness, plot_timeline, plot_training)

__all__ = ["Cluster", "SSP", "Sync", "Async", "Policy", "Run", "train", "ParameterServer",
           "Record", "Span", "KINDS", "Worker", "plot", "replay", "tikz", "TimelinePlot",
           "TrainingPlot", "StalenessPlot", "plot_timeline", "compare", "plot_training",
           "plot_staleness", "plot_dataflow", "quiz", "widgets", "Dashboard", "dashboard"]
