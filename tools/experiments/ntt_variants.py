"""NTT pass variants (device experiment): launch bounds / occupancy. Outputs compared to the default."""
import cupy
from cuzk.gpu import loader, micro, ntt as G
from cuzk.gpu.loader import arch, kernel_dir

src = (kernel_dir() / "ntt.cu").read_text()
variants = {"512x1 (default)": src,
            "512x2 (64 regs, small spills)": src.replace("__launch_bounds__(512)", "__launch_bounds__(512, 2)")}
outs = {}
for name, code in variants.items():
    loader._modules["ntt"] = cupy.RawModule(code=code, options=(f"-arch={arch()}", f"-I{kernel_dir()}", "--std=c++17"))
    for L in (24, 27):
        x0 = micro.random_fr(1 << L, seed=L)
        x = x0.copy()
        G.dif(x, L, 7)
        outs.setdefault(L, []).append(x)
        t = micro.median_time(lambda loops: micro._events(lambda: G.dif(x0, L, 7), loops), repeat=5)
        print(f"{name:<32} dif 2^{L}: {t * 1e3:.2f} ms")
for L, xs in outs.items():
    print(f"2^{L} outputs equal: {all(bool((xs[0] == x).all()) for x in xs[1:])}")
loader._modules.pop("ntt")
