"""Backends implement the proving phases behind one interface (base.Backend)."""
from __future__ import annotations

import sys

from .base import Backend


class BackendError(RuntimeError):
    pass


def gpu_status() -> tuple[bool, str]:
    """(usable, reason): a CUDA device that CuPy can use."""
    try:
        import cupy
    except Exception as e:  # ImportError, or a broken CUDA install
        return False, f"CuPy is not importable ({type(e).__name__})"
    try:
        n = cupy.cuda.runtime.getDeviceCount()
    except Exception as e:
        return False, f"no usable CUDA device ({e})"
    if n < 1:
        return False, "no CUDA device"
    return True, f"{n} CUDA device(s)"


def get_backend(name: str = "auto", log=None, opts=None) -> Backend:
    log = log or (lambda msg: print(msg, file=sys.stderr))
    if name not in ("auto", "cpu", "cuda"):
        raise BackendError(f"unknown backend {name!r}; use auto, cpu or cuda")
    if name in ("auto", "cuda"):
        ok, why = gpu_status()
        if ok:
            try:
                from .cuda import CudaBackend
            except ImportError as e:
                why = f"the cuda backend is not available in this build ({e})"
                ok = False
            else:
                return CudaBackend(opts)
        if name == "cuda":
            raise BackendError(f"--backend cuda: {why}")
        log(f"cuzk: no GPU backend ({why}); using the CPU reference")
    from .cpu import CpuBackend
    return CpuBackend(opts)
