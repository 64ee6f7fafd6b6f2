"""The resident proof (snarkjs-bench files, key loaded once) with and without optimizations, interleaved in one
process: rounds alternate the configurations, medians and the ratio to snarkjs are printed.
    python3 tools/experiments/resident_ab.py [LOG_SIZE] [ROUNDS] [SPEC ...]     (default: 18 15 "" +P1)
A SPEC "old-batch" is the defaults with session 4's earlier batch sums (segments of at least 16, merges of 16
planned from device reads), patched in for its own rounds only.
"""
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from cuzk import snarkjs_bench as sb  # noqa: E402
from cuzk.gpu import batch_add as gbatch  # noqa: E402
from cuzk.gpu import msm_plan as plan  # noqa: E402
from cuzk.backend.cuda import CudaBackend  # noqa: E402
from cuzk.opts import resolve  # noqa: E402
from cuzk.prover import Prover  # noqa: E402

SNARKJS_S = {16: 2.395, 18: 8.829}     # snarkjs groth16 prove on the same files and the GPU machine (perf-log, session 5 V2)
k = int(sys.argv[1]) if len(sys.argv) > 1 else 18
rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 15
specs = sys.argv[3:] or ["", "+P1"]
files = sb.prepare("porep_like", k, "/tmp/sjb", print, keygen_backend="cuda")
base = sb.Resident(files, "cuda")
NEW_ONE = plan.one_bucket_sum


def old_one_bucket_sum(k, src, keyed, count, S, xp, M=None):
    import cupy
    return plan.bucket_sums(k, src, keyed, cupy.asarray([0, count], dtype=cupy.int64), 1, cupy, S=max(16, S))


def patched(old: bool):
    plan.one_bucket_sum = old_one_bucket_sum if old else NEW_ONE


assert gbatch.plan is plan
runs, old = {}, {}
for spec in specs:
    old[spec or "default"] = spec == "old-batch"
    patched(spec == "old-batch")
    r = sb.Resident.__new__(sb.Resident)
    r.zk, r.witness = base.zk, base.witness
    r.backend = CudaBackend(resolve("" if spec == "old-batch" else spec))
    r.prover = Prover(r.backend, base.zk.pk, kh=base.prover.kh)
    r.prove()                                   # warm-up
    runs[spec or "default"] = r
samples = {name: [] for name in runs}
phases = {name: [] for name in runs}
t0 = time.perf_counter()
for i in range(rounds):
    for name in (list(runs) if i % 2 == 0 else list(runs)[::-1]):
        patched(old[name])
        dt, ph = runs[name].time()
        samples[name].append(dt)
        phases[name].append(ph)
print(f"2^{k}: {rounds} interleaved rounds in {time.perf_counter() - t0:.1f} s")
for name, s in samples.items():
    med = statistics.median(s)
    ph = {p: round(statistics.median(x[p]["host_s"] for x in phases[name]) * 1e3, 1) for p in phases[name][0]}
    sj = SNARKJS_S.get(k)
    print(f"{name:>8}: median {med * 1e3:.1f} ms (min {min(s) * 1e3:.1f}, max {max(s) * 1e3:.1f})"
          + (f", {sj / med:.0f}x snarkjs" if sj else "") + f"; phases (ms) {ph}")
