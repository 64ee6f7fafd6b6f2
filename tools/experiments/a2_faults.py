# A2 (pre-sized witness vectors) and page faults: porep_like builds of 10 circuits in 10 threads, A2 on/off
# alternating, wall time and minor page faults (getrusage) per batch.  python tools/experiments/a2_faults.py K REPEATS
import resource, time, statistics, sys
from concurrent.futures import ThreadPoolExecutor
from cuzk.opts import resolve
from cuzk import circuits
K = int(sys.argv[1]); N = 10; REP = int(sys.argv[2])
res = {"A2 off": [], "A2 on": []}
pool = ThreadPoolExecutor(N)
for r in range(REP):
    for lab, spec in (("A2 off", "none"), ("A2 on", "none,+A2")) if r % 2 == 0 else (("A2 on", "none,+A2"), ("A2 off", "none")):
        o = resolve(spec, env=False)
        f0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt; t0 = time.perf_counter()
        list(pool.map(lambda s: circuits.build("porep_like", K, opts=o, seed=s), range(1, N + 1)))
        res[lab].append((time.perf_counter() - t0, resource.getrusage(resource.RUSAGE_SELF).ru_minflt - f0))
for lab, v in res.items():
    print(f"2^{K} x{N} threads {lab}: wall median {statistics.median(t for t, _ in v):.2f} s "
          f"(samples {', '.join(f'{t:.2f}' for t, _ in v)}), minor faults median {statistics.median(f for _, f in v):,.0f}")
