"""Caches of device objects kept one per GPU: a table or a circuit's matrices made on one device are
never handed to a kernel running on another (cuzk bench --pipeline --devices proves on several GPUs of
one process, each prover thread with its own device current)."""
from __future__ import annotations

import functools
import threading


def current() -> int:
    """The index of the CUDA device current in this thread."""
    import cupy
    return int(cupy.cuda.Device().id)


def device_cache(maxsize: int):
    """functools.lru_cache with the current device in the key: `maxsize` entries for each device."""
    def wrap(fn):
        @functools.lru_cache(maxsize=None)
        def per(dev: int):
            return functools.lru_cache(maxsize=maxsize)(fn)

        @functools.wraps(fn)
        def cached(*args, **kw):
            return per(current())(*args, **kw)
        cached.cache_clear = per.cache_clear
        cached.per_device = True
        return cached
    return wrap


_attr_lock = threading.Lock()


def on_device(obj, attr: str, make):
    """obj's `attr` for the current device (a dict by device index on obj), made by make() on first use."""
    dev = current()
    with _attr_lock:
        per = getattr(obj, attr, None)
        if not isinstance(per, dict):
            per = {}
            setattr(obj, attr, per)
        if dev in per:
            return per[dev]
    made = make()
    with _attr_lock:
        return per.setdefault(dev, made)


def is_device_error(e: BaseException) -> bool:
    """Whether a proof's error is its GPU's (CUDA runtime or driver error, device memory exhausted), so that the
    circuit may be proved on another device, rather than the circuit's or the code's."""
    import cupy
    kinds = (cupy.cuda.runtime.CUDARuntimeError, cupy.cuda.driver.CUDADriverError, cupy.cuda.memory.OutOfMemoryError)
    return isinstance(e, kinds)
