"""b_g2: the G2 MSM of B over the tail scalars (the 1-scalars are in batch_addition)."""
from __future__ import annotations

from py_arkworks_bls12381 import G2Point

from .tail_msm import msm


def b_g2_msm(bases: list, scalars):
    return msm(bases, scalars, G2Point)
