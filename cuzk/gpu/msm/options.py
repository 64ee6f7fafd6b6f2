"""An MSM call's options on the host: what a call that gives none runs (the bucket sums, pair levels and pair
merges that ship: plans.MsmPlan's defaults), the check of its bucket-sum options, and the build of kernels/msm/g1.cu
or g2.cu that a kernel set (plans.MsmKernels) selects."""
from __future__ import annotations

from ...plans import MsmKernels, MsmPlan
from . import plan

BUCKET_SUMS = ("xyzz", "affine")
DEFAULT_BUCKET_SUM = {1: "affine", 2: "xyzz"}  # G1 affine: 2^26 550 ms vs 960 (xyzz c=16), docs/perf-log.md
# calls without an option take what ships: the plans' defaults (the backend passes its own plan per call;
# tests/proving/test_plans.py holds the plans' defaults equal to the registry's)
DEFAULT_PAIR_LEVELS = MsmPlan().pair_levels
DEFAULT_PAIR_MERGES = MsmPlan().pair_merges
SQR_BUILD = ("CUZK_FASTSQR=1",)                # the msm_g1 build with the dedicated squaring (kernel_sources.BUILDS)
CALL_BUILD = ("CUZK_FP_CALL=1",)               # msm_g1 and msm_g2 with the Fp products called
CALLEE_BUILD = ("CUZK_FASTMUL_VARIANT_FP=3",)  # the called Fp product on fastmul build 3


def kernel_build(group: int, kernels: MsmKernels) -> tuple[str, ...]:
    """The msm_g<group> module build (kernel_sources.BUILDS) that the kernel set selects: the squaring (G1 only), the
    called Fp products, and their callee's build (only where the products are called)."""
    call = CALL_BUILD + (CALLEE_BUILD if kernels.callee_build3 else ()) if kernels.called_fp else ()
    return (SQR_BUILD if kernels.squaring_build and group == 1 else ()) + call


def sum_options(group: int, bucket_sum, affine_min_pairs) -> tuple[str, int | None]:
    """msm_xyzz's bucket_sum and affine_min_pairs resolved and checked: (bucket_sum, min_pairs or None for XYZZ)."""
    bucket_sum = DEFAULT_BUCKET_SUM[group] if bucket_sum is None else bucket_sum
    if bucket_sum not in BUCKET_SUMS:
        raise ValueError(f"bucket_sum must be one of {BUCKET_SUMS}, got {bucket_sum!r}")
    if bucket_sum == "affine" and group != 1:
        raise ValueError("affine bucket sums are implemented for G1 only")
    min_pairs = None
    if bucket_sum == "affine":
        min_pairs = plan.AFFINE_MIN_PAIRS if affine_min_pairs is None else int(affine_min_pairs)
        if min_pairs < 1:
            raise ValueError("affine_min_pairs must be >= 1")
    return bucket_sum, min_pairs
