"""Loads ucc_torch into every Python started with this directory on
PYTHONPATH (torch.multiprocessing's spawned ranks included), once torch's
distributed package is imported, so that programs and PyTorch's own tests
run unmodified. Python imports sitecustomize at startup by itself.
"""

import importlib.abc
import importlib.util
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
