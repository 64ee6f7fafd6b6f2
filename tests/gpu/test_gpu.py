"""GPU kernels against the CPU reference, on fresh random inputs with poisoned outputs.
Run on the device machine: `pytest -m gpu`. Skipped where there is no GPU."""
import random

import numpy as np
import pytest

from cuzk import field as F
from cuzk import poly
from cuzk.opts import REGISTRY, resolve
from cuzk import qap as cpu_h
from cuzk.backend.cpu.synthesis import assign
from cuzk.synthesis import synthesize
from cuzk.poly import Domain

pytestmark = pytest.mark.gpu

SIZES = [1, 31, 1000, 4097]            # not multiples of the block size


@pytest.fixture(scope="module")
def cp():
    import cupy
    return cupy


def rnd(mod, n, seed):
    rng = random.Random(seed)
    return np.array([rng.randrange(mod) for _ in range(n)], dtype=object)


def launch(cp, name, out, *args):
    from cuzk.gpu.loader import kernel
    n = out.shape[0]
    kernel("ff/ops", name)(((n + 255) // 256,), (256,), (out, *args, np.int64(n)))


FIELDS = {
    "fp": (F.P, F.fp_to_limbs, F.fp_from_limbs, 12),
    "fr": (F.R, F.fr_to_limbs, F.fr_from_limbs, 8),
}
OPS = {
    "mul": lambda x, y, m: x * y % m, "add": lambda x, y, m: (x + y) % m,
    "sub": lambda x, y, m: (x - y) % m,
}
UNARY = {
    "sqr": lambda x, m: x * x % m, "neg": lambda x, m: (-x) % m,
    "inv": lambda x, m: pow(int(x), -1, m) if x else 0,
    "inv_binary": lambda x, m: pow(int(x), -1, m) if x else 0,    # K15's inverse (kernels/ff/inverse.cuh)
}


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("op", sorted(OPS))
@pytest.mark.parametrize("fld", sorted(FIELDS))
def test_field_binary(cp, fld, op, n):
    mod, to, frm, w = FIELDS[fld]
    x, y = rnd(mod, n, n), rnd(mod, n, n + 1)
    x[0], y[-1] = 0, mod - 1                         # edge values
    out = cp.full((n, w), 0xFFFFFFFF, dtype=cp.uint32)
    launch(cp, f"{fld}_{op}", out, cp.asarray(to(x)), cp.asarray(to(y)))
    got = frm(cp.asnumpy(out))
    want = np.array([OPS[op](int(a), int(b), mod) for a, b in zip(x, y)], dtype=object)
    assert (got == want).all()


@pytest.mark.parametrize("op", sorted(UNARY))
@pytest.mark.parametrize("fld", sorted(FIELDS))
def test_field_unary(cp, fld, op):
    mod, to, frm, w = FIELDS[fld]
    n = 300 if op.startswith("inv") else 4097
    x = rnd(mod, n, 7)
    x[0], x[1] = 0, 1
    out = cp.full((n, w), 0xFFFFFFFF, dtype=cp.uint32)
    launch(cp, f"{fld}_{op}", out, cp.asarray(to(x)))
    assert (frm(cp.asnumpy(out)) == np.array([UNARY[op](int(a), mod) for a in x], dtype=object)).all()


@pytest.mark.parametrize("fld", sorted(FIELDS))
def test_inverse_binary_of_unreduced_inputs(cp, fld):
    """K15's inverse takes what a lazy product leaves: Montgomery words in [p, 2p) (and p itself: 0), and
    small or sparse values (a zero low word: the 31-bit halving step)."""
    mod, to, frm, w = FIELDS[fld]
    n = 257
    x = rnd(mod, n, 19)
    r = pow(2, 32 * w, mod)
    words = [(int(v) * r % mod) + mod for v in x]                 # a R + p: below 2^(32 w) for both fields
    words[:4] = [mod, 1, 1 << (32 * w - 8), 1 << 64]
    out = cp.full((n, w), 0xFFFFFFFF, dtype=cp.uint32)
    launch(cp, f"{fld}_inv_binary", out, cp.asarray(F.ints_to_limbs(words, w)))
    got = frm(cp.asnumpy(out), mont=False)
    want = [pow(v, -1, mod) * r * r % mod if v % mod else 0 for v in words]
    assert list(got) == want


@pytest.mark.parametrize("fld", sorted(FIELDS))
def test_montgomery_conversion(cp, fld):
    mod, to, frm, w = FIELDS[fld]
    x = rnd(mod, 999, 3)
    out = cp.full((999, w), 0xFFFFFFFF, dtype=cp.uint32)
    launch(cp, f"{fld}_to_mont", out, cp.asarray(to(x, mont=False)))
    assert (frm(cp.asnumpy(out)) == x).all()
    launch(cp, f"{fld}_from_mont", out, cp.asarray(to(x)))
    assert (frm(cp.asnumpy(out), mont=False) == x).all()


def _fp2(v):
    return v[0::2], v[1::2]


@pytest.mark.parametrize("op", ["mul", "add", "sub", "sqr", "inv", "inv_binary"])
def test_fp2(cp, op):
    n = 257 if not op.startswith("inv") else 64
    xs, ys = rnd(F.P, 2 * n, 11), rnd(F.P, 2 * n, 12)
    out = cp.full((n, 24), 0xFFFFFFFF, dtype=cp.uint32)
    a = cp.asarray(F.fp_to_limbs(xs).reshape(n, 24))
    b = cp.asarray(F.fp_to_limbs(ys).reshape(n, 24))
    launch(cp, f"fp2_{op}", out, a, b) if op in ("mul", "add", "sub") else launch(cp, f"fp2_{op}", out, a)
    got = F.fp_from_limbs(cp.asnumpy(out).reshape(2 * n, 12))
    p = F.P
    for i in range(n):
        x0, x1, y0, y1 = int(xs[2 * i]), int(xs[2 * i + 1]), int(ys[2 * i]), int(ys[2 * i + 1])
        if op == "mul":
            want = ((x0 * y0 - x1 * y1) % p, (x0 * y1 + x1 * y0) % p)
        elif op == "add":
            want = ((x0 + y0) % p, (x1 + y1) % p)
        elif op == "sub":
            want = ((x0 - y0) % p, (x1 - y1) % p)
        elif op == "sqr":
            want = ((x0 * x0 - x1 * x1) % p, (2 * x0 * x1) % p)
        else:
            d = pow(x0 * x0 + x1 * x1, -1, p)
            want = (x0 * d % p, (-x1 * d) % p)
        assert (got[2 * i], got[2 * i + 1]) == want, i


# --- NTT ---

NTT_SIZES = [1, 2, 3, 5, 9, 10, 11, 13, 16]


@pytest.mark.parametrize("gen", [7, 5])
@pytest.mark.parametrize("log_n", NTT_SIZES)
def test_ntt_forward_inverse_coset(cp, log_n, gen):
    from cuzk.gpu import fr as gfr
    from cuzk.gpu import ntt as G
    d = Domain(log_n, gen)
    a = rnd(F.R, d.n, log_n * 10 + gen)
    x = gfr.upload(a)
    assert (gfr.download(G.ntt(x, log_n, gen)) == poly.ntt(a, d.omega)).all()
    assert (gfr.download(G.intt(x, log_n, gen)) == poly.intt(a, d.omega)).all()
    g = d.coset_shift
    assert (gfr.download(G.coset_ntt(x, log_n, g, gen)) == poly.coset_ntt(a, d.omega, g)).all()
    assert (gfr.download(G.coset_intt(x, log_n, g, gen)) == poly.coset_intt(a, d.omega, g)).all()


@pytest.mark.parametrize("batch", [1, 3, 5])
def test_ntt_batch_dif_dit_roundtrip(cp, batch):
    from cuzk.gpu import fr as gfr
    from cuzk.gpu import ntt as G
    log_n, gen = 12, 5
    d = Domain(log_n, gen)
    vs = [rnd(F.R, d.n, 100 + i) for i in range(batch)]
    x = gfr.upload(np.concatenate(vs)).reshape(batch, d.n, 8)
    G.dif(x, log_n, gen)
    ref = [poly.ntt(v, d.omega)[poly.bitrev_perm(d.n)] for v in vs]
    assert (gfr.download(x) == np.concatenate(ref)).all()
    G.dit(x, log_n, gen, inverse=True)                       # back, times n
    n_ = d.n
    assert (gfr.download(x) == np.concatenate([(v * n_) % F.R for v in vs])).all()


def test_ntt_large_against_naive_points(cp):
    """2^20: the GPU result at a few random points against direct evaluation."""
    from cuzk.gpu import fr as gfr
    from cuzk.gpu import ntt as G
    log_n = 20
    d = Domain(log_n, 7)
    rng = np.random.default_rng(5)
    limbs = rng.integers(0, 2**32, size=(d.n, 8), dtype=np.uint64).astype(np.uint32)
    limbs[:, 7] &= 0x0FFFFFFF                                # below r
    x = cp.asarray(limbs)
    coeffs = F.limbs_to_ints(limbs)
    gfr.to_mont(x)
    y = gfr.download(G.ntt(x, log_n, 7)[[0, 1, 12345, d.n - 1]])
    for got, i in zip(y, [0, 1, 12345, d.n - 1]):
        pt = pow(d.omega, i, F.R)
        acc = 0
        for c in reversed(coeffs.tolist()):
            acc = (acc * pt + c) % F.R
        assert got == acc


# --- a/b/c evaluation and H ---

@pytest.mark.parametrize("circuit", ["porep_like", "mulchain"])
def test_spmv_matches_cpu(cp, circuit):
    from cuzk.backend.cuda import CudaBackend
    from cuzk.gpu import fr as gfr
    r1cs, inputs, aux = __import__("cuzk.circuits", fromlist=["build"]).build(circuit, 11, seed=3)
    d = Domain.for_size(r1cs.qap_rows)
    host = assign(r1cs, inputs, aux, d)
    dev = CudaBackend(resolve()).assign(r1cs, inputs, aux, d)
    got = gfr.download(dev.abc_dev).reshape(3, d.n)
    assert (got[0] == host.a).all() and (got[1] == host.b).all() and (got[2] == host.c).all()


def test_spmv_unsatisfied_names_constraint(cp):
    from cuzk import circuits
    from cuzk.backend.cuda import CudaBackend
    from cuzk.r1cs import UnsatisfiedError
    r1cs, inputs, aux = circuits.build("porep_like", 10, seed=3)
    aux = aux.copy()
    aux[5] = (aux[5] + 1) % F.R
    d = Domain.for_size(r1cs.qap_rows)
    with pytest.raises(UnsatisfiedError) as gpu_err:
        CudaBackend(resolve()).assign(r1cs, inputs, aux, d)
    with pytest.raises(UnsatisfiedError) as cpu_err:
        assign(r1cs, inputs, aux, d)
    assert str(gpu_err.value).split(" fails")[0] == str(cpu_err.value).split(" fails")[0]


@pytest.mark.parametrize("skip_c", [False, True])
@pytest.mark.parametrize("pointwise_b6", [False, True])
@pytest.mark.parametrize("fused_tail", [False, True])
@pytest.mark.parametrize("gen", [7, 5])
@pytest.mark.parametrize("convention", ["coeff", "odd_lagrange"])
def test_h_matches_cpu(cp, convention, gen, fused_tail, pointwise_b6, skip_c):
    """The H scalars against the CPU reference, with the last scale and bit reversal apart or fused (F1), the
    pointwise passes on Fr build 1 or 6 (N3), with or without C's coset NTT (H2; coeff only)."""
    from cuzk.backend.cuda import CudaBackend
    from cuzk.gpu import fr as gfr
    from cuzk.gpu.h import h_scalars
    r1cs, asgs = synthesize("porep_like", 10, resolve(), domain=Domain(10, gen), seeds=(4,))
    d = Domain(10, gen)
    want = cpu_h.qap(convention).h_scalars(asgs[0].a, asgs[0].b, asgs[0].c, d)
    dev = CudaBackend(resolve()).assign(r1cs, asgs[0].inputs, asgs[0].aux, d)
    got = gfr.download(h_scalars(dev.abc_dev.copy(), d, convention, fused_tail=fused_tail, pointwise_b6=pointwise_b6,
                                 skip_c=skip_c))
    assert len(got) == len(want) and (got == want).all()


@pytest.mark.parametrize("fused_tail", [False, True])
@pytest.mark.parametrize("log_n", [4, 11])
def test_h2_same_h_on_random_abc(cp, log_n, fused_tail):
    """H2 gives the seven-NTT path's h word for word on fresh random a, b, c that satisfy no QAP (the degree
    check off), and raises the same degree error on them with the check on."""
    from cuzk import micro_ops as micro
    from cuzk.gpu.h import h_scalars
    d = Domain(log_n, 7)
    abc = micro.random_fr(d.n, batch=3, seed=log_n + 70).reshape(3, d.n, 8)
    want = h_scalars(abc.copy(), d, "coeff", check=False, fused_tail=fused_tail)
    got = h_scalars(abc.copy(), d, "coeff", check=False, fused_tail=fused_tail, skip_c=True)
    assert cp.array_equal(got, want)
    with pytest.raises(ArithmeticError, match="degree n - 1"):
        h_scalars(abc.copy(), d, "coeff", fused_tail=fused_tail, skip_c=True)


@pytest.mark.parametrize("build", [(), ("CUZK_FASTMUL_VARIANT_FR=6",)])
@pytest.mark.parametrize("log_n", [1, 5, 12])
def test_pointwise_kernels_match_ints(cp, log_n, build):
    """ntt/ntt.cu's pointwise kernels, on Fr build 1 and on N3's build 6, against Python ints over a batch of 3
    random vectors: the scale by scale * base^j (natural and bit-reversed j), F1's out-of-place form, the
    (ab - c) f combine, and H2's kernels (the ab f combine, F1's pass less k * sub, x - k y)."""
    from cuzk.field import R
    from cuzk.gpu import fr as gfr
    from cuzk import micro_ops as micro
    from cuzk.gpu import ntt
    from cuzk.gpu.loader import kernel
    n = 1 << log_n
    x = micro.random_fr(n, batch=3, seed=log_n + 40).reshape(3, n, 8)
    xs = [int(v) for v in gfr.download(x)]
    base, scale = 0x1234567 + log_n, 987654321
    rev = [int(format(j, f"0{log_n}b")[::-1], 2) for j in range(n)]
    for bitrev in (False, True):
        got = [int(v) for v in gfr.download(ntt.scale_powers(x.copy(), log_n, base, scale, bitrev, build=build))]
        e = rev if bitrev else list(range(n))
        assert got == [xs[b * n + j] * scale * pow(base, e[j], R) % R for b in range(3) for j in range(n)]
    got = [int(v) for v in gfr.download(ntt.scale_bit_reverse(x, log_n, base, scale, build=build))]
    assert got == [xs[b * n + rev[j]] * scale * pow(base, j, R) % R for b in range(3) for j in range(n)]
    f = 0xABCDEF12345 + log_n
    q = cp.full((n, 8), 0xFFFFFFFF, dtype=cp.uint32)                      # poisoned
    kernel("ntt/ntt", "abc_combine", build)(((n + 255) // 256,), (256,), (q, x, gfr.upload([f]), np.int64(n)))
    got = [int(v) for v in gfr.download(q)]
    assert got == [(xs[j] * xs[n + j] - xs[2 * n + j]) * f % R for j in range(n)]
    q = cp.full((n, 8), 0xFFFFFFFF, dtype=cp.uint32)                      # H2's combine
    kernel("ntt/ntt", "ab_combine", build)(((n + 255) // 256,), (256,), (q, x, gfr.upload([f]), np.int64(n)))
    got = [int(v) for v in gfr.download(q)]
    assert got == [xs[j] * xs[n + j] * f % R for j in range(n)]
    got = [int(v) for v in gfr.download(ntt.scale_bit_reverse(x[0], log_n, base, scale, build=build, sub=x[2], k=f))]
    assert got == [(xs[rev[j]] * scale * pow(base, j, R) - xs[2 * n + rev[j]] * f) % R for j in range(n)]
    got = [int(v) for v in gfr.download(ntt.sub_scaled(x[0].copy(), x[1], f, build=build))]
    assert got == [(xs[j] - xs[n + j] * f) % R for j in range(n)]


def poison_next(cp, shape):
    """Leave a freed block of all-ones words where the next empty_like of this shape lands: unwritten output
    elements of an out-of-place kernel show."""
    cp.get_default_memory_pool().free_all_blocks()
    poison = cp.full(shape, 0xFFFFFFFF, dtype=cp.uint32)
    del poison


@pytest.mark.parametrize("log_n", [1, 5, 12])
def test_scale_bit_reverse_is_scale_then_bit_reverse(cp, log_n):
    """F1's fused pass gives scale_powers(bitrev=True) then bit_reverse word for word, over a batch of 3 random
    vectors, every output written (the output is poisoned first by the empty allocation's reuse)."""
    from cuzk import micro_ops as micro
    from cuzk.gpu import ntt
    x = micro.random_fr(1 << log_n, batch=3, seed=log_n).reshape(3, 1 << log_n, 8)
    base, scale = 0x1234567 + log_n, 987654321
    want = ntt.bit_reverse(ntt.scale_powers(x.copy(), log_n, base, scale, bitrev=True), log_n)
    poison_next(cp, x.shape)
    got = ntt.scale_bit_reverse(x, log_n, base, scale)
    assert cp.array_equal(got, want)


@pytest.mark.parametrize("log_n", [7, 8, 9, 13])
@pytest.mark.parametrize("batch", [1, 3])
def test_bit_reverse_tiled(cp, log_n, batch):
    """N5's tiled bit reversal, F1's tiled scale-and-reverse and intt's scaled reversal against Python ints and
    the one-pass kernels, on random vectors, into poisoned outputs (2^7: the one-pass fallback; 2^8: one tile, no
    middle bits)."""
    from cuzk.field import R
    from cuzk.gpu import fr as gfr
    from cuzk import micro_ops as micro
    from cuzk.gpu import ntt, ntt_plan
    n = 1 << log_n
    x = micro.random_fr(n, batch=batch, seed=log_n + 7 * batch).reshape(batch, n, 8)
    xs = [int(v) for v in gfr.download(x)]
    rev = [int(format(j, f"0{log_n}b")[::-1], 2) for j in range(n)]
    base, scale = 0x7654321 + log_n, 123456789
    for tiled in (True, False):
        poison_next(cp, x.shape)
        got = ntt.bit_reverse(x, log_n, tiled=tiled)
        assert [int(v) for v in gfr.download(got)] == [xs[b * n + rev[j]] for b in range(batch) for j in range(n)]
        poison_next(cp, x.shape)
        got = ntt.scale_bit_reverse(x, log_n, base, scale, tiled=tiled)
        assert [int(v) for v in gfr.download(got)] == [xs[b * n + rev[j]] * scale * pow(base, j, R) % R
                                                       for b in range(batch) for j in range(n)]
        for build in ((), ntt_plan.POINTWISE_B6):     # intt's 1/n with the reversal: one product, builds 1 and 6
            poison_next(cp, x.shape)
            got = ntt.bit_reverse(x, log_n, tiled=tiled, scale=scale + log_n, build=build)
            assert [int(v) for v in gfr.download(got)] == [xs[b * n + rev[j]] * (scale + log_n) % R
                                                           for b in range(batch) for j in range(n)]
    if batch == 1:
        k = 0xABCDEF + log_n
        y = micro.random_fr(n, seed=log_n + 99)
        ys = [int(v) for v in gfr.download(y)]
        got = [int(v) for v in gfr.download(ntt.scale_bit_reverse(x[0], log_n, base, scale, sub=y, k=k, tiled=True))]
        assert got == [(xs[rev[j]] * scale * pow(base, j, R) - ys[rev[j]] * k) % R for j in range(n)]


@pytest.mark.parametrize("convention", ["coeff", "odd_lagrange"])
def test_gpu_pipeline_proofs_verify(cp, convention):
    from cuzk.backend.cuda import CudaBackend
    from cuzk.groth16 import verify
    from cuzk.keygen import cached_setup
    from cuzk.prover import Prover
    from cuzk.timing import PhaseTimer
    be = CudaBackend(resolve())
    r1cs, asgs = synthesize("porep_like", 10, resolve(), seeds=(1, 2, 3), assign_fn=be.assign)
    pk, _, _ = cached_setup(r1cs, convention, 5)
    timer = PhaseTimer(device=be.timer_device())
    proofs = Prover(be, pk).prove(asgs, timer, rng=random.Random(2))
    vk = pk.verifying_key()
    assert all(verify(vk, a.public, p) for a, p in zip(asgs, proofs))
    rec = timer.as_dict()
    for phase in ("prep_msm", "ntt_msm_h", "batch_addition", "tail_msm", "b_g2"):
        assert rec[phase]["impl"] == "cuda" and rec[phase]["device_s"] > 0, phase
    assert rec["proof_assembly"]["impl"] == "cpu"


@pytest.mark.parametrize("f2", [False, True])
def test_spendable_assignment(cp, f2):
    """F2: a spendable assignment's a, b, c are taken in place by its proof, which verifies; a second proof of it is
    refused with a clear error. Without F2 (or not spendable) the same assignment proves twice."""
    from cuzk.backend.cuda import CudaBackend
    from cuzk.groth16 import verify
    from cuzk.keygen import cached_setup
    from cuzk.prover import Prover
    be = CudaBackend(resolve("+F2" if f2 else "-F2"))
    r1cs, asgs = synthesize("porep_like", 10, resolve(), seeds=(5, 6), assign_fn=be.assign)
    pk, _, _ = cached_setup(r1cs, "coeff", 5)
    vk = pk.verifying_key()
    asgs[0].abc_spendable = True
    prover = Prover(be, pk)
    p0, p1 = prover.prove(asgs, rng=random.Random(3))
    assert verify(vk, asgs[0].public, p0) and verify(vk, asgs[1].public, p1)
    assert (asgs[0].abc_dev is None) == f2 and asgs[1].abc_dev is not None
    if f2:
        with pytest.raises(ValueError, match="consumed by an earlier proof"):
            prover.prove(asgs[:1])
    else:
        assert verify(vk, asgs[0].public, prover.prove(asgs[:1])[0])


@pytest.mark.parametrize("log_n", [24, 27])
def test_ntt_full_size(cp, log_n):
    """Dense random round trip at full size, and a sparse input checked at random points."""
    from cuzk.gpu import fr as gfr
    from cuzk import micro_ops as micro
    from cuzk.gpu import ntt as G
    d = Domain(log_n, 5)
    x0 = micro.random_fr(d.n, seed=log_n)
    x = x0.copy()
    G.dif(x, log_n, 5)
    G.dit(x, log_n, 5, inverse=True)
    n_mont = gfr.upload([d.n])
    from cuzk.gpu.loader import kernel
    scaled = cp.empty_like(x0)
    kernel("ff/ops", "fr_mul")(((d.n + 255) // 256,), (256,), (scaled, x0, cp.broadcast_to(n_mont, x0.shape).copy(), np.int64(d.n)))
    assert bool((x == scaled).all())
    rng = random.Random(log_n)
    pos = rng.sample(range(d.n), 16)
    coeffs = {p: rng.randrange(F.R) for p in pos}
    sparse = cp.zeros((d.n, 8), dtype=cp.uint32)
    sparse[cp.asarray(pos)] = gfr.upload([coeffs[p] for p in pos])
    y = G.ntt(sparse, log_n, 5)
    idx = [0, 1, d.n - 1] + rng.sample(range(d.n), 5)
    got = gfr.download(y[cp.asarray(idx)])
    for i, g in zip(idx, got):
        pt = pow(d.omega, i, F.R)
        assert g == sum(c * pow(pt, p, F.R) for p, c in coeffs.items()) % F.R


def test_prep_msm_matches_cpu(cp):
    from cuzk.gpu import fr as gfr
    from cuzk.gpu.prep import prep_msm as gpu_prep
    from cuzk.backend.cpu.prep_msm import prep_msm as cpu_prep
    rng = random.Random(9)
    n, ni = 5000, 3
    zs = []
    for c in range(3):
        z = np.array([rng.choice([0, 1, 1, rng.randrange(F.R)]) for _ in range(n)], dtype=object)
        z[0] = 1
        zs.append(z)
    zs[2][17] = F.R - 1
    want = cpu_prep(zs, ni)
    got = gpu_prep(gfr.upload(np.concatenate(zs)).reshape(3, n, 8), ni)
    assert got.counts == want.counts
    assert cp.asnumpy(got.tail).tolist() == want.tail.tolist()
    for g, w in zip(got.ones, want.ones):
        assert cp.asnumpy(g).tolist() == w.tolist()
    assert cp.asnumpy(got.aux_part(got.tail)).tolist() == want.aux_part(want.tail).tolist()


def test_b1_pinned_upload_same_abc(cp):
    from cuzk import circuits
    from cuzk.backend.cuda import CudaBackend
    r1cs, inputs, aux = circuits.build("porep_like", 10, seed=8)
    d = Domain.for_size(r1cs.qap_rows)
    on = CudaBackend(resolve("none,+B1")).assign(r1cs, inputs, aux, d)
    off = CudaBackend(resolve("none")).assign(r1cs, inputs, aux, d)
    assert bool((on.abc_dev == off.abc_dev).all())


SPECS = ["none", "none,+B1", "none,+D4", "none,+A4", "none,+C1", "none,+M1", "none,+N1", "none,+P1", "+P1", "+N2",
         "-M2", "none,+C1,+M2", "+M2,+P1", "all"]
SPECS += [f"none,+{name}" for name in REGISTRY if f"none,+{name}" not in SPECS]   # every toggle alone, new ones too


@pytest.mark.parametrize("spec", SPECS)
def test_each_optimization_gives_valid_proofs(cp, spec):
    from cuzk.backend.cuda import CudaBackend
    from cuzk.groth16 import verify
    from cuzk.keygen import cached_setup
    from cuzk.prover import Prover
    be = CudaBackend(resolve(spec))
    r1cs, asgs = synthesize("porep_like", 9, resolve(spec), seeds=(5, 6), assign_fn=be.assign)
    pk, _, _ = cached_setup(r1cs, "coeff", 7)
    proofs = Prover(be, pk).prove(asgs)
    vk = pk.verifying_key()
    assert all(verify(vk, a.public, p) for a, p in zip(asgs, proofs))


SAME_PARTS = [("P1", base) for base in ("none", "")] + [("M2", base) for base in ("", "none", "+P1", "-D4", "-M1")] \
    + [(opt, base) for opt in ("S1", "L1") for base in ("", "none")]


@pytest.mark.parametrize("opt,base", SAME_PARTS)
def test_toggle_gives_same_parts(cp, opt, base):
    """P1 (batch sums and tail MSMs on concurrent streams), M2 (a circuit's G1 tail MSMs as one multi-MSM,
    its G1 batch sums together), S1 (the MSM kernels' dedicated squaring) and L1 (lazy products in the affine
    rounds) give the same points as without them, for a batch of two circuits (S1, L1: in every MSM phase);
    base "": the defaults (C1's segment sums, M1,
    D4), "none": XYZZ sums, one window for all and the batch sums through the MSM path."""
    from cuzk.backend.cuda import CudaBackend
    from cuzk.keygen import cached_setup
    off = CudaBackend(resolve(f"{base},-{opt}"))
    on = CudaBackend(resolve(f"{base},+{opt}"))
    r1cs, asgs = synthesize("porep_like", 10, resolve("none"), seeds=(3, 4), assign_fn=off.assign)
    pk, _, _ = cached_setup(r1cs, "coeff", 7)
    kh = off.load_key(pk)
    prep = off.prep_msm(kh, asgs)
    assert on.batch_addition(kh, prep) == off.batch_addition(kh, prep)
    assert on.tail_msm(kh, prep, asgs) == off.tail_msm(kh, prep, asgs)
    if opt in ("S1", "L1"):
        assert on.b_g2(kh, prep, asgs) == off.b_g2(kh, prep, asgs)
        assert on.ntt_msm_h(kh, asgs) == off.ntt_msm_h(kh, asgs)


def test_key_too_large_fails_cleanly_then_next_proof_works(cp):
    from cuzk.backend.cuda import CudaBackend
    from cuzk.gpu import srs
    from cuzk.groth16 import verify
    from cuzk.keygen import cached_setup
    from cuzk.prover import Prover
    be = CudaBackend(resolve())
    r1cs, asgs = synthesize("mulchain", 8, resolve(), seeds=(1,), assign_fn=be.assign)
    pk, _, _ = cached_setup(r1cs)
    used = cp.get_default_memory_pool().used_bytes()
    free, total = cp.cuda.runtime.memGetInfo()
    real = srs.key_bytes
    srs.key_bytes = lambda pk, sections=srs.SECTIONS: 2 * total      # a key twice the card
    try:
        with pytest.raises(srs.DeviceMemoryError, match="GiB"):
            Prover(be, pk)
    finally:
        srs.key_bytes = real
    assert cp.get_default_memory_pool().used_bytes() == used
    proofs = Prover(be, pk).prove(asgs)
    assert verify(pk.verifying_key(), asgs[0].public, proofs[0])
