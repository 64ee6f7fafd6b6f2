"""Device check for the NTT pass kernels and the Fp/Fr multiplication variants.

1. pytest -m gpu: tests/gpu/test_gpu_ntt_reg.py (every variant against the CPU reference), the field and
   NTT tests of tests/gpu/test_gpu.py.
2. Every cuzk.gpu.ntt_plan.VARIANTS entry: DIF and DIT at 2^20, 2^24, 2^27 (batch 1; CUDA events, median
   of 10 after 2 warm-up calls); its output against r2's on random input at 2^27 and against the
   CPU reference at 2^16.
3. Multiplication builds CUZK_FASTMUL_VARIANT_{FP,FR} = 1, 3, 6 (kernels/ff/mul.cuh): rate with 4
   chains and 1 chain per thread; outputs checked against Python big ints and across builds.
Prints a short table last; exits 1 on any mismatch or test failure.

    python3 tools/gpu_ntt_check.py [--no-tests] [--no-mul] [--variants r4,r4b6]
"""
import os
import random
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
t_start = time.time()
bad = []
SKIP_MUL = "--no-mul" in sys.argv
ONLY = next((a.split("=", 1)[1] if "=" in a else sys.argv[i + 1] for i, a in enumerate(sys.argv)
             if a.startswith("--variants")), None)


def pytest(args):
    t0 = time.time()
    rc = subprocess.call([sys.executable, "-m", "pytest", "-q", "-m", "gpu", "-p", "no:cacheprovider", *args],
                         cwd=ROOT)
    print(f"pytest {' '.join(args)}: rc={rc} in {time.time() - t0:.0f}s", flush=True)
    if rc:
        bad.append(f"pytest {args[0]}")
    return rc


if "--no-tests" not in sys.argv:
    pytest(["tests/gpu/test_gpu_ntt_reg.py"])
    pytest(["tests/gpu/test_gpu.py", "-k", "field or fp2 or montgomery or ntt"])

import cupy  # noqa: E402

from cuzk import field as F  # noqa: E402
from cuzk import poly  # noqa: E402
from cuzk.gpu import fr as gfr  # noqa: E402
from cuzk import micro_ops as micro  # noqa: E402
from cuzk.gpu import ntt as G  # noqa: E402
from cuzk.gpu import ntt_plan  # noqa: E402
from cuzk.gpu.kernel_sources import kernel_dir  # noqa: E402
from cuzk.gpu.loader import arch  # noqa: E402


def median_ms(fn, reps=10):
    fn()
    fn()
    return 1e3 * float(np.median([micro._events(fn, 1) for _ in range(reps)]))


VARS = [v for v in ntt_plan.VARIANTS if ONLY is None or v in ONLY.split(",")]
if not VARS:
    sys.exit(f"--variants {ONLY}: none of {', '.join(ntt_plan.VARIANTS)}")

# --- 2. NTT variants ---
times = {}
for L in (20, 24, 27):
    x = micro.random_fr(1 << L, seed=L)
    for v in VARS:
        for name, fn in (("dif", G.dif), ("dit", G.dit)):
            times[v, name, L] = median_ms(lambda x=x, fn=fn, v=v, L=L: fn(x, L, 7, variant=v))
            print(f"{v:<8} {name} 2^{L}: {times[v, name, L]:.2f} ms", flush=True)
    del x

eq27 = {}
x0 = micro.random_fr(1 << 27, seed=99)
for name, fn in (("dif", G.dif), ("dit", G.dit)):
    ref = x0.copy()
    fn(ref, 27, 5, variant="r2")
    for v in VARS:
        y = x0.copy()
        fn(y, 27, 5, variant=v)
        eq27[v, name] = bool(cupy.array_equal(y, ref)) and not bool(cupy.array_equal(y, x0))
        del y
    del ref
del x0
cupy.get_default_memory_pool().free_all_blocks()

eq16 = {}
d = poly.Domain(16, 7)
rng = random.Random(16)
a = np.array([rng.randrange(F.R) for _ in range(d.n)], dtype=object)
want = poly.ntt(a, d.omega)
perm = poly.bitrev_perm(d.n)
for v in VARS:
    y = G.dif(gfr.upload(a), 16, 7, variant=v)
    z = G.dit(gfr.upload(a[perm]), 16, 7, variant=v)
    eq16[v] = bool((gfr.download(y) == want[perm]).all()) and bool((gfr.download(z) == want).all())

