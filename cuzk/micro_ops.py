"""Kernel microbenchmarks timed by CUDA events (the device side of `cuzk micro`).

Each `make_*` builds inputs once and returns (run, work): run(loops) executes the kernel
`loops` times and returns the device seconds; `work` is the element count per call. Those that
run a phase's code as the backend runs it take the optimization set (`opts`, resolved by the caller).
Floors (docs/architecture.md, Targets) give the ratio reported beside each figure.
A GPU module: imported where a GPU run starts (cuzk/micro.py, tools), never on the CPU path.
"""
from __future__ import annotations

import random
import sys

import cupy
import numpy as np
from py_arkworks_bls12381 import G1Point, G2Point, Scalar

from . import circuits, plans
from .curve import ark_to_limbs
from .gpu import spmv
from .gpu import ntt as G
from .gpu import ntt_plan
from .gpu.fr import to_mont, upload
from .gpu.h import h_scalars
from .gpu.keygen import FixedBase
from .gpu.kernel_sources import MUL_BUILDS
from .gpu.loader import kernel
from .gpu.msm import fixed as gfixed
from .gpu.msm import pippenger as gmsm
from .gpu.msm import sums as gsums
from .gpu.msm import tables as gtables
from .gpu.srs import DeviceBases
from .poly import Domain

FLOORS = {           # seconds or rates measured/modelled on the H200 (docs/architecture.md, Targets)
    "ntt_27": 0.030,
    "fp_mul_rate": 2.8e10,
}


def _events(fn, loops: int) -> float:
    a, b = cupy.cuda.Event(), cupy.cuda.Event()
    a.record()
    for _ in range(loops):
        fn()
    b.record()
    b.synchronize()
    return cupy.cuda.get_elapsed_time(a, b) / 1e3


def random_fr(n: int, batch: int = 1, seed: int = 1):
    """Device uint32[batch, n, 8]: fresh random elements below 2^252, in Montgomery form."""
    rng = cupy.random.default_rng(seed)
    out = cupy.empty((batch * n, 8), dtype=cupy.uint32)
    step = 1 << 22
    for i in range(0, batch * n, step):
        k = min(step, batch * n - i)
        out[i:i + k] = rng.integers(0, 2**32, size=(k, 8), dtype=cupy.uint64).astype(cupy.uint32)
    out[:, 7] &= 0x0FFFFFFF
    to_mont(out)
    return out.reshape(batch, n, 8) if batch > 1 else out.reshape(n, 8)


def make_mul(field: str, threads: int = 1 << 20, iters: int = 256, chains: int = 4, fastmul: int = 1):
    """x = x * y chains over 4 * threads elements: `chains` (4 or 1) per thread, so 1 chain runs 4x the
    threads; `fastmul`: the multiplier build (1, or 6 on the FP64 pipe: field_ops' module build)."""
    if chains not in (1, 4) or fastmul not in MUL_BUILDS:
        raise ValueError(f"chains 1 or 4 and fastmul one of {sorted(MUL_BUILDS)}, got {chains}, {fastmul}")
    words = 12 if field == "fp" else 8
    rng = cupy.random.default_rng(3)
    data = rng.integers(0, 2**32, size=(4 * threads, words), dtype=cupy.uint64).astype(cupy.uint32)
    data[:, words - 1] &= 0x0FFFFFFF
    f = kernel("ff/ops", f"{field}_mul_bench" + ("1" if chains == 1 else ""), MUL_BUILDS[fastmul])
    block = 256 if fastmul == 1 else 128      # build 6 needs > 128 registers: 512 threads do not launch
    grid = 4 * threads // chains // block

    def run(loops: int) -> float:
        return _events(lambda: f((grid,), (block,), (data, np.int32(iters))), loops)
    return run, 4 * threads * iters


def make_ntt(log_n: int, kind: str = "dif", generator: int = 7, *, opts):
    """The NTT pass variant the backend picks under `opts` (plans.HPlan); natural_order: natural-order NTTs
    without a separate bit reversal."""
    x = random_fr(1 << log_n)
    hp = plans.h(opts)
    h = hp.h_options()
    v, tiled, build = h["variant"], h["tiled_bitrev"], ntt_plan.POINTWISE_B6 if h["pointwise_b6"] else ()
    if kind == "dif":
        def call(): G.dif(x, log_n, generator, variant=v)
    elif kind == "intt":                     # natural -> natural, scaled by 1/n
        natural = hp.ntt.natural_order

        def call(): G.intt(x, log_n, generator, variant=v, tiled=tiled, build=build, natural=natural)
    elif hp.ntt.natural_order and ntt_plan.natural_dif(v, log_n):   # "ntt": dif, natural order from its last pass

        def call(): G.dif(x, log_n, generator, variant=v, out=cupy.empty_like(x))
    else:                                    # "ntt": natural -> natural (dif in place, then the bit reversal)
        def call(): G.bit_reverse(G.dif(x, log_n, generator, variant=v), log_n, tiled=tiled)

    def run(loops: int) -> float:
        return _events(call, loops)
    return run, 1 << log_n


def make_h(log_n: int, convention: str = "coeff", generator: int = 7, *, opts):
    d = Domain(log_n, generator)
    abc = random_fr(d.n, 3)
    work = abc.copy()

    kw = plans.h(opts).h_options()

    def call():
        work[...] = abc
        h_scalars(work, d, convention, check=False, **kw)

    def run(loops: int) -> float:
        return _events(call, loops)
    return run, d.n


