"""Device time of each pass of one NTT (CUDA events around each kernel launch), the median of REPS runs after a
warm-up: where a transform's time goes, pass by pass.
    python3 tools/experiments/ntt_pass_times.py [K] [VARIANT ...] [--reps N] [--natural]
--natural: ntt.dif(..., out=) (N10: the last pass writes natural order).
"""
import argparse
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import cupy  # noqa: E402

from cuzk.gpu import micro, ntt  # noqa: E402


def timed_kernels(events):
    """loader.kernel as ntt.py calls it, each launch between two recorded events."""
    def kernel(*a, **k):
        f = _real(*a, **k)

        class Timed:
            def __call__(self, *args, **kw):
                e0, e1 = cupy.cuda.Event(), cupy.cuda.Event()
                e0.record()
                f(*args, **kw)
                e1.record()
                events.append((e0, e1))

            def __setattr__(self, name, value):
                setattr(f, name, value)
        return Timed()
    return kernel


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("log_n", type=int, nargs="?", default=27)
    ap.add_argument("variants", nargs="*", default=["r4b6dts"])
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--natural", action="store_true")
    args = ap.parse_args()
    L = args.log_n
    x = micro.random_fr(1 << L, seed=L)
    print("passes (log_sub, k, log_c):", ntt.plan(L))
    for v in args.variants:
        rows = []
        for r in range(args.reps + 1):
            events = []
            ntt.kernel = timed_kernels(events)
            try:
                out = cupy.empty_like(x) if args.natural else None
                ntt.dif(x, L, variant=v, out=out)
            finally:
                ntt.kernel = _real
            cupy.cuda.Device().synchronize()
            if r:
                rows.append([cupy.cuda.get_elapsed_time(a, b) for a, b in events])
        med = [statistics.median(c) for c in zip(*rows)]
        print(f"{v}{' natural' if args.natural else ''}: " + " + ".join(f"{t:.3f}" for t in med)
              + f" = {sum(med):.3f} ms (median of {args.reps})")


_real = ntt.kernel
if __name__ == "__main__":
    main()
