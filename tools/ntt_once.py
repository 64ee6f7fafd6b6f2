"""One forward NTT (DIF, natural in, bit-reversed out) of 2^K random Fr elements for a profiler:
ncu wraps this process.
    python3 tools/ntt_once.py K [VARIANT]
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import cupy  # noqa: E402

from cuzk import micro_ops as micro  # noqa: E402
from cuzk.gpu import ntt, ntt_plan  # noqa: E402

L = int(sys.argv[1])
variant = sys.argv[2] if len(sys.argv) > 2 else "r4"
x = cupy.asarray(micro.random_fr(1 << L, seed=L)).reshape(-1)
print("passes", ntt_plan.plan(L))
ntt.dif(x, L, variant=variant)
cupy.cuda.Device().synchronize()
