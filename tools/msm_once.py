"""One G1 MSM (affine bucket sums) of 2^K random points for a profiler: ncu wraps this process.
    python3 tools/msm_once.py K [C]
$MSM_KERNEL_OPTS (comma-separated codes of plans.MSM_KERNELS, "none" for none) sets the kernels' toggles;
default: what ships.
"""
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import cupy  # noqa: E402

from cuzk import micro_ops as micro  # noqa: E402
from cuzk.gpu.msm import pippenger as msm  # noqa: E402
from cuzk.plans import msm_kernels_of  # noqa: E402

L = int(sys.argv[1])
c = int(sys.argv[2]) if len(sys.argv) > 2 else 20
bases, inf = micro.independent_bases(L, 1)
scalars = micro.random_fr(1 << L, seed=L + 7)
ko = os.environ.get("MSM_KERNEL_OPTS")
ko = None if ko is None else msm_kernels_of(o for o in ko.split(",") if o and o != "none")
msm.msm_xyzz(1, bases, inf, scalars, c, bucket_sum="affine", kernels=ko)
cupy.cuda.Device().synchronize()
print("stats", dict(msm.last_stats))
