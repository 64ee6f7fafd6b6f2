"""Backends implement the proving phases behind one interface (base.Backend)."""
from __future__ import annotations

import sys

from .. import cuda_extra
from .base import Backend
from .cpu import CpuBackend


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


def gpu_present(nvml=None, root: str = "/") -> tuple[bool, str]:
    """(present, what): whether this machine has an NVIDIA GPU, whatever CuPy makes of it.

    Asked of the driver, not of CuPy: NVML's device count (`nvml` is pynvml or a stand-in), else the
    driver's own listing under /proc and /dev. A device that CUDA_VISIBLE_DEVICES hides is absent."""
    if cuda_extra.hidden():
        return False, "CUDA_VISIBLE_DEVICES hides every device"
    try:
        if nvml is None:
            import pynvml as nvml
        nvml.nvmlInit()
        try:
            n = nvml.nvmlDeviceGetCount()
            if n > 0:
                name = nvml.nvmlDeviceGetName(nvml.nvmlDeviceGetHandleByIndex(0))
                name = name.decode() if isinstance(name, bytes) else str(name)
                return True, f"NVML reports {n} NVIDIA device(s), the first {name}"
        finally:
            nvml.nvmlShutdown()
    except Exception:
        pass                       # no binding or no driver library: ask the driver's files
    n, where = cuda_extra.driver_devices(root)
    if n:
        return True, f"the NVIDIA driver lists {n} GPU(s) in {where}"
    return False, "no NVIDIA device"


def get_backend(name: str = "auto", log=None, opts=None, table_gib: float | None = None) -> Backend:
    """The named backend ('auto': the GPU's where one can run) with the caller's optimization set and, on
    the GPU, P2's table budget (both resolved at the edge: cuzk/environment.py)."""
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
                return CudaBackend(opts, table_gib)
        if name == "cuda":
            raise BackendError(f"--backend cuda: {why}")
        log(f"cuzk: no GPU backend ({why}); using the CPU reference")
    return CpuBackend(opts)
