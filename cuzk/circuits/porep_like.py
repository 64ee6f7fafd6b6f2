"""porep_like: a bit-heavy circuit shaped like PoRep's SHA-256 work, plus x^5 rounds.

U units, each over W-bit words (W = 32 at real sizes):
  - two private words w, v decomposed into bits: W boolean constraints b·(1 - b) = 0
    and one packing constraint (Σ 2^i b_i)·1 = w, per word;
  - XOR of the bit vectors: (2a)·b = a + b - x;
  - AND of the bit vectors: a·b = n;
  - R field rounds on t_0 = seed + u: x2 = t·t, x4 = x2·x2, x5 = x4·t, t' = x5 + c_r.
Public inputs: seed and out = t_R of unit 0. At W = 32, R = 2, 128 of each unit's 136 aux
values are bits (94%). Every unit is built by block calls over all U units at once.
"""
from __future__ import annotations

import numpy as np

from ..field import R
from ..r1cs import ONE, ConstraintSystem

ROUND_CONSTANTS = [(0x9E3779B97F4A7C15 * (r + 1)) ** 3 % R for r in range(8)]


def shape(log_size: int) -> tuple[int, int, int]:
    """(units U, word width W, rounds R) that fill a 2^log_size domain."""
    rows = (1 << log_size) - 3 - 1                   # 3 input rows, 1 output constraint
    rounds = 2 if log_size >= 8 else 1
    width = min(32, max(1, (rows // 2 - 2 - 3 * rounds) // 4))
    unit = 4 * width + 2 + 3 * rounds
    units = rows // unit
    if units < 1:
        raise ValueError(f"porep_like needs --log-size >= 4, got {log_size}")
    return units, width, rounds


def build(log_size: int, opts=None, seed: int = 1):
    U, W, RR = shape(log_size)
    rng = np.random.default_rng(seed)
    n_aux = U * (2 + 4 * W + 3 * RR)
    cs = ConstraintSystem(opts, aux_hint=n_aux, constraint_hint=n_aux, nnz_hint=(U * (6 * W + 4 * RR) + 2, U * (6 * W + 2 + 5 * RR) + 1,
                                    U * (4 * W + 2 + 3 * RR) + 1))

    seed_val = int(rng.integers(1, 1 << 62))
    # round chain values first: `out` is a public input known up front
    t = (seed_val + np.arange(U, dtype=object)) % R
    chain = []
    for r in range(RR):
        x2 = t * t % R
        x4 = x2 * x2 % R
        x5 = x4 * t % R
        chain.append((t, x2, x4, x5))
        t = (x5 + ROUND_CONSTANTS[r]) % R
    out_val = int(t[0])
    s = cs.alloc_input(seed_val)
    out = cs.alloc_input(out_val)

    # SHA-like bit work
    words = rng.integers(0, 1 << W, size=(2, U), dtype=np.uint64)
    bits = ((words[:, :, None] >> np.arange(W, dtype=np.uint64)) & 1).astype(np.int64)   # [2, U, W]
    wv = [cs.alloc_vec(words[j].astype(object)) for j in range(2)]
    bv = [cs.alloc_vec(bits[j].ravel().astype(object)).reshape(U, W) for j in range(2)]
    xor = bits[0] ^ bits[1]
    and_ = bits[0] & bits[1]
    xv = cs.alloc_vec(xor.ravel().astype(object))
    nv = cs.alloc_vec(and_.ravel().astype(object))

    k = U * W
    for j in range(2):
        flat = bv[j].ravel()
        cs.enforce_vec([(flat, 1)], [(ONE, 1), (flat, R - 1)], [], k, label=f"porep.boolean[{j}]")
        cs.enforce_vec([(bv[j][:, i], 1 << i) for i in range(W)], [(ONE, 1)], [(wv[j], 1)], U,
                       label=f"porep.pack[{j}]")
    a, b = bv[0].ravel(), bv[1].ravel()
    cs.enforce_vec([(a, 2)], [(b, 1)], [(a, 1), (b, 1), (xv, R - 1)], k, label="porep.xor")
    cs.enforce_vec([(a, 1)], [(b, 1)], [(nv, 1)], k, label="porep.and")

    # x^5 rounds
    units = np.arange(U, dtype=object)
    t_lc = [(s, 1), (ONE, units)]
    for r, (_, x2, x4, x5) in enumerate(chain):
        v2, v4, v5 = cs.alloc_vec(x2), cs.alloc_vec(x4), cs.alloc_vec(x5)
        cs.enforce_vec(t_lc, t_lc, [(v2, 1)], U, label=f"porep.round{r}.sq")
        cs.enforce_vec([(v2, 1)], [(v2, 1)], [(v4, 1)], U, label=f"porep.round{r}.sq2")
        cs.enforce_vec([(v4, 1)], t_lc, [(v5, 1)], U, label=f"porep.round{r}.mul")
        t_lc = [(v5, 1), (ONE, ROUND_CONSTANTS[r])]
    cs.enforce_vec([(t_lc[0][0][:1], 1), (ONE, ROUND_CONSTANTS[RR - 1])], [(ONE, 1)], [(out, 1)], 1,
                   label="porep.out")
    return cs.finalize()
