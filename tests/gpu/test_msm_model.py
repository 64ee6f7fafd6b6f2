"""CPU model of the GPU MSM: the schedule of cuzk/gpu/msm/plan.py run over Python
transcriptions of kernels/msm/pippenger.cuh, kernels/msm/affine.cuh and kernels/ec/curve.cuh, checked against
arkworks.

- The digit kernel, the segment/window kernels and the affine round kernels (thread and block
  structure, batch inversion tree included) are transcribed line by line; the schedule
  (passes, sort, bucket offsets, affine rounds, segment plans, merges, reduction levels) is
  the very code the GPU runs.
- Points are either integers mod r (a stand-in group: fast, proves the index math) or real
  G1/G2 points in XYZZ through a transcription of ec/curve.cuh's formulas (proves them and their
  special cases).
"""
import math
import random

import numpy as np
import pytest
from py_arkworks_bls12381 import G1Point, G2Point, Scalar

from cuzk.curve import g1_affine_ints, g2_affine_ints, scalars_to_ark
from cuzk.field import FR_LIMBS, P, R, ints_to_limbs
from cuzk.gpu.msm import plan as plan
from cuzk.gpu.msm.fold import FIELDS, xyzz_to_affine

# --- ec/curve.cuh transcribed (same operation order), over cuzk.gpu.msm.fold.Fp / Fp2 ---


class XYZZ:
    """Group ops of ec/curve.cuh: affine (x, y); XYZZ (X, Y, ZZ, ZZZ), infinity = ZZ == 0."""

    def __init__(self, group):
        self.f = FIELDS[group]

    def inf(self):
        z = self.f.zero
        return (z, z, z, z)

    @staticmethod
    def x(p):
        return p[0]

    def affine_add(self, p, q, inv_d):
        """msm/affine.cuh's pair add, given 1 / (x2 - x1)."""
        f = self.f
        lam = f.mul(f.sub(q[1], p[1]), inv_d)
        x3 = f.sub(f.sub(f.mul(lam, lam), p[0]), q[0])
        return (x3, f.sub(f.mul(lam, f.sub(p[0], x3)), p[1]))

    def neg_affine(self, p):
        return (p[0], self.f.neg(p[1]))

    def dbl_affine(self, p):
        f = self.f
        x, y = p
        U = f.add(y, y)
        V = f.mul(U, U)
        W = f.mul(U, V)
        S = f.mul(x, V)
        xx = f.mul(x, x)
        M = f.add(f.add(xx, xx), xx)
        X3 = f.sub(f.mul(M, M), f.add(S, S))
        Y3 = f.sub(f.mul(M, f.sub(S, X3)), f.mul(W, y))
        return (X3, Y3, V, W)

    def dbl(self, a):
        f = self.f
        X, Y, ZZ, ZZZ = a
        U = f.add(Y, Y)
        V = f.mul(U, U)
        W = f.mul(U, V)
        S = f.mul(X, V)
        xx = f.mul(X, X)
        M = f.add(f.add(xx, xx), xx)
        X3 = f.sub(f.mul(M, M), f.add(S, S))
        Y3 = f.sub(f.mul(M, f.sub(S, X3)), f.mul(W, Y))
        return (X3, Y3, f.mul(V, ZZ), f.mul(W, ZZZ))

    def add_affine(self, a, p):
        f = self.f
        X, Y, ZZ, ZZZ = a
        if f.is_zero(ZZ):
            return (p[0], p[1], f.one, f.one)
        Pd = f.sub(f.mul(p[0], ZZ), X)
        Rd = f.sub(f.mul(p[1], ZZZ), Y)
        if f.is_zero(Pd):
            return self.dbl_affine(p) if f.is_zero(Rd) else self.inf()
        PP = f.mul(Pd, Pd)
        ZZ = f.mul(ZZ, PP)
        Q = f.mul(X, PP)
        PPP = f.mul(Pd, PP)
        ZZZ = f.mul(ZZZ, PPP)
        X3 = f.sub(f.sub(f.mul(Rd, Rd), PPP), f.add(Q, Q))
        Y3 = f.sub(f.mul(Rd, f.sub(Q, X3)), f.mul(Y, PPP))
        return (X3, Y3, ZZ, ZZZ)

    def add(self, a, q):
        f = self.f
        if f.is_zero(q[2]):
            return a
        if f.is_zero(a[2]):
            return q
        X, Y, ZZ, ZZZ = a
        U1 = f.mul(X, q[2])
        S1 = f.mul(Y, q[3])
        Pd = f.sub(f.mul(q[0], ZZ), U1)
        Rd = f.sub(f.mul(q[1], ZZZ), S1)
        if f.is_zero(Pd):
            return self.dbl(a) if f.is_zero(Rd) else self.inf()
        PP = f.mul(Pd, Pd)
        PPP = f.mul(Pd, PP)
        Q = f.mul(U1, PP)
        X3 = f.sub(f.sub(f.mul(Rd, Rd), PPP), f.add(Q, Q))
        Y3 = f.sub(f.mul(Rd, f.sub(Q, X3)), f.mul(S1, PPP))
        return (X3, Y3, f.mul(f.mul(ZZ, q[2]), PP), f.mul(f.mul(ZZZ, q[3]), PPP))


class Zr:
    """Z_r as the field of IntGroup's batch inversions."""
    zero, one = 0, 1

    @staticmethod
    def sub(a, b): return (a - b) % R
    @staticmethod
    def mul(a, b): return a * b % R
    @staticmethod
    def inv(a): return pow(a, -1, R)
    @staticmethod
    def is_zero(a): return a == 0


class IntGroup:
    """Z_r as a stand-in group: a point is an int, its 'affine' and 'XYZZ' forms alike; its
    'x' is shared by p and -p only, as on the curve, so the degenerate cases are the same."""

    f = Zr

    def inf(self): return 0
    @staticmethod
    def x(p): return min(p, R - p)

    def affine_add(self, p, q, inv_d):
        assert inv_d * (self.x(q) - self.x(p)) % R == 1      # the batch inversion's answer
        return (p + q) % R

    def neg_affine(self, p): return -p % R
    def add_affine(self, a, p): return (a + p) % R
    def add(self, a, q): return (a + q) % R
    def dbl(self, a): return 2 * a % R


CLS = {1: G1Point, 2: G2Point}
AFFINE = {1: g1_affine_ints, 2: g2_affine_ints}


def ark_affine(group, pt):
    return AFFINE[group](pt)


def xyzz_of(group, pt, z):
    """An arkworks point as XYZZ with a chosen z (not normalised: X = x z^2, Y = y z^3)."""
    f = FIELDS[group]
    xy = ark_affine(group, pt)
    if xy is None:
        return XYZZ(group).inf()
    zz = f.mul(z, z)
    zzz = f.mul(zz, z)
    return (f.mul(xy[0], zz), f.mul(xy[1], zzz), zz, zzz)


def rand_z(group, rng):
    return rng.randrange(1, P) if group == 1 else (rng.randrange(P), rng.randrange(1, P))


def rand_points(group, n, rng):
    return [CLS[group]() * Scalar(rng.randrange(1, R)) for _ in range(n)]


# --- msm/pippenger.cuh transcribed ---

def digits_thread(limbs, skip, i, n, c, w0, w1, keys, wstride=None, base=0):
    """msm_digits for one point: limbs = the canonical scalar's 8 uint32 limbs (digit_keys; wstride
    None: 2^(c-1), one MSM's)."""
    half, mask = 1 << (c - 1), (1 << c) - 1
    wstride = half if wstride is None else wstride
    carry = 0
    for w in range(w1):
        pos = w * c
        limb, off = pos >> 5, pos & 31
        bits = 0
        if limb < FR_LIMBS:
            bits = limbs[limb] >> off
            if off and limb + 1 < FR_LIMBS:
                bits |= (limbs[limb + 1] << (32 - off)) & 0xFFFFFFFF
            bits &= mask
        d = bits + carry
        neg = False
        if d > half:
            d, neg, carry = (1 << c) - d, True, 1
        else:
            carry = 0
        if w < w0:
            continue
        key = plan.ZERO_KEY
        if d != 0 and not skip:
            key = (((w - w0) * wstride + base + d - 1) << 32) | (i << 1) | int(neg)
        keys[(w - w0) * n + i] = key


def _host(a):
    """A device array as a list of Python ints (the same values): the models below index it element by element, and
    a list is read many times faster than a numpy array's scalars."""
    return a.tolist() if isinstance(a, np.ndarray) else a


def block_batch_inverse(f, vals):
    """msm/affine.cuh block_batch_inverse: product tree up, one inversion, inverses down."""
    tpb = len(vals)
    tree = [None] * tpb + list(vals)
    h = tpb // 2
    while h >= 1:
        for t in range(h):
            tree[h + t] = f.mul(tree[2 * (h + t)], tree[2 * (h + t) + 1])
        h //= 2
    tree[1] = f.inv(tree[1])
    h = 1
    while h < tpb:
        for t in range(h):
            i = h + t
            inv, a, b = tree[i], tree[2 * i], tree[2 * i + 1]
            tree[2 * i], tree[2 * i + 1] = f.mul(inv, b), f.mul(inv, a)
        h *= 2
    return tree[tpb:]


