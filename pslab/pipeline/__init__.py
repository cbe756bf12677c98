"""Pipeline parallelism on the virtual clock: `pslab.train(mode=pslab.Pipeline(stages=p,
microbatches=m, schedule=..., chunks=v))`.

schedules: each rank's action list (PyTorch's lists); clock: one step timed; stages: the
arithmetic of a stage's forward, input- and weight-gradient; simulated: the run; result:
PipelineRun and the papers' numbers; front: the checks of the front door.
"""
from .mode import Pipeline
from .result import PipelineRun

__all__ = ["Pipeline", "PipelineRun"]
