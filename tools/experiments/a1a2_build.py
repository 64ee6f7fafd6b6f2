"""Host-only: porep_like builds (the generic ConstraintSystem) with A1/A2 off and on, alternating order.
    python tools/experiments/a1a2_build.py LOG_SIZE REPEATS
"""
import sys, time, statistics
from cuzk import circuits
from cuzk.opts import resolve
k = int(sys.argv[1]); reps = int(sys.argv[2])
circuits.build("porep_like", 16, opts=resolve("none", env=False))
res = {s: [] for s in ("none", "none,+A1", "none,+A2", "none,+A1,+A2")}
for r in range(reps):
    for spec in (list(res) if r % 2 == 0 else list(res)[::-1]):
        t = time.perf_counter(); circuits.build("porep_like", k, opts=resolve(spec, env=False)); res[spec].append(time.perf_counter() - t)
for s, v in res.items():
    print(f"{s:14s} median {statistics.median(v):.2f} s  {['%.2f' % x for x in v]}")
