"""Where a G1 MSM's time goes: each step of msm_plan.pippenger timed with CUDA events."""
import sys

import cupy

from cuzk.gpu import micro, msm, msm_plan as plan

def ev():
    e = cupy.cuda.Event(); e.record(); return e

for L in [int(a) for a in sys.argv[1:]] or [24, 26]:
    bases, inf = micro.random_bases(L, 1)
    scalars = micro.random_fr(1 << L, seed=3)
    msm.msm_xyzz(1, bases, inf, scalars)          # warm-up
    for c in sorted({plan.choose_window(1 << L), 13, 16}):
        k = msm._Kernels(1, bases, inf, scalars)
        n, nw, B = 1 << L, plan.num_windows(c), 1 << (c - 1)
        T, log_l = plan.chunks(c)
        t = {}
        def add(name, a, b):
            b.synchronize(); t[name] = t.get(name, 0) + cupy.cuda.get_elapsed_time(a, b)
        e0 = ev()
        window_sums = k.alloc(nw)
        for w0, w1 in plan.window_passes(n, nw, 1 << 28):
            nwp = w1 - w0; nb = nwp * B
            a = ev(); keys = k.digits(c, w0, w1); b = ev(); add("digits", a, b)
            a = ev(); keys.sort(); b = ev(); add("sort", a, b)
            a = ev(); offsets = plan.bucket_offsets(keys, nb, cupy)
            S = plan.first_segment_size(int(offsets[-1]), nb)
            seg_first, seg_bucket, total = plan.segment_plan(offsets, S, cupy); b = ev(); add("plan", a, b)
            a = ev(); partials = k.sum_affine(keys, seg_bucket, seg_first, offsets, S, total); b = ev(); add("bucket sums", a, b)
            del keys
            a = ev()
            while total > nb:
                offsets = seg_first
                seg_first, seg_bucket, total = plan.segment_plan(offsets, plan.MERGE_S, cupy)
                partials = k.sum_xyzz(partials, seg_bucket, seg_first, offsets, plan.MERGE_S, total)
            b = ev(); add("merge", a, b)
            a = ev(); cs, ct = k.window_chunks(partials, nwp, B, T); b = ev(); add("window chunks", a, b)
            a = ev(); k.window_final(window_sums, cs, ct, nwp, T, log_l, w0); b = ev(); add("window final", a, b)
        a = ev(); k.combine(window_sums, nw, c); b = ev(); add("combine", a, b)
        e1 = ev(); e1.synchronize()
        total_ms = cupy.cuda.get_elapsed_time(e0, e1)
        print(f"2^{L} c={c} windows={nw}: total {total_ms:.1f} ms | " +
              ", ".join(f"{k_}: {v:.1f}" for k_, v in t.items()), flush=True)
    # the sort alone, by key width
    for dt in (cupy.uint64, cupy.uint32):
        x = cupy.random.default_rng(1).integers(0, 2**31, size=1 << min(L + 2, 28), dtype=cupy.int64).astype(dt)
        a = ev(); x.sort(); b = ev(); b.synchronize()
        print(f"sort 2^{min(L + 2, 28)} {dt.__name__}: {cupy.cuda.get_elapsed_time(a, b):.1f} ms")
