"""batch_addition: per circuit, the plain sum of the bases whose scalar is 1 (L, A, B_G1, B_G2)."""
from __future__ import annotations

from functools import reduce
from operator import add

import numpy as np


def point_sum(points: list, identity):
    return reduce(add, points, identity)


def gather(points: list, idx: np.ndarray) -> list:
    arr = np.empty(len(points), dtype=object)
    arr[:] = points
    return arr[idx].tolist()
