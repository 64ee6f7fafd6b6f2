"""CPU models of the GPU key generation's index math and formulas (kernels/keygen/*.cu,
cuzk/gpu/keygen.py), checked against big ints, arkworks and the CPU setup."""
import random

import numpy as np
import pytest
from py_arkworks_bls12381 import G1Point, G2Point, Scalar

from cuzk import circuits, keygen
from cuzk import field as F
from cuzk.curve import limbs_to_ark
from cuzk.gpu import keygen as gk
from cuzk.poly import Domain

CLS = {1: G1Point, 2: G2Point}
EDGE = [0, 1, 2, 3, F.R - 1, F.R - 2, (F.R - 1) // 2, 1 << 254, (1 << 254) - 1, (1 << 128) + 7,
        int("55" * 31 + "05", 16) % F.R, int("aa" * 31 + "0a", 16) % F.R]


def scalars(k, seed=1):
    rng = random.Random(seed)
    return EDGE + [rng.randrange(F.R) for _ in range(k)]


@pytest.mark.parametrize("c", gk.WINDOWS)
def test_digits_reconstruct_the_scalar(c):
    H = 1 << (c - 1)
    for s in scalars(300, seed=c):
        digits = gk.signed_digits(s, c)
        assert len(digits) == gk.n_windows(c)
        assert sum((-d if neg else d) << (c * w) for w, (d, neg) in enumerate(digits)) == s
        for w, (d, neg) in enumerate(digits):
            assert 0 <= d <= H          # d = 0 may come with neg (2^c - 2^c, carry 1): skipped
            if d:
                assert 0 <= gk.table_index(c, w, d) < gk.n_windows(c) * H


@pytest.mark.parametrize("c", gk.WINDOWS)
def test_table_scalars_are_indexed_right(c):
    t = gk.table_scalars(c)
    H = 1 << (c - 1)
    assert len(t) == gk.n_windows(c) * H
    rng = random.Random(c)
    for _ in range(200):
        w, d = rng.randrange(gk.n_windows(c)), rng.randrange(1, H + 1)
        assert t[gk.table_index(c, w, d)] == d * pow(2, c * w, F.R) % F.R
    # the sum over the digits, with table scalars, is s mod r
    for s in scalars(50):
        acc = sum((-1 if neg else 1) * int(t[gk.table_index(c, w, d)])
                  for w, (d, neg) in enumerate(gk.signed_digits(s, c)) if d)
        assert acc % F.R == s


@pytest.mark.parametrize("group", [1, 2])
def test_host_table_and_emulated_fixed_base_match_arkworks(group):
    c = gk.HOST_C
    table = gk.host_table(group, c)
    H = 1 << (c - 1)
    assert table.shape == (gk.n_windows(c) * H, gk.WORDS[group]) and table.dtype == np.uint32
    G = CLS[group]()
    pts = limbs_to_ark(group, table, np.zeros(len(table), dtype=bool))
    rng = random.Random(group)
    for _ in range(10):
        w, d = rng.randrange(gk.n_windows(c)), rng.randrange(1, H + 1)
        assert pts[gk.table_index(c, w, d)] == G * Scalar(d * pow(2, c * w, F.R) % F.R)
    # the kernel's loop: sum of +-table[w][|d_w|] (no doublings)
    for s in scalars(6, seed=group):
        acc = CLS[group].identity()
        for w, (d, neg) in enumerate(gk.signed_digits(s, c)):
            if d:
                p = pts[gk.table_index(c, w, d)]
                acc = acc - p if neg else acc + p
        assert acc == G * Scalar(s)


def test_host_table_other_base():
    B = G1Point() * Scalar(12345)
    table = gk.host_table(1, 8, B.to_compressed_bytes())
    pts = limbs_to_ark(1, table[:3], np.zeros(3, dtype=bool))
    assert pts == [B, B * Scalar(2), B * Scalar(3)]
    with pytest.raises(ValueError):
        gk.host_table(1, 8, G1Point.identity().to_compressed_bytes())


def test_choose_window():
    assert gk.choose_window(1) == gk.HOST_C
    assert gk.choose_window(1 << 26) == 16
    for n in (1, 100, 1 << 16, 1 << 20, 1 << 24, 1 << 28):
        assert gk.choose_window(n) in gk.WINDOWS


def _warp_inverse_model(z):
    """kernels/keygen/fixed_base.cuh warp_batch_inverse over 32 lanes, shuffle for shuffle: a lane whose
    source is out of range keeps its own value (CUDA's __shfl_up/down_sync)."""
    P = F.P
    up = lambda x, d: [x[l - d] if l >= d else x[l] for l in range(32)]       # noqa: E731
    down = lambda x, d: [x[l + d] if l + d < 32 else x[l] for l in range(32)]  # noqa: E731
    pre, suf = list(z), list(z)
    d = 1
    while d < 32:
        t = up(pre, d)
        pre = [pre[l] * t[l] % P if l >= d else pre[l] for l in range(32)]
        d <<= 1
    d = 1
    while d < 32:
        t = down(suf, d)
        suf = [suf[l] * t[l] % P if l + d < 32 else suf[l] for l in range(32)]
        d <<= 1
    inv = pow(pre[31], P - 2, P)
    ep, es = up(pre, 1), down(suf, 1)
    ep[0], es[31] = 1, 1
    return [ep[l] * es[l] % P * inv % P for l in range(32)]


