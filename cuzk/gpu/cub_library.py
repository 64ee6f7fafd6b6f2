"""K1's CUB sort library on the host: its source (kernels/host/cub_sort.cu, a C ABI over
cub::DeviceRadixSort::SortKeys), its name in the cubin cache and its nvcc build. tools/build_cubins.py and
cubins.py build it ahead of time; cub_sort.py loads it (or builds it on first use where nvcc is on PATH) and sorts
through it on the device.
"""
from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from pathlib import Path

from .kernel_sources import cubin_dir, kernel_dir

SOURCE = "host/cub_sort.cu"
NVCC_FLAGS = ("-O3", "-std=c++17", "-shared", "-Xcompiler", "-fPIC")


class SortUnavailable(RuntimeError):
    pass


def source_path() -> Path:
    return Path(kernel_dir(), SOURCE)


def library_path(arch_name: str) -> Path:
    """The library for this source, flags and target, in the cubin cache."""
    h = hashlib.sha256(arch_name.encode())
    for f in NVCC_FLAGS:
        h.update(f.encode())
    h.update(source_path().read_bytes())
    return cubin_dir() / f"cub_sort-{arch_name}-{h.hexdigest()[:20]}.so"


def build(arch_name: str, out: Path | None = None) -> Path:
    """nvcc the shim into `out` (default library_path); raises SortUnavailable with nvcc's message."""
    out = out or library_path(arch_name)
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        raise SortUnavailable("nvcc is not on PATH, and no prebuilt " + out.name + " is in " + str(out.parent))
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(f".{os.getpid()}.tmp")
    r = subprocess.run([nvcc, f"-arch={arch_name}", *NVCC_FLAGS, "-o", str(tmp), str(source_path())],
                       capture_output=True, text=True)
    if r.returncode:
        tmp.unlink(missing_ok=True)
        raise SortUnavailable(f"nvcc failed on {SOURCE}:\n{r.stderr.strip()}")
    tmp.replace(out)
    return out
