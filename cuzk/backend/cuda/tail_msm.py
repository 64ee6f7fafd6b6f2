"""tail_msm on the GPU: the A, B_G1 and L MSMs over the batch's shared tail bases, gathered once (M2: a
circuit's three as one multi-MSM)."""
from __future__ import annotations

import cupy

from ...gpu.msm import many as gmany
from ...gpu.msm import phase_msm
from ...timing import circuit
from .synthesis import device_z


def _many(be, kh, prep, assignments) -> list:
    """M2: a circuit's three G1 tail MSMs as one multi-MSM. The bases of the three are gathered into
    one array once for the batch, and each circuit's scalars by one gather of z."""
    t, tl = prep.tail, prep.aux_part(prep.tail)
    ni = kh.pk.num_inputs
    qs = ("a", "b_g1", "l")
    bases, inf, zidx = [], [], []
    for q, v, shift in (("a", t, 0), ("b_g1", t, 0), ("l", tl, ni)):
        b, f, keep = kh.dev[q].take(v)
        bases.append(b)
        inf.append(f)
        zidx.append((v if keep is None else v[keep]) + shift)   # z's index of each gathered base
    sizes = [len(f) for f in inf]
    bases, inf, zidx = cupy.concatenate(bases), cupy.concatenate(inf), cupy.concatenate(zidx)
    out = []
    for i, asg in enumerate(assignments):
        with circuit(i):
            s = cupy.ascontiguousarray(device_z(asg)[zidx])
            parts = sum(1 for m in sizes if m)
            c = phase_msm.window(len(kh.dev["h"]), s, be.plan.msm, 1, parts) if s.shape[0] else None
            pts = gmany.msm_g1_concat(bases, inf, s, sizes, c, **be.plan.msm.kw(1))
            out.append(dict(zip(qs, pts)))
    return out


def run(be, kh, prep, assignments) -> list:
    if be.plan.msm.multi_msm:
        return _many(be, kh, prep, assignments)
    t, tl = prep.tail, prep.aux_part(prep.tail)
    gathered = {q: kh.dev[q].take(t) for q in ("a", "b_g1")}
    gathered["l"] = kh.dev["l"].take(tl)
    ni = kh.pk.num_inputs
    h_size = len(kh.dev["h"])
    out = []
    for i, asg in enumerate(assignments):
        with circuit(i):
            z = device_z(asg)
            zt, zl = z[t], z[tl + ni]
            work = []
            for q, s in (("a", zt), ("b_g1", zt), ("l", zl)):
                bases, inf, keep = gathered[q]
                s = cupy.ascontiguousarray(s if keep is None else s[keep])
                work.append((q, bases, inf, s))
            jobs = [lambda b=b, f=f, s=s: phase_msm.run_msm(1, b, f, s, h_size, be.plan.msm) for _, b, f, s in work]
            out.append(dict(zip([q for q, *_ in work], be.jobs(jobs))))
    return out
