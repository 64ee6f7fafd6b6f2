"""GPU check of the Montgomery multiplication: the new code (kernels/ff/mul.cuh,
variant 1 = the default and variant 2) and the original CIOS (-DCUZK_MUL_LEGACY), each
against Python big ints, then the throughput of all three with CUDA events.

Needs CuPy and a GPU; nothing from the cuzk package. From the repository root:

    python3 tools/experiments/mul_check.py            # check 2^20 products per field, then time
    python3 tools/experiments/mul_check.py --quick    # 2^16 products, fewer timing repeats
    python3 tools/experiments/mul_check.py --only5    # legacy, fast1, the variant-5 and -6 builds only

Correctness: fp_mul / fr_mul / fp_sqr / fr_sqr on 2^20 fresh random inputs below p
plus edge cases (0, 1, 2, p-1, p-2, (p+-1)/2, all-ones limbs below p, 2^k - 1, p-2^k,
R mod p, ...), every edge case paired with every other; fp2_mul on random inputs;
fp_inv / fr_inv on 2^12 inputs. Each kernel's output is compared with a*b*R^-1 mod p
(the Montgomery product) computed with Python ints, for BOTH variants.
Timing: the fp_mul_bench / fr_mul_bench shape (2^20 threads x 4 independent chains x 256
iterations) and the same work as 4 x 2^20 threads x 1 chain; block sizes 128/256/512;
the median of 5 runs, reported as multiplications per second and as ratios to legacy;
the bench outputs of all variants must also be identical.
Exit status 0 only if every comparison matched.
"""
from __future__ import annotations

import random
import sys
import time
from pathlib import Path

import numpy as np
import cupy

sys.path.insert(0, str(Path(__file__).resolve().parent))
from dfma_check import build as nvrtc_build, from_words, timeit, to_words  # noqa: E402

KERNELS = Path(__file__).resolve().parents[2] / "kernels"
P = 0x1A0111EA397FE69A4B1BA7B6434BACD764774B84F38512BF6730D2A0F6B0F6241EABFFFEB153FFFFB9FEFFFFFFFFAAAB
R = 0x73EDA753299D7D483339D80809A1D80553BDA402FFFE5BFEFFFFFFFF00000001
FIELDS = {"fp": (P, 12), "fr": (R, 8)}


VARIANTS = {                      # name -> extra NVRTC options
    "legacy": ("-DCUZK_MUL_LEGACY",),            # the original CIOS (mad.lo.cc / madc.hi.cc)
    "fast1": ("-DCUZK_FASTMUL_VARIANT=1",),      # the default: wide products absorb t_j
    "fast2": ("-DCUZK_FASTMUL_VARIANT=2",),      # wide products, two carry chains per row
    "fast3": ("-DCUZK_FASTMUL_VARIANT=3",),      # a*b_i rows as 1, m*p rows as 2
    "fast4": ("-DCUZK_FASTMUL_VARIANT=4",),      # a*b_i rows as 2, m*p rows as 1
    "fast5": ("-DCUZK_FASTMUL_VARIANT=5",),      # Fp: one-level Karatsuba (SOS); Fr stays 1
    "fast5m1": ("-DCUZK_FASTMUL_VARIANT=5", "-DCUZK_KARA_ROWS_M=1"),  # same, reduction rows as 1
    "fast5fr": ("-DCUZK_FASTMUL_VARIANT=5", "-DCUZK_FASTMUL_VARIANT_FR=5"),  # Karatsuba for Fr too
    "fast6fp": ("-DCUZK_FASTMUL_VARIANT_FP=6",),  # Fp on the FP64 pipe (52-bit DFMA limbs); Fr stays 1
    "fast6fr": ("-DCUZK_FASTMUL_VARIANT_FR=6",),  # Fr on the FP64 pipe; Fp stays 1
}
if "--only5" in sys.argv:                       # legacy, the default, the variant-5 and variant-6 builds
    VARIANTS = {k: v for k, v in VARIANTS.items()
                if k in ("legacy", "fast1", "fast5", "fast5m1", "fast5fr", "fast6fp", "fast6fr")}


