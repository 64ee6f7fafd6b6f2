"""ntt_msm_h on the GPU: the H scalars by the key's QAP convention through the NTT the backend's plan picks
(plans.HPlan, gpu/h.py), then their G1 MSM over the resident H bases (or precomputed tables of them)."""
from __future__ import annotations

import sys

import cupy
import numpy as np

from ...field import FR_LIMBS
from ...gpu import fr as gfr
from ...gpu import h as gh
from ...gpu.msm import fixed as gfixed
from ...gpu.msm import phase_msm
from ...gpu.msm import pippenger as gmsm
from ...gpu import srs as gsrs
from ...timing import circuit


def abc_for(be, asg, n: int):
    """The a, b, c the H pipeline may work on in place: the assignment's own when it may be spent and the plan
    spends it, else a copy (or an upload of host a, b, c)."""
    if asg.abc_dev is not None:
        if asg.abc_spendable and be.plan.h.spend_abc:
            abc, asg.abc_dev = asg.abc_dev, None     # consumed in place, no copy
            return abc
        return asg.abc_dev.copy()
    return gfr.upload(np.concatenate([asg.a, asg.b, asg.c])).reshape(3, n, FR_LIMBS)


def run(be, kh, assignments) -> list:
    hb = kh.dev["h"]
    out = []
    for i, asg in enumerate(assignments):
        with circuit(i, label="h scalars"):          # sub-steps: device time of each in the bench report
            h = gh.h_scalars(abc_for(be, asg, kh.domain.n), kh.domain, kh.pk.qap, **be.plan.h.h_options())
            h = cupy.ascontiguousarray(h)
        with circuit(i, label="h msm"):
            tb = tables(be, kh) if be.plan.h.tables else None
            if tb is not None:
                try:
                    out.append(gfixed.msm_g1(tb, h, **be.plan.msm.kw(1)))
                    continue
                except cupy.cuda.memory.OutOfMemoryError:
                    kh.drop_tables()
                    print("cuzk: P2: the H tables were freed: the device ran out of memory in the H MSM; "
                          "proving goes on without them", file=sys.stderr)
            c = phase_msm.window(len(hb), h, be.plan.msm)
            out.append(gmsm.msm_g1(hb.limbs, hb.inf, h, c, **be.plan.msm.kw(1)))
    return out


def tables(be, kh):
    """P2's tables of the H bases (CudaKey.h_tables) within the backend's budget (table_gib), or None where it holds
    none; a budget that cannot hold even the plain MSM's sort pass is an error naming both sizes."""
    try:
        return kh.h_tables(be.table_gib)
    except ValueError as e:
        raise gsrs.DeviceMemoryError(f"P2: {e}") from e
