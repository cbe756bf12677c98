"""`pslab.run`, the old home of `train` and `Run`: kept so that `pslab.run.train`, `pslab.run.Run`
and the rest still import. The code lives in its layers: `Run` in pslab/result.py (the bottom),
the simulated backend in pslab/simulate.py, the front door `train`/`resume` in
pslab/training.py. Nothing inside pslab imports this module.
"""
from .layout import BYTES_PER_VALUE  # noqa: F401
from .model import single_thread  # noqa: F401
from .result import Run, as_runs  # noqa: F401
from .simulate import MAX_SHARDS, make_layout, simulate  # noqa: F401
from .simulation import Record  # noqa: F401
from .training import resume, train  # noqa: F401
