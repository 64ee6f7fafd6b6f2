"""P2 on the GPU: the tables (msm_fixed_table) against arkworks row by row, and the MSM over them against arkworks'
MSM on fresh random inputs, edge scalars (0, 1, r - 1), repeated bases and bases at infinity, at plans from no
tables to one group. Run on the device machine: `pytest -m gpu tests/gpu/test_gpu_msm_fixed.py`."""
import random

import numpy as np
import pytest
from py_arkworks_bls12381 import G1Point, Scalar

from cuzk import field as F
from cuzk.curve import limbs_to_ark
from cuzk.gpu.msm import plan as plan
from cuzk.gpu.msm.tables import TablePlan, choose_tables
from cuzk.gpu.srs import DeviceBases
from cuzk.plans import MSM_KERNELS, msm_kernels_of as K
from gpu_msm_cases import distinct_bases, edge_case, fr_dev, rand_points, seed, upload, want

KERNEL_CODES = frozenset(MSM_KERNELS)   # every kernel toggle: what ships

pytestmark = pytest.mark.gpu


@pytest.fixture(scope="module")
def cp():
    import cupy
    return cupy


@pytest.fixture(scope="module")
def fx(cp):
    """gpu/msm/fixed.py, a device module: imported where the tests run on the GPU."""
    from cuzk.gpu.msm import fixed
    return fixed


def section(cp, pts):
    limbs, inf, _ = upload(cp, 1, pts, [0] * len(pts))
    return DeviceBases(1, limbs, inf)


