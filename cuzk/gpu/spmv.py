"""a/b/c evaluation on the GPU: CSR sparse products over the witness, the input rows,
zero padding to the domain, and the a*b = c check."""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..field import FR_LIMBS, R, ints_to_limbs
from ..r1cs import R1CS, UnsatisfiedError
from .fr import to_mont
from .loader import kernel
from .per_device import on_device

THREADS = 256


class TableCoeffs(NamedTuple):
    """A compact CSR's coefficients on the device: table[index[k]] (table Montgomery)."""
    index: object      # cupy uint16[nnz]
    table: object      # cupy uint32[t, 8]


def table_coeffs(m) -> TableCoeffs:
    import cupy
    table = cupy.asarray(m.table_limbs()) if len(m.table) else cupy.zeros((1, 8), cupy.uint32)
    return TableCoeffs(cupy.asarray(m.index), to_mont(table))


def device_coeffs(m):
    """A CSR's coefficients on the device in Montgomery form, from its cached canonical limbs (checked
    canonical on the device; otherwise reduced on the host)."""
    import cupy
    try:
        limbs = cupy.asarray(m.limbs())
        bad = cupy.zeros(1, dtype=cupy.uint32)
        if m.nnz:
            kernel("keygen/fr", "kg_check_canonical")((max(1, (m.nnz + 255) // 256),), (256,),
                                                      (bad, limbs, np.int64(m.nnz)))
        canonical = not int(bad[0])
    except ValueError:                          # a negative or oversized coefficient
        canonical = False
    if not canonical:
        limbs = cupy.asarray(ints_to_limbs(np.asarray(m.coeffs, dtype=object) % R, FR_LIMBS))
    return to_mont(limbs) if m.nnz else limbs


class DeviceR1CS:
    """The circuit's matrices on the device, uploaded once (coefficients in Montgomery form:
    32 bytes per nonzero, or a compact CSR's table and uint16 index)."""

    def __init__(self, r1cs: R1CS):
        import cupy
        if r1cs.num_vars >= 2**31:
            raise ValueError("more than 2^31 variables")
        self.r1cs = r1cs
        self.mats = []
        for m in (r1cs.A, r1cs.B, r1cs.C):
            if m.compact:
                coeffs = table_coeffs(m)
            else:
                coeffs = device_coeffs(m) if m.nnz else cupy.zeros((1, 8), cupy.uint32)
            self.mats.append((cupy.asarray(m.indptr.astype(np.int64, copy=False)),
                              cupy.asarray(m.cols.astype(np.int32, copy=False)), coeffs))

    @classmethod
    def of(cls, r1cs: R1CS) -> "DeviceR1CS":
        return on_device(r1cs, "_device", lambda: cls(r1cs))


def evaluate(dev: DeviceR1CS, z, n: int, check: bool = True):
    """abc = [a | b | c] over the domain of size n, device uint32[3, n, 8], Montgomery."""
    import cupy
    r1cs = dev.r1cs
    m, ni = r1cs.num_constraints, r1cs.num_inputs
    if m + ni > n:
        raise ValueError(f"circuit needs {m + ni} rows but the domain has {n}")
    abc = cupy.empty((3, n, 8), dtype=cupy.uint32)
    grid = ((m + THREADS - 1) // THREADS,)
    for i, (indptr, cols, coeffs) in enumerate(dev.mats):
        if not m:
            continue
        if isinstance(coeffs, TableCoeffs):
            kernel("r1cs/spmv", "spmv_csr_table")(grid, (THREADS,),
                                                  (abc[i], indptr, cols, coeffs.index, coeffs.table, z, np.int64(m)))
        else:
            kernel("r1cs/spmv", "spmv_csr")(grid, (THREADS,), (abc[i], indptr, cols, coeffs, z, np.int64(m)))
    rest = n - m
    kernel("r1cs/spmv", "abc_tail")(((rest + THREADS - 1) // THREADS,), (THREADS,),
                                    (abc, z, np.int64(m), np.int64(ni), np.int64(n)))
    if check and m:
        bad = cupy.empty(m, dtype=cupy.uint8)
        kernel("r1cs/spmv", "abc_check")(((m + THREADS - 1) // THREADS,), (THREADS,),
                                         (bad, abc, np.int64(m), np.int64(n)))
        idx = cupy.flatnonzero(bad)
        if idx.size:
            i = int(idx[0])
            raise UnsatisfiedError(f"witness does not satisfy the circuit: constraint {i} ({r1cs.label(i)}) fails, "
                                   f"{int(idx.size)} failing in all")
    return abc
