"""GPU check and throughput of the DFMA-limb Montgomery multiplication (kernels/ff/mul_dfma.cuh),
next to the current default (kernels/ff/mul.cuh, variant 1) built in the same run.

Needs CuPy (NVRTC) and numpy only; nothing from the cuzk package. From the repository root:

    python3 tools/experiments/dfma_check.py            # 2^20 random products per field + edge pairs, then time
    python3 tools/experiments/dfma_check.py --quick    # 2^16 products, 3 timing repeats
    python3 tools/experiments/dfma_check.py --fields fr  # time Fr only

(a) Correctness, Fp and Fr: dfma_{fp,fr}_check (tools/experiments/dfma_bench.cu) on every pair of edge cases
    plus 2^20 random pairs below p and 2^17 pairs below 2p (the lazy input range): the lazy mont_mul
    output must be < 2p and == a*b*R'^-1 mod p (R' = 2^416 / 2^260), the canonical one equal to it
    exactly, and from_mont(to_mont(a)) == a. The 1-chain benchmark outputs are also checked
    (x_256 = y^257 R'^-256 mod p) for 4096 elements.
(b) Throughput: x = x*y, 256 dependent iterations per chain, 4*2^20 elements as 1 chain per thread
    (4*2^20 threads) and 4 chains per thread (2^20 threads), block sizes 128/256/512, CUDA events,
    median of 5; multiplications per second for dfma lazy, dfma canonical and fastmul variant 1
    (ff/ops.cu fp_mul_bench / fr_mul_bench and the 1-chain fp_mul_bench1 / fr_mul_bench1).
Prints ALL OK and exits 0 only if every comparison matched.
"""
from __future__ import annotations

import random
import sys
import time
from pathlib import Path

import numpy as np
import cupy

ROOT = Path(__file__).resolve().parents[2]
KERNELS = ROOT / "kernels"
P = 0x1A0111EA397FE69A4B1BA7B6434BACD764774B84F38512BF6730D2A0F6B0F6241EABFFFEB153FFFFB9FEFFFFFFFFAAAB
R = 0x73EDA753299D7D483339D80809A1D80553BDA402FFFE5BFEFFFFFFFF00000001
FIELDS = {"fp": (P, 8, 12), "fr": (R, 5, 8)}      # name -> (modulus, 52-bit limbs L, 32-bit words)
M52 = (1 << 52) - 1


def build(name: str, src: str, extra=()):
    cc = cupy.cuda.Device().compute_capability
    opts = (f"-arch=sm_{cc}", f"-I{KERNELS}", "--std=c++17", "-default-device") + tuple(extra)
    t0 = time.perf_counter()
    mod = cupy.RawModule(code=src, options=opts, backend="nvrtc")
    mod.compile()
    print(f"built {name} in {time.perf_counter() - t0:.1f}s", flush=True)
    return mod


def to_words(vals: list[int], n: int) -> np.ndarray:
    buf = b"".join(v.to_bytes(4 * n, "little") for v in vals)
    return np.frombuffer(buf, dtype="<u4").reshape(len(vals), n).copy()


def from_words(a: np.ndarray) -> list[int]:
    a = np.ascontiguousarray(a, dtype="<u4")
    raw, w = a.tobytes(), 4 * a.shape[1]
    return [int.from_bytes(raw[i * w:(i + 1) * w], "little") for i in range(a.shape[0])]


def from_limbs52(a: np.ndarray) -> list[int]:
    u = a.astype(np.uint64)
    return [sum(int(u[i, k]) << (52 * k) for k in range(u.shape[1])) for i in range(u.shape[0])]


def edge_cases(p: int, L: int, n32: int) -> list[int]:
    Rp = 1 << (52 * L)
    s = {0, 1, 2, 3, p - 1, p - 2, p - 3, (p - 1) // 2, (p + 1) // 2, Rp % p, Rp * Rp % p, p - Rp % p,
         pow(Rp, -1, p), 2 ** 52 - 1, 2 ** 52, 2 ** 52 + 1}
    top = (p >> (52 * (L - 1))) << (52 * (L - 1))
    s |= {top - 1, top - 2, (top - 1) >> 1, top - 1 - (1 << 51)}      # all lower 52-bit limbs at maximum
    for i in range(L - 1):
        v = (p - 1) | (M52 << (52 * i))
        if v >= p:
            v -= 1 << (52 * (L - 1))
        s |= {v, M52 << (52 * i)}
    for i in range(n32):
        s.add(0xFFFFFFFF << (32 * i))
    for k in range(1, p.bit_length(), 5):
        s |= {(1 << k) - 1, 1 << k, (1 << k) + 1, p - (1 << k)}
    return sorted(v for v in s if 0 <= v < p)


