"""The MSM's host side, in one home. The package imports nothing, so its host modules load without CuPy (the CPU
models and tests use them); the phases and `cuzk micro` import the device modules they call.

On the host (numpy and Python ints, no CuPy):
plan.py       the index math, modelled on the CPU: digits, sort bits, affine rounds, reductions, the window choice,
              batch addition's segments
options.py    what a call without options runs (bucket sums, pair levels and merges), their check, and the
              kernel build a kernel set selects
fold.py       downloaded XYZZ results as points, and the host fold of the window sums
parts.py      a multi-MSM's parts: the non-empty ones, their bounds, the fold of each
tables.py     P2's table plans: the window and blocks a memory budget holds

On the device (CuPy imported at the top; imported where a GPU run starts):
pippenger.py  the kernel set (kernels/msm/g1.cu, g2.cu) and the Pippenger driver: G1 and G2 MSMs and their window sums
many.py       several G1 MSMs in one launch (a circuit's tail MSMs)
fixed.py      the G1 MSM over precomputed tables of fixed bases (the H bases)
sums.py       sums of bases whose scalar is 1, through the bucket-sum kernels
phase_msm.py  the window a phase's MSM gets under its plan, and an MSM that may be empty
"""
