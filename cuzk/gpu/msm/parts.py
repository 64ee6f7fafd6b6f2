"""A multi-MSM's parts on the host (many.py runs several G1 MSMs as one): which of them are non-empty and where
their points lie in the concatenated inputs, and the fold of each part's window sums once downloaded."""
from __future__ import annotations

import numpy as np
from py_arkworks_bls12381 import G1Point, G2Point

from . import fold


def live_parts(sizes: list[int]) -> tuple[list[int], np.ndarray]:
    """(live, off): the non-empty MSMs' indices, in order, and their bounds in the concatenated points,
    int64[len(live) + 1] (MSM live[j] is [off[j], off[j + 1])); empty MSMs take no buckets."""
    if min(sizes, default=0) < 0:
        raise ValueError(f"part sizes must be >= 0, got {sizes}")
    live = [p for p, m in enumerate(sizes) if m]
    off = np.zeros(len(live) + 1, dtype=np.int64)
    np.cumsum([sizes[p] for p in live], out=off[1:])
    return live, off


def fold_parts(group: int, sums: np.ndarray, c: int, live: list[int], count: int) -> list:
    """Downloaded window sums uint32[nw, len(live), words] (window_sums's) -> count points: MSM live[j]'s
    windows folded by fold.fold_windows, the identity for the others."""
    out = [(G1Point if group == 1 else G2Point).identity() for _ in range(count)]
    for j, p in enumerate(live):
        out[p] = fold.fold_windows(group, sums[:, j], c)
    return out
