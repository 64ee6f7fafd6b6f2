"""Where a G1 MSM's time goes: each step of msm_plan.pippenger between CUDA events (its mark hook).

    python3 tools/experiments/msm_profile.py [LOG_N ...] [--affine] [--c C ...] [--pairs both|on|off]
        [--kernels SET ...] [--variants V ...] [--reps N] [--distinct-log D] [--profiler-range]
--pairs: the window reduction by pair levels and the merges by pairs (R1 and R2 together) on, off, or both.
--kernels: the MSM kernels' toggles (msm.KERNEL_OPTS) per setting, comma-separated ("none": neither; default:
the registry's), run interleaved; --variants: affine round kernels (msm_plan.AFFINE_VARIANTS), interleaved
too; --reps: rounds of every setting, then the median total of each; --distinct-log D: 2^D independent bases,
tiled (copies of a base in one bucket can meet as P + P: a degenerate round, the pass redone in XYZZ).
"""
import argparse
import statistics

import cupy

from cuzk.gpu import micro, msm, msm_plan as plan


class Marks:
    """pippenger's mark(name): an event after each step; ms per step name, summed over passes."""

    def __init__(self):
        self.last = self._ev()
        self.first = self.last
        self.ms = {}

    @staticmethod
    def _ev():
        e = cupy.cuda.Event()
        e.record()
        return e

    def __call__(self, name):
        e = self._ev()
        e.synchronize()
        self.ms[name] = self.ms.get(name, 0.0) + cupy.cuda.get_elapsed_time(self.last, e)
        self.last = e

    def total(self):
        return cupy.cuda.get_elapsed_time(self.first, self.last)


def profile(bases, inf, scalars, c, bucket_sum, min_pairs=None, pair_levels=False, kernel_opts=(), variant=None,
            max_entries=None):
    m = Marks()
    msm.msm_xyzz(1, bases, inf, scalars, c, max_entries=max_entries, bucket_sum=bucket_sum, affine_min_pairs=min_pairs,
                 mark=m, pair_levels=pair_levels, pair_merges=pair_levels, kernel_opts=kernel_opts,
                 affine_variant=variant)
    return m.total(), m.ms, dict(msm.last_stats)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("logs", nargs="*", type=int, default=[24, 26])
    ap.add_argument("--affine", action="store_true")
    ap.add_argument("--c", type=int, nargs="*", default=None)
    ap.add_argument("--pairs", choices=["both", "on", "off"], default="off")
    ap.add_argument("--kernels", nargs="*", default=None)
    ap.add_argument("--variants", type=int, nargs="*", default=None)
    ap.add_argument("--reps", type=int, default=1)
    ap.add_argument("--max-entries", type=int, nargs="*", default=[0],
                    help="keys a sort pass may hold (msm_xyzz's max_entries; 0: the registry's, from free memory under "
                         "K6; several: alternated like --kernels)")
    ap.add_argument("--distinct-log", type=int, default=24,
                    help="independent bases 2^D, tiled to 2^LOG_N (micro.independent_bases; default 24)")
    ap.add_argument("--profiler-range", action="store_true",
                    help="instead of the steps: one plain MSM per c inside cudaProfilerStart/Stop (nsys "
                         "--capture-range=cudaProfilerApi), its event time printed: the kernels' sum against it "
                         "is the host's share")
    args = ap.parse_args()
    choice = {"both": [False, True], "on": [True], "off": [False]}
    pairs = choice[args.pairs]
    sqrs = [frozenset(o for o in k.split(",") if o and o != "none") for k in args.kernels] if args.kernels \
        else [msm.DEFAULT_KERNEL_OPTS]
    kind = "affine" if args.affine else "xyzz"
    for L in args.logs:
        bases, inf = micro.independent_bases(L, 1, distinct_log=args.distinct_log)
        scalars = micro.random_fr(1 << L, seed=3)
        variants = args.variants or [None]
        for sq in sqrs:
            for v in variants:
                for me in args.max_entries:         # warm-up (the pool grows to each pass size once)
                    msm.msm_xyzz(1, bases, inf, scalars, bucket_sum=kind, kernel_opts=sq, affine_variant=v,
                                 max_entries=me or None)
        for c in args.c or sorted({plan.choose_window(1 << L, affine=args.affine), 16, 20}):
            if args.profiler_range:
                a, b = cupy.cuda.Event(), cupy.cuda.Event()
                cupy.cuda.profiler.start()
                a.record()
                msm.msm_xyzz(1, bases, inf, scalars, c, bucket_sum=kind, kernel_opts=sqrs[0],
                             pair_levels=pairs[0], pair_merges=pairs[0])
                b.record()
                b.synchronize()
                cupy.cuda.profiler.stop()
                print(f"2^{L} c={c} profiled MSM: {cupy.cuda.get_elapsed_time(a, b):.1f} ms (events)", flush=True)
                continue
            totals = {}
            for _ in range(args.reps):
                for pl in pairs:
                    for sq in sqrs:
                        for var in variants:
                            for me in args.max_entries:
                                total, ms, st = profile(bases, inf, scalars, c, kind, pair_levels=pl, kernel_opts=sq,
                                                        variant=var, max_entries=me or None)
                                totals.setdefault((pl, sq, var, me), []).append(total)
                                print(f"2^{L} {kind} c={c} R1+R2={'on' if pl else 'off'} "
                                      f"kernels={','.join(sorted(sq)) or 'none'} variant={st['affine_variant']} "
                                      f"windows/pass={st.get('max_entries', 0) >> L}"
                                      + (f" max_entries={me}" if len(args.max_entries) > 1 else "") + ": "
                                      f"total {total:.1f} ms | " + ", ".join(f"{k}: {v:.1f}" for k, v in ms.items())
                                      + f" | {st}", flush=True)
            if args.reps > 1:
                for (pl, sq, var, me), v in totals.items():
                    print(f"2^{L} c={c} R1+R2={'on' if pl else 'off'} kernels={','.join(sorted(sq)) or 'none'} "
                          f"variant={var or 'default'}" + (f" max_entries={me}" if len(args.max_entries) > 1 else "")
                          + f": median {statistics.median(v):.1f} ms of {len(v)} ({min(v):.1f}-{max(v):.1f})",
                          flush=True)

if __name__ == "__main__":
    main()
