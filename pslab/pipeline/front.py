"""The front door of a pipelined run: `pslab.train(mode=pslab.Pipeline(...), ...)` makes and
checks its `Settings` as for every mode (pslab/settings.py), then the run goes to its backend
here (the virtual clock; real processes: pslab/pipeline/processes.py)."""
from __future__ import annotations

from ..settings import Settings
from .result import PipelineRun
from .simulated import simulate_pipeline


def run_pipeline(settings: Settings) -> PipelineRun:
    """Run checked settings of a Pipeline mode on their backend."""
    if settings.processes is None:
        return simulate_pipeline(settings)
    from .processes import train_processes  # torch's pipelining, loaded on first use

    return train_processes(settings)
