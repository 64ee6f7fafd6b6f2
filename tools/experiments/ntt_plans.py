"""Pass plans of the natural-order NTT (ntt.PLAN_KS): each plan's output checked against the default plan's, then
every plan timed (CUDA events around each pass), the plans interleaved over REPS rounds after a warm-up round.
    python3 tools/experiments/ntt_plans.py K PLAN [PLAN ...] [--variants V,V...] [--reps N]
PLAN: pass sizes in DIF order, e.g. 10,10,7; "-" is the default plan. The reference is the radix-2 kernel's.
"""
import argparse
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import cupy  # noqa: E402

from cuzk.gpu import micro, ntt  # noqa: E402
from ntt_pass_times import _real, timed_kernels  # noqa: E402


def run(x0, L, variant, ks, out):
    ntt.PLAN_KS.pop(L, None)
    if ks:
        ntt.PLAN_KS[L] = ks
    x = x0.copy()
    events = []
    ntt.kernel = timed_kernels(events)
    try:
        ntt.dif(x, L, variant=variant, out=out)
    finally:
        ntt.kernel = _real
        ntt.PLAN_KS.pop(L, None)
    return events


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("log_n", type=int)
    ap.add_argument("plans", nargs="+")
    ap.add_argument("--variants", default="r4b6dts")
    ap.add_argument("--reps", type=int, default=5)
    args = ap.parse_args()
    L = args.log_n
    plans = [None if p == "-" else tuple(int(k) for k in p.split(",")) for p in args.plans]
    cases = [(v, ks) for v in args.variants.split(",") for ks in plans]
    x0 = micro.random_fr(1 << L, seed=L + 1)
    ref = ntt.dif(x0.copy(), L, variant="r2")            # radix-2 kernel (ntt/ntt.cu), bit-reversed out
    ref = ntt.bit_reverse(ref, L)
    out = cupy.empty_like(x0)
    ok = {}
    for c in cases:                        # the check doubles as the warm-up (tables built)
        out.fill(0xDEADBEEF)
        run(x0, L, c[0], c[1], out)
        ok[c] = bool(cupy.array_equal(out, ref))
    times = {c: [] for c in cases}
    for _ in range(args.reps):
        for c in cases:
            ev = run(x0, L, c[0], c[1], out)
            cupy.cuda.Device().synchronize()
            times[c].append([cupy.cuda.get_elapsed_time(a, b) for a, b in ev])
    print(f"2^{L}, median of {args.reps} (ms)")
    print("| variant | plan | passes (log_sub, k, log_c) | equal | per pass | sum |")
    print("|---|---|---|---|---|---|")
    for c in cases:
        v, ks = c
        if ks:
            ntt.PLAN_KS[L] = ks
        p = ntt.variant_plan(v, L)
        ntt.PLAN_KS.pop(L, None)
        med = [statistics.median(col) for col in zip(*times[c])]
        tot = statistics.median(sum(r) for r in times[c])
        print(f"| {v} | {','.join(str(k) for _, k, _ in p)} | {p} | {ok[c]} | {' + '.join(f'{m:.2f}' for m in med)} "
              f"| **{tot:.2f}** |")

if __name__ == "__main__":
    main()