def make_spmv(log_n: int):
    r1cs, inputs, aux = circuits.build("porep_like", log_n)
    dev = spmv.DeviceR1CS.of(r1cs)
    z = upload(np.concatenate([inputs, aux]))
    n = Domain.for_size(r1cs.qap_rows).n

    def run(loops: int) -> float:
        return _events(lambda: spmv.evaluate(dev, z, n, check=False), loops)
    return run, r1cs.A.nnz + r1cs.B.nnz + r1cs.C.nnz


def median_time(run, loops: int = 1, repeat: int = 7) -> float:
    run(1)                                       # warm-up: compile, tables, allocator
    return float(np.median([run(loops) / loops for _ in range(repeat)]))


def random_bases(log_n: int, group: int = 1, distinct_log: int = 18, seed: int = 1):
    """Device bases: 2^distinct_log distinct random points P0 + i*Q (an addition chain, fast on the
    host), tiled to 2^log_n. Repeats inside a bucket are rare (~0.4% at 2^26) and exercise doubling."""
    cls = G1Point if group == 1 else G2Point
    rng = random.Random(seed)
    d = min(distinct_log, log_n)
    p, q = cls() * Scalar(rng.randrange(1, 2**255)), cls() * Scalar(rng.randrange(1, 2**255))
    pts = []
    for _ in range(1 << d):
        pts.append(p)
        p = p + q
    limbs, _ = ark_to_limbs(group, pts)
    dev = cupy.asarray(limbs)
    reps = 1 << (log_n - d)
    bases = cupy.tile(dev, (reps, 1)) if reps > 1 else dev
    return cupy.ascontiguousarray(bases), cupy.zeros(1 << log_n, dtype=cupy.bool_)


def independent_bases(log_n: int, group: int = 1, distinct_log: int = 24, seed: int = 1):
    """Device bases: 2^distinct_log independent random points a_i * G (the GPU fixed-base kernel),
    tiled to 2^log_n. random_bases' points are a progression P0 + i*Q, so sums of two of them
    collide often (P_a + P_b = P_c + P_d when a + b = c + d): the affine bucket sums would meet
    x1 == x2 and fall back to XYZZ on every pass."""
    d = min(distinct_log, log_n)
    limbs, inf = FixedBase(group)(random_fr(1 << d, seed=seed))
    if bool(inf.any()):
        raise ArithmeticError("a random base is the point at infinity")
    reps = 1 << (log_n - d)
    bases = cupy.tile(limbs, (reps, 1)) if reps > 1 else limbs
    return cupy.ascontiguousarray(bases), cupy.zeros(1 << log_n, dtype=cupy.bool_)


def make_msm(log_n: int, group: int = 1, c: int | None = None, *, opts, table_gib: float | None = None):
    """The MSM's device work as the backend runs it: the window sums (gpu/msm/pippenger.msm_windows) with the MSM
    options `opts` sets (plans.MsmPlan.kw); the product path folds the windows on the host. P2: over tables
    made within table_gib GiB (None: half the free device memory)."""
    fixed = group == 1 and plans.h(opts).tables
    # under P2 every base distinct, as a key's are: tiled bases put copies of one point 2^24 rows apart, close enough
    # in the table's rows to meet as an affine pair at c = 24 (x1 == x2: the pass redone in XYZZ)
    bases, inf = independent_bases(log_n, 1, distinct_log=log_n if fixed else 24) if group == 1 \
        else random_bases(log_n, group)
    scalars = random_fr(1 << log_n, seed=log_n + 7)
    kw = plans.msm(opts).kw(group)
    if fixed:                                   # the tables made once, outside the timed loops
        plan = gtables.choose_tables(1 << log_n, gtables.budget_bytes(gmsm.free_bytes(), table_gib), c)
        tables = gfixed.FixedTables(DeviceBases(1, bases, inf), plan)
        print(f"P2: c = {tables.plan.c}, {tables.plan.t} blocks, {tables.plan.groups} groups, "
              f"{tables.nbytes / 2**30:.2f} GiB of tables", file=sys.stderr)

        def run(loops: int) -> float:
            return _events(lambda: gfixed.msm_windows(tables, scalars, **kw), loops)
        return run, 1 << log_n

    def run(loops: int) -> float:
        return _events(lambda: gmsm.msm_windows(group, bases, inf, scalars, c, **kw), loops)
    return run, 1 << log_n


def make_batch_add(log_n: int, *, opts):
    """Batch addition as the backend runs it, with the options `opts` sets: with C1 the segment
    sums over the rows (gpu/msm/sums.py), else the window sums of an MSM whose scalars are all 1."""
    bases, inf = independent_bases(log_n, 1)
    cp, mp = plans.cuda(opts), plans.msm(opts)
    if cp.ones_by_bucket_sums:
        rows = cupy.arange(1 << log_n, dtype=cupy.int64)

        def one():
            return gsums.sum_xyzz(1, bases, inf, rows, mp.bucket_sum(1), mp.pair_merges, mp.kernels)
    else:
        ones = cupy.broadcast_to(upload([1]), (1 << log_n, 8)).copy()
        kw = mp.kw(1)

        def one():
            return gmsm.msm_windows(1, bases, inf, ones, **kw)

    def run(loops: int) -> float:
        return _events(one, loops)
    return run, 1 << log_n
