"""Key generation on the GPU: the scalars of cuzk/keygen.py's setup(), then fixed-base scalar
multiplication (kernels/keygen/fixed_base.cuh) into the key's AffineBases. Bit for bit the CPU setup's key.
setup_device leaves the points on the GPU instead (keys too large to download: 2^27).

Scalars (kernels/keygen/fr.cu, ntt.py):
  lag     = iNTT([tau^i]) over the domain (Lagrange values at tau), powers by scale_powers;
  u, v, w = transposed sparse products: entries sorted by column (cupy.argsort), products
            coeff * lag[row] written limb-transposed, per-limb uint64 prefix sums, one
            difference per column, and a reduction of the eight limb sums into Fr;
            then u[:ni] += lag[m:m + ni] (bellman's input rows);
  ic, l   = (beta u + alpha v + w) / gamma or / delta;  h as its QAP convention defines it (qap.py, h_query).
Points: out[i] = s_i * G from a table of d * 2^(c w) * G (c-bit signed windows): the c = 8 table
is made on the host with arkworks additions; wider windows (for large keys) are made from it on
the device by the same kernel. The index math is modelled on the CPU in tests/gpu/test_keygen_model.py.
"""
from __future__ import annotations

import time
from functools import lru_cache

import numpy as np
from py_arkworks_bls12381 import G1Point, G2Point, Scalar

from ..curve import G1_WORDS, G2_WORDS, AffineBases, ark_to_limbs
from ..field import FR_LIMBS, FR_MONT_R, R, fr_to_limbs, ints_to_limbs
from ..key_points import single_points
from ..keys import ProvingKey
from ..poly import Domain
from ..qap import COEFF, ODD_LAGRANGE, QAP
from ..timing import peak_rss_bytes
from . import ntt
from .loader import kernel
from .per_device import device_cache
from .spmv import TableCoeffs, device_coeffs, table_coeffs
from .srs import DeviceBases, DeviceKey

HOST_C = 8                    # window of the table built on the host
WINDOWS = (8, 10, 12, 14, 16)
THREADS = 128                 # fixed-base kernels (__launch_bounds__(128))
FR_THREADS = 256
BLOCKS_PER_SM = 8             # grid cap of the grid-stride fixed-base loop (sets the G2 scratch)
WORDS = {1: G1_WORDS, 2: G2_WORDS}

last_timings: dict[str, float] = {}       # the last setup's steps: seconds
last_memory: dict[str, dict] = {}          # and device pool bytes / host peak RSS after each


# --- window decomposition (the kernel's window_digit, and its CPU model) ---

