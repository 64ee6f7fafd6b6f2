"""prep_msm on the GPU: the 0/1/other split of the batch's witnesses (gpu/prep.py)."""
from __future__ import annotations

import cupy

from ...gpu.prep import prep_msm
from .synthesis import device_z


def run(be, kh, assignments):
    zs = cupy.stack([device_z(a) for a in assignments])
    return prep_msm(zs, kh.pk.num_inputs)
