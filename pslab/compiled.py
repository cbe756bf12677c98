"""The inlined loops compiled, where they are built from their source as it is now.

fastloop.py and fastduplex.py are plain Python and they are the source. Where a C compiler is
at hand, installing pslab also compiles each with Cython into a twin module beside it
(setup.py): `pslab._fastloop`, `pslab._fastduplex`, the same code run as C calls without the
interpreter's dispatch of each bytecode, so the same runs with the same numbers, faster. A twin
carries the SHA-256 of the source it was compiled from; `twin` hands it out only while the .py
file still holds those bytes, so an edit to the loop takes effect at once (and `pip install -e .`
compiles it again). PSLAB_COMPILED=0 in the environment keeps to the Python loops: to step
through one in a debugger or time it line by line.
Layer: actors (beside the loops; simulation.py asks it which to run).
"""
from __future__ import annotations

import hashlib
import importlib
import os
from pathlib import Path
from types import ModuleType


def twin(module: ModuleType) -> ModuleType:
    """`module`'s compiled twin (`pslab._<name>`) where it is built from `module`'s file as it
    is now and PSLAB_COMPILED is not "0"; else `module` itself."""
    if os.environ.get("PSLAB_COMPILED", "1") == "0":
        return module
    package, _, name = module.__name__.rpartition(".")
    try:
        compiled = importlib.import_module(f"{package}._{name}")
    except ImportError:  # not built: no compiler or no Cython at install
        return module
    source = Path(module.__file__ or "").read_bytes()
    if getattr(compiled, "SOURCE_SHA256", None) != hashlib.sha256(source).hexdigest():
        return module  # built from another version of the file: it would run other code
    return compiled


def in_use(module: ModuleType) -> bool:
    """Does `twin(module)` give the compiled one?"""
    return twin(module) is not module
