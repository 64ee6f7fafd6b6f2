"""Small MSMs as a prover runs them (msm_g1 / msm_g2: device windows, host fold), timed by the host clock
over every window size c in a range: the data for a latency-aware window choice (docs/perf-log.md, 2026-11-29:
at 2^18 the window reduction levels, 0.4 ms in G1 and 1.3 ms in G2 each, and the merges are latency chains
that choose_window does not model). Each result is checked against the first c's.

    python3 tools/gpu_msm_small_sweep.py [--sizes 14,16,18] [--cs 5-15] [--reps 7]
"""
import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

ap = argparse.ArgumentParser()
ap.add_argument("--sizes", default="14,16,18")
ap.add_argument("--cs", default="5-15")
ap.add_argument("--reps", type=int, default=7)
ap.add_argument("--groups", default="1,2")
args = ap.parse_args()
lo, hi = (int(v) for v in args.cs.split("-"))

import cupy  # noqa: E402

from cuzk import micro_ops as micro  # noqa: E402
from cuzk.gpu.msm import pippenger as msm  # noqa: E402
from cuzk.gpu.msm import plan  # noqa: E402


def wall(fn, reps):
    fn()
    ts = []
    for _ in range(reps):
        cupy.cuda.Device().synchronize()
        t0 = time.perf_counter()
        fn()                                  # returns a host point: the device work is done
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts) * 1e3


rows = []
for group in (int(g) for g in args.groups.split(",")):
    for L in (int(s) for s in args.sizes.split(",")):
        n = 1 << L
        bases, inf = micro.independent_bases(L, 1) if group == 1 else micro.random_bases(L, group)
        scalars = micro.random_fr(n, seed=L + 3)
        run = msm.msm_g1 if group == 1 else msm.msm_g2
        ref, best = None, None
        chosen = plan.choose_window(n, affine=group == 1)
        for c in range(lo, hi + 1):
            got = run(bases, inf, scalars, c)
            ref = got if ref is None else ref
            ok = got == ref
            ms = wall(lambda: run(bases, inf, scalars, c), args.reps)
            nw = plan.num_windows(c)
            rows.append((group, L, c, ms, len(plan.reduce_levels(nw, 1 << (c - 1))), ok))
            best = (ms, c) if best is None or ms < best[0] else best
            print(f"G{group} 2^{L} c={c:2d}: {ms:7.2f} ms, {rows[-1][4]} reduction levels, same result {ok}",
                  flush=True)
        print(f"G{group} 2^{L}: fastest c={best[1]} ({best[0]:.2f} ms); choose_window gives c={chosen}")
bad = [r for r in rows if not r[5]]
print("ALL SAME" if not bad else f"MISMATCH in {len(bad)} rows")
sys.exit(1 if bad else 0)
