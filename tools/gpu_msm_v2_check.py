"""Device check of the affine round kernels (issue 5; variant 2 quads, 3 pairs with look-ahead loads): the
affine GPU tests of tests/test_gpu_msm.py (edge cases, fallbacks), then G1 MSM timings by CUDA events
(median of --reps after a warm-up) of --variants at c = auto and 20, a phase profile of each at the largest
size, and a table last. Bases: independent random points (micro.independent_bases),
random scalars. Every row's result is compared with the first row of its size.

    python3 tools/gpu_msm_v2_check.py [--sizes 20,24,26] [--reps 3] [--no-tests] [--variants 1,3,1,3] [-k v3]
"""
import argparse
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent / "experiments"))

ap = argparse.ArgumentParser()
ap.add_argument("--sizes", default="20,24,26")
ap.add_argument("--reps", type=int, default=3)
ap.add_argument("--no-tests", action="store_true")
ap.add_argument("--variants", default="1,2", help="affine round kernels to time, in this order (repeats allowed)")
ap.add_argument("-k", default="affine", help="pytest -k filter of the GPU tests run first")
args = ap.parse_args()

rc = 0
if not args.no_tests:
    t0 = time.time()
    rc = subprocess.call([sys.executable, "-m", "pytest", "-q", "-m", "gpu", "tests/test_gpu_msm.py", "-k", args.k,
                          "-p", "no:cacheprovider"])
    print(f"pytest -m gpu tests/test_gpu_msm.py -k {args.k!r}: rc={rc} in {time.time() - t0:.0f}s", flush=True)

import cupy  # noqa: E402
import numpy as np  # noqa: E402

from cuzk.gpu import micro, msm, msm_plan as plan  # noqa: E402
from msm_profile import Marks  # noqa: E402


def timed(fn, reps):
    fn()                                          # warm-up: kernels loaded, allocator primed
    ts = []
    for _ in range(reps):
        a, b = cupy.cuda.Event(), cupy.cuda.Event()
        a.record()
        fn()
        b.record()
        b.synchronize()
        ts.append(cupy.cuda.get_elapsed_time(a, b))
    return float(np.median(ts)), float(min(ts)), float(max(ts))


sizes = [int(x) for x in args.sizes.split(",")]
variants = [int(v) for v in args.variants.split(",")]
rows, profiles = [], []
for L in sizes:
    t1 = time.time()
    bases, inf = micro.independent_bases(L, 1)
    scalars = micro.random_fr(1 << L, seed=L + 7)
    print(f"2^{L}: bases and scalars in {time.time() - t1:.1f}s; affine choose_window -> "
          f"{plan.choose_window(1 << L, affine=True)}", flush=True)
    ref = None
    for c in (None, 20):
        for variant in variants:
            def call():
                return msm.msm_xyzz(1, bases, inf, scalars, c, bucket_sum="affine", affine_variant=variant)
            try:
                med, lo, hi = timed(call, args.reps)
                got = msm.to_ark(1, cupy.asnumpy(call()))
                st = dict(msm.last_stats)
                ref = got if ref is None else ref
                rows.append((f"2^{L}", str(st.get("c")), str(variant), f"{med:.1f}", f"{lo:.1f}-{hi:.1f}",
                             "yes" if got == ref else "NO", str(st.get("affine_rounds", 0)),
                             str(st.get("quad_rounds", 0)), str(st.get("fallbacks", 0))))
            except Exception as e:                # report and go on: the table is the point
                rows.append((f"2^{L}", str(c), str(variant), "ERROR", f"{type(e).__name__}: {e}"[:60], "", "", "", ""))
            print(rows[-1], flush=True)
    if L == max(sizes):
        for variant in dict.fromkeys(variants):
            m = Marks()
            msm.msm_xyzz(1, bases, inf, scalars, 20, bucket_sum="affine", affine_variant=variant, mark=m)
            profiles.append(f"profile 2^{L} affine c=20 variant {variant}: total {m.total():.1f} ms | "
                            + ", ".join(f"{k}: {v:.1f}" for k, v in m.ms.items()) + f" | {dict(msm.last_stats)}")
            print(profiles[-1], flush=True)
    bases = inf = scalars = None
    cupy.get_default_memory_pool().free_all_blocks()

for p in profiles:
    print(p)
head = ("size", "c", "variant", "median ms", "min-max", "agree", "rounds", "quad kernels", "fallbacks")
print(" | ".join(head))
for r in rows:
    print(" | ".join(r))
sys.exit(rc)
