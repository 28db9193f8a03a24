"""Loads ucc_torch into every Python started with this directory on
PYTHONPATH (torch.multiprocessing's spawned ranks included), once torch's
distributed package is imported, so that programs and PyTorch's own tests
run unmodified. Python imports sitecustomize at startup by itself; the
one this shadows (Debian's, in /etc/python3.11) runs too.
"""

import importlib.abc
import importlib.machinery
import importlib.util
import os
import sys

_TARGET = "torch.distributed.distributed_c10d"


class _AfterC10d(importlib.abc.MetaPathFinder):
    """Runs ucc_torch right after distributed_c10d has been executed."""

    def find_spec(self, name, path, target=None):
        if name != _TARGET:
            return None
        sys.meta_path.remove(self)
        try:
            spec = importlib.util.find_spec(name)
        finally:
            sys.meta_path.insert(0, self)
        if spec is None or spec.loader is None:
            return spec
        loader = spec.loader
        exec_module = loader.exec_module

        def exec_then_install(module):
            exec_module(module)
            sys.meta_path[:] = [f for f in sys.meta_path if f is not self]
            import ucc_torch  # noqa: F401  (installs on import)

        loader.exec_module = exec_then_install
        return spec


if _TARGET in sys.modules:
    import ucc_torch  # noqa: F401
else:
    sys.meta_path.insert(0, _AfterC10d())


def _chain():
    """Runs the sitecustomize that would have run without this one (not
    another copy of this one, further down the path)."""
    rest = list(sys.path)
    while True:
        spec = importlib.machinery.PathFinder.find_spec("sitecustomize", rest)
        if spec is None or spec.loader is None or spec.origin is None:
            return
        where = os.path.dirname(os.path.abspath(spec.origin))
        try:
            with open(spec.origin) as f:
                ours = "class _AfterC10d" in f.read()
        except OSError:
            ours = False
        if not ours:
            break
        rest = [p for p in rest if os.path.abspath(p or ".") != where]
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)


_chain()