def n_windows(c: int) -> int:
    """ceil(256 / c): the top window's raw value is then < 2^(c-1), so no carry is left."""
    return -(-256 // c)


def signed_digits(s: int, c: int) -> list[tuple[int, bool]]:
    """(|d_w|, negative) per window, exactly as kernels/keygen/fixed_base.cuh window_digit computes them."""
    limbs = [(s >> (32 * k)) & 0xFFFFFFFF for k in range(FR_LIMBS)]
    sel = lambda i: limbs[i] if 0 <= i < FR_LIMBS else 0  # noqa: E731
    half, mask = 1 << (c - 1), (1 << c) - 1
    out, carry = [], 0
    for w in range(n_windows(c)):
        pos = w * c
        limb, off = pos >> 5, pos & 31
        bits = sel(limb) >> off
        if off:
            bits |= (sel(limb + 1) << (32 - off)) & 0xFFFFFFFF
        bits &= mask
        d = bits + carry
        if d > half:
            out.append(((1 << c) - d, True))
            carry = 1
        else:
            out.append((d, False))
            carry = 0
    if carry:
        raise AssertionError("carry out of the top window")
    return out


def table_index(c: int, w: int, d: int) -> int:
    """Row of d * 2^(c w) * G in the table (d = 1 .. 2^(c-1))."""
    return w * (1 << (c - 1)) + d - 1


def table_scalars(c: int) -> np.ndarray:
    """The table's scalars d * 2^(c w) mod r in row order."""
    H = 1 << (c - 1)
    d = np.arange(1, H + 1, dtype=object)
    return np.concatenate([(d * pow(2, c * w, R)) % R for w in range(n_windows(c))])


def choose_window(total: int) -> int:
    """Window for `total` points of one group: nw additions per point, plus the table when it is
    wider than the host's (nw * 2^(c-1) points at n_windows(HOST_C) additions each)."""
    def cost(c):
        table = 0 if c == HOST_C else n_windows(c) * (1 << (c - 1)) * n_windows(HOST_C)
        return n_windows(c) * total + table
    return min(WINDOWS, key=cost)


@lru_cache(maxsize=8)
def host_table(group: int, c: int = HOST_C, base: bytes | None = None) -> np.ndarray:
    """uint32[nw * 2^(c-1), words]: d * 2^(c w) * B by arkworks additions. base: B's compressed
    bytes (None: the standard generator)."""
    cls = G1Point if group == 1 else G2Point
    B = cls() if base is None else cls.from_compressed_bytes(base)
    if B == cls.identity():
        raise ValueError("fixed-base multiplication needs a base other than infinity")
    pts = []
    for w in range(n_windows(c)):
        P = B * Scalar(pow(2, c * w, R))
        acc = P
        pts.append(acc)
        for _ in range(2, (1 << (c - 1)) + 1):
            acc = acc + P
            pts.append(acc)
    limbs, inf = ark_to_limbs(group, pts)
    if inf.any():
        raise ArithmeticError("fixed-base table holds the point at infinity")
    return limbs


# --- device ---

def _blocks(n: int, threads: int) -> int:
    return max(1, (n + threads - 1) // threads)


@device_cache(maxsize=1)
def _sm_count() -> int:
    import cupy
    return int(cupy.cuda.Device().attributes["MultiProcessorCount"])


def _fixed_base_raw(group: int, table, c: int, scalars):
    """Device (limbs uint32[n, words], inf bool[n]) for Montgomery scalars uint32[n, 8]."""
    import cupy
    n = int(scalars.shape[0]) if scalars.ndim == 2 else scalars.size // FR_LIMBS
    out = cupy.empty((n, WORDS[group]), dtype=cupy.uint32)
    inf = cupy.empty(n, dtype=cupy.bool_)
    if n == 0:
        return out, inf
    if scalars.dtype != cupy.uint32 or not scalars.flags.c_contiguous or scalars.size != n * FR_LIMBS:
        raise ValueError("scalars must be a contiguous uint32 array [n, 8]")
    blocks = min(_blocks(n, THREADS), _sm_count() * BLOCKS_PER_SM)
    if group == 2:
        scratch = cupy.empty(blocks * THREADS * 2 * WORDS[2], dtype=cupy.uint32)   # one XYZZ per thread
    else:
        scratch = cupy.empty(1, dtype=cupy.uint32)
    f = kernel(f"keygen/g{group}", f"kg_fixed_base_g{group}")
    f((blocks,), (THREADS,), (out, inf, scalars, np.int64(n), table, np.int32(c), np.int32(n_windows(c)), scratch))
    return out, inf


class FixedBase:
    """s -> s * B for one group and base, with its device table (window c)."""

    def __init__(self, group: int, c: int = HOST_C, base: bytes | None = None):
        import cupy
        if c not in WINDOWS:
            raise ValueError(f"window {c} not in {WINDOWS}")
        self.group, self.c, self.base = group, c, base
        host = cupy.asarray(host_table(group, HOST_C, base))
        if c == HOST_C:
            self.table = host
        else:
            sc = cupy.asarray(fr_to_limbs(table_scalars(c)))
            self.table, inf = _fixed_base_raw(group, host, HOST_C, sc)
            if bool(inf.any()):
                raise ArithmeticError("fixed-base table holds the point at infinity")

    @classmethod
    def for_count(cls, group: int, total: int, base: bytes | None = None) -> "FixedBase":
        return cls(group, choose_window(total), base)

    def __call__(self, scalars):
        return _fixed_base_raw(self.group, self.table, self.c, scalars)

    def bases(self, scalars) -> AffineBases:
        """Host AffineBases (the key's layout) for device scalars."""
        import cupy
        limbs, inf = self(scalars)
        return AffineBases(self.group, cupy.asnumpy(limbs), cupy.asnumpy(inf))


# --- scalars ---

def column_values(xp, products, reduce, indptr, cols, coeffs, lag, nv: int):
    """out[j] = sum_k M[k, j] * lag[k] (Montgomery uint32[nv, 8]) for a CSR matrix on `xp`
    (cupy on the device; numpy with model kernels in the tests).
    products(order, rows, coeffs, lag) -> uint32[8, nnz]: limbs of coeffs[e] * lag[rows[e]], e = order[k];
    reduce(seg uint64[8, nv]) -> uint32[nv, 8]: the limb sums folded into Fr."""
    nnz = int(cols.shape[0])
    if nnz == 0:
        return xp.zeros((nv, FR_LIMBS), dtype=xp.uint32)
    if nnz >= 1 << 31:
        raise ValueError("a matrix with 2^31 or more entries (the per-limb sums could overflow)")
    order = xp.argsort(cols).astype(xp.int64, copy=False)      # any order within a column
    ptr = xp.searchsorted(cols[order], xp.arange(nv + 1, dtype=xp.int64), side="left")
    rows = xp.searchsorted(indptr[1:], xp.arange(nnz, dtype=xp.int64), side="right").astype(xp.int64, copy=False)
    prod = products(order, rows, coeffs, lag)
    del order, rows
    seg = xp.empty((FR_LIMBS, nv), dtype=xp.uint64)
    cs = xp.zeros(nnz + 1, dtype=xp.uint64)
    for limb in range(FR_LIMBS):
        cs[1:] = xp.cumsum(prod[limb].astype(xp.uint64))
        seg[limb] = cs[ptr[1:]] - cs[ptr[:-1]]
    return reduce(seg)


def limbsum_reduce_host(seg: np.ndarray) -> np.ndarray:
    """CPU model of kg_limbsum_reduce, word for word: uint64[8, nv] limb sums -> Montgomery limbs."""
    m32 = 0xFFFFFFFF
    out = np.empty(seg.shape[1], dtype=object)
    for i in range(seg.shape[1]):
        acc = hi_prev = 0
        w = []
        for limb in range(FR_LIMBS):
            x = int(seg[limb, i])
            acc += (x & m32) + hi_prev
            assert acc < 3 << 32
            w.append(acc & m32)
            acc >>= 32
            hi_prev = x >> 32
        acc += hi_prev
        assert acc < 1 << 34                                   # hi = w_8 | w_9 << 32
        lo = sum(v << (32 * k) for k, v in enumerate(w))
        for _ in range(2):                                     # reduce_once, twice: 2^256 < 3r
            lo = lo - R if lo >= R else lo
        assert lo < R
        hi_term = (acc * FR_MONT_R) % R                        # mont(hi * R^2) = hi * 2^256 mod r
        t = lo + hi_term
        out[i] = t - R if t >= R else t                        # operator+: one conditional subtraction
    return ints_to_limbs(out, FR_LIMBS)


def _launch(name: str, n: int, *args) -> None:
    if n:
        kernel("keygen/fr", name)((_blocks(n, FR_THREADS),), (FR_THREADS,), (*args, np.int64(n)))


def _dev_products(order, rows, coeffs, lag):
    import cupy
    nnz = int(order.shape[0])
    prod = cupy.empty((FR_LIMBS, nnz), dtype=cupy.uint32)
    if isinstance(coeffs, TableCoeffs):
        _launch("kg_products_table", nnz, prod, order, rows, coeffs.index, coeffs.table, lag)
    else:
        _launch("kg_products", nnz, prod, order, rows, coeffs, lag)
    return prod


def _dev_reduce(seg):
    import cupy
    nv = int(seg.shape[1])
    out = cupy.empty((nv, FR_LIMBS), dtype=cupy.uint32)
    _launch("kg_limbsum_reduce", nv, out, seg)
    return out


def _const(values):
    """Host Fr ints -> device Montgomery limbs (a handful of constants)."""
    import cupy
    return cupy.asarray(fr_to_limbs(np.array(values, dtype=object)))


def ones(n: int):
    import cupy
    one = cupy.asarray(ints_to_limbs([FR_MONT_R % R], FR_LIMBS))
    return cupy.ascontiguousarray(cupy.broadcast_to(one, (n, FR_LIMBS)))


def powers(x: int, log_n: int, scale: int = 1):
    """[scale * x^i for i < 2^log_n], device Montgomery."""
    return ntt.scale_powers(ones(1 << log_n), log_n, x % R, scale % R)


def lagrange_at(tau: int, log_n: int, generator: int):
    """L_i(tau) over the 2^log_n domain: iNTT of the powers of tau."""
    return ntt.intt(powers(tau, log_n), log_n, generator)


def qap_at_tau(r1cs, domain: Domain, tau: int):
    """Device u, v, w (uint32[nv, 8], Montgomery): keygen.qap_at_tau on the GPU."""
    import cupy
    lag = lagrange_at(tau, domain.log_n, domain.generator)
    nv, m, ni = r1cs.num_vars, r1cs.num_constraints, r1cs.num_inputs
    out = []
    for mat in (r1cs.A, r1cs.B, r1cs.C):
        if mat.compact:
            coeffs = table_coeffs(mat)
        else:
            coeffs = device_coeffs(mat)
        out.append(column_values(cupy, _dev_products, _dev_reduce, cupy.asarray(mat.indptr.astype(np.int64)),
                                 cupy.asarray(mat.cols.astype(np.int64)), coeffs, lag, nv))
        del coeffs
    u = out[0]
    if ni:
        kernel("ff/ops", "fr_add")((_blocks(ni, FR_THREADS),), (FR_THREADS,),
                                      (u[:ni], u[:ni], cupy.ascontiguousarray(lag[m:m + ni]), np.int64(ni)))
    return tuple(out)


def _coeff_h(domain: Domain, tau: int, factor: int):
    return powers(tau, domain.log_n, domain.vanishing_at(tau) * factor)[: domain.n - 1]


def _odd_lagrange_h(domain: Domain, tau: int, factor: int):
    import cupy
    lag2 = ntt.intt(powers(tau, domain.log_n + 1), domain.log_n + 1, domain.generator)
    h = cupy.ascontiguousarray(lag2[1::2])
    del lag2
    _launch("kg_scale", domain.n, h, h, _const([factor]))
    return h


_H_QUERY = {COEFF: _coeff_h, ODD_LAGRANGE: _odd_lagrange_h}


def h_scalars(domain: Domain, q: QAP, tau: int, factor: int = 1):
    """q.h_query(domain, tau) * factor on the device."""
    return _H_QUERY[q](domain, tau, factor)


class _Steps:
    """Per-step wall time (synchronized), device pool bytes and host peak RSS, into last_timings
    and last_memory."""

    def __init__(self, progress=None):
        import cupy
        self.progress = progress            # progress(step, seconds) as each step ends (cuzk/progress.py)
        self.sync = cupy.cuda.get_current_stream().synchronize
        self.pool = cupy.get_default_memory_pool()
        self.times: dict[str, float] = {}
        self.memory: dict[str, dict] = {}
        self.t0 = time.perf_counter()

    def mark(self, name: str) -> None:
        self.sync()
        t = time.perf_counter()
        self.times[name] = t - self.t0
        self.memory[name] = {"device_bytes": int(self.pool.total_bytes()), "peak_host_bytes": peak_rss_bytes()}
        if self.progress is not None:
            self.progress(name, t - self.t0)
        self.t0 = t

    def publish(self) -> None:
        last_timings.clear()
        last_timings.update(self.times)
        last_memory.clear()
        last_memory.update(self.memory)


def _scalars(r1cs, q: QAP, domain: Domain, toxic):
    """Device (ic, u, v, lq, h): the key's scalars (v also for B's G1 and G2 points)."""
    import cupy
    tau, alpha, beta, gamma, delta = toxic.tau, toxic.alpha, toxic.beta, toxic.gamma, toxic.delta
    gi, di = pow(gamma, -1, R), pow(delta, -1, R)
    ni, nv = r1cs.num_inputs, r1cs.num_vars
    u, v, w = qap_at_tau(r1cs, domain, tau)
    k = cupy.empty_like(u)
    _launch("kg_combine", nv, k, u, v, w, _const([beta, alpha]))
    del w
    ic, lq = k[:ni], k[ni:]
    _launch("kg_scale", ni, ic, ic, _const([gi]))
    _launch("kg_scale", nv - ni, lq, lq, _const([di]))
    return ic, u, v, lq, h_scalars(domain, q, tau, di)


def setup(r1cs, q: QAP, domain: Domain, toxic, progress=None):
    """The proving key of keygen.make_key(r1cs, q, domain, toxic), made on the GPU (`domain`: the key's,
    Domain.for_size(r1cs.qap_rows, generator))."""
    st = _Steps(progress)
    ni, nv = r1cs.num_inputs, r1cs.num_vars
    digest = bytes.fromhex(r1cs.digest())
    st.mark("digest")
    ic, u, v, lq, h = _scalars(r1cs, q, domain, toxic)
    st.mark("scalars")
    pts = single_points(toxic.alpha, toxic.beta, toxic.gamma, toxic.delta)
    st.mark("single points")
    g1 = FixedBase.for_count(1, len(ic) + 2 * nv + len(lq) + len(h))
    for name, sc in (("ic", ic), ("a", u), ("b_g1", v), ("l", lq), ("h", h)):
        pts[name] = g1.bases(sc)
    c1 = g1.c
    del g1, ic, lq, h, u
    st.mark(f"G1 points (window {c1})")
    g2 = FixedBase.for_count(2, nv)
    pts["b_g2"] = g2.bases(v)
    c2 = g2.c
    del g2, v
    st.mark(f"G2 points (window {c2})")
    pk = ProvingKey(q.name, domain.generator, domain.log_n, ni, r1cs.num_aux, r1cs.num_constraints, digest,
                    {name: pts[name] for name in ("alpha_g1", "beta_g1", "beta_g2", "gamma_g2", "delta_g1",
                                                  "delta_g2", "ic", "a", "b_g1", "b_g2", "l", "h")})
    pk.check_shapes()
    st.publish()
    return pk


def b_density(r1cs):
    """Device bool[num_vars]: the variables in some B combination (the others' B points are
    infinity, so a device key keeps B's points for these only)."""
    import cupy
    dense = cupy.zeros(r1cs.num_vars, dtype=cupy.bool_)
    if r1cs.B.nnz:
        dense[cupy.asarray(r1cs.B.cols)] = True
    return dense


def setup_device(r1cs, q: QAP, domain: Domain, toxic, progress=None):
    """keygen.make_key's key made and left on the GPU, for circuits whose key is too large to download
    and save (a 2^27 partition: ~48 GB of points): (host ProvingKey holding only the single points
    and ic, enough for the verifying key and the proof assembly; srs.DeviceKey with a, b_g1, b_g2,
    l, h, where B keeps only the variables of b_density). No circuit digest (the key is never
    saved: its digest field is zeros)."""
    import cupy
    st = _Steps(progress)
    ni, nv = r1cs.num_inputs, r1cs.num_vars
    ic, u, v, lq, h = _scalars(r1cs, q, domain, toxic)
    dense = b_density(r1cs)
    rows = cupy.cumsum(dense, dtype=cupy.int64) - 1
    rows = cupy.where(dense, rows, -1).astype(cupy.int32)
    vb = cupy.ascontiguousarray(v[dense])
    del v
    st.mark("scalars")
    pts = single_points(toxic.alpha, toxic.beta, toxic.gamma, toxic.delta)
    st.mark("single points")
    g1 = FixedBase.for_count(1, len(ic) + nv + len(vb) + len(lq) + len(h))
    pts["ic"] = g1.bases(ic)
    sections = {}
    for name, sc in (("l", lq), ("a", u), ("b_g1", vb), ("h", h)):
        limbs, inf = g1(sc)
        sections[name] = DeviceBases(1, limbs, inf, rows if name == "b_g1" else None)
    c1 = g1.c
    del g1, ic, lq, u, h
    st.mark(f"G1 points (window {c1})")
    g2 = FixedBase.for_count(2, len(vb))
    limbs, inf = g2(vb)
    sections["b_g2"] = DeviceBases(2, limbs, inf, rows)
    c2 = g2.c
    del g2, vb
    st.mark(f"G2 points (window {c2})")
    pk = ProvingKey(q.name, domain.generator, domain.log_n, ni, r1cs.num_aux, r1cs.num_constraints, bytes(32),
                    {name: pts[name] for name in ("alpha_g1", "beta_g1", "beta_g2", "gamma_g2", "delta_g1",
                                                  "delta_g2", "ic")})
    if len(pk.points["ic"]) != ni:
        raise AssertionError("ic has the wrong length")
    dev = DeviceKey.resident(sections)
    st.publish()
    return pk, dev
