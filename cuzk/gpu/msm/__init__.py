"""The MSM's host side, in one home; what the phases and `cuzk micro` call is exported here.

pippenger.py  the kernel set (kernels/msm/g1.cu, g2.cu) and the Pippenger driver: G1 and G2 MSMs, their window
              sums, and the host fold of the windows
plan.py       the index math, modelled on the CPU: digits, sort bits, affine rounds, reductions, the window choice
many.py       several G1 MSMs in one launch (a circuit's tail MSMs)
fixed.py      the G1 MSM over precomputed tables of fixed bases (the H bases)
sums.py       sums of bases whose scalar is 1, through the bucket-sum kernels
phase_msm.py  the window a phase's MSM gets under its plan, and an MSM that may be empty
"""
from .sums import batch_add, batch_add_many, sum_xyzz, sum_xyzz_many
from .fixed import FixedTables, budget_bytes, choose_tables
from .fixed import msm_g1 as fixed_msm_g1
from .fixed import msm_windows as fixed_msm_windows
from .many import msm_g1_concat
from .pippenger import DEFAULT_BUCKET_SUM, fold_windows, last_stats, msm_g1, msm_g2, msm_windows, msm_xyzz
from .phase_msm import run_msm, window

__all__ = ["batch_add", "batch_add_many", "sum_xyzz", "sum_xyzz_many", "FixedTables", "budget_bytes",
           "choose_tables", "fixed_msm_g1", "fixed_msm_windows", "msm_g1_concat", "DEFAULT_BUCKET_SUM",
           "fold_windows", "last_stats", "msm_g1", "msm_g2", "msm_windows", "msm_xyzz", "run_msm", "window"]
