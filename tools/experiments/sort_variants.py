"""The MSM's bucket sort two ways, timed with CUDA events on keys of its shape (bucket id in the high 32 bits,
index << 1 | sign in the low 32): (a) CuPy's sort of the uint64 keys (what msm_plan.pippenger does: all 64 bits),
(b) cupy.argsort of the 32-bit bucket ids, then a gather of the keys (only the bucket bits sorted).
    python3 tools/experiments/sort_variants.py [LOG_N ...] [--bits B] [--reps R]
"""
import argparse
import statistics

import cupy


def timed(fn, reps):
    out = []
    for _ in range(reps):
        a, b = cupy.cuda.Event(), cupy.cuda.Event()
        a.record()
        r = fn()
        b.record()
        b.synchronize()
        out.append(cupy.cuda.get_elapsed_time(a, b))
    return statistics.median(out), r


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("logs", nargs="*", type=int, default=[26, 28])
    ap.add_argument("--bits", type=int, default=22, help="bucket id bits (c - 1 + log2 windows a pass)")
    ap.add_argument("--reps", type=int, default=5)
    args = ap.parse_args()
    for L in args.logs:
        n = 1 << L
        rs = cupy.random.RandomState(L)
        hi = rs.randint(0, 1 << args.bits, size=n, dtype=cupy.uint64)
        lo = cupy.arange(n, dtype=cupy.uint64) << cupy.uint64(1)
        keys = (hi << cupy.uint64(32)) | lo

        def full():
            k = keys.copy()
            k.sort()
            return k

        def by_bucket():
            b32 = (keys >> cupy.uint64(32)).astype(cupy.uint32)
            return keys[cupy.argsort(b32)]

        ta, a = timed(full, args.reps)
        tb, b = timed(by_bucket, args.reps)
        same = bool(cupy.array_equal(a >> cupy.uint64(32), b >> cupy.uint64(32)))
        same_set = bool(cupy.array_equal(cupy.sort(b), a))
        print(f"2^{L} keys, {args.bits}-bit buckets: uint64 sort {ta:.2f} ms | argsort(uint32) + gather {tb:.2f} ms "
              f"| same bucket order {same}, same keys {same_set}", flush=True)
        keys = hi = lo = a = b = None
        cupy.get_default_memory_pool().free_all_blocks()


if __name__ == "__main__":
    main()
