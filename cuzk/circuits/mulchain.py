"""mulchain: x_{i+1} = (x_i + b) · (x_i + i + 1), as L independent lanes.

Public inputs: b and the seed x0; lane l starts at x0 + l. The witness recurrence is
sequential along a lane, so it runs as T numpy steps over all L lanes at once.
"""
from __future__ import annotations

import numpy as np

from ..field import R
from ..r1cs import ONE, ConstraintSystem


def shape(log_size: int) -> tuple[int, int]:
    rows = (1 << log_size) - 3                     # room left by the 3 input rows
    lanes = max(1, min(64, 1 << max(0, log_size - 3)))
    steps = rows // lanes - 1
    return lanes, steps


def build(log_size: int, opts=None, seed: int = 1):
    lanes, steps = shape(log_size)
    rng = np.random.default_rng(seed)
    b_val = int(rng.integers(1, 1 << 62)) * int(rng.integers(1, 1 << 62)) % R
    x0_val = int(rng.integers(1, 1 << 62))
    n_aux = lanes * (steps + 1)
    cs = ConstraintSystem(opts, aux_hint=n_aux, constraint_hint=n_aux, nnz_hint=(2 * n_aux, 2 * n_aux, n_aux))
    b = cs.alloc_input(b_val)
    x0 = cs.alloc_input(x0_val)

    lane = np.arange(lanes, dtype=object)
    x = (x0_val + lane) % R
    xv = cs.alloc_vec(x)
    cs.enforce_vec([(x0, 1), (ONE, np.arange(lanes, dtype=object))], [(ONE, 1)], [(xv, 1)], lanes,
                   label="mulchain.start")
    for i in range(steps):
        nxt = ((x + b_val) * (x + i + 1)) % R
        nv = cs.alloc_vec(nxt)
        cs.enforce_vec([(xv, 1), (b, 1)], [(xv, 1), (ONE, i + 1)], [(nv, 1)], lanes,
                       label="mulchain.step")
        x, xv = nxt, nv
    return cs.finalize()