def check(mod, count: int, rng: random.Random) -> bool:
    ok = True
    for name, (p, L, n32) in FIELDS.items():
        rinv = pow(1 << (52 * L), -1, p)
        edges = edge_cases(p, L, n32)
        xs = [a for a in edges for _ in edges] + [rng.randrange(p) for _ in range(count)] \
            + [rng.randrange(2 * p) for _ in range(count // 8)]
        ys = [b for _ in edges for b in edges] + [rng.randrange(p) for _ in range(count)] \
            + [rng.randrange(2 * p) for _ in range(count // 8)]
        n = len(xs)
        da, db = cupy.asarray(to_words(xs, n32)), cupy.asarray(to_words(ys, n32))
        lazy, canon, trip = (cupy.full((n, n32), 0xA5A5A5A5, dtype=cupy.uint32) for _ in range(3))   # poisoned
        block = 256
        mod.get_function(f"dfma_{name}_check")(((n + block - 1) // block,), (block,),
                                               (lazy, canon, trip, da, db, np.int64(n)))
        cupy.cuda.runtime.deviceSynchronize()
        lz, cn, tr = (from_words(cupy.asnumpy(t)) for t in (lazy, canon, trip))
        bad = {"lazy": [], "canon": [], "trip": []}
        for i in range(n):
            want = xs[i] * ys[i] * rinv % p
            if lz[i] >= 2 * p or lz[i] % p != want:
                bad["lazy"].append(i)
            if cn[i] != want:
                bad["canon"].append(i)
            if tr[i] != xs[i] % p:
                bad["trip"].append(i)
        for k, v in bad.items():
            if v:
                i = v[0]
                print(f"  FAIL {name} {k}: {len(v)}/{n} wrong; first x={xs[i]:#x} y={ys[i]:#x} "
                      f"lazy={lz[i]:#x} canon={cn[i]:#x} trip={tr[i]:#x}")
                ok = False
        if not any(bad.values()):
            print(f"  ok   {name}: {n} products ({len(edges)}^2 edge pairs, {count} random < p, {count // 8} < 2p): "
                  f"lazy < 2p and correct, canonical exact, to/from_mont round trip")
    return ok


def random_elems52(field: str, total: int, seed: int) -> cupy.ndarray:
    """total random elements below p as 52-bit limbs in float64 (top limb below p's top limb)."""
    p, L, _ = FIELDS[field]
    g = np.random.default_rng(seed)
    a = g.integers(0, 1 << 52, size=(total, L), dtype=np.uint64)
    a[:, L - 1] = g.integers(0, p >> (52 * (L - 1)), size=total, dtype=np.uint64)
    return cupy.asarray(a.astype(np.float64))


def random_words(field: str, total: int, seed: int) -> cupy.ndarray:
    p, _, n32 = FIELDS[field]
    g = cupy.random.default_rng(seed)
    a = g.integers(0, 2 ** 32, size=(total, n32), dtype=cupy.uint64).astype(cupy.uint32)
    a[:, n32 - 1] = a[:, n32 - 1] % cupy.uint32((p >> (32 * (n32 - 1))))        # below p
    return a


def timeit(fn, grid, block, base, iters, repeat) -> tuple[float, cupy.ndarray | None]:
    """Median seconds and the output; (nan, None) when the block does not launch (too many registers)."""
    data = base.copy()
    try:
        fn((grid,), (block,), (data, np.int32(iters)))        # warm-up; its output is the result
    except cupy.cuda.driver.CUDADriverError as e:
        if "OUT_OF_RESOURCES" not in str(e):
            raise
        return float("nan"), None
    result = data
    times = []
    for _ in range(repeat):
        data = base.copy()
        a, b = cupy.cuda.Event(), cupy.cuda.Event()
        a.record()
        fn((grid,), (block,), (data, np.int32(iters)))
        b.record()
        b.synchronize()
        times.append(cupy.cuda.get_elapsed_time(a, b) / 1e3)
    return sorted(times)[len(times) // 2], result


def check_chain(field: str, base: cupy.ndarray, out: cupy.ndarray, iters: int, lazy: bool) -> bool:
    """1-chain bench: x_0 = y, x_{k+1} = x_k y R'^-1  =>  x_iters = y^(iters+1) R'^-iters."""
    p, L, _ = FIELDS[field]
    rinv_k = pow(pow(1 << (52 * L), -1, p), iters, p)
    ys = from_limbs52(cupy.asnumpy(base[:4096]))
    got = from_limbs52(cupy.asnumpy(out[:4096]))
    for y, g in zip(ys, got):
        want = pow(y, iters + 1, p) * rinv_k % p
        if (g % p != want or g >= 2 * p) if lazy else g != want:
            print(f"  FAIL {field} bench output: y={y:#x} got={g:#x} want={want:#x}")
            return False
    return True


def main() -> int:
    quick = "--quick" in sys.argv
    count = 1 << (16 if quick else 20)
    repeat = 3 if quick else 5
    dev = cupy.cuda.Device()
    print(f"device: {cupy.cuda.runtime.getDeviceProperties(dev.id)['name'].decode()}, sm_{dev.compute_capability}")
    dmod = build("dfma", (ROOT / "tools/experiments/dfma_bench.cu").read_text())
    fmod = build("fastmul variant 1", (KERNELS / "ff/ops.cu").read_text(), ("-DCUZK_FASTMUL_VARIANT=1",))
    print("[dfma] correctness", flush=True)
    t0 = time.perf_counter()
    ok = check(dmod, count, random.Random(20261201))
    print(f"[dfma] checked in {time.perf_counter() - t0:.0f}s", flush=True)

    iters, total = 256, 4 * (1 << 20)
    print(f"throughput (multiplications/s, median of {repeat}; {total} elements x {iters} dependent iterations)")
    cols = ("dfma", "dfma_canon", "fast1")
    print(f"{'field':<6}{'chains':>7}{'block':>7}" + "".join(f"{c:>13}" for c in cols) + f"{'dfma/fast1':>12}{'canon/fast1':>12}")
    best = {}
    fields = sys.argv[sys.argv.index("--fields") + 1].split(",") if "--fields" in sys.argv else ["fp", "fr"]
    for field in fields:
        base52 = random_elems52(field, total, 7)
        base32 = random_words(field, total, 7)
        for chains in (1, 4):
            threads = total // chains
            for block in (128, 256, 512):
                rates = {}
                for c in cols:
                    if c == "fast1":
                        fn = fmod.get_function(f"{field}_mul_bench1" if chains == 1 else f"{field}_mul_bench")
                        base = base32
                    else:
                        sfx = ("1" if chains == 1 else "4") + ("c" if c == "dfma_canon" else "")
                        fn = dmod.get_function(f"dfma_{field}_bench{sfx}")
                        base = base52
                    t, out = timeit(fn, threads // block, block, base, iters, repeat)
                    rates[c] = total * iters / t                  # nan: the block did not launch
                    if out is not None:
                        best[(field, c)] = max(best.get((field, c), 0.0), rates[c])
                    if out is not None and c != "fast1" and chains == 1 and block == 256:
                        ok &= check_chain(field, base, out, iters, lazy=(c == "dfma"))
                print(f"{field:<6}{chains:>7}{block:>7}" + "".join(f"{rates[c]:>13.3e}" for c in cols)
                      + f"{rates['dfma'] / rates['fast1']:>12.2f}{rates['dfma_canon'] / rates['fast1']:>12.2f}",
                      flush=True)
    for field in fields:
        print(f"best {field}: " + ", ".join(f"{c} {best[(field, c)]:.3e}/s" for c in cols)
              + f"  (dfma/fast1 {best[(field, 'dfma')] / best[(field, 'fast1')]:.2f}x)")
    print("ALL OK" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
