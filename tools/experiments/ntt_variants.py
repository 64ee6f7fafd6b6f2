"""NTT pass variants (device experiment): multiplication builds. Outputs compared to the first."""
import cupy
from cuzk.gpu import loader, micro, ntt as G
from cuzk.gpu.loader import arch, kernel_dir

src = (kernel_dir() / "ntt/ntt.cu").read_text()
variants = {"legacy CIOS": ("-DCUZK_MUL_LEGACY",), "fast mul v1": ("-DCUZK_FASTMUL_VARIANT=1",),
            "fast mul v2": ("-DCUZK_FASTMUL_VARIANT=2",)}
outs = {}
for name, opts in variants.items():
    loader._modules[("ntt", ())] = cupy.RawModule(code=src, options=(f"-arch={arch()}", f"-I{kernel_dir()}", "--std=c++17") + opts)
    for L in (24, 27):
        x0 = micro.random_fr(1 << L, seed=L)
        x = x0.copy()
        G.dif(x, L, 7)
        outs.setdefault(L, []).append(x)
        t = micro.median_time(lambda loops: micro._events(lambda: G.dif(x0, L, 7), loops), repeat=5)
        print(f"{name:<14} dif 2^{L}: {t * 1e3:.2f} ms")
for L, xs in outs.items():
    print(f"2^{L} outputs equal: {all(bool((xs[0] == x).all()) for x in xs[1:])}")
loader._modules.pop("ntt")