# --- 3. multiplication builds ---
MUL_SRC = r'''
#include "ff/field.cuh"
using namespace cuzk;
#define BENCH(F, name, CH)                                                            \
    extern "C" __global__ void name(uint32_t* data, int iters) {                      \
        const long i = blockIdx.x * (long)blockDim.x + threadIdx.x;                   \
        const int W = sizeof(F) / 4;                                                  \
        F x[CH];                                                                      \
        for (int c = 0; c < CH; c++) x[c] = F::load(data + (CH * i + c) * W);         \
        const F y = x[0];                                                             \
        for (int k = 0; k < iters; k++)                                               \
            for (int c = 0; c < CH; c++) x[c] = x[c] * y;                             \
        for (int c = 0; c < CH; c++) x[c].store(data + (CH * i + c) * W);             \
    }
BENCH(fp_t, fp4, 4) BENCH(fp_t, fp1, 1) BENCH(fr_t, fr4, 4) BENCH(fr_t, fr1, 1)
'''
FIELDS = {"fp": (F.P, 12), "fr": (F.R, 8)}
TOTAL, ITERS, BLOCK = 1 << 22, 256, 256            # multiplication chains, rounds, threads per block
crng = cupy.random.default_rng(5)
base = {}
for f, (p, w) in FIELDS.items():
    b = crng.integers(0, 2**32, size=(TOTAL, w), dtype=cupy.uint64).astype(cupy.uint32)
    b[:, w - 1] &= 0x0FFFFFFF                                      # below p
    base[f] = b
rates, outs, mul_ok = {}, {}, {}
MUL_BUILDS = () if SKIP_MUL else (1, 3, 6)
for V in MUL_BUILDS:
    mod = cupy.RawModule(code=MUL_SRC, options=(f"-arch={arch()}", f"-I{kernel_dir()}", "--std=c++17",
                                                f"-DCUZK_FASTMUL_VARIANT_FP={V}", f"-DCUZK_FASTMUL_VARIANT_FR={V}"))
    for f, (p, w) in FIELDS.items():
        for ch in (4, 1):
            k = mod.get_function(f"{f}{ch}")
            grid = (TOTAL // ch // BLOCK,)
            data = base[f].copy()
            k(grid, (BLOCK,), (data, np.int32(ITERS)))                # warm-up; also the checked output
            outs[V, f, ch] = data
            ts = []
            for _ in range(10):
                data = base[f].copy()
                ts.append(micro._events(lambda: k(grid, (BLOCK,), (data, np.int32(ITERS))), 1))
            rates[V, f, ch] = TOTAL * ITERS / float(np.median(ts))
        # host check of a few chains: x_{k+1} = x_k * y / 2^(32w) mod p, y = the thread's first x
        host = cupy.asnumpy(base[f])
        got = cupy.asnumpy(outs[V, f, 1])
        rinv = pow(1 << (32 * w), -1, p)
        ok = True
        for i in (0, 1, 12345, TOTAL - 1):
            xi = int.from_bytes(host[i].astype("<u4").tobytes(), "little")
            want_i = xi * pow(xi * rinv % p, ITERS, p) % p
            ok &= int.from_bytes(got[i].astype("<u4").tobytes(), "little") == want_i
        ok &= all(bool(cupy.array_equal(outs[V, f, c], outs[1, f, c])) for c in (4, 1))
        mul_ok[V, f] = ok

# --- table ---
for key, ok in [*eq27.items(), *eq16.items(), *mul_ok.items()]:
    if not ok:
        bad.append(f"mismatch {key}")
print("\nNTT (ms, median of 10; '=r2' output equal to r2's at 2^27, '=cpu' to the CPU reference at 2^16)")
print(f"{'variant':<9}" + "".join(f"{n + ' 2^' + str(L):>12}" for L in (20, 24, 27) for n in ("dif", "dit")) + "  =r2 dif/dit  =cpu")
for v in VARS:
    print(f"{v:<9}" + "".join(f"{times[v, n, L]:12.2f}" for L in (20, 24, 27) for n in ("dif", "dit"))
          + f"  {eq27[v, 'dif']!s:>5}/{eq27[v, 'dit']!s:<5}  {eq16[v]}")
print("\nmultiplication (/s; 4 and 1 chains per thread; 'ok' = big-int check and equal to build 1)")
for V in MUL_BUILDS:
    print(f"FASTMUL {V}  fp {rates[V, 'fp', 4]:.3e} {rates[V, 'fp', 1]:.3e} {mul_ok[V, 'fp']!s:<5}"
          f"  fr {rates[V, 'fr', 4]:.3e} {rates[V, 'fr', 1]:.3e} {mul_ok[V, 'fr']}")
ok_v = [v for v in VARS if eq27[v, "dif"] and eq27[v, "dit"] and eq16[v]]
best = min(ok_v, key=lambda v: times[v, "dif", 27] + times[v, "dit", 27])
print(f"fastest correct variant at 2^27 (dif + dit): {best}")
if os.environ.get("OUT"):
    Path(os.environ["OUT"], "ntt_best.txt").write_text(best + "\n")
print(f"\n{'ALL OK' if not bad else 'FAILED: ' + '; '.join(bad)}  ({time.time() - t_start:.0f}s)")
sys.exit(1 if bad else 0)
