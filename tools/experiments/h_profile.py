"""Where the H phase's scalars' time goes at 2^L (gpu/h.py, `coeff` and `odd_lagrange`): each step between CUDA
events (h_scalars' mark hook), on fresh random a, b, c (they satisfy no QAP: the degree check is off), after a
warm-up, plus the copy the backend makes of an assignment's a, b, c before the in-place pipeline (F2 spares it in
the pipeline); `coeff` also with F1's fused last scale and bit reversal, and with F1 and N3 (the pointwise passes on
Fr build 6), and with F1, N3 and H2 (no coset NTT of c).

    python3 tools/experiments/h_profile.py [LOG_N ...] [--variant r4b6] [--reps 3]
"""
import argparse
import statistics


from cuzk.gpu import micro
from cuzk.gpu.h import h_scalars
from cuzk.poly import Domain

import msm_profile   # noqa: E402  (the same event marks)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("logs", nargs="*", type=int, default=[24, 27])
    ap.add_argument("--variant", default="r4b6")
    ap.add_argument("--reps", type=int, default=3)
    args = ap.parse_args()
    for L in args.logs:
        n = 1 << L
        src = micro.random_fr(n, batch=3, seed=L).reshape(3, n, 8)
        for conv, fused, pw, sc in (("coeff", False, False, False), ("coeff", True, False, False),
                                    ("coeff", True, True, False), ("coeff", True, True, True),
                                    ("odd_lagrange", False, False, False)):
            runs = []
            for r in range(args.reps + 1):                # the first is the warm-up
                m = msm_profile.Marks()
                abc = src.copy()
                m("a, b, c copy")
                h_scalars(abc, Domain(L, 7), conv, check=False, variant=args.variant, mark=m, fused_tail=fused,
                          pointwise_b6=pw, skip_c=sc)
                del abc
                if r:
                    runs.append((m.total(), m.ms))
            tot = statistics.median(t for t, _ in runs)
            steps = {k: statistics.median(ms[k] for _, ms in runs) for k in runs[0][1]}
            print(f"2^{L} {conv}{' F1' if fused else ''}{' N3' if pw else ''}{' H2' if sc else ''} {args.variant}: total {tot:.1f} ms | "
                  + ", ".join(f"{k}: {v:.1f}" for k, v in steps.items()), flush=True)


if __name__ == "__main__":
    main()