def build(variant: str):
    return nvrtc_build(variant, (KERNELS / "ff/ops.cu").read_text(), VARIANTS[variant])


def edge_cases(p: int, n: int) -> list[int]:
    Rm = 1 << (32 * n)
    s = {0, 1, 2, 3, p - 1, p - 2, p - 3, (p - 1) // 2, (p + 1) // 2, Rm % p, Rm * Rm % p, p - Rm % p}
    top = (p >> (32 * (n - 1))) << (32 * (n - 1))
    s |= {top - 1, top - 2, (top - 1) >> 1, top - 1 - (1 << 31)}      # all-ones low limbs
    for i in range(n - 1):                         # p-1 with one limb forced to all ones
        v = (p - 1) | (0xFFFFFFFF << (32 * i))
        if v >= p:
            v -= 1 << (32 * (n - 1))
        s.add(v)
        s.add(0xFFFFFFFF << (32 * i))
    for k in range(1, 32 * n, 7):
        if (1 << k) < p:
            s |= {(1 << k) - 1, 1 << k, p - (1 << k)}
    return sorted(v for v in s if 0 <= v < p)


def run_binary(fn, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    n = x.shape[0]
    dx, dy = cupy.asarray(x), cupy.asarray(y)
    out = cupy.zeros_like(dx)
    block = 256
    fn(((n + block - 1) // block,), (block,), (out, dx, dy, np.int64(n)))
    return cupy.asnumpy(out)


def run_unary(fn, x: np.ndarray) -> np.ndarray:
    n = x.shape[0]
    dx = cupy.asarray(x)
    out = cupy.zeros_like(dx)
    block = 256
    fn(((n + block - 1) // block,), (block,), (out, dx, np.int64(n)))
    return cupy.asnumpy(out)


def compare(label: str, got: np.ndarray, want: list[int], xs=None, ys=None) -> bool:
    g = from_words(got)
    bad = [i for i in range(len(want)) if g[i] != want[i]]
    if bad:
        i = bad[0]
        extra = f" x={hex(xs[i])}" if xs is not None else ""
        extra += f" y={hex(ys[i])}" if ys is not None else ""
        print(f"  FAIL {label}: {len(bad)}/{len(want)} wrong; first at {i}:{extra} got={hex(g[i])} want={hex(want[i])}")
        return False
    print(f"  ok   {label}: {len(want)} values")
    return True


def check(mod, count: int, rng: random.Random) -> bool:
    ok = True
    for name, (p, n) in FIELDS.items():
        rinv = pow(1 << (32 * n), -1, p)
        edges = edge_cases(p, n)
        xs = [a for a in edges for _ in edges] + [rng.randrange(p) for _ in range(count)]
        ys = [b for _ in edges for b in edges] + [rng.randrange(p) for _ in range(count)]
        got = run_binary(mod.get_function(f"{name}_mul"), to_words(xs, n), to_words(ys, n))
        ok &= compare(f"{name}_mul ({len(edges)}^2 edge pairs + {count} random)", got,
                      [a * b * rinv % p for a, b in zip(xs, ys)], xs, ys)
        got = run_unary(mod.get_function(f"{name}_sqr"), to_words(xs, n))
        ok &= compare(f"{name}_sqr", got, [a * a * rinv % p for a in xs], xs)
        k = 1 << 12
        inv_in = edges + [rng.randrange(p) for _ in range(k)]
        got = run_unary(mod.get_function(f"{name}_inv"), to_words(inv_in, n))
        # raw X represents a = X R^-1; inverse() returns a^-1 in Montgomery form: X^-1 R^2 mod p
        want = []
        for a in inv_in:
            if a == 0:
                want.append(0)
            else:
                want.append(pow(a, -1, p) * pow(1 << (32 * n), 2, p) % p)
        ok &= compare(f"{name}_inv ({len(inv_in)})", got, want, inv_in)
    # Fp2 (Karatsuba over Fp mul): (a0 + a1 u)(b0 + b1 u), u^2 = -1, Montgomery products
    p, n = FIELDS["fp"]
    rinv = pow(1 << (32 * n), -1, p)
    m = 1 << 14
    a0, a1, b0, b1 = ([rng.randrange(p) for _ in range(m)] for _ in range(4))
    X = np.concatenate([to_words(a0, n), to_words(a1, n)], axis=1)
    Y = np.concatenate([to_words(b0, n), to_words(b1, n)], axis=1)
    got = run_binary(mod.get_function("fp2_mul"), X, Y)
    want0 = [(x0 * y0 - x1 * y1) * rinv % p for x0, x1, y0, y1 in zip(a0, a1, b0, b1)]
    want1 = [(x0 * y1 + x1 * y0) * rinv % p for x0, x1, y0, y1 in zip(a0, a1, b0, b1)]
    ok &= compare("fp2_mul c0", got[:, :n], want0)
    ok &= compare("fp2_mul c1", got[:, n:], want1)
    return ok


def bench(mod, field: str, chains: int, block: int, repeat: int) -> tuple[float, np.ndarray | None]:
    """Multiplications per second and the first outputs; (nan, None) when the block does not launch."""
    p, n = FIELDS[field]
    total = 4 * (1 << 20)                    # elements; = 2^20 threads x 4 chains
    threads = total // chains
    fn = mod.get_function(f"{field}_mul_bench" if chains == 4 else f"{field}_mul_bench1")
    g = cupy.random.default_rng(7)
    base = g.integers(0, 2**32, size=(total, n), dtype=cupy.uint64).astype(cupy.uint32)
    base[:, n - 1] &= 0x0FFFFFFF             # below p
    iters = 256
    t, out = timeit(fn, threads // block, block, base, iters, repeat)
    return total * iters / t, (None if out is None else cupy.asnumpy(out[:4096]))


def main() -> int:
    quick = "--quick" in sys.argv
    count = 1 << (16 if quick else 20)
    repeat = 3 if quick else 5
    dev = cupy.cuda.Device()
    print(f"device: {cupy.cuda.runtime.getDeviceProperties(dev.id)['name'].decode()}, sm_{dev.compute_capability}")
    mods = {v: build(v) for v in VARIANTS}
    ok = True
    for v, mod in mods.items():
        print(f"[{v}] correctness", flush=True)
        t0 = time.perf_counter()
        ok &= check(mod, count, random.Random(12345))
        print(f"[{v}] checked in {time.perf_counter() - t0:.0f}s", flush=True)
    print("throughput (multiplications/s, median of %d; 4*2^20 elements x 256 iterations)" % repeat)
    names = list(mods)
    print(f"{'field':<6}{'chains':>7}{'block':>7}" + "".join(f"{v:>12}" for v in names)
          + "".join(f"{v + '/legacy':>15}" for v in names[1:]) + "  same result")
    best = {}
    for field in ("fp", "fr"):
        for chains in (4, 1):
            for block in (128, 256, 512):
                rates, results = {}, {}
                for v in names:
                    rates[v], results[v] = bench(mods[v], field, chains, block, repeat)
                same = all(bool((results[v] == results["legacy"]).all()) for v in names
                           if results[v] is not None and results["legacy"] is not None)
                ok &= same
                for v in names:
                    if results[v] is not None:
                            best[(field, v)] = max(best.get((field, v), 0.0), rates[v])
                print(f"{field:<6}{chains:>7}{block:>7}" + "".join(f"{rates[v]:>12.3e}" for v in names)
                      + "".join(f"{rates[v] / rates['legacy']:>15.2f}" for v in names[1:]) + f"  {same}",
                      flush=True)
    for field in ("fp", "fr"):
        print(f"best {field}: " + ", ".join(f"{v} {best[(field, v)]:.3e}/s" for v in names))
    print("ALL OK" if ok else "MISMATCH FOUND")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