def test_warp_batch_inverse_model():
    rng = random.Random(3)
    for trial in range(5):
        z = [rng.randrange(1, F.P) for _ in range(32)]
        for l in rng.sample(range(32), trial * 3):
            z[l] = 1                                      # lanes without a finite point
        assert _warp_inverse_model(z) == [pow(v, -1, F.P) for v in z]


def test_limbsum_reduce_model():
    rng = random.Random(4)
    top = (1 << 64) - 1
    seg = [[top] * 8, [0] * 8, [1] + [0] * 7, [0] * 7 + [top], [(1 << 32) - 1] * 8]
    seg += [[rng.randrange(1 << rng.choice([8, 32, 40, 63, 64])) for _ in range(8)] for _ in range(300)]
    arr = np.array(seg, dtype=np.uint64).T.copy()       # [8, nv]
    got = F.limbs_to_ints(gk.limbsum_reduce_host(arr))
    for i, row in enumerate(seg):
        assert got[i] == sum(v << (32 * k) for k, v in enumerate(row)) % F.R


def _products_model(order, rows, coeffs, lag):
    a = F.limbs_to_ints(coeffs[order])
    b = F.limbs_to_ints(lag[rows[order]])
    return F.ints_to_limbs((a * b * F.FR_MONT_RINV) % F.R, F.FR_LIMBS).T.copy()


def _qap_model(r1cs, domain, tau):
    """cuzk/gpu/keygen.qap_at_tau with numpy in place of cupy and the kernels' models."""
    lag_plain = keygen.intt(F.fr_powers(tau, domain.n), domain.omega)
    lag = F.fr_to_limbs(lag_plain)
    out = []
    for m in (r1cs.A, r1cs.B, r1cs.C):
        coeffs = F.fr_to_limbs(F.limbs_to_ints(m.limbs()))
        out.append(F.fr_from_limbs(gk.column_values(np, _products_model, gk.limbsum_reduce_host, m.indptr,
                                                    m.cols, coeffs, lag, r1cs.num_vars)))
    ni, mc = r1cs.num_inputs, r1cs.num_constraints
    out[0][:ni] = (out[0][:ni] + lag_plain[mc:mc + ni]) % F.R
    return out


@pytest.mark.parametrize("circuit,log", [("porep_like", 6), ("porep_like", 8), ("mulchain", 6)])
@pytest.mark.parametrize("gen", [7, 5])
def test_column_values_model_matches_cpu_qap(circuit, log, gen):
    r1cs, _, _ = circuits.build(circuit, log)
    domain = Domain.for_size(r1cs.qap_rows, gen)
    tau = keygen.ToxicWaste.from_seed(3).tau
    want = keygen.qap_at_tau(r1cs, domain, tau)
    got = _qap_model(r1cs, domain, tau)
    for g, w in zip(got, want):
        assert list(g) == list(w)


def test_column_values_empty_and_skewed():
    from cuzk.r1cs import CSR
    nv = 5
    lag = F.fr_to_limbs([3, 5, 7, 11])
    empty = CSR(np.zeros(5, dtype=np.int64), np.zeros(0, dtype=np.int64), np.zeros(0, dtype=object))
    z = gk.column_values(np, _products_model, gk.limbsum_reduce_host, empty.indptr, empty.cols,
                         np.zeros((0, 8), np.uint32), lag, nv)
    assert z.shape == (nv, 8) and not z.any()
    # every row hits column 0 (the ONE column of a real circuit), column 2 twice in a row, 1 and 3..4 never
    indptr = np.array([0, 1, 3, 4, 6], dtype=np.int64)
    cols = np.array([0, 2, 0, 0, 0, 2], dtype=np.int64)
    coeffs = np.array([F.R - 1, 2, F.R - 1, F.R - 1, F.R - 2, 9], dtype=object)
    got = F.fr_from_limbs(gk.column_values(np, _products_model, gk.limbsum_reduce_host, indptr, cols,
                                           F.fr_to_limbs(coeffs), lag, nv))
    assert list(got) == [(-3 - 5 - 7 - 2 * 11) % F.R, 0, (2 * 5 + 9 * 11) % F.R, 0, 0]


def test_resolve_backend_without_gpu(monkeypatch):
    import cuzk.backend as B
    monkeypatch.setattr(B, "gpu_status", lambda: (False, "no GPU here"))
    assert keygen.resolve_backend("auto", 1 << 20) == "cpu"
    assert keygen.resolve_backend("cpu", 1 << 20) == "cpu"
    with pytest.raises(B.BackendError):
        keygen.resolve_backend("cuda")
    with pytest.raises(B.BackendError):
        keygen.resolve_backend("gpu")
    monkeypatch.setattr(B, "gpu_status", lambda: (True, "fake"))
    assert keygen.resolve_backend("auto", keygen.AUTO_GPU_MIN) == "cuda"
    assert keygen.resolve_backend("auto", keygen.AUTO_GPU_MIN // 2) == "cpu"