class ModelKernels:
    """The kernel set of msm_plan.pippenger, emulated thread by thread (affine rounds with
    tpb threads per block and at most max_blocks blocks: small, so that a block's threads
    and a thread's several outputs are exercised)."""

    direct_offsets = True                 # K3's bucket_offsets (test_cub_sort checks it against the shifted form)

    def __init__(self, G, bases, inf, scalars, tpb=4, max_blocks=3, plan_by_entry=False, sizes_once=False,
                 lean_offsets=False, group_reduce=False):
        """plan_by_entry, sizes_once, lean_offsets: K4, K5 and K9 (affine_rounds); group_reduce: K10 (pippenger)."""
        self.plan_by_entry, self.sizes_once, self.lean_offsets = plan_by_entry, sizes_once, lean_offsets
        self.group_reduce = group_reduce
        self.G, self.bases, self.inf = G, bases, inf
        self.limbs = ints_to_limbs(np.array([int(s) for s in scalars], dtype=object), FR_LIMBS).tolist()
        self.n = len(bases)
        self.merges = 0
        self.tpb, self.max_blocks = tpb, max_blocks
        self.flag = False
        self.stats = {"affine_rounds": 0, "fallbacks": 0}

    def alloc(self, count):
        return [None] * count

    def concat(self, arrays):
        return [p for a in arrays for p in a]

    @staticmethod
    def gather(points, idx):
        return [points[int(i)] for i in idx]

    @staticmethod
    def group_gather(pts, off, off_h, count, units, B, s):
        """msm_group_gather, thread by thread (H bucket t in the order unit, lo - 1, hi), into 2 count slots."""
        out = list(pts[:count]) + [None] * count
        HB = B >> s
        per_unit = ((1 << s) - 1) * HB
        for t in range(len(off_h) - 1):
            u, r = divmod(t, per_unit)
            lo1, hi = divmod(r, HB)
            b = u * B + (hi << s) + lo1
            first, n = int(off[b]), int(off[b + 1] - off[b])
            dst = count + int(off_h[t])
            assert all(x is None for x in out[dst:dst + n])          # each slot written once
            out[dst:dst + n] = pts[first:first + n]
        return out

    def window_join(self, hi_sums, lo_sums, count, s):
        """The window_join kernel: 2^s hi + lo, by doublings (one thread an output)."""
        out = []
        for g in range(count):
            acc = hi_sums[g]
            for _ in range(s):
                acc = self.G.dbl(acc)
            out.append(self.G.add(acc, lo_sums[g]))
        return out

    def digits(self, c, w0, w1):
        keys = np.zeros((w1 - w0) * self.n, dtype=np.uint64)
        for i in range(self.n):
            digits_thread(self.limbs[i], bool(self.inf[i]), i, self.n, c, w0, w1, keys)
        return keys

    @staticmethod
    def sort(keys, nb):
        """K1's sort: stable, by the bits plan.sort_bits names alone; every model run checks that this is the
        full sort's order (ZERO_KEY last, a bucket's keys by index)."""
        lo, hi = plan.sort_bits(nb)
        field = (keys >> np.uint64(lo)) & np.uint64((1 << (hi - lo)) - 1)
        out = keys[np.argsort(field, kind="stable")]
        assert np.array_equal(out, np.sort(keys))
        return out

    @staticmethod
    def _range(j, seg_bucket, seg_first, offsets, S):
        b = int(seg_bucket[j])
        start = int(offsets[b]) + (j - int(seg_first[b])) * S
        return start, min(start + S, int(offsets[b + 1]))

    def _entry(self, src, keyed, e):
        """entry_point: (point, negate)."""
        if keyed:
            key = int(src[e])
            return self.bases[(key & 0xFFFFFFFF) >> 1], bool(key & 1)
        return src[e], False

    def _signed(self, p, neg):
        return self.G.neg_affine(p) if neg else p

    def sum_affine(self, src, keyed, seg_bucket, seg_first, offsets, S, total):
        src, seg_bucket, seg_first, offsets = map(_host, (src, seg_bucket, seg_first, offsets))
        out = []
        for j in range(total):
            start, end = self._range(j, seg_bucket, seg_first, offsets, S)
            acc = self.G.inf()
            for e in range(start, end):
                acc = self.G.add_affine(acc, self._signed(*self._entry(src, keyed, e)))
            out.append(acc)
        return out

    def sum_xyzz(self, partials, seg_bucket, seg_first, offsets, S, total):
        self.merges += 1
        seg_bucket, seg_first, offsets = map(_host, (seg_bucket, seg_first, offsets))
        out = []
        for j in range(total):
            start, end = self._range(j, seg_bucket, seg_first, offsets, S)
            acc = self.G.inf()
            for e in range(start, end):
                acc = self.G.add(acc, partials[e])
            out.append(acc)
        return out

    def merge_pairs(self, partials, plan_words, total):
        """merge_pairs: output o = P[s] + P[s + 1] or P[s] (word s << 1 | paired); every input is read
        exactly once over a level."""
        self.pair_merges = getattr(self, "pair_merges", 0) + 1
        words = [int(w) for w in plan_words]
        assert len(words) == total
        seen = [e for w in words for e in ((w >> 1, (w >> 1) + 1) if w & 1 else (w >> 1,))]
        assert seen == list(range(len(partials)))
        return [self.G.add(partials[w >> 1], partials[(w >> 1) + 1]) if w & 1 else partials[w >> 1]
                for w in words]

    # --- msm/affine.cuh ---

    def affine_plan(self, in_off, out_off, total):
        nb = len(in_off) - 1
        in_off, out_off = _host(in_off), _host(out_off)
        words = np.zeros(total, dtype=np.uint32)
        for o in range(total):
            lo, hi = 0, nb
            while hi - lo > 1:
                mid = (lo + hi) >> 1
                if int(out_off[mid]) <= o:
                    lo = mid
                else:
                    hi = mid
            s = int(in_off[lo]) + 2 * (o - int(out_off[lo]))
            words[o] = ((s << 1) & 0xFFFFFFFF) | int(s + 1 < int(in_off[lo + 1]))
        return words

    def reset_degenerate(self):
        self.flag = False

    def degenerate(self):
        return self.flag

    def affine_round(self, src, keyed, words, total):
        G, f, tpb = self.G, self.G.f, self.tpb
        src, words = _host(src), _host(words)
        blocks, per = plan.round_geometry(total, tpb, self.max_blocks)
        out = [None] * total
        for blk in range(blocks):
            firsts, cnts, accs = [], [], []
            for t in range(tpb):                       # pass 1
                first = blk * tpb * per + t
                left = total - first
                cnt = 0 if left <= 0 else min(per, (left + tpb - 1) // tpb)
                acc = f.one
                for i in range(cnt):
                    o = first + tpb * i
                    w = int(words[o])
                    if w & 1:
                        s = w >> 1
                        d = f.sub(G.x(self._entry(src, keyed, s + 1)[0]), G.x(self._entry(src, keyed, s)[0]))
                        if f.is_zero(d):
                            self.flag = True
                            d = f.one
                        acc = d if i == 0 else f.mul(acc, d)
                    out[o] = ("prefix", acc)
                firsts.append(first)
                cnts.append(cnt)
                accs.append(acc)
            invs = block_batch_inverse(f, accs)
            for t in range(tpb):                       # pass 2
                inv = invs[t]
                for i in range(cnts[t] - 1, -1, -1):
                    o = firsts[t] + tpb * i
                    w = int(words[o])
                    s = w >> 1
                    p1 = self._signed(*self._entry(src, keyed, s))
                    if w & 1:
                        p2 = self._signed(*self._entry(src, keyed, s + 1))
                        inv_d = inv
                        if i > 0:
                            tag, prefix = out[o - tpb]
                            assert tag == "prefix"
                            inv_d = f.mul(inv, prefix)
                            d = f.sub(G.x(p2), G.x(p1))
                            inv = f.mul(inv, f.one if f.is_zero(d) else d)
                        out[o] = G.affine_add(p1, p2, inv_d) if not self.flag else p1
                    else:
                        out[o] = p1
        assert all(p is not None and not (isinstance(p, tuple) and p[0] == "prefix") for p in out)
        return out

    # --- round plans and sizes (K4, K9, K5) ---

    def affine_plan_entry(self, by, keyed, in_off, out_off, count, total):
        """msm_affine_plan_entry (K4), thread by thread (entry s), into poisoned outputs: every word is written, and
        equals the search's (affine_plan); ids[o] is output o's bucket."""
        words = np.full(total, 0xFFFFFFFF, dtype=np.uint32)
        ids = np.full(total, 0xFFFFFFFF, dtype=np.uint32)
        for s in range(count):
            b = int(by[s]) >> 32 if keyed else int(by[s])
            d = s - int(in_off[b])
            if d & 1:
                continue
            o = int(out_off[b]) + d // 2
            words[o] = ((s << 1) & 0xFFFFFFFF) | int(s + 1 < int(in_off[b + 1]))
            ids[o] = b
        assert np.array_equal(words, self.affine_plan(in_off, out_off, total))
        assert np.array_equal(ids, np.repeat(np.arange(len(in_off) - 1), np.diff(out_off)))
        self.stats["entry_plans"] = self.stats.get("entry_plans", 0) + 1
        return words, ids

    def counts_offsets(self, in_off, shift):
        """msm_round_counts (K9), bucket by bucket, and the cumsum; equals the generic offsets."""
        cnt = [(int(in_off[b + 1]) - int(in_off[b]) + (1 << shift) - 1) >> shift for b in range(len(in_off) - 1)]
        off = np.concatenate(([0], np.cumsum(cnt, dtype=np.int64))).astype(np.int64)
        assert np.array_equal(off, plan._offsets_of(plan._ceil_shift(in_off[1:] - in_off[:-1], shift), np))
        self.stats["lean_offsets"] = self.stats.get("lean_offsets", 0) + 1
        return off

    def round_totals(self, offsets):
        """msm_round_totals (K5), bucket by bucket; equals plan.round_totals."""
        counts = [int(c) for c in np.diff(offsets)]
        t = np.array([sum((c + (1 << r) - 1) >> r for c in counts) for r in range(32)], dtype=np.uint64)
        assert np.array_equal(t, plan.round_totals(offsets, np))
        self.stats["sizes_once"] = self.stats.get("sizes_once", 0) + 1
        return t

    # --- window reduction ---

    def window_level(self, A, T, count, L, first, log_scale):
        a_out, t_out = [], []
        for g in range(count):
            run = acc = self.G.inf()
            for j in range(L - 1, -1, -1):
                e = g * L + j
                if not first:
                    acc = self.G.add(acc, run)
                run = self.G.add(run, T[e])
                if first:
                    acc = self.G.add(acc, run)
                if A is not None:
                    acc = self.G.add(acc, A[e])
            for _ in range(log_scale):
                run = self.G.dbl(run)
            a_out.append(acc)
            t_out.append(run)
        return a_out, t_out

    def window_pair(self, A, T, count, first, log_scale):
        """The window_pair kernel, thread by thread: warp w takes role w & 1 (0: A', 1: T') for
        g = (w >> 1) * 32 + lane, as its launch of 64 * ceil(count / 32) threads does."""
        G = self.G
        a_out, t_out = [None] * count, [None] * count
        for h in range(64 * -(-count // 32)):
            warp = h >> 5
            g = ((warp >> 1) << 5) | (h & 31)
            if g >= count:
                continue
            t0, t1 = T[2 * g], T[2 * g + 1]
            if warp & 1:
                if log_scale == 0:
                    continue
                assert t_out[g] is None
                t = G.add(t0, t1)
                for _ in range(log_scale):
                    t = G.dbl(t)
                t_out[g] = t
            else:
                assert a_out[g] is None
                a_out[g] = G.add(G.add(t1, t0), t1) if first else G.add(G.add(A[2 * g], A[2 * g + 1]), t1)
        assert all(a is not None for a in a_out) and (log_scale == 0 or all(t is not None for t in t_out))
        return a_out, (t_out if log_scale else None)

    def combine(self, window_sums, nw, c):
        acc = window_sums[nw - 1]
        for w in range(nw - 2, -1, -1):
            for _ in range(c):
                acc = self.G.dbl(acc)
            acc = self.G.add(acc, window_sums[w])
        return acc


def model_msm(G, bases, inf, scalars, c, max_entries=1 << 28, min_pairs=None, pair_levels=False, pair_merges=False,
              **kw):
    k = ModelKernels(G, bases, inf, scalars, **kw)
    return plan.pippenger(k, len(bases), c, max_entries, np, affine_min_pairs=min_pairs,
                          pair_levels=pair_levels, pair_merges=pair_merges), k


# --- digits and plan ---

EDGE = [0, 1, 2, R - 1, R - 2, (R - 1) // 2, 1 << 254, (1 << 255) - 1 - ((1 << 255) - 1 - (R - 1))]


@pytest.mark.parametrize("c", list(range(1, plan.C_LIMIT + 1)))
def test_signed_digits_reconstruct_scalar(c):
    rng = random.Random(c)
    scalars = EDGE + [rng.randrange(R) for _ in range(40)]
    nw = plan.num_windows(c)
    n = len(scalars)
    k = ModelKernels(IntGroup(), [0] * n, [False] * n, scalars)
    keys = k.digits(c, 0, nw).reshape(nw, n)
    B = 1 << (c - 1)
    for i, s in enumerate(scalars):
        total = 0
        for w in range(nw):
            key = int(keys[w, i])
            if key == plan.ZERO_KEY:
                continue
            bucket, low = key >> 32, key & 0xFFFFFFFF
            assert low >> 1 == i
            assert w * B <= bucket < (w + 1) * B
            d = bucket - w * B + 1                       # |digit| in [1, B]
            total += (-d if low & 1 else d) << (c * w)
        assert total == s, (c, s)


def test_digit_passes_match_one_pass():
    rng = random.Random(1)
    scalars = [rng.randrange(R) for _ in range(9)]
    k = ModelKernels(IntGroup(), [0] * 9, [False] * 9, scalars)
    c = 7
    full = k.digits(c, 0, plan.num_windows(c))
    parts = []
    for w0, w1 in plan.window_passes(9, plan.num_windows(c), max_entries=20):
        keys = k.digits(c, w0, w1)
        valid = keys != np.uint64(plan.ZERO_KEY)
        keys[valid] += np.uint64(w0 * (1 << (c - 1))) << np.uint64(32)   # back to global bucket ids
        parts.append(keys)
    assert (np.concatenate(parts) == full).all()


def test_window_choice_and_passes():
    for n in [1, 2, 31, 100, 512, 1000, 4097, 1 << 16, 1 << 20, 1 << 26, 1 << 30]:
        c = plan.choose_window(n)
        assert 1 <= c <= plan.C_MAX
        nw = plan.num_windows(c)
        assert c * nw >= 256
        passes = plan.window_passes(n, nw, 1 << 28)
        assert passes[0][0] == 0 and passes[-1][1] == nw
        assert all(a[1] == b[0] for a, b in zip(passes, passes[1:]))
        assert all((w1 - w0) * n <= max(n, 1 << 28) for w0, w1 in passes)
    assert plan.choose_window(1 << 26) >= plan.choose_window(1 << 16) >= plan.choose_window(100)
    assert plan.choose_window(1 << 20, popcount=10) <= plan.choose_window(1 << 20)
    assert plan.choose_window(1 << 26, affine=True) >= plan.choose_window(1 << 16, affine=True)
    for c in range(1, plan.C_LIMIT + 1):        # every bucket id (and none equals ZERO_KEY's) fits 32 bits
        assert plan.num_windows(c) << (c - 1) < (1 << 32) - 1
    for bad in (0, plan.C_LIMIT + 1):
        with pytest.raises(ValueError):
            plan.num_windows(bad)


def test_segment_plan():
    offsets = np.array([0, 0, 5, 6, 6, 40, 41], dtype=np.int64)     # sizes 0, 5, 1, 0, 34, 1
    seg_first, seg_bucket, total = plan.segment_plan(offsets, 4, np)
    assert seg_first.tolist() == [0, 1, 3, 4, 5, 14, 15]
    assert total == 15
    assert seg_bucket.tolist() == [0, 1, 1, 2, 3] + [4] * 9 + [5]
    covered = []
    for j in range(total):
        start, end = ModelKernels._range(j, seg_bucket, seg_first, offsets, 4)
        assert 0 <= end - start <= 4
        covered += list(range(start, end))
    assert covered == list(range(41))                 # every entry exactly once, in order


# --- the schedule over Z_r (fast; proves the index math) ---

def int_case(n, seed, kind="random"):
    rng = random.Random(seed)
    bases = [rng.randrange(1, R) for _ in range(n)]
    inf = [False] * n
    if kind == "random":
        sc = [rng.randrange(R) for _ in range(n)]
    elif kind == "same":
        sc = [rng.randrange(R)] * n
    elif kind == "edge":
        sc = [rng.choice([0, 1, R - 1, 2, rng.randrange(R)]) for _ in range(n)]
    elif kind == "small":
        sc = [rng.randrange(1 << 16) for _ in range(n)]
    for i in range(0, n, 7):
        inf[i] = kind != "random"                    # flagged bases must be skipped
    want = sum(s * b for s, b, f in zip(sc, bases, inf) if not f) % R
    return bases, inf, sc, want


@pytest.mark.parametrize("n,c", [(1, 1), (1, 13), (2, 2), (31, 5), (100, 4), (100, 11), (512, 8), (1000, 9), (1500, 12)])
@pytest.mark.parametrize("kind", ["random", "edge"])
@pytest.mark.parametrize("pairs", [False, True])
def test_schedule_int_group(n, c, kind, pairs):
    bases, inf, sc, want = int_case(n, n * 31 + c, kind)
    got, _ = model_msm(IntGroup(), bases, inf, sc, c, pair_levels=pairs, pair_merges=pairs)
    assert got == want


@pytest.mark.parametrize("n", [1, 33, 300])
def test_schedule_int_group_default_window(n):
    bases, inf, sc, want = int_case(n, n, "edge")
    assert model_msm(IntGroup(), bases, inf, sc, plan.choose_window(n))[0] == want


def test_schedule_many_passes():
    bases, inf, sc, want = int_case(200, 3)
    got, _ = model_msm(IntGroup(), bases, inf, sc, 6, max_entries=450)    # 2 windows per pass
    assert got == want


@pytest.mark.parametrize("kind", ["same", "small"])
@pytest.mark.parametrize("pairs", [False, True])
def test_schedule_unbalanced_buckets_merge(kind, pairs):
    """Equal scalars pile every point into one bucket per window: segments, then merges (R2: in pairs,
    every bucket's partials halved a level, the lone ones copied)."""
    bases, inf, sc, want = int_case(2000, 5, kind)
    got, k = model_msm(IntGroup(), bases, inf, sc, 10, pair_merges=pairs)
    assert got == want
    if kind == "same" and not pairs:
        assert k.merges >= 2                      # 2000 points, S = 8 then 16 per merge
    if kind == "same" and pairs:
        assert k.merges == 0 and k.pair_merges >= 8   # 2000 / 8 partials: 8 pair levels a pass


def test_schedule_all_zero_and_all_infinite():
    bases, inf, sc, _ = int_case(50, 2)
    assert model_msm(IntGroup(), bases, inf, [0] * 50, 5)[0] == 0
    assert model_msm(IntGroup(), bases, [True] * 50, sc, 5)[0] == 0


# --- ec/curve.cuh formulas against arkworks ---

@pytest.mark.parametrize("group", [1, 2])
def test_xyzz_formulas_vs_arkworks(group):
    rng = random.Random(group)
    G, cls = XYZZ(group), CLS[group]
    aff = lambda pt: xyzz_to_affine(group, pt)            # noqa: E731
    for _ in range(6):
        a, b = rand_points(group, 2, rng)
        A, Bz = xyzz_of(group, a, rand_z(group, rng)), xyzz_of(group, b, rand_z(group, rng))
        bxy = ark_affine(group, b)
        assert aff(G.add(A, Bz)) == ark_affine(group, a + b)
        assert aff(G.add_affine(A, bxy)) == ark_affine(group, a + b)
        assert aff(G.dbl(A)) == ark_affine(group, a + a)
        assert aff(G.dbl_affine(bxy)) == ark_affine(group, b + b)
        # P + P (different z: the doubling case must be detected projectively)
        A2 = xyzz_of(group, a, rand_z(group, rng))
        assert aff(G.add(A, A2)) == ark_affine(group, a + a)
        assert aff(G.add_affine(A, ark_affine(group, a))) == ark_affine(group, a + a)
        # P + (-P) -> infinity
        assert aff(G.add(A, xyzz_of(group, -a, rand_z(group, rng)))) is None
        assert aff(G.add_affine(A, ark_affine(group, -a))) is None
        assert G.neg_affine(bxy) == ark_affine(group, -b)
        # infinity on either side, and doubling it
        assert aff(G.add(G.inf(), Bz)) == bxy
        assert aff(G.add(A, G.inf())) == ark_affine(group, a)
        assert aff(G.add_affine(G.inf(), bxy)) == bxy
        assert aff(G.dbl(G.inf())) is None
        assert aff(G.add(G.inf(), G.inf())) is None
    assert ark_affine(group, cls.identity()) is None


@pytest.mark.parametrize("group,n,c,pairs", [(1, 1, 3, False), (1, 12, 2, False), (1, 40, 4, False),
                                             (2, 10, 3, False), (1, 40, 5, True), (2, 10, 4, True)])
def test_schedule_on_curve_vs_arkworks(group, n, c, pairs):
    """The whole schedule on real points, with repeats, negations, infinity and edge scalars."""
    rng = random.Random(n + group)
    pts = rand_points(group, n, rng)
    if n > 4:
        pts[1] = pts[0]                          # repeated base: P + P inside a bucket
        pts[2] = -pts[0]                         # P + (-P) inside a bucket (same digit)
        pts[3] = CLS[group].identity()
    sc = [rng.randrange(R) for _ in range(n)]
    if n > 4:
        sc[0] = sc[1] = sc[2] = rng.randrange(R)
        sc[4] = R - 1
    if n > 8:
        sc[5], sc[6], sc[7] = 0, 1, 2
    inf = [ark_affine(group, p) is None for p in pts]
    bases = [ark_affine(group, p) or (XYZZ(group).f.zero, XYZZ(group).f.zero) for p in pts]
    got, _ = model_msm(XYZZ(group), bases, inf, sc, c, pair_levels=pairs, pair_merges=pairs)
    want = CLS[group].multiexp_unchecked(pts, scalars_to_ark(sc))
    assert xyzz_to_affine(group, got) == ark_affine(group, want)


# --- window reduction levels ---

@pytest.mark.parametrize("pairs", [False, True])
@pytest.mark.parametrize("nwin", [1, 3, 16])
def test_reduce_levels_cover_every_bucket(nwin, pairs):
    for c in range(1, 23):
        B = 1 << (c - 1)
        levels = plan.reduce_levels(nwin, B, pairs)
        N = B
        for i, (L, first, log_scale) in enumerate(levels):
            assert first == (i == 0) and L >= 1 and N % L == 0
            assert L >= 2 or B == 1                   # every level shrinks the entries
            assert not pairs or i == 0 or L == 2
            N //= L
            assert log_scale == (L.bit_length() - 1 if N > 1 else 0)
        assert N == 1
        assert levels[0][0] <= plan.REDUCE_FIRST_MAX


@pytest.mark.parametrize("pairs", [False, True])
@pytest.mark.parametrize("nwin,B", [(1, 1), (2, 2), (3, 16), (2, 64), (5, 256), (1, 1 << 12), (33, 4)])
def test_reduce_windows_weights(nwin, B, pairs, monkeypatch):
    """Window sums sum_k (k + 1) bucket_k over Z_r, with several level shapes."""
    rng = random.Random(B * 7 + nwin)
    buckets = [rng.randrange(R) for _ in range(nwin * B)]
    want = [sum((k + 1) * buckets[w * B + k] for k in range(B)) % R for w in range(nwin)]
    k = ModelKernels(IntGroup(), [], [], [])
    for threads, first_max, up in [(1 << 16, 64, 4), (1, 8, 2), (4, 2, 8)]:
        monkeypatch.setattr(plan, "REDUCE_THREADS", threads)
        monkeypatch.setattr(plan, "REDUCE_FIRST_MAX", first_max)
        monkeypatch.setattr(plan, "REDUCE_UP", up)
        assert plan.reduce_windows(k, buckets, nwin, B, pairs) == want


# --- affine rounds: plan and geometry ---

def test_round_offsets_and_plan():
    in_off = np.array([0, 0, 5, 6, 6, 10, 13], dtype=np.int64)      # counts 0, 5, 1, 0, 4, 3
    out_off, total = plan.round_offsets(in_off, np)
    assert out_off.tolist() == [0, 0, 3, 4, 4, 6, 8] and total == 8
    words = ModelKernels(IntGroup(), [], [], []).affine_plan(in_off, out_off, total)
    got = [(int(w) >> 1, int(w) & 1) for w in words]
    assert got == [(0, 1), (2, 1), (4, 0), (5, 0), (6, 1), (8, 1), (10, 1), (12, 0)]


@pytest.mark.parametrize("total", [1, 5, 127, 128, 129, 1000, 100003])
def test_round_geometry_covers_outputs_once(total):
    for threads, max_blocks in [(4, 3), (128, 528), (8, 1)]:
        blocks, per = plan.round_geometry(total, threads, max_blocks)
        assert 1 <= blocks <= max_blocks
        seen = np.zeros(total, dtype=np.int64)
        for b in range(blocks):
            for t in range(threads):
                first = b * threads * per + t
                left = total - first
                cnt = 0 if left <= 0 else min(per, (left + threads - 1) // threads)
                seen[[first + threads * i for i in range(cnt)]] += 1
        assert (seen == 1).all()
        assert (blocks - 1) * threads * per < total           # no block left empty


def test_block_batch_inverse():
    rng = random.Random(9)
    for tpb in (1, 2, 4, 8, 128):
        vals = [rng.randrange(1, R) for _ in range(tpb)]
        assert [v * i % R for v, i in zip(vals, block_batch_inverse(Zr, vals))] == [1] * tpb


# --- the schedule with affine rounds ---

@pytest.mark.parametrize("n,c", [(1, 1), (2, 2), (31, 5), (100, 4), (512, 8), (1000, 9)])
@pytest.mark.parametrize("geom", [(4, 3), (1, 1), (8, 64)])
def test_affine_schedule_int_group(n, c, geom):
    bases, inf, sc, want = int_case(n, n * 13 + c, "random")
    got, k = model_msm(IntGroup(), bases, inf, sc, c, min_pairs=1, tpb=geom[0], max_blocks=geom[1])
    assert got == want
    assert k.stats["fallbacks"] == 0
    assert k.stats["affine_rounds"] > 0 or n < 31


PLAN_OPTS = [dict(plan_by_entry=True), dict(sizes_once=True), dict(plan_by_entry=True, sizes_once=True),
             dict(lean_offsets=True), dict(plan_by_entry=True, sizes_once=True, lean_offsets=True)]


@pytest.mark.parametrize("kind", ["random", "same", "small", "edge"])
@pytest.mark.parametrize("opts", PLAN_OPTS, ids=["K4", "K5", "K4+K5", "K9", "K4+K5+K9"])
def test_plan_opts_same_rounds(kind, opts):
    """K4 (round plans by entry), K5 (every round's size from one read) and K9 (offsets from one counts kernel), alone
    and together: the very points,
    offsets and round counts of the default rounds (the model checks each plan word against the search's and each
    size against a read per round); several passes, a threshold that stops the rounds early."""
    bases, inf, sc, want = int_case(400, 23, kind)
    for min_pairs in (1, 30):
        res = []
        for o in ({}, opts):
            k = ModelKernels(IntGroup(), bases, inf, sc, **o)
            keys = np.sort(k.digits(5, 0, 2))
            offsets = plan.bucket_offsets(keys, 2 * 16, np, True)
            pts, off, rounds, count = plan.affine_rounds(k, keys, offsets, min_pairs, np)
            res.append((list(pts), off.tolist(), rounds, count))
            if o.get("plan_by_entry") and rounds:
                assert k.stats["entry_plans"] == rounds
            assert k.stats.get("sizes_once", 0) == int(bool(o.get("sizes_once")))
            assert (k.stats.get("lean_offsets", 0) > 0) == bool(o.get("lean_offsets"))
        assert res[1] == res[0]
        got, k = model_msm(IntGroup(), bases, inf, sc, 5, max_entries=900, min_pairs=min_pairs, **opts)
        assert got == want and k.stats["affine_rounds"] > 0


def test_round_totals():
    in_off = np.array([0, 0, 5, 6, 6, 10, 13], dtype=np.int64)      # counts 0, 5, 1, 0, 4, 3
    t = plan.round_totals(in_off, np).tolist()
    assert t[:5] == [13, 8, 5, 4, 4] and t[31] == 4 and len(t) == 32
    assert ModelKernels(IntGroup(), [], [], []).round_totals(in_off).tolist() == t


@pytest.mark.parametrize("kind", ["same", "small", "edge"])
def test_affine_schedule_unbalanced(kind):
    """One huge bucket per window (same scalars) or many small ones, infinity flags: the
    rounds run until every bucket holds one point, the segment sums finish."""
    bases, inf, sc, want = int_case(700, 11, kind)
    got, k = model_msm(IntGroup(), bases, inf, sc, 7, min_pairs=1)
    assert got == want
    assert k.stats["affine_rounds"] >= 9 if kind == "same" else k.stats["affine_rounds"] > 0
    assert k.stats["fallbacks"] == 0


def test_marks_split_round_plans_from_rounds():
    """pippenger's mark: per pass digits, sort, offsets, the rounds' sizes, then "round offsets" and "round plans"
    before every "affine rounds" kernel mark, then the bucket sums; the MSM is the same."""
    bases, inf, sc, want = int_case(300, 4)
    names = []
    k = ModelKernels(IntGroup(), bases, inf, sc)
    got = plan.pippenger(k, len(bases), 6, 700, np, affine_min_pairs=1, mark=names.append)
    assert got == want
    kernels = k.stats["affine_rounds"]
    assert kernels > 0 and names.count("round plans") == kernels
    assert names.count("digits") == names.count("sort") == names.count("offsets") > 1     # several passes
    for i, name in enumerate(names):
        if name == "round plans":
            assert names[i + 1] == "affine rounds" and names[i - 1] == "round offsets"
        if name == "round sizes":
            assert names[i - 1] == "offsets" and names[i + 1] == "round offsets"
    assert names.count("round sizes") == names.count("offsets")


@pytest.mark.parametrize("min_pairs", [1, 40, 200, 10 ** 9])
def test_affine_threshold_and_passes(min_pairs):
    """Rounds stop below min_pairs (the rest summed in XYZZ); several passes."""
    bases, inf, sc, want = int_case(300, 4)
    got, k = model_msm(IntGroup(), bases, inf, sc, 6, max_entries=700, min_pairs=min_pairs)
    assert got == want
    if min_pairs == 10 ** 9:
        assert k.stats["affine_rounds"] == 0
    else:
        assert k.stats["affine_rounds"] > 0


def test_affine_degenerate_falls_back():
    """A repeated base (P + P) or a negated one (P + (-P)) in a pair: flagged, the pass redone in XYZZ."""
    rng = random.Random(5)
    n = 60
    bases = [rng.randrange(1, R) for _ in range(n)]
    sc = [rng.randrange(R) for _ in range(n)]
    bases[1] = bases[0]
    bases[2] = R - bases[0]
    sc[1] = sc[2] = sc[0]                         # same digits: adjacent in every bucket's run
    want = sum(s * b for s, b in zip(sc, bases)) % R
    got, k = model_msm(IntGroup(), bases, [False] * n, sc, 4, min_pairs=1)
    assert got == want
    assert k.stats["fallbacks"] >= 1


def curve_case(group, n, seed_, repeat=False):
    """(bases, inf, scalars, arkworks' MSM) of n random points: one at infinity, a zero scalar and r - 1 when n > 8;
    repeat: point 1 equal to point 0 with the same scalar (a degenerate affine pair)."""
    rng = random.Random(seed_)
    pts = rand_points(group, n, rng)
    sc = [rng.randrange(R) for _ in range(n)]
    if repeat:
        pts[1] = pts[0]
        sc[1] = sc[0]
    if n > 8:
        pts[3] = CLS[group].identity()
        sc[5], sc[6] = 0, R - 1
    inf = [ark_affine(group, p) is None for p in pts]
    bases = [ark_affine(group, p) or (XYZZ(group).f.zero, XYZZ(group).f.zero) for p in pts]
    return bases, inf, sc, CLS[group].multiexp_unchecked(pts, scalars_to_ark(sc))


@pytest.mark.parametrize("group,n,c,repeat", [(1, 1, 3, False), (1, 23, 2, False), (1, 40, 4, False),
                                              (1, 40, 4, True), (2, 12, 3, False), (2, 12, 3, True)])
def test_affine_schedule_on_curve_vs_arkworks(group, n, c, repeat):
    """Real affine formulas and batch inversion over Fp (Fp2): distinct points take the affine
    path to the end; a repeated point forces the XYZZ fallback; both match arkworks."""
    bases, inf, sc, want = curve_case(group, n, n * 3 + group + repeat, repeat)
    got, k = model_msm(XYZZ(group), bases, inf, sc, c, min_pairs=1)
    assert xyzz_to_affine(group, got) == ark_affine(group, want)
    assert (k.stats["fallbacks"] > 0) == repeat
    assert n == 1 or k.stats["affine_rounds"] > 0


# --- K10: the window reduction by affine groups ---

@pytest.mark.parametrize("units,c", [(1, 2), (2, 3), (3, 6), (2, 7), (1, 10)])
@pytest.mark.parametrize("shape", ["random", "sparse", "one"])
def test_group_offsets_weights(units, c, shape):
    """group_offsets: the G runs are the bucket runs in place (every entry once, in order) and the H runs hold every
    entry of a bucket with lo > 0 once; with a random integer on each entry, 2^s sum hi G_hi + sum lo H_lo is each
    unit's sum_j (j + 1) bucket_j; runs per unit 1 + B / 2^s and 2^s, the last H run empty."""
    rng = np.random.default_rng(units * 100 + c)
    B, s = 1 << (c - 1), plan.group_split(c)
    HB = B >> s
    counts = {"random": rng.poisson(2, units * B), "sparse": rng.poisson(0.3, units * B),
              "one": np.zeros(units * B, dtype=np.int64)}[shape].astype(np.int64)
    if shape == "one":
        counts[rng.integers(units * B)] = 5
    off = np.concatenate(([0], np.cumsum(counts)))
    count = int(off[-1])
    v = rng.integers(1, 1 << 40, size=count).astype(object)
    off_h, goff, ng = plan.group_offsets(off, count, units, B, s, np)
    x = ModelKernels.group_gather(list(v), off, off_h, count, units, B, s)
    assert ng == units * (1 + HB + (1 << s)) and len(goff) == ng + 1 and goff[0] == 0 and goff[-1] <= 2 * count
    assert np.all(np.diff(goff) >= 0)
    assert x[:count] == list(v) and all(e is not None for e in x[:goff[-1]]) and all(e is None for e in x[goff[-1]:])
    g = [sum(x[goff[i]:goff[i + 1]]) for i in range(ng)]
    for u in range(units):
        want = sum((j + 1) * sum(v[off[u * B + j]:off[u * B + j + 1]]) for j in range(B))
        gu = g[u * (1 + HB):(u + 1) * (1 + HB)]
        hu = g[units * (1 + HB) + u * (1 << s):units * (1 + HB) + (u + 1) * (1 << s)]
        assert hu[-1] == 0
        assert (1 << s) * sum(hi * gu[hi] for hi in range(1, HB + 1)) + sum((lo + 1) * hu[lo] for lo in range(1 << s)) \
            == want
    lo_zero = {e for u in range(units) for hi in range(1, HB + 1)
               for e in range(off[u * B + (hi << s) - 1], off[u * B + (hi << s)])}    # d = 2^s hi: lo = 0, not in H
    assert sorted(x[count:goff[-1]]) == sorted(v[e] for e in set(range(count)) - lo_zero)


@pytest.mark.parametrize("n,c", [(40, 2), (100, 4), (300, 5), (700, 7), (512, 8)])
@pytest.mark.parametrize("kind", ["random", "same", "small", "edge"])
def test_group_reduce_schedule(n, c, kind, monkeypatch):
    """K10 on every pass (GROUP_MIN_BUCKETS lowered): the MSM of the default schedule, with and without rounds in
    the groups, over one pass and several, with the K4/K5/K9 plans."""
    monkeypatch.setattr(plan, "GROUP_MIN_BUCKETS", 1)
    bases, inf, sc, want = int_case(n, n * 7 + c, kind)
    for min_pairs, max_entries in ((1, 1 << 28), (1, 2 * n), (8, 1 << 28)):
        for o in ({}, dict(plan_by_entry=True, sizes_once=True, lean_offsets=True)):
            got, k = model_msm(IntGroup(), bases, inf, sc, c, max_entries=max_entries, min_pairs=min_pairs,
                               group_reduce=True, **o)
            assert got == want, (min_pairs, max_entries, o)
            assert k.stats["fallbacks"] == 0
            if k.stats["affine_rounds"] and min_pairs == 1 and kind == "random" and c >= 4:   # c < 4: a bucket a group
                assert k.stats["group_rounds"] > 0


def test_group_reduce_many_parts(monkeypatch):
    """K10 with several MSMs in one (msm_many: a unit is one window of one MSM)."""
    monkeypatch.setattr(plan, "GROUP_MIN_BUCKETS", 1)
    parts, want = int_parts([31, 100, 2, 60], 9)
    got, _, k = model_many(IntGroup(), parts, 5, min_pairs=1, group_reduce=True)
    assert got == want and k.stats["group_rounds"] > 0


def test_group_degenerate_falls_back(monkeypatch):
    """Two buckets of one lo whose sums are equal (bases b1 + b2 under digits 1 and 2^s + 1): a group round meets
    x1 == x2; the flag, read once after the bucket and the group rounds, sends the pass to XYZZ; the MSM is right."""
    monkeypatch.setattr(plan, "GROUP_MIN_BUCKETS", 1)
    c = 6
    s = plan.group_split(c)
    rng = random.Random(3)
    b1, b2 = rng.randrange(1, R), rng.randrange(1, R)
    bases, sc = [b1, b2, b1, b2], [1, 1, (1 << s) + 1, (1 << s) + 1]
    want = sum(x * y for x, y in zip(bases, sc)) % R
    got, k = model_msm(IntGroup(), bases, [False] * 4, sc, c, min_pairs=1, group_reduce=True)
    assert got == want
    assert k.stats["affine_rounds"] > 0 and k.stats["group_rounds"] > 0 and k.stats["fallbacks"] == 1


@pytest.mark.parametrize("group,n,c", [(1, 40, 4), (1, 64, 6), (2, 12, 3)])
def test_group_reduce_on_curve_vs_arkworks(group, n, c, monkeypatch):
    """K10 with the real affine formulas over Fp (Fp2) and the XYZZ doublings of window_join: arkworks' MSM."""
    monkeypatch.setattr(plan, "GROUP_MIN_BUCKETS", 1)
    bases, inf, sc, want = curve_case(group, n, n * 5 + group)
    got, k = model_msm(XYZZ(group), bases, inf, sc, c, min_pairs=1, group_reduce=True)
    assert xyzz_to_affine(group, got) == ark_affine(group, want)
    assert k.stats["affine_rounds"] > 0 and k.stats["group_rounds"] > 0 and k.stats["fallbacks"] == 0


def test_second_round_degenerate_falls_back():
    """P0 + P1 == P2 + P3 in a bucket: only the second round meets x1 == x2; flagged, redone."""
    rng = random.Random(8)
    x, y, z = (rng.randrange(1, R) for _ in range(3))
    bases = [x, y, z, (x + y - z) % R]
    s = rng.randrange(R)
    want = sum(bases) * s % R
    got, k = model_msm(IntGroup(), bases, [False] * 4, [s] * 4, 3, min_pairs=1)
    assert got == want
    assert k.stats["fallbacks"] >= 1


# --- the host fold of the window sums (fold.fold_windows, used by msm_g1 / msm_g2) ---

def xyzz_limbs(group, pts):
    """XYZZ tuples -> uint32[len, words] Montgomery limbs (fold.xyzz_from_limbs's inverse)."""
    from cuzk.field import fp_to_limbs
    flat = [v for p in pts for v in (p if group == 1 else (c for pair in p for c in pair))]
    return fp_to_limbs(np.array(flat, dtype=object)).reshape(len(pts), -1)


@pytest.mark.parametrize("group,c,nw", [(1, 13, 20), (1, 16, 17), (2, 12, 22), (2, 1, 3)])
def test_fold_windows_vs_arkworks(group, c, nw):
    """Σ 2^(c w) W_w from un-normalised XYZZ window sums (random z), with an infinite window and a
    repeated one, equals arkworks' sum."""
    from cuzk.gpu.msm.fold import fold_windows
    rng = random.Random(group * 100 + c)
    pts = rand_points(group, nw, rng)
    pts[1] = CLS[group].identity()
    pts[2] = pts[0]
    rows = [xyzz_of(group, p, rand_z(group, rng)) for p in pts]
    got = fold_windows(group, xyzz_limbs(group, rows), c)
    want = CLS[group].multiexp_unchecked(pts, scalars_to_ark([pow(2, c * w, R) for w in range(nw)]))
    assert got == want
    top = CLS[group].identity()                  # only the top window set
    only_top = [XYZZ(group).inf()] * (nw - 1) + [rows[-1]]
    assert fold_windows(group, xyzz_limbs(group, only_top), c) == pts[-1] * Scalar(pow(2, c * (nw - 1), R))
    assert fold_windows(group, xyzz_limbs(group, [XYZZ(group).inf()] * nw), c) == top


@pytest.mark.parametrize("group", [1, 2])
def test_fold_windows_rejects_a_point_off_the_curve(group):
    from cuzk.curve import PointError
    from cuzk.gpu.msm.fold import fold_windows
    rng = random.Random(7)
    rows = [xyzz_of(group, p, rand_z(group, rng)) for p in rand_points(group, 4, rng)]
    X, Y, ZZ, ZZZ = rows[2]
    f = FIELDS[group]
    rows[2] = (f.add(X, f.one), Y, ZZ, ZZZ)      # x moved: off the curve
    with pytest.raises(PointError, match="not on the curve"):
        fold_windows(group, xyzz_limbs(group, rows), 9)


# --- one bucket planned on the host (batch addition) ---

class CountingKernels(ModelKernels):
    """ModelKernels that also record every entry a segment covers, per launch (empty segments only
    with allow_empty: an empty bucket's)."""

    def __init__(self, *a, allow_empty=False, **kw):
        super().__init__(*a, **kw)
        self.launches = []
        self.allow_empty = allow_empty

    def _cover(self, seg_bucket, seg_first, offsets, S, total):
        seen = []
        for j in range(total):
            start, end = self._range(j, seg_bucket, seg_first, offsets, S)
            assert (0 if self.allow_empty else 1) <= end - start <= S     # no empty and no oversized segment
            seen += list(range(start, end))
        self.launches.append((S, total, seen))

    def sum_affine(self, src, keyed, seg_bucket, seg_first, offsets, S, total):
        self._cover(seg_bucket, seg_first, offsets, S, total)
        return super().sum_affine(src, keyed, seg_bucket, seg_first, offsets, S, total)

    def sum_xyzz(self, partials, seg_bucket, seg_first, offsets, S, total):
        self._cover(seg_bucket, seg_first, offsets, S, total)
        return super().sum_xyzz(partials, seg_bucket, seg_first, offsets, S, total)


@pytest.mark.parametrize("count,S,M", [(1, 8, 4), (7, 8, 4), (8, 8, 4), (9, 8, 4), (100, 8, 4), (1000, 16, 4),
                                       (1000, 8, 2), (4097, 128, 16)])
def test_one_bucket_sum(count, S, M):
    """Every entry summed exactly once (keys with negation), each level covering its input exactly, and
    as deep as S + M * levels; the same result as bucket_sums planned from device offsets."""
    rng = random.Random(count * 7 + S)
    n = 64
    bases = [rng.randrange(1, R) for _ in range(n)]
    rows = [rng.randrange(n) for _ in range(count)]
    neg = [rng.random() < 0.3 for _ in range(count)]
    keys = np.array([(r << 1) | ng for r, ng in zip(rows, neg)], dtype=np.uint64)
    k = CountingKernels(IntGroup(), bases, [False] * n, [0] * n)
    got = plan.one_bucket_sum(k, keys, True, count, S, np, M)
    want = sum(-bases[r] if ng else bases[r] for r, ng in zip(rows, neg)) % R
    assert len(got) == 1 and got[0] % R == want
    inputs = count
    for i, (s, total, seen) in enumerate(k.launches):
        assert s == (S if i == 0 else M)
        assert seen == list(range(inputs))             # each level reads all of the previous one, once
        inputs = total
    assert inputs == 1
    levels = len(k.launches) - 1
    assert levels == (0 if count <= S else math.ceil(round(math.log(-(-count // S), M), 9)))
    k2 = ModelKernels(IntGroup(), bases, [False] * n, [0] * n)
    assert plan.bucket_sums(k2, keys, True, np.array([0, count], dtype=np.int64), 1, np, S=S)[0] % R == want


@pytest.mark.parametrize("count,S", [(1, 8), (8, 8), (9, 8), (100, 8), (1000, 16), (4097, 3)])
def test_one_bucket_sum_pairs(count, S):
    """R2: the merges in pairs, planned on the host: ceil(log2(segments)) levels, the same sum."""
    rng = random.Random(count * 5 + S)
    n = 64
    bases = [rng.randrange(1, R) for _ in range(n)]
    rows = [rng.randrange(n) for _ in range(count)]
    keys = np.array([r << 1 for r in rows], dtype=np.uint64)
    k = CountingKernels(IntGroup(), bases, [False] * n, [0] * n)
    got = plan.one_bucket_sum(k, keys, True, count, S, np, pairs=True)
    assert len(got) == 1 and got[0] % R == sum(bases[r] for r in rows) % R
    assert len(k.launches) == 1                        # the first segments only: no sum_xyzz
    assert getattr(k, "pair_merges", 0) == math.ceil(math.log2(-(-count // S)))


@pytest.mark.parametrize("where", ["bucket", "one", "few"])
def test_pair_merges_above_the_threshold_chain_first(where, monkeypatch):
    """R2 above PAIR_MERGE_MAX partials: MERGE_S (or M) chains first, pairs once a level is small enough;
    the same sums."""
    monkeypatch.setattr(plan, "PAIR_MERGE_MAX", 40)
    rng = random.Random(17)
    n = 64
    bases = [rng.randrange(1, R) for _ in range(n)]
    count = 3000
    rows = [rng.randrange(n) for _ in range(count)]
    keys = np.array([r << 1 for r in rows], dtype=np.uint64)
    want = sum(bases[r] for r in rows) % R
    k = ModelKernels(IntGroup(), bases, [False] * n, [0] * n)
    if where == "bucket":
        got = plan.bucket_sums(k, keys, True, np.array([0, count], dtype=np.int64), 1, np, S=8, pairs=True)
    elif where == "one":
        got = plan.one_bucket_sum(k, keys, True, count, 8, np, pairs=True)
    else:
        got = plan.few_bucket_sums([(k, keys, True, count)], 8, np, pairs=True)
    assert got[0] % R == want
    assert k.merges >= 1 and k.pair_merges >= 1      # 375 partials: chains down to <= 40, then pairs


@pytest.mark.parametrize("counts", [[1], [1, 1], [5, 1, 2, 8], [3, 100, 1, 64]])
def test_known_pair_plan(counts):
    """The host-made pair plan equals msm_affine_plan's words from the offsets."""
    words, after = plan.known_pair_plan(counts, np)
    in_off = np.cumsum([0] + counts)
    out_off, total = plan.round_offsets(in_off, np)
    assert after == [-(-m // 2) for m in counts] and sum(after) == total
    want = ModelKernels(IntGroup(), [], [], []).affine_plan(in_off, out_off, total)
    assert words.dtype == np.uint32 and words.tolist() == [int(w) for w in want]


# --- several MSMs as one (cuzk/gpu/msm/many.py, optimization M2) ---

def digits_many_thread(limbs, skip, i, n, part_off, c, w0, w1, keys):
    """msm_digits_many for one point: its MSM p (part_off), then digit_keys with window stride
    parts * 2^(c-1) and base p * 2^(c-1)."""
    parts = len(part_off) - 1
    p = 0
    while p + 1 < parts and i >= part_off[p + 1]:
        p += 1
    half = 1 << (c - 1)
    digits_thread(limbs, skip, i, n, c, w0, w1, keys, wstride=parts * half, base=p * half)


class ManyModelKernels(ModelKernels):
    """ModelKernels with msm_many's digits (msm_digits_many over part_off) and its combine (the window
    sums returned as they are, for the host fold)."""

    def __init__(self, G, bases, inf, scalars, part_off, **kw):
        super().__init__(G, bases, inf, scalars, **kw)
        self.part_off = [int(o) for o in part_off]

    def digits(self, c, w0, w1):
        keys = np.zeros((w1 - w0) * self.n, dtype=np.uint64)
        for i in range(self.n):
            digits_many_thread(self.limbs[i], bool(self.inf[i]), i, self.n, self.part_off, c, w0, w1, keys)
        return keys

    def combine(self, window_sums, nw, c):
        return window_sums


def model_many(G, parts, c, max_entries=1 << 28, min_pairs=None, pair_levels=False, pair_merges=False, **kw):
    """msm_many's schedule over the model: parts = [(bases, inf, scalars)] -> (one result per part,
    window rows, kernels); each part's rows w * P + j folded by ModelKernels.combine."""
    from cuzk.gpu.msm.parts import live_parts
    live, off = live_parts([len(b) for b, _, _ in parts])
    cat = [[x for p in parts for x in p[j]] for j in range(3)]
    k = ManyModelKernels(G, *cat, off, **kw)
    out = [G.inf() for _ in parts]
    if not live:
        return out, [], k
    nparts = len(live)
    rows = plan.pippenger(k, len(cat[0]), c, max_entries, np, affine_min_pairs=min_pairs, parts=nparts, pair_levels=pair_levels, pair_merges=pair_merges)
    nw = plan.num_windows(c)
    assert len(rows) == nw * nparts
    for j, p in enumerate(live):
        out[p] = ModelKernels.combine(k, rows[j::nparts], nw, c)
    return out, rows, k


def int_parts(sizes, seed, kind="random"):
    cases = [int_case(m, seed * 101 + j, kind) for j, m in enumerate(sizes)]
    return [(b, f, s) for b, f, s, _ in cases], [w for *_, w in cases]


@pytest.mark.parametrize("sizes", [[1, 31, 0, 50], [0, 7, 0], [40], [3, 100, 2, 1]])
@pytest.mark.parametrize("c", [1, 4, 9])
def test_many_digits_key_each_part_into_its_blocks(sizes, c):
    """Every key of MSM p in window w lies in block (w - w0) * P + p (window-major), holds the point's
    index in the concatenation, and each point's digits give back its scalar."""
    from cuzk.gpu.msm.parts import live_parts
    parts, _ = int_parts(sizes, c, "edge")
    live, off = live_parts(sizes)
    nparts, B, nw = len(live), 1 << (c - 1), plan.num_windows(c)
    sc = [s for _, _, ss in parts for s in ss]
    n = len(sc)
    k = ManyModelKernels(IntGroup(), [0] * n, [False] * n, sc, off)
    for w0, w1 in [(0, nw), (1, min(3, nw))]:
        keys = k.digits(c, w0, w1).reshape(w1 - w0, n)
        total = [0] * n
        for w in range(w0, w1):
            for i in range(n):
                key = int(keys[w - w0, i])
                if key == plan.ZERO_KEY:
                    continue
                bucket, low = key >> 32, key & 0xFFFFFFFF
                j = int(np.searchsorted(off, i, side="right")) - 1
                assert low >> 1 == i and bucket // B == (w - w0) * nparts + j
                d = bucket % B + 1
                total[i] += (-d if low & 1 else d) << (c * w)
        if (w0, w1) == (0, nw):
            assert total == sc


@pytest.mark.parametrize("sizes,c", [([1, 31, 1000, 0, 300], 9), ([0, 5, 0], 3), ([40], 5), ([3, 100, 2], 1),
                                     ([200, 1, 60], 13), ([0], 4), ([0, 0], 7)])
@pytest.mark.parametrize("kind", ["random", "edge"])
@pytest.mark.parametrize("pairs", [False, True])
def test_many_schedule_int_group(sizes, c, kind, pairs):
    """P MSMs as one give each its own sum; empty ones the identity."""
    parts, want = int_parts(sizes, len(sizes) * 7 + c, kind)
    got, rows, _ = model_many(IntGroup(), parts, c, pair_levels=pairs, pair_merges=pairs)
    assert got == want


@pytest.mark.parametrize("geom", [(4, 3), (8, 64)])
def test_many_schedule_affine_rounds(geom):
    parts, want = int_parts([31, 0, 400, 9], 3)
    got, _, k = model_many(IntGroup(), parts, 5, min_pairs=1, tpb=geom[0], max_blocks=geom[1])
    assert got == want
    assert k.stats["affine_rounds"] > 0 and k.stats["fallbacks"] == 0


def test_many_schedule_degenerate_pass_falls_back():
    """A repeated base inside one MSM: its pass is redone in XYZZ, every MSM still right."""
    parts, want = int_parts([60, 25], 6)
    b, f, s = parts[0]
    b[1], s[1] = b[0], s[0]
    want[0] = sum(x * y for x, y, z in zip(b, s, f) if not z) % R
    got, _, k = model_many(IntGroup(), parts, 4, min_pairs=1)
    assert got == want and k.stats["fallbacks"] >= 1


@pytest.mark.parametrize("reduce_max", [1 << 23, 200])
def test_many_schedule_passes_and_split_reductions(reduce_max, monkeypatch):
    """Windows over several sort passes (max_entries: 2 windows a pass), and the reduction split over
    passes when two passes' buckets (2 * 2 windows * 3 MSMs * 32) pass REDUCE_MAX_BUCKETS: the rows
    stay window-major across them."""
    monkeypatch.setattr(plan, "REDUCE_MAX_BUCKETS", reduce_max)
    parts, want = int_parts([100, 0, 37, 63], 8)
    firsts = []

    def level(self, A, T, count, L, first, log_scale):
        firsts.append(first)
        return ModelKernels.window_level(self, A, T, count, L, first, log_scale)
    monkeypatch.setattr(ManyModelKernels, "window_level", level)
    got, rows, _ = model_many(IntGroup(), parts, 6, max_entries=2 * 200)
    assert got == want
    passes = len(plan.window_passes(200, plan.num_windows(6), 2 * 200))
    assert passes > 1 and sum(firsts) == (passes if reduce_max == 200 else 1)
    got2, rows2, _ = model_many(IntGroup(), parts, 6)
    assert rows == rows2                      # the same window sums as one pass


@pytest.mark.parametrize("min_pairs", [None, 1])
def test_many_on_curve_and_host_fold_vs_arkworks(min_pairs):
    """Real G1 points (infinity, a repeat, scalars 0, 1, r - 1) through the schedule, the rows as limbs
    through parts.fold_parts (the host fold msm_g1_concat uses): each MSM's arkworks multiexp."""
    from cuzk.gpu.msm.parts import fold_parts, live_parts
    rng = random.Random(12 + (min_pairs or 0))
    sizes = [5, 0, 12, 1]
    pts, parts = [], []
    for m in sizes:
        p = rand_points(1, m, rng)
        sc = [rng.randrange(R) for _ in range(m)]
        if m > 4:
            p[3], sc[0], sc[1], sc[2] = CLS[1].identity(), 0, 1, R - 1
        pts.append((p, sc))
        inf = [ark_affine(1, q) is None for q in p]
        parts.append(([ark_affine(1, q) or (0, 0) for q in p], inf, sc))
    if min_pairs is None:
        parts[2][0][5], parts[2][2][5] = parts[2][0][4], parts[2][2][4]     # a repeated (point, scalar)
        pts[2][0][5], pts[2][1][5] = pts[2][0][4], pts[2][1][4]
    c = 3
    got, rows, _ = model_many(XYZZ(1), parts, c, min_pairs=min_pairs)
    want = [CLS[1].multiexp_unchecked(p, scalars_to_ark(s)) if p else CLS[1].identity() for p, s in pts]
    assert [xyzz_to_affine(1, g) for g in got] == [ark_affine(1, w) for w in want]
    live, _ = live_parts(sizes)
    limbs = xyzz_limbs(1, rows).reshape(plan.num_windows(c), len(live), -1)
    assert fold_parts(1, limbs, c, live, len(sizes)) == want


def test_many_live_parts():
    from cuzk.gpu.msm.parts import live_parts
    live, off = live_parts([0, 3, 0, 0, 5, 1, 0])
    assert live == [1, 4, 5] and off.tolist() == [0, 3, 8, 9]
    assert live_parts([])[0] == [] and live_parts([0, 0])[1].tolist() == [0]
    with pytest.raises(ValueError):
        live_parts([3, -1])


def test_choose_window_parts_and_max_parts():
    for m in [1, 31, 1000, 1 << 14, 1 << 17, 1 << 20]:
        assert plan.choose_window(m, parts=1) == plan.choose_window(m)
        for parts in (2, 3, 5):
            # that many MSMs of m points as one pick the window one of them picks alone
            assert plan.choose_window(parts * m, parts=parts) == plan.choose_window(m)
            assert plan.choose_window(parts * m, popcount=40, affine=True, parts=parts) == \
                plan.choose_window(m, popcount=40, affine=True)
        assert plan.choose_window(3 * m, parts=3) <= plan.choose_window(3 * m)
    for c in range(1, plan.C_LIMIT + 1):
        ids = plan.num_windows(c) << (c - 1)
        assert plan.max_parts(c) * ids < (1 << 32) - 1 <= (plan.max_parts(c) + 1) * ids
        assert plan.max_parts(c) >= 1
    assert plan.max_parts(plan.C_MAX) >= 64


# --- several buckets planned on the host (msm_plan.few_bucket_sums: the batch sums of M2) ---

@pytest.mark.parametrize("counts", [[0, 5, 1, 0, 34, 1], [7], [0], [100, 3, 0, 1000]])
@pytest.mark.parametrize("S", [1, 4, 16])
def test_known_plan_matches_segment_plan(counts, S):
    """The host-made plan equals segment_plan's from device offsets (no read of the device)."""
    offsets, seg_first, seg_bucket, nseg = plan.known_plan(counts, S, np)
    assert offsets.tolist() == np.cumsum([0] + counts).tolist()
    want_first, want_bucket, total = plan.segment_plan(offsets, S, np)
    assert seg_first.tolist() == want_first.tolist() and seg_bucket.tolist() == want_bucket.tolist()
    assert sum(nseg) == total and nseg == [max(1, -(-m // S)) for m in counts]
    assert seg_first.dtype == np.int64 and seg_bucket.dtype == np.int64


@pytest.mark.parametrize("counts,S,M", [([1000, 7, 300], 8, 4), ([0, 1, 2], 8, 4), ([9, 0, 4097], 16, 2),
                                        ([64, 64, 64], 8, 4), ([5], 8, 4), ([0], 8, 4), ([33, 1], 1, 3)])
def test_few_bucket_sums_pairs(counts, S, M):
    """R2: the merges of several buckets in pairs (known_pair_plan): the same sums."""
    rng = random.Random(sum(counts) * 11 + S)
    n = 64
    first, want = [], []
    for m in counts:
        bases = [rng.randrange(1, R) for _ in range(n)]
        rows = [rng.randrange(n) for _ in range(m)]
        keys = np.array([r << 1 for r in rows], dtype=np.uint64)
        first.append((ModelKernels(IntGroup(), bases, [False] * n, [0] * n), keys, True, m))
        want.append(sum(bases[r] for r in rows) % R)
    got = plan.few_bucket_sums(first, S, np, M, pairs=True)
    assert [g % R for g in got] == want
    segs = max(max(1, -(-m // S)) for m in counts)
    assert getattr(first[0][0], "pair_merges", 0) == math.ceil(math.log2(segs))


@pytest.mark.parametrize("counts,S,M", [([1000, 7, 300], 8, 4), ([0, 1, 2], 8, 4), ([9, 0, 4097], 16, 2),
                                        ([64, 64, 64], 8, 4), ([5], 8, 4), ([0], 8, 4), ([33, 1], 1, 3)])
def test_few_bucket_sums(counts, S, M):
    """Each bucket's entries (keys into its own bases, some negated) summed exactly once: the first
    level on the bucket's own kernel set, every merge level over all buckets covering its input once;
    as many merge levels as the largest bucket needs alone; the same sums as one_bucket_sum."""
    rng = random.Random(sum(counts) * 3 + S)
    n = 64
    ks, first, want = [], [], []
    for m in counts:
        bases = [rng.randrange(1, R) for _ in range(n)]
        rows = [rng.randrange(n) for _ in range(m)]
        neg = [rng.random() < 0.3 for _ in range(m)]
        keys = np.array([(r << 1) | g for r, g in zip(rows, neg)], dtype=np.uint64)
        k = CountingKernels(IntGroup(), bases, [False] * n, [0] * n, allow_empty=0 in counts)
        ks.append(k)
        first.append((k, keys, True, m))
        want.append(sum(-bases[r] if g else bases[r] for r, g in zip(rows, neg)) % R)
    got = plan.few_bucket_sums(first, S, np, M)
    assert [g % R for g in got] == want
    for k, m in zip(ks, counts):                       # first level: one launch per bucket, on its own bases
        s, total, seen = k.launches[0]
        assert s == S and seen == list(range(m)) and total == max(1, -(-m // S))
    merges = ks[0].launches[1:]
    assert all(len(k.launches) == 1 for k in ks[1:])
    inputs = sum(max(1, -(-m // S)) for m in counts)
    for s, total, seen in merges:
        assert s == M and seen == list(range(inputs))
        inputs = total
    assert inputs == len(counts)
    alone = [0 if m <= S else math.ceil(round(math.log(-(-m // S), M), 9)) for m in counts]
    assert len(merges) == max(alone)
    for m, g, (k, keys, _, _) in zip(counts, got, first):
        if m:
            assert plan.one_bucket_sum(ModelKernels(IntGroup(), k.bases, k.inf, [0] * n), keys, True, m, S, np, M)[0] \
                % R == g % R



# --- K6: the sort pass sized from free memory ---

@pytest.mark.parametrize("n,nw", [(1, 1), (1000, 13), (1 << 20, 13), (1 << 26, 13), (1 << 27, 12), (1 << 29, 11)])
def test_pass_entries(n, nw):
    """pass_entries: within the budget (or at the floor), below 2^31 keys, balanced (the fewest passes, the largest
    as small as can be), and the floor's passes when memory is short."""
    floor_per = max(1, min(plan.PASS_ENTRIES_FLOOR // n, nw))
    for budget in (0, 1 << 30, 10 << 30, 60 << 30, 100 << 30, 1 << 45):
        me = plan.pass_entries(n, nw, budget)
        per = me // n
        assert me % n == 0 and 1 <= per <= nw
        passes = plan.window_passes(n, nw, me)
        assert len(passes) == -(-nw // per) and max(b - a for a, b in passes) == per
        assert sum(b - a for a, b in passes) == nw
        assert per == -(-nw // len(passes))                                  # balanced
        assert per * n < 1 << 31 or per == 1
        fits = per * n * plan.PASS_BYTES_PER_ENTRY <= budget
        assert fits or per <= floor_per
        assert len(passes) <= len(plan.window_passes(n, nw, plan.PASS_ENTRIES_FLOOR))   # never more passes
    assert plan.pass_entries(1 << 26, 13, 100 << 30) == 13 << 26                      # 2^26 in one pass
    assert plan.pass_entries(1 << 27, 12, 93 << 30) == 6 << 27                        # 2^27: two of six
    assert plan.pass_entries(1 << 26, 13, 0) == 4 << 26                               # the floor's 4 windows
