"""batch_addition on the GPU: the 1-scalar bases summed through the MSM's bucket-sum kernels (with the multi-MSM
plan, a circuit's three G1 sums in one launch), or as MSMs with scalar 1 (plans.CudaPlan.ones_by_bucket_sums)."""
from __future__ import annotations

import cupy
from py_arkworks_bls12381 import G1Point, G2Point

from ...field import FR_LIMBS
from ...gpu import fr as gfr
from ...gpu.msm import pippenger as gmsm
from ...gpu.msm import sums as gsums
from ...timing import circuit


def rows(b, idx):
    """The rows of section b that hold the variables idx (a sparse section keeps some of them)."""
    if b.rows is None:
        return idx
    r = b.rows[idx]
    return r[r >= 0]


def sum_ones(be, b, idx, one):
    """Σ of section b's points over the variables idx (their scalars are 1)."""
    mp = be.plan.msm
    if be.plan.ones_by_bucket_sums:
        return gsums.batch_add(b.group, b.limbs, b.inf, rows(b, idx), bucket_sum=mp.bucket_sum(b.group),
                               pair_merges=mp.pair_merges, kernels=mp.kernels)
    bases, inf, _ = b.take(idx)
    if inf.size == 0:
        return (G2Point if b.group == 2 else G1Point).identity()
    scal = cupy.broadcast_to(one, (inf.size, FR_LIMBS)).copy()
    if b.group == 2:
        return gmsm.msm_g2(bases, inf, scal, **mp.kw(2))
    return gmsm.msm_g1(bases, inf, scal, **mp.kw(1))


def _many(be, kh, prep) -> list:
    """A circuit's three G1 batch sums in one sums.batch_add_many (multi-MSM plan, bucket sums); the G2 sum
    alone."""
    mp = be.plan.msm
    out = []
    for i, ones in enumerate(prep.ones):
        g1 = (("a", ones), ("b_g1", ones), ("l", prep.aux_part(ones)))

        def sums(i=i, g1=g1):
            with circuit(i, label="a+b_g1+l"):
                parts = [(kh.dev[q].limbs, kh.dev[q].inf, rows(kh.dev[q], idx)) for q, idx in g1]
                pts = gsums.batch_add_many(1, parts, mp.bucket_sum(1), mp.pair_merges, mp.kernels)
            return dict(zip([q for q, _ in g1], pts))

        def g2(i=i, ones=ones):
            with circuit(i, label="b_g2"):
                return {"b_g2": sum_ones(be, kh.dev["b_g2"], ones, None)}
        got = {}
        for d in be.jobs([sums, g2]):
            got.update(d)
        out.append({q: got[q] for q in ("a", "b_g1", "b_g2", "l")})
    return out


def run(be, kh, prep) -> list:
    if be.plan.msm.multi_msm and be.plan.ones_by_bucket_sums:
        return _many(be, kh, prep)
    one = gfr.upload([1])
    out = []
    for i, ones in enumerate(prep.ones):
        work = (("a", ones), ("b_g1", ones), ("b_g2", ones), ("l", prep.aux_part(ones)))

        def job(i, q, idx):
            def fn():
                with circuit(i, label=q):
                    return sum_ones(be, kh.dev[q], idx, one)
            return fn
        out.append(dict(zip([q for q, _ in work], be.jobs([job(i, q, idx) for q, idx in work]))))
    return out
