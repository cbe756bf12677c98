"""`python -m pslab.processes ...`: one rank of a run, started by torchrun (see torchrun.py)."""
from .torchrun import run_rank

run_rank()
