"""Device check: the GPU tests, then CUDA-event timings as a short table (docs/perf-log.md)."""
import subprocess
import sys
import time

t0 = time.time()
rc = subprocess.call([sys.executable, "-m", "pytest", "-q", "-m", "gpu", "-x", "tests/gpu/test_gpu.py", "-p", "no:cacheprovider"])
print(f"pytest -m gpu: rc={rc} in {time.time() - t0:.0f}s", flush=True)

from cuzk import micro_ops as micro  # noqa: E402
from cuzk.environment import options  # noqa: E402

OPTS = options()
from cuzk.gpu.loader import load_times  # noqa: E402

rows = []
for field in ("fp", "fr"):
    run, work = micro.make_mul(field)
    t = micro.median_time(run)
    rows.append((f"{field} mul", f"{work / t:.3e} /s", f"{work / t / 2.8e10:.2f} of 2.8e10" if field == "fp" else ""))
for L in [int(a) for a in (sys.argv[1:] or ["20", "24", "27"])]:
    for kind in ("dif", "ntt"):
        run, _ = micro.make_ntt(L, kind, opts=OPTS)
        t = micro.median_time(run, repeat=5)
        floor = 0.030 * (2**L * L) / (2**27 * 27)           # the NTT floor (docs/architecture.md, Targets) scaled by n log n
        rows.append((f"{kind} 2^{L}", f"{t * 1e3:.2f} ms", f"{t / floor:.2f}x the floor ({floor * 1e3:.1f} ms)"))
    if L >= 24:
        for conv in ("coeff", "odd_lagrange"):
            run, _ = micro.make_h(L, conv, opts=OPTS)
            t = micro.median_time(run, repeat=3)
            rows.append((f"H {conv} 2^{L}", f"{t * 1e3:.2f} ms", ""))
run, nnz = micro.make_spmv(20)
t = micro.median_time(run)
rows.append(("spmv porep 2^20", f"{t * 1e3:.2f} ms", f"{nnz} nnz"))
print("kernel load times:", {k: round(v, 2) for k, v in load_times.items()})
print(f"{'figure':<22}{'value':>16}  note")
for r in rows:
    print(f"{r[0]:<22}{r[1]:>16}  {r[2]}")
sys.exit(rc)
