"""Device check for GPU part 2: MSM tests and the full GPU pipeline, then MSM timings."""
import subprocess
import sys
import time

t0 = time.time()
rc = subprocess.call([sys.executable, "-m", "pytest", "-q", "-m", "gpu", "-x", "tests/gpu/test_gpu_msm.py", "tests/gpu/test_gpu.py",
                      "-p", "no:cacheprovider"])
print(f"pytest -m gpu: rc={rc} in {time.time() - t0:.0f}s", flush=True)

from cuzk import micro_ops as micro  # noqa: E402
from cuzk.environment import options, table_gib  # noqa: E402

OPTS = options()
from cuzk.gpu.loader import load_times  # noqa: E402

rows = []
for label, make, reps in (("G1 MSM 2^20", lambda: micro.make_msm(20, 1, opts=OPTS, table_gib=table_gib()), 5),
                          ("G1 MSM 2^24", lambda: micro.make_msm(24, 1, opts=OPTS, table_gib=table_gib()), 3),
                          ("G1 MSM 2^26", lambda: micro.make_msm(26, 1, opts=OPTS, table_gib=table_gib()), 3),
                          ("batch add 2^26", lambda: micro.make_batch_add(26, opts=OPTS), 3),
                          ("G2 MSM 2^20", lambda: micro.make_msm(20, 2, opts=OPTS, table_gib=table_gib()), 3),
                          ("G2 MSM 2^24", lambda: micro.make_msm(24, 2, opts=OPTS, table_gib=table_gib()), 2)):
    if len(sys.argv) > 1 and not any(a in label for a in sys.argv[1:]):
        continue
    t1 = time.time()
    try:
        run, _ = make()
        t = micro.median_time(run, repeat=reps)
        rows.append((label, f"{t * 1e3:.1f} ms", f"setup+timing {time.time() - t1:.0f}s"))
    except Exception as e:  # report and go on: the table is the point
        rows.append((label, "ERROR", f"{type(e).__name__}: {e}"[:80]))
    print(rows[-1], flush=True)
print("kernel load times:", {k: round(v, 2) for k, v in load_times.items()})
print(f"{'figure':<18}{'value':>12}  note")
for r in rows:
    print(f"{r[0]:<18}{r[1]:>12}  {r[2]}")
sys.exit(rc)
