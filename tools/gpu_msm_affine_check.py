"""Device check of the affine bucket sums and the multi-level window reduction:
`pytest -m gpu tests/gpu/test_gpu_msm.py`, then G1 MSM timings by CUDA events (median of 5 after a
warm-up), XYZZ vs affine bucket sums over several windows, a phase profile at the largest size,
and a table last. Bases: independent random points (micro.independent_bases), random scalars.

    python3 tools/gpu_msm_affine_check.py [--sizes 20,24,26] [--reps 5] [--no-tests]
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
ap.add_argument("--reps", type=int, default=5)
ap.add_argument("--no-tests", action="store_true")
args = ap.parse_args()

rc = 0
if not args.no_tests:
    t0 = time.time()
    rc = subprocess.call([sys.executable, "-m", "pytest", "-q", "-m", "gpu", "tests/gpu/test_gpu_msm.py",
                          "-p", "no:cacheprovider"])
    print(f"pytest -m gpu tests/gpu/test_gpu_msm.py: rc={rc} in {time.time() - t0:.0f}s", flush=True)

import cupy  # noqa: E402
import numpy as np  # noqa: E402

from cuzk import micro_ops as micro  # noqa: E402
from cuzk.gpu.msm import fold  # noqa: E402
from cuzk.gpu.msm import pippenger as msm  # noqa: E402
from cuzk.gpu.msm import plan  # noqa: E402
from msm_profile import profile  # noqa: E402

CONFIGS = [("xyzz", 16, None), ("xyzz", 20, None), ("affine", 16, None), ("affine", 18, None),
           ("affine", 20, None), ("affine", 22, None), ("affine", 20, 1 << 18), ("affine", 20, 1 << 22)]


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


rows = []
for L in [int(x) for x in args.sizes.split(",")]:
    t1 = time.time()
    bases, inf = micro.independent_bases(L, 1)
    scalars = micro.random_fr(1 << L, seed=L + 7)
    print(f"2^{L}: bases and scalars in {time.time() - t1:.1f}s; affine choose_window -> "
          f"{plan.choose_window(1 << L, affine=True)}", flush=True)
    ref = None
    for kind, c, mp in CONFIGS + [("affine", None, None)]:
        def call():
            return msm.msm_xyzz(1, bases, inf, scalars, c, bucket_sum=kind, affine_min_pairs=mp)
        try:
            med, lo, hi = timed(call, args.reps)
            got = fold.to_ark(1, cupy.asnumpy(call()))
            st = dict(msm.last_stats)
            ref = got if ref is None else ref
            rows.append((f"2^{L}", kind, str(st.get("c")), "-" if mp is None else f"2^{mp.bit_length() - 1}",
                         f"{med:.1f}", f"{lo:.1f}-{hi:.1f}", "yes" if got == ref else "NO",
                         str(st.get("affine_rounds", 0)), str(st.get("fallbacks", 0))))
        except Exception as e:                    # report and go on: the table is the point
            rows.append((f"2^{L}", kind, str(c), str(mp), "ERROR", f"{type(e).__name__}: {e}"[:60], "", "", ""))
        print(rows[-1], flush=True)
    if L == max(int(x) for x in args.sizes.split(",")):
        for kind, c in (("xyzz", 16), ("affine", 20), ("affine", plan.choose_window(1 << L, affine=True))):
            total, ms, st = profile(bases, inf, scalars, c, kind)
            print(f"profile 2^{L} {kind} c={c}: total {total:.1f} ms | "
                  + ", ".join(f"{k}: {v:.1f}" for k, v in ms.items()) + f" | {st}", flush=True)
    bases = inf = scalars = None
    cupy.get_default_memory_pool().free_all_blocks()

head = ("size", "sums", "c", "min_pairs", "median ms", "min-max", "agree", "rounds", "fallbacks")
print(" | ".join(head))
for r in rows:
    print(" | ".join(r))
sys.exit(rc)
