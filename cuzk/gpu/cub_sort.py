"""CUB's device radix sort of uint64 keys over a bit range (optimization K1), through ctypes.

CuPy's sort has no bit range, so a uint64 sort runs all eight 8-bit passes. The MSM's bucket keys order by
their bucket id alone (bits 32 and up; the low word is the point index and sign, already ascending within a
bucket, and CUB's sort is stable), so 3 passes do. kernels/host/cub_sort.cu is a C ABI over
cub::DeviceRadixSort::SortKeys, built with nvcc into a shared library in the cubin cache
(tools/build_cubins.py prebuilds it; else it is built on first use where nvcc is on PATH: cub_library.py).
"""
from __future__ import annotations

import ctypes
import warnings

import cupy

from .cub_library import SortUnavailable, build, library_path
from .loader import arch

_lib = None
_failed: str | None = None


def _load():
    global _lib, _failed
    if _lib is not None or _failed is not None:
        return _lib
    a = arch()
    path = library_path(a)
    try:
        try:
            lib = ctypes.CDLL(str(path)) if path.exists() else None
        except OSError:               # built on another image (libraries differ): build it here
            lib = None
        if lib is None:
            lib = ctypes.CDLL(str(build(a, path)))
    except (SortUnavailable, OSError) as e:
        _failed = str(e)
        return None
    i64, i32, vp, sz = ctypes.c_int64, ctypes.c_int, ctypes.c_void_p, ctypes.c_size_t
    lib.cuzk_sort_u64_temp_bytes.argtypes = [i32, i64, i32, i32, ctypes.POINTER(sz)]
    lib.cuzk_sort_u64.argtypes = [i32, vp, sz, vp, vp, i64, i32, i32, vp, ctypes.POINTER(i32)]
    lib.cuzk_cuda_error_string.restype = ctypes.c_char_p
    _lib = lib
    return lib


def available() -> bool:
    return _load() is not None


def _check(lib, err: int, what: str):
    if err:
        raise RuntimeError(f"CUB radix sort ({what}): {lib.cuzk_cuda_error_string(err).decode()}")


def sort_keys(keys, begin_bit: int = 0, end_bit: int = 64, fallback: bool = True):
    """keys (a 1-D cupy uint64 array) stably sorted by bits [begin_bit, end_bit): the same array or a new one.
    Where the library cannot be built or loaded: CuPy's full sort with a warning (fallback), else SortUnavailable."""
    if keys.dtype != cupy.uint64 or keys.ndim != 1 or not keys.flags.c_contiguous:
        raise ValueError("sort_keys needs a contiguous 1-D uint64 device array")
    if not 0 <= begin_bit < end_bit <= 64:
        raise ValueError(f"bit range [{begin_bit}, {end_bit}) is not within [0, 64)")
    lib = _load()
    if lib is None:
        if not fallback:
            raise SortUnavailable(_failed)
        warnings.warn(f"K1's CUB sort is unavailable ({_failed}); sorting all 64 bits with CuPy", stacklevel=2)
        keys.sort()
        return keys
    n = len(keys)
    if n < 2:
        return keys
    dev = keys.device.id
    nbytes = ctypes.c_size_t(0)
    _check(lib, lib.cuzk_sort_u64_temp_bytes(dev, n, begin_bit, end_bit, ctypes.byref(nbytes)), "temp size")
    alt = cupy.empty_like(keys)
    temp = cupy.empty(max(1, nbytes.value), dtype=cupy.uint8)
    sel = ctypes.c_int(0)
    stream = cupy.cuda.get_current_stream().ptr
    _check(lib, lib.cuzk_sort_u64(dev, temp.data.ptr, nbytes.value, keys.data.ptr, alt.data.ptr, n, begin_bit,
                                  end_bit, stream, ctypes.byref(sel)), "sort")
    return alt if sel.value else keys
