"""Fr vectors on the device: upload/download between host ints and Montgomery limbs."""
from __future__ import annotations

import numpy as np

from ..field import FR_LIMBS, R, fr_array, ints_to_limbs, limbs_to_ints
from ..witness_pack import unpack_into
from .loader import kernel

THREADS = 256


def _launch(name: str, out, a, n: int) -> None:
    kernel("ff/ops", name)(((n + THREADS - 1) // THREADS,), (THREADS,), (out, a, np.int64(n)))


def _pinned_copy(host: np.ndarray):
    """Stage a host array in page-locked memory, then copy it to the device (optimization B1)."""
    import cupy
    mem = cupy.cuda.alloc_pinned_memory(host.nbytes)
    staged = np.frombuffer(mem, dtype=host.dtype, count=host.size).reshape(host.shape)
    staged[...] = host
    out = cupy.empty(host.shape, dtype=host.dtype)
    out.set(staged)
    return out


def upload(values, mont: bool = True, pinned: bool = False):
    """Host Fr ints -> device uint32[n, 8] (Montgomery when mont), converted on the GPU.
    `pinned` stages the limbs in page-locked host memory first (B1)."""
    return upload_limbs(ints_to_limbs(fr_array(values), FR_LIMBS), mont, pinned)


def upload_limbs(host: np.ndarray, mont: bool = True, pinned: bool = False):
    """Canonical host limbs uint32[n, 8] (ints_to_limbs of fr_array) -> device, as `upload`."""
    import cupy
    limbs = _pinned_copy(host) if pinned else cupy.asarray(host)
    if mont and len(limbs):
        _launch("fr_to_mont", limbs, limbs, len(limbs))
    return limbs


def _with_inputs(inputs, n_aux: int):
    """(z, ni): device uint32[ni + n_aux, 8] with the inputs' canonical limbs in its first ni rows."""
    import cupy
    ni = len(inputs)
    z = cupy.empty((ni + n_aux, FR_LIMBS), dtype=cupy.uint32)
    z[:ni].set(ints_to_limbs(fr_array(inputs), FR_LIMBS))
    return z, ni


def upload_split(inputs, aux_limbs):
    """z = inputs (a few ints) | aux (canonical uint32[num_aux, 8] limbs) -> device Montgomery
    uint32[num_vars, 8], written in place (no host concatenation of the large part)."""
    z, ni = _with_inputs(inputs, len(aux_limbs))
    if len(aux_limbs):
        z[ni:].set(np.ascontiguousarray(aux_limbs, dtype=np.uint32))
    return to_mont(z) if len(z) else z


def upload_packed(inputs, pw):
    """z = inputs | a PackedWitness of aux (witness_pack: bits plus the other entries) -> device
    Montgomery uint32[num_vars, 8], expanded on the GPU: ~60 MB cross the bus at 2^27, not 4 GiB."""
    import cupy
    z, ni = _with_inputs(inputs, pw.n)
    if ni:
        to_mont(z[:ni])
    unpack_into(z[ni:], pw, cupy, to_mont)
    return z


def to_mont(x):
    n = x.size // FR_LIMBS
    _launch("fr_to_mont", x, x, n)
    return x


def from_mont(x):
    """In place: x·R^-1 (a zkey's stored coefficient c·R² becomes c's Montgomery form c·R)."""
    n = x.size // FR_LIMBS
    if n:
        _launch("fr_from_mont", x, x, n)
    return x


def mul(a, b, out=None):
    """a∘b elementwise, Montgomery in and out (field_ops fr_mul), into `out` (contiguous, the same
    shape) or a new array."""
    import cupy
    if a.shape != b.shape or a.shape[-1] != FR_LIMBS or (out is not None and out.shape != a.shape):
        raise ValueError(f"mul: shapes {a.shape}, {b.shape}" + ("" if out is None else f", out {out.shape}"))
    a, b = cupy.ascontiguousarray(a), cupy.ascontiguousarray(b)
    if out is None:
        out = cupy.empty_like(a)
    elif not out.flags.c_contiguous:
        raise ValueError("mul: out must be contiguous")
    n = a.size // FR_LIMBS
    if n:
        kernel("ff/ops", "fr_mul")(((n + THREADS - 1) // THREADS,), (THREADS,), (out, a, b, np.int64(n)))
    return out


def download(x, mont: bool = True) -> np.ndarray:
    """Device uint32[n, 8] -> host object array of canonical ints."""
    import cupy
    y = x.reshape(-1, FR_LIMBS)
    if mont and len(y):
        y = y.copy()
        _launch("fr_from_mont", y, y, len(y))
    v = limbs_to_ints(cupy.asnumpy(y))
    if len(v) and (v >= R).any():
        raise ArithmeticError("device produced an unreduced Fr element")
    return v


def poison(shape):
    """An output buffer filled with 0xff bytes (not a valid element), so unwritten slots show."""
    import cupy
    return cupy.full(shape, 0xFFFFFFFF, dtype=cupy.uint32)
