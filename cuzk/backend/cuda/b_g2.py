"""b_g2 on the GPU: the G2 MSM of B over the tail (A4: on the CPU instead, a thread per circuit)."""
from __future__ import annotations

import contextvars
from concurrent.futures import ThreadPoolExecutor

import cupy
import numpy as np
from py_arkworks_bls12381 import G2Point

from ...gpu.msm import phase_msm
from ...timing import circuit
from ..cpu.msm import msm as cpu_msm
from .synthesis import device_z


def _on_host(kh, prep, assignments) -> list:
    idx = cupy.asnumpy(prep.tail)
    arr = np.empty(len(kh.b_g2_ark()), dtype=object)
    arr[:] = kh.b_g2_ark()
    bases = arr[idx].tolist()

    def one(i, a):
        with circuit(i):          # host sub-records: the threads overlap on the timeline
            return cpu_msm(bases, a.z[idx], G2Point)
    with ThreadPoolExecutor(max(1, len(assignments))) as ex:
        futs = [ex.submit(contextvars.copy_context().run, one, i, a) for i, a in enumerate(assignments)]
        return [f.result() for f in futs]


def run(be, kh, prep, assignments) -> list:
    if be.plan.b_g2_on_host:
        return _on_host(kh, prep, assignments)
    bases, inf, keep = kh.dev["b_g2"].take(prep.tail)
    out = []
    for i, a in enumerate(assignments):
        with circuit(i):
            s = device_z(a)[prep.tail]
            s = cupy.ascontiguousarray(s if keep is None else s[keep])
            out.append(phase_msm.run_msm(2, bases, inf, s, len(kh.dev["h"]), be.plan.msm))
    return out
