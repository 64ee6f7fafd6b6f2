"""Every NTT pass kernel (cuzk.gpu.ntt_plan.VARIANTS: kernels/ntt/reg.cu; r4b6: ntt/reg.cu on fastmul build 6; r4b6d: r4b6 with N4's DIF butterfly; r4b6dt: with
N8's full-domain twiddle tables; r4b6dts: and N11's differences left < 2p;
"w": N12 off, 32-bit exchanges; "b": N17 off, swz4 bit by bit; after "+", run-time features: o N13, z N15)
against the CPU reference on fresh random inputs, and against the radix-2 kernel at 2^20 / 2^24. Run on the device: `pytest -m gpu`."""
import random

import numpy as np
import pytest

from cuzk import field as F
from cuzk import poly
from cuzk.poly import Domain

pytestmark = pytest.mark.gpu

REG = ["r4", "r8", "r4b6", "r4b6d", "r4b6dt", "r4b6ds", "r4b6dts",
       "r4b6dtsw", "r4b6dtsb", "r4b6dts+o", "r4b6dts+z", "r4b6dts+oz", "r4b6d+oz", "r4+o", "r8+o"]


def rnd(n, seed):
    rng = random.Random(seed)
    return np.array([rng.randrange(F.R) for _ in range(n)], dtype=object)


@pytest.fixture(params=REG)
def variant(request, monkeypatch):
    from cuzk.gpu import ntt_plan
    monkeypatch.setattr(ntt_plan, "VARIANT", request.param)
    return request.param


@pytest.mark.parametrize("gen", [7, 5])
@pytest.mark.parametrize("log_n", [1, 2, 3, 4, 5, 9, 10, 11, 13, 16])
def test_forward_inverse_coset(variant, log_n, gen):
    from cuzk.gpu import fr as gfr
    from cuzk.gpu import ntt as G
    d = Domain(log_n, gen)
    a = rnd(d.n, log_n * 10 + gen + 1)
    x = gfr.upload(a)
    assert (gfr.download(G.ntt(x, log_n, gen)) == poly.ntt(a, d.omega)).all()
    assert (gfr.download(G.intt(x, log_n, gen)) == poly.intt(a, d.omega)).all()
    g = d.coset_shift
    assert (gfr.download(G.coset_ntt(x, log_n, g, gen)) == poly.coset_ntt(a, d.omega, g)).all()
    assert (gfr.download(G.coset_intt(x, log_n, g, gen)) == poly.coset_intt(a, d.omega, g)).all()
    assert (gfr.download(x) == a).all()                  # out of place: the input is left as it was
    y = G.ntt(x, log_n, gen, overwrite_x=True)
    assert (gfr.download(y) == poly.ntt(a, d.omega)).all()


@pytest.mark.parametrize("batch", [1, 3])
def test_batch_dif_dit(variant, batch):
    from cuzk.gpu import fr as gfr
    from cuzk.gpu import ntt as G
    log_n, gen = 12, 5
    d = Domain(log_n, gen)
    vs = [rnd(d.n, 200 + i) for i in range(batch)]
    x = gfr.upload(np.concatenate(vs)).reshape(batch, d.n, 8)
    G.dif(x, log_n, gen)
    ref = [poly.ntt(v, d.omega)[poly.bitrev_perm(d.n)] for v in vs]
    assert (gfr.download(x) == np.concatenate(ref)).all()
    G.dit(x, log_n, gen, inverse=True)                       # back, times n
    assert (gfr.download(x) == np.concatenate([(v * d.n) % F.R for v in vs])).all()


@pytest.mark.parametrize("log_n", [20, 22, 24])
def test_same_as_radix2(variant, log_n):
    """Both directions, both generators, forward and inverse, batch of 2 at 2^20."""
    import cupy
    from cuzk import micro_ops as micro
    from cuzk.gpu import ntt as G
    batch = 2 if log_n == 20 else 1
    x0 = micro.random_fr(1 << log_n, batch, seed=log_n + 7)
    for gen, inverse in ((7, False), (5, True)):
        for fn in (G.dif, G.dit):
            want, got = x0.copy(), x0.copy()
            fn(want, log_n, gen, inverse, variant="r2")
            fn(got, log_n, gen, inverse)
            assert bool(cupy.array_equal(want, got)), (fn.__name__, gen, inverse)
            assert not bool(cupy.array_equal(want, x0))


@pytest.mark.parametrize("log_n,batch", [(3, 1), (9, 2), (10, 1), (11, 3), (17, 1), (18, 1), (20, 2)])
def test_natural_order_last_pass(variant, log_n, batch):
    """N10: dif(x, out=) writes every element of the transform in natural order into a poisoned out, the same
    words as the DIF passes then the bit reversal (and the CPU's NTT at the small sizes)."""
    import cupy
    from cuzk.gpu import fr as gfr
    from cuzk import micro_ops as micro
    from cuzk.gpu import ntt as G
    from cuzk.gpu import ntt_plan
    if not ntt_plan.natural_dif(variant, log_n):
        pytest.skip("the radix-2 kernel runs this size")
    x0 = micro.random_fr(1 << log_n, batch, seed=log_n * 3 + batch)
    want = G.bit_reverse(G.dif(x0.copy(), log_n, 5), log_n)
    out = cupy.full_like(x0, 0xFFFFFFFF)
    got = G.dif(x0.copy(), log_n, 5, out=out)
    assert got is out and bool(cupy.array_equal(got, want))
    if log_n <= 11:
        d = Domain(log_n, 5)
        a = gfr.download(x0).reshape(batch, d.n)
        ref = np.concatenate([poly.ntt(v, d.omega) for v in a])
        assert (gfr.download(got) == ref).all()


@pytest.mark.parametrize("log_n,batch", [(13, 2), (24, 1)])
def test_intt_natural_scaled(variant, log_n, batch):
    """N10's inverse: 1/n in the small twiddle table and natural-order stores give the same words as the DIF
    passes, then 1/n and the bit reversal in their own pass."""
    import cupy
    from cuzk import micro_ops as micro
    from cuzk.gpu import ntt as G
    from cuzk.gpu import ntt_plan
    if not ntt_plan.natural_scaled(variant, log_n):
        pytest.skip("no single small-table pass at this size")
    x0 = micro.random_fr(1 << log_n, batch, seed=log_n + batch)
    got, want = G.intt(x0, log_n, 5, natural=True), G.intt(x0, log_n, 5, natural=False)
    assert bool(cupy.array_equal(got, want)) and not bool(cupy.array_equal(got, x0))
