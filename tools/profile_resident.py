"""Where a resident proof's time goes on the host: cProfile over a few `Resident.prove` calls on the
snarkjs-bench files (made by `cuzk bench-snarkjs` in WORKDIR), after a warm-up.
    python3 tools/profile_resident.py [LOG_SIZE] [WORKDIR] [BACKEND] [--once]
--once: after the warm-up, one proof between cudaProfilerStart/Stop (for nsys --capture-range=cudaProfilerApi
or ncu --profile-from-start off: tools/nsys_resident.sh), and no cProfile.
"""
import cProfile
import pstats
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from cuzk.cli import bench_snarkjs as sb  # noqa: E402

once = "--once" in sys.argv
args = [a for a in sys.argv[1:] if a != "--once"]
k = int(args[0]) if args else 18
workdir = args[1] if len(args) > 1 else "/tmp/sjb"
backend = args[2] if len(args) > 2 else "cuda"
files = sb.prepare("porep_like", k, workdir, print, keygen_backend=backend)
res = sb.Resident(files, backend)
res.prove()
res.prove()
if once:
    import cupy
    cupy.cuda.Device().synchronize()
    cupy.cuda.runtime.profilerStart()
    dt, ph = res.time()
    cupy.cuda.Device().synchronize()
    cupy.cuda.runtime.profilerStop()
    print(f"one proof {dt * 1e3:.1f} ms: " + ", ".join(
        f"{p} {v['host_s'] * 1e3:.1f}/{(v['device_s'] or 0) * 1e3:.1f}" for p, v in ph.items()))
    sys.exit(0)
t0 = time.perf_counter()
n = 5
prof = cProfile.Profile()
prof.enable()
for _ in range(n):
    res.prove()
prof.disable()
print(f"{n} resident proofs at 2^{k}: {(time.perf_counter() - t0) / n * 1e3:.1f} ms each (under cProfile)")
for _ in range(3):
    dt, ph = res.time()
    print(f"one proof {dt * 1e3:.1f} ms: " + ", ".join(
        f"{p} {v['host_s'] * 1e3:.1f}/{(v['device_s'] or 0) * 1e3:.1f}" for p, v in ph.items()))
st = pstats.Stats(prof)
st.sort_stats("tottime").print_stats(22)
st.sort_stats("cumulative").print_stats(30)
