"""The CPU reference's curve sums: arkworks' Pippenger for MSMs, plain sums for 1-scalars."""
from __future__ import annotations

from functools import reduce
from operator import add

import numpy as np

from ...curve import scalars_to_ark


def msm(points: list, scalars, cls):
    """Σ s_i · P_i by arkworks' Pippenger (the CPU oracle)."""
    if len(points) == 0:
        return cls.identity()
    return cls.multiexp_unchecked(points, scalars_to_ark(scalars))


def point_sum(points: list, identity):
    return reduce(add, points, identity)


def gather(points: list, idx: np.ndarray) -> list:
    arr = np.empty(len(points), dtype=object)
    arr[:] = points
    return arr[idx].tolist()
