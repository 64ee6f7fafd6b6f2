"""tail_msm: MSMs over the batch's shared tail bases with each circuit's scalars there."""
from __future__ import annotations

from ..curve import scalars_to_ark


def msm(points: list, scalars, cls):
    """Σ s_i · P_i by arkworks' Pippenger (the CPU oracle)."""
    if len(points) == 0:
        return cls.identity()
    return cls.multiexp_unchecked(points, scalars_to_ark(scalars))
