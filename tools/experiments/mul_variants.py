"""Fp/Fr multiplication throughput variants (device experiment; results in docs/perf-log.md)."""
import numpy as np
import cupy
from cuzk.gpu.loader import kernel_dir, arch

src = (kernel_dir() / "ff/ops.cu").read_text()
rows = []
rng = cupy.random.default_rng(1)
for variant, opts in (("volatile", ()), ("plain-asm", ("-DCUZK_ASM=asm",))):
    mod = cupy.RawModule(code=src, options=(f"-arch={arch()}", f"-I{kernel_dir()}", "--std=c++17") + opts)
    for field, words in (("fp", 12), ("fr", 8)):
        for chains, fn in ((4, f"{field}_mul_bench"), (1, f"{field}_mul_bench1")):
            for block in (128, 256, 512):
                threads = (1 << 20) * (4 // chains)
                base = rng.integers(0, 2**32, size=(4 * (1 << 20), words), dtype=cupy.uint64).astype(cupy.uint32)
                base[:, words - 1] &= 0x0FFFFFFF
                data = base.copy()
                f = mod.get_function(fn)
                f((threads // block,), (block,), (data, np.int32(4)))
                res = data.copy()
                a, b = cupy.cuda.Event(), cupy.cuda.Event()
                data = base.copy()
                a.record(); f((threads // block,), (block,), (data, np.int32(256))); b.record(); b.synchronize()
                t = cupy.cuda.get_elapsed_time(a, b) / 1e3
                rows.append((variant, field, chains, block, 4 * (1 << 20) * 256 / t, res))
ref = {}
for v, f, c, bl, rate, res in rows:
    key = (f, c, bl)
    same = "" if key not in ref else ("same" if bool((ref[key] == res).all()) else "DIFFERENT")
    ref.setdefault(key, res)
    print(f"{v:<10} {f} chains={c} block={bl:<4} {rate:.3e}/s {same}")

# NTT 2^27 DIF with each variant of the carry-chain asm, outputs compared
from cuzk.gpu import loader, micro, ntt as G  # noqa: E402
outs = {}
for variant, opts in (("volatile", ()), ("plain-asm", ("-DCUZK_ASM=asm",))):
    loader._modules[("ntt", ())] = cupy.RawModule(code=(kernel_dir() / "ntt/ntt.cu").read_text(),
                                            options=(f"-arch={arch()}", f"-I{kernel_dir()}", "--std=c++17") + opts)
    for L in (24, 27):
        x0 = micro.random_fr(1 << L, seed=L)
        x = x0.copy()
        G.dif(x, L, 7)
        outs.setdefault(L, []).append(x)
        run = lambda loops: micro._events(lambda: G.dif(x0, L, 7), loops)  # noqa: E731
        t = micro.median_time(run, repeat=5)
        print(f"{variant:<10} dif 2^{L}: {t * 1e3:.2f} ms")
for L, xs in outs.items():
    print(f"2^{L} outputs equal: {bool((xs[0] == xs[1]).all())}")
