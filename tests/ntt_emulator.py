"""CPU emulators of the GPU NTT kernels, the oracles of tests/gpu/test_ntt_plan.py: the radix-2 pass schedule of
kernels/ntt/ntt.cu and the register-radix pass of kernels/ntt/reg.cu (its groups, shared-memory swizzle and
twiddle lookups) on object arrays of ints mod R, over cuzk.gpu.ntt_plan's pass plans."""
from __future__ import annotations

import numpy as np

from cuzk.field import R
from cuzk.gpu import ntt_plan as G


def _bitrev(v: np.ndarray, bits: int) -> np.ndarray:
    out = np.zeros_like(v)
    for b in range(bits):
        out |= ((v >> b) & 1) << (bits - 1 - b)
    return out


def emulate(x: np.ndarray, log_n: int, root: int, dit_order: bool) -> np.ndarray:
    """The kernels' pass algorithm on an object array: dif (natural -> bitrev) or dit."""
    n = 1 << log_n
    x = x.copy()
    passes = G.plan(log_n)
    for log_sub, k, _ in (reversed(passes) if dit_order else passes):
        n1, n2 = 1 << k, 1 << (log_sub - k)
        v = x.reshape(n >> log_sub, n1, n2)
        p = np.arange(n1, dtype=np.int64)
        i2 = np.arange(n2, dtype=np.int64)
        e = (np.outer(_bitrev(p, k), i2) << (log_n - log_sub)).astype(object)
        tw = np.vectorize(lambda t: pow(root, int(t), R), otypes=[object])(e) if n2 > 1 else None
        if dit_order and tw is not None:
            v[:] = (v * tw) % R
        w_sub = pow(root, n >> k, R)            # primitive 2^k-th root
        stages = range(k) if dit_order else range(k - 1, -1, -1)
        for st in stages:
            h = 1 << st
            blk = v.reshape(v.shape[0], n1 // (2 * h), 2, h, n2)
            j = np.arange(h)
            w = np.array([pow(w_sub, int(t) << (k - st - 1), R) for t in j], dtype=object)[:, None]
            a, b = blk[:, :, 0].copy(), blk[:, :, 1].copy()
            if dit_order:
                b = (b * w) % R
                blk[:, :, 0], blk[:, :, 1] = (a + b) % R, (a - b) % R
            else:
                blk[:, :, 0], blk[:, :, 1] = (a + b) % R, ((a - b) * w) % R
        if not dit_order and tw is not None:
            v[:] = (v * tw) % R
        x = v.reshape(n)
    return x


# --- kernels/ntt/reg.cu: its index math, swizzle and twiddle lookups ---

SWZ = (10, 21, 25)      # ntt/reg.cu swz(): XORed into the bank bits by slot bits 5, 6, 7


def swz(s: np.ndarray) -> np.ndarray:
    out = s.copy()
    for b, v in enumerate(SWZ):
        out ^= ((s >> (5 + b)) & 1) * v
    return out


SWZ4 = (2, 5, 6)        # ntt/reg.cuh swz4() (CUZK_NTT_SM128): XORed into the 16-byte bank-group bits by slot bits 3..5


def swz4(s: np.ndarray) -> np.ndarray:
    out = s.copy()
    for b, v in enumerate(SWZ4):
        out ^= ((s >> (3 + b)) & 1) * v
    return out


# ntt/reg.cuh (N17): swz4's XOR term for each value v of slot bits 3..5, as 4-bit entries of one word
SWZ4_LUT = sum(int(swz4(np.int64(v << 3)) ^ (v << 3)) << (4 * v) for v in range(8))


def reg_groups(k: int, lr: int, dit_order: bool, odd_top: bool = False) -> list[tuple[int, int, int]]:
    """The groups of one pass as (b0, tlo, thi): rows base + (m << b0), stages b0 + t. odd_top (N13): the DIF's
    groups are the DIT's in reverse (a short group at the top, not at the bottom)."""
    out = []
    ng = -(-k // lr)
    for g in range(ng):
        if dit_order or odd_top:
            s_lo = (g if dit_order else ng - 1 - g) * lr
            s_hi = min(k, s_lo + lr)
        else:
            s_hi = k - g * lr
            s_lo = max(0, s_hi - lr)
        b0 = min(s_lo, k - lr)
        out.append((b0, s_lo - b0, s_hi - b0))
    return out


def emulate_reg(x: np.ndarray, log_n: int, root: int, dit_order: bool, lr: int, tw1_max: int = 0,
                feats: str = "") -> np.ndarray:
    """ntt/reg.cu on an object array, vectorized over [block, thread]: dif or dit order; feats: run-time features
    (FEATURES: o changes the groups; z changes no value mod R)."""
    n, r_ = 1 << log_n, 1 << lr
    x = x.copy()
    passes = G.plan(log_n)
    tws = dict(zip(passes, G.pass_twiddles(passes, tw1_max)))
    powr = np.vectorize(lambda e: pow(root, int(e), R), otypes=[object])

    def small(idx):                     # tw_small[idx] = w_(2^G.KMAX)^idx, as a power of root
        e = idx * n
        assert not (e % (1 << G.KMAX)).any()
        return powr(e >> G.KMAX)

    for log_sub, k, log_c in (reversed(passes) if dit_order else passes):
        log_n2, e_ = log_sub - k, 1 << (k + log_c)
        log_g = log_n2 - log_c
        blocks = (n >> log_sub) << log_g
        bid = np.arange(blocks, dtype=np.int64)[:, None]
        tid = np.arange(e_ >> lr, dtype=np.int64)[None, :]
        c, q = tid & ((1 << log_c) - 1), tid >> log_c
        i2 = ((bid & ((1 << log_g) - 1)) << log_c) + c
        col = ((bid >> log_g) << log_sub) + i2
        mode, tb = tws[(log_sub, k, log_c)]
        sm = np.full((blocks, e_), None, dtype=object)
        groups = reg_groups(k, lr, dit_order, "o" in feats)
        v = [None] * r_

        def outer(base, m):
            r = _bitrev(base + m, k)
            e_sub = i2 * r
            e = (e_sub << (tb - log_sub)) << (log_n - tb) if mode == 2 else e_sub << (log_n - log_sub)
            return powr(e)

        for g, (b0, tlo, thi) in enumerate(groups):
            lo = q & ((1 << b0) - 1)
            base = lo | ((q >> b0) << (b0 + lr))
            rows = [base + (m << b0) for m in range(r_)]
            if g == 0:
                for m in range(r_):
                    v[m] = x[col + (rows[m] << log_n2)]
                    if dit_order and mode:
                        assert b0 == 0
                        v[m] = v[m] * outer(base, m) % R
            else:
                for m in range(r_):
                    v[m] = sm[bid, swz((rows[m] << log_c) + c)]
                    assert not any(a is None for a in v[m].ravel())
            ts = range(lr) if dit_order else range(lr - 1, -1, -1)
            for t in ts:
                if not tlo <= t < thi:
                    continue
                st = b0 + t
                for m in range(r_):
                    if m & (1 << t):
                        continue
                    jm = m & ((1 << t) - 1)
                    w = 1 if b0 == 0 and jm == 0 else small((lo + (jm << b0)) << (G.KMAX - 1 - st))
                    a, b = v[m], v[m + (1 << t)]
                    if dit_order:
                        y = b * w % R
                        v[m], v[m + (1 << t)] = (a + y) % R, (a - y) % R
                    else:
                        v[m], v[m + (1 << t)] = (a + b) % R, (a - b) * w % R
            if g == len(groups) - 1:
                for m in range(r_):
                    if not dit_order and mode:
                        assert b0 == 0
                        v[m] = v[m] * outer(base, m) % R
                    x[col + (rows[m] << log_n2)] = v[m]
            else:
                sm[:] = None
                for m in range(r_):
                    sm[bid, swz((rows[m] << log_c) + c)] = v[m]
    return x


def bank_conflicts(k: int, log_c: int, lr: int, vec4: bool = False) -> int:
    """The worst bank conflict (lanes per bank, 1 = none) of any 32-bit shared access in a pass (swz, 32 lanes);
    vec4 (N12, CUZK_NTT_SM128): of any 128-bit access (swz4), lanes per 16-byte bank group in each quarter-warp."""
    sw, mask, lanes = (swz4, 7, 8) if vec4 else (swz, 31, 32)
    e_ = 1 << (k + log_c)
    tid = np.arange(e_ >> lr, dtype=np.int64)
    c, q = tid & ((1 << log_c) - 1), tid >> log_c
    worst = 1
    for dit_order in (False, True):             # N13's DIF groups are the DIT's, reversed: no third order to check
        for b0, _, _ in reg_groups(k, lr, dit_order):
            base = (q & ((1 << b0) - 1)) | ((q >> b0) << (b0 + lr))
            for m in range(1 << lr):
                banks = sw(((base + (m << b0)) << log_c) + c) & mask
                for w0 in range(0, len(tid), lanes):
                    worst = max(worst, int(np.bincount(banks[w0:w0 + lanes], minlength=lanes).max()))
    return worst