def plans(c):
    nw = plan.num_windows(c)
    return [TablePlan(c, -(-nw // -(-nw // t)), -(-nw // t)) for t in sorted({2, round(nw ** 0.5), nw})]


@pytest.mark.parametrize("tp", [TablePlan(5, 4, 13), TablePlan(24, 11, 1)])
def test_tables_against_arkworks(cp, fx, tp):
    """Every row of every block: 2^(c G j) P_i, zero limbs for a base at infinity; block 0 is the section itself,
    which now reads the table (no copy), and release() gives it its own limbs back, unchanged."""
    rng = random.Random(seed())
    pts = rand_points(1, 300, rng)
    sec = section(cp, pts)
    before = cp.asnumpy(sec.limbs).copy()
    tables = fx.FixedTables(sec, tp)
    n = len(pts)
    rows = cp.asnumpy(tables.limbs)
    assert tables.nbytes == (tp.t - 1) * n * 96
    assert sec.limbs.data.ptr == tables.limbs.data.ptr
    inf = cp.asnumpy(sec.inf)
    for j in range(tp.t):
        blk = rows[j * n:(j + 1) * n]
        assert not blk[inf].any()
        got = limbs_to_ark(1, blk, inf)
        k = Scalar(pow(2, tp.doublings * j, F.R))
        assert got == [p * k for p in pts], j
    tables.release()
    assert tables.limbs is None and sec.limbs.data.ptr != 0 and (cp.asnumpy(sec.limbs) == before).all()
    with pytest.raises(ValueError, match="released"):
        fx.msm_g1(tables, fr_dev(cp, [1] * n))


@pytest.mark.parametrize("n", [1, 31, 1000, 1 << 14])
def test_fixed_msm_random(cp, fx, n):
    rng = random.Random(seed())
    pts = rand_points(1, n, rng)
    sc = [rng.randrange(F.R) for _ in range(n)]
    sec = section(cp, pts)
    c = plan.choose_window(n, affine=True)
    for tp in plans(c):
        tables = fx.FixedTables(sec, tp)
        assert fx.msm_g1(tables, fr_dev(cp, sc)) == want(1, pts, sc), tp
        tables.release()


@pytest.mark.parametrize("kind", ["zero", "one", "r-1", "mixed", "same", "small", "all-inf", "repeat-point"])
def test_fixed_msm_edge_cases(cp, fx, kind):
    """Edge scalars and bases; "repeat-point" makes x1 == x2 pairs, so the XYZZ fallback runs."""
    rng = random.Random(seed())
    pts, sc = edge_case(1, kind, 600, rng)
    sec = section(cp, pts)
    for tp in plans(7):
        tables = fx.FixedTables(sec, tp)
        assert fx.msm_g1(tables, fr_dev(cp, sc)) == want(1, pts, sc), (kind, tp)
        tables.release()


def test_fixed_msm_options(cp, fx):
    """XYZZ bucket sums, every pair option, K10 off, and one group a pass (max_entries): arkworks' MSM each time."""
    rng = random.Random(seed())
    n = 1 << 12
    a, limbs, inf = distinct_bases(cp, n, rng)
    sc = [rng.randrange(F.R) for _ in range(n)]
    pts = limbs_to_ark(1, cp.asnumpy(limbs), np.zeros(n, dtype=bool))
    ref = want(1, pts, sc)
    tables = fx.FixedTables(DeviceBases(1, limbs, inf), TablePlan(16, 4, 4))
    s = fr_dev(cp, sc)
    assert fx.msm_g1(tables, s, bucket_sum="xyzz") == ref
    for levels, merges in ((False, False), (True, True)):
        assert fx.msm_g1(tables, s, pair_levels=levels, pair_merges=merges) == ref
    assert fx.msm_g1(tables, s, kernels=K(KERNEL_CODES - {"K10"})) == ref
    assert fx.msm_g1(tables, s, max_entries=4 * n) == ref          # one group a pass: four passes
    assert fx.msm_g1(tables, s, affine_min_pairs=1) == ref


def test_fixed_msm_large_matches_plain(cp, fx):
    """2^18 distinct bases at the plan choose_tables makes for them: the plain GPU MSM's and arkworks' result."""
    from cuzk.gpu.msm.pippenger import msm_g1
    rng = random.Random(seed())
    n = 1 << 18
    a, limbs, inf = distinct_bases(cp, n, rng)
    sc = [rng.randrange(F.R) for _ in range(n)]
    s = fr_dev(cp, sc)
    plain = msm_g1(limbs, inf, s)
    tp = choose_tables(n, 1 << 34)
    assert tp.t > 1
    tables = fx.FixedTables(DeviceBases(1, limbs, inf), tp)
    assert fx.msm_g1(tables, s) == plain
    # arkworks on the scalars: Σ s_i a_i G
    assert plain == G1Point() * Scalar(sum(x * y for x, y in zip(a, sc)) % F.R)


def _partition(cp):
    from cuzk.backend.cuda import CudaBackend
    from cuzk.keygen import cached_setup
    from cuzk.opts import resolve
    from cuzk.synthesis import synthesize
    off = CudaBackend(resolve("-P2"))
    on = CudaBackend(resolve("+P2"))
    r1cs, asgs = synthesize("porep_like", 12, resolve("none"), seeds=(3, 4), assign_fn=off.assign)
    pk, _, _ = cached_setup(r1cs, "coeff", 7)
    return off, on, pk, asgs


def test_p2_same_h_points_and_key_memory(cp):
    """ntt_msm_h with P2 gives the points it gives without; the key handle made with P2 on holds the tables from
    load_key, counts them apart from the key, and the H section reads block 0 of them."""
    off, on, pk, asgs = _partition(cp)
    kh = on.load_key(pk)
    assert kh.tables is not None and kh.tables.plan.t > 1
    mem = kh.memory()
    assert mem["table_bytes"] == kh.tables.nbytes > 0 and mem["key_bytes"] == kh.dev.nbytes
    assert kh.dev["h"].limbs.data.ptr == kh.tables.limbs.data.ptr
    plain = off.load_key(pk)
    assert plain.tables is None and plain.memory()["table_bytes"] == 0
    assert on.ntt_msm_h(kh, asgs) == off.ntt_msm_h(plain, asgs)


def test_p2_out_of_memory_frees_the_tables(cp, monkeypatch, capsys):
    """An out-of-memory error in the tables' MSM frees them, says so on stderr, and the H MSM goes on without them
    (the same points); a budget beyond the free memory is refused naming both sizes."""
    from cuzk.backend.cuda import ntt_msm_h
    from cuzk.gpu.srs import DeviceMemoryError
    off, on, pk, asgs = _partition(cp)
    kh = on.load_key(pk)
    want = off.ntt_msm_h(off.load_key(pk), asgs)

    def oom(*a, **kw):
        raise cp.cuda.memory.OutOfMemoryError(1 << 40, 0)
    monkeypatch.setattr(ntt_msm_h.gfixed, "msm_g1", oom)          # the MSM over tables the phase calls
    assert on.ntt_msm_h(kh, asgs) == want
    assert kh.tables is None and capsys.readouterr().err.count("the H tables were freed") == 1   # not made again
    assert on.ntt_msm_h(kh, asgs) == want and kh.tables is None
    from cuzk.backend.cuda import CudaBackend
    greedy = CudaBackend(on.opts, table_gib=100000.0)          # the edge's $CUZK_TABLE_GIB=100000
    with pytest.raises(DeviceMemoryError, match=r"CUZK_TABLE_GIB\) asks for 100000.00 GiB but only"):
        greedy.load_key(pk)
