"""prep_msm on the CPU reference: split each circuit's scalars into 0, 1 and other, merged across the batch.

A base goes to the tail MSM when any circuit of the batch has an 'other' scalar there;
its tail bases are gathered once for the batch. Each circuit's remaining 1-scalars go to
batch addition; 0-scalars are dropped.
"""
from __future__ import annotations

import numpy as np

from ..base import Prep


def classify(z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(is_zero, is_one) masks of an Fr vector."""
    return z == 0, z == 1


def prep_msm(zs: list, num_inputs: int) -> Prep:
    other_any = np.zeros(len(zs[0]), dtype=bool)
    masks = []
    counts = {"zeros": 0, "ones": 0, "others": 0}
    for z in zs:
        zero, one = classify(z)
        other = ~(zero | one)
        other_any |= other
        masks.append(one)
        counts["zeros"] += int(zero.sum())
        counts["ones"] += int(one.sum())
        counts["others"] += int(other.sum())
    tail = np.flatnonzero(other_any)
    ones = [np.flatnonzero(one & ~other_any) for one in masks]
    return Prep(num_inputs, tail, ones, counts)


def run(be, kh, assignments) -> Prep:
    return prep_msm([a.z for a in assignments], kh.pk.num_inputs)
