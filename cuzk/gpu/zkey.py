"""a/b/c of a snarkjs .zkey on the GPU, laid out as ZKey.assign (snarkjs's buildABC1) does:
a = A·z and b = B·z at every domain row (the key's coefficient list already holds the public-signal
rows), c = a∘b. The key's A and B go to the device once per ZKey as CSR (the spmv_csr kernel of
synthesis); coefficients are the file's value·R² limbs, Montgomery-reduced on the GPU."""
from __future__ import annotations

import cupy
import numpy as np

from ..field import FR_LIMBS, fr_array, limbs_to_ints
from ..groth16.assignment import Assignment, is_limbs
from .fr import from_mont, mul, upload, upload_limbs
from .loader import kernel
from .per_device import on_device

THREADS = 256


class DeviceZKey:
    """The key's A and B on the device (indptr, cols, Montgomery coefficients), uploaded once."""

    def __init__(self, zk):
        self.n, self.n_vars = zk.domain_size, zk.n_vars
        self.mats = []
        for which in (0, 1):
            indptr, cols, raw = zk.coeffs.raw_csr(which, self.n)
            coef = from_mont(cupy.asarray(raw)) if len(raw) else cupy.zeros((1, FR_LIMBS), cupy.uint32)
            self.mats.append((cupy.asarray(indptr), cupy.asarray(cols), coef))

    @classmethod
    def of(cls, zk) -> "DeviceZKey":
        """The one cached on the ZKey (made on first use)."""
        return on_device(zk, "_device", lambda: cls(zk))


def evaluate(dev: DeviceZKey, z):
    """abc = [a | b | c], device uint32[3, n, 8], Montgomery; z: device uint32[n_vars, 8], Montgomery."""
    if z.shape != (dev.n_vars, FR_LIMBS):
        raise ValueError(f"z has shape {z.shape}, expected ({dev.n_vars}, {FR_LIMBS})")
    n = dev.n
    abc = cupy.empty((3, n, FR_LIMBS), dtype=cupy.uint32)
    grid = ((n + THREADS - 1) // THREADS,)
    for i, (indptr, cols, coef) in enumerate(dev.mats):     # every row: empty ones give 0
        kernel("r1cs/spmv", "spmv_csr")(grid, (THREADS,), (abc[i], indptr, cols, coef, z, np.int64(n)))
    mul(abc[0], abc[1], out=abc[2])
    return abc


def assign(zk, values):
    """The cuda backend's ZKey.assign: `values` Fr ints or canonical limbs uint32[n_vars, 8] (a .wtns
    as read); z is uploaded once and kept (z_dev) with abc_dev, as CudaBackend.assign does."""
    ni = zk.pk.num_inputs
    if is_limbs(values):
        if values.shape[1] != FR_LIMBS:
            raise ValueError(f"witness limbs have shape {values.shape}, expected (n, {FR_LIMBS})")
        zk.check_witness(len(values), int(limbs_to_ints(values[:1])[0]) if len(values) else None)
        inputs, aux = limbs_to_ints(values[:ni]), values[ni:]
        z = upload_limbs(np.ascontiguousarray(values))
    else:
        v = fr_array(values)
        zk.check_witness(len(v), v[0] if len(v) else None)
        inputs, aux = v[:ni].copy(), v[ni:].copy()
        z = upload(v)
    abc = evaluate(DeviceZKey.of(zk), z)
    return Assignment(inputs, aux, None, None, None, abc_dev=abc, z_dev=z)
