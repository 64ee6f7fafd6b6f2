"""Where a resident proof's time goes on the host: cProfile over a few `Resident.prove` calls on the
snarkjs-bench files (made by `cuzk bench-snarkjs` in WORKDIR), after a warm-up.
    python3 tools/experiments/profile_resident.py [LOG_SIZE] [WORKDIR] [BACKEND]
"""
import cProfile
import pstats
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from cuzk import snarkjs_bench as sb  # noqa: E402

k = int(sys.argv[1]) if len(sys.argv) > 1 else 18
workdir = sys.argv[2] if len(sys.argv) > 2 else "/tmp/sjb"
backend = sys.argv[3] if len(sys.argv) > 3 else "cuda"
files = sb.prepare("porep_like", k, workdir, print, keygen_backend=backend)
res = sb.Resident(files, backend)
res.prove()
res.prove()
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
