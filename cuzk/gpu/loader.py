"""Compile kernels/*.cu with NVRTC through cupy.RawModule, once per process.

-arch comes from the device's compute capability (sm_90 on the H200). CuPy keeps the
compiled cubins in its on-disk kernel cache, so a second process loads without NVRTC.
"""
from __future__ import annotations

import time
from pathlib import Path


def kernel_dir() -> Path:
    """kernels/ as installed (cuzk.kernels), or beside the package in a source checkout."""
    try:
        from ..kernels import SOURCE_DIR
        return Path(SOURCE_DIR)
    except ImportError:
        return Path(__file__).resolve().parents[2] / "kernels"

_modules: dict = {}
load_times: dict[str, float] = {}


def arch() -> str:
    import cupy
    cc = cupy.cuda.Device().compute_capability
    return f"sm_{cc}"


def options() -> tuple[str, ...]:
    return (f"-arch={arch()}", f"-I{kernel_dir()}", "--std=c++17", "-default-device")


def module(name: str):
    """The RawModule for kernels/<name>.cu, compiled on first use."""
    mod = _modules.get(name)
    if mod is None:
        import cupy
        src = Path(kernel_dir(), f"{name}.cu").read_text()
        t0 = time.perf_counter()
        mod = cupy.RawModule(code=src, options=options(), backend="nvrtc")
        mod.compile()
        load_times[name] = time.perf_counter() - t0
        _modules[name] = mod
    return mod


def kernel(module_name: str, fn: str):
    return module(module_name).get_function(fn)
