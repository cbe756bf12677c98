"""The two inlined loops of timing-only runs, compiled where a C compiler is at hand.

pyproject.toml holds the package's metadata; this file only adds two optional extension
modules. `pslab/fastloop.py` and `pslab/fastduplex.py` are plain Python and stay the source: the
build copies each, adds the SHA-256 of its bytes (`SOURCE_SHA256`), and compiles the copy with
Cython into a twin module beside it, `pslab._fastloop` and `pslab._fastduplex`. Cython compiles
the same Python code to C calls without the interpreter's dispatch of each bytecode: the duplex
800x100 run of `python -m bench` does ~20 % fewer instructions. `pslab.compiled.twin` uses a twin
only where its SOURCE_SHA256 is that of the .py file as it is now, so an edit takes effect at
once. Where the compiler or Cython is missing, the build goes on without them (optional
extensions) and the same runs take the Python loops: the same numbers, a little slower.
"""
from __future__ import annotations

import hashlib
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

LOOPS = ("fastloop", "fastduplex")  # pslab/<name>.py -> pslab._<name>
# every value a Python object, as the interpreter has it: annotations and inference make no C
# types (a C double would give a new float object where the loop hands on the very one)
DIRECTIVES = {"language_level": 3, "annotation_typing": False, "infer_types": False,
              "binding": True}


class BuildTwins(build_ext):
    """Writes each loop's copy with its source's hash and has Cython turn it into C; then builds
    whatever compiles (the extensions are optional: a failed compile skips its twin)."""

    def run(self) -> None:
        try:
            from Cython.Build import cythonize
        except ImportError:
            print("pslab: Cython is not installed; the loops run as plain Python")
            return
        out = Path(self.build_temp) / "twins" / "pslab"
        out.mkdir(parents=True, exist_ok=True)
        for ext in self.extensions:
            data = Path(ext.sources[0]).read_bytes()  # pslab/<name>.py, as setup() names it
            copy = out / f"{ext.name.rsplit('.', 1)[1]}.py"
            copy.write_bytes(data + f'\nSOURCE_SHA256 = "{hashlib.sha256(data).hexdigest()}"\n'
                                    .encode())
            ext.sources = [str(copy)]
        made = cythonize(self.extensions, compiler_directives=DIRECTIVES, quiet=True)
        for ext, c in zip(self.extensions, made):  # setuptools' own Extension, its C source
            ext.sources = c.sources
        super().run()


setup(ext_modules=[Extension(f"pslab._{name}", [f"pslab/{name}.py"], optional=True)
                   for name in LOOPS],
      cmdclass={"build_ext": BuildTwins})
