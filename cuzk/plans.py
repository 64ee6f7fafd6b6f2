"""The registry's toggles as the algorithms' choices: typed plans, one per part of the prover.

Every optimization stays a named toggle in cuzk/opts.py, measured alone and left out of `default` there; this
module is the one place that turns an option set into what the code below reads: a field per toggle, named
after what it chooses (sort by bucket bits, windows per pass, which multiplier build, the twiddle layout).
Nothing below it spells a toggle code (tests/proving/test_plans.py scans for one). It imports nothing from
the package: an option set is anything with `enabled(code)`.
"""
from __future__ import annotations

from dataclasses import dataclass, field, fields


@dataclass(frozen=True)
class MsmKernels:
    """Which code the MSM kernels run (gpu/msm/pippenger.py's kernel set); every field ships on."""
    squaring_build: bool = True        # S1: the G1 kernels built with the dedicated Fp squaring
    lazy_rounds: bool = True           # L1: the affine rounds with lazy products
    called_fp: bool = True             # I1: the Fp products called rather than inlined
    callee_build3: bool = True         # I2 (with I1): the called product on fastmul build 3
    sort_bucket_bits: bool = True      # K1: keys sorted by their bucket bits alone (CUB), not all 64
    offsets_from_keys: bool = True     # K3: bucket offsets searched in the sorted keys themselves
    plans_by_entry: bool = True        # K4: the affine round plans written per input entry, no search
    round_sizes_once: bool = True      # K5: every affine round's size from one device read
    pass_from_free_memory: bool = True  # K6: the sort pass sized from the free device memory
    totals_read_once: bool = True      # K8: K5's totals with each bucket count read once
    offsets_by_counts: bool = True     # K9: each round's offsets from one counts kernel and a cumsum
    reduce_by_groups: bool = True      # K10: the window reduction by affine groups
    plans_four_per_thread: bool = True  # K11: K4's plans four entries a thread
    binary_inverse: bool = True        # K15: the rounds' block inverses by the binary extended Euclid

    @classmethod
    def none(cls) -> "MsmKernels":
        return cls(**{f.name: False for f in fields(cls)})


@dataclass(frozen=True)
class MsmPlan:
    """How every MSM and bucket sum of the prover runs."""
    kernels: MsmKernels = field(default_factory=MsmKernels)
    affine_g1: bool = True             # M1: G1 buckets summed by affine rounds (else XYZZ everywhere)
    pair_levels: bool = True           # R1: the window reduction by pairs of levels
    pair_merges: bool = True           # R2: the bucket sums' pair merges
    window_per_msm: bool = True        # D4: the window chosen per MSM (else one for all, H's)
    multi_msm: bool = True             # M2: a circuit's G1 MSMs (and batch sums) as one launch

    def bucket_sum(self, group: int) -> str:
        """G1's sums by affine rounds under affine_g1; G2's (and G1's without it) in XYZZ."""
        return "affine" if group == 1 and self.affine_g1 else "xyzz"

    def kw(self, group: int) -> dict:
        """The keyword arguments of gpu/msm/pippenger.py's MSMs under this plan."""
        kw = {"pair_levels": self.pair_levels, "pair_merges": self.pair_merges, "kernels": self.kernels}
        if group == 1:
            kw["bucket_sum"] = self.bucket_sum(1)
        return kw


@dataclass(frozen=True)
class NttPlan:
    """The NTT passes (gpu/ntt_plan.py's variant): each field one choice of the register-radix kernel."""
    register_radix: bool = True        # N1: radix-4 passes in registers (else radix 2)
    build6_product: bool = True        # N2: on fastmul build 6's product
    dif_two_ops: bool = True           # N4: the DIF butterfly in two modular ops (with N2)
    full_twiddles: bool = True         # N8: full-domain twiddle tables (with N4)
    dif_lazy_differences: bool = True  # N11: DIF differences left below 2p into the products (with N4)
    wide_exchanges: bool = True        # N12: 16-byte exchanges (else 32-bit words)
    swz4_whole: bool = True            # N17: swz4 a 16-byte exchange at once (with N12)
    odd_short_top: bool = True         # N13: odd DIF passes' short group at the top
    lazy_stage0: bool = True           # N15: stage 0 lazy into the 4-step product (build 6 only)
    natural_order: bool = True         # N10: natural-order transforms without a separate bit reversal

    @property
    def variant(self) -> str:
        """gpu/ntt_plan.py's name of this plan's kernels: r2, r4[+o], r4b6[w|b][+oz], r4b6d[t][s][w|b][+oz]."""
        if not self.register_radix:
            return "r2"
        odd = "o" if self.odd_short_top else ""
        if not self.build6_product:                          # lazy stage 0 needs build 6's product
            return "r4" + ("+" + odd if odd else "")
        feats = odd + ("z" if self.lazy_stage0 else "")
        feats = "+" + feats if feats else ""
        w = "" if self.wide_exchanges else "w"
        w = w or ("" if self.swz4_whole else "b")           # swz4 acts on the 16-byte exchanges only
        if not self.dif_two_ops:
            return "r4b6" + w + feats
        return "r4b6d" + ("t" if self.full_twiddles else "") + ("s" if self.dif_lazy_differences else "") + w + feats


@dataclass(frozen=True)
class HPlan:
    """ntt_msm_h: the H scalars' pipeline and the H MSM's bases."""
    ntt: NttPlan = field(default_factory=NttPlan)
    fused_tail: bool = True            # F1: the coset NTT's last passes fused with the pointwise combine
    pointwise_b6: bool = True          # N3: the pointwise combine on build 6's product
    skip_c: bool = True                # H2: c's transforms skipped where the convention allows
    tiled_bitrev: bool = True          # N5: the bit reversal in shared-memory tiles
    spend_abc: bool = True             # F2: a spendable a, b, c consumed in place (no copy)
    tables: bool = False               # P2: the H MSM over precomputed tables

    def h_options(self) -> dict:
        """gpu/h.py's h_scalars keyword arguments under this plan."""
        return {"variant": self.ntt.variant, "fused_tail": self.fused_tail, "pointwise_b6": self.pointwise_b6,
                "skip_c": self.skip_c, "tiled_bitrev": self.tiled_bitrev}


@dataclass(frozen=True)
class CudaPlan:
    """Everything the cuda backend chooses, by part."""
    msm: MsmPlan = field(default_factory=MsmPlan)
    h: HPlan = field(default_factory=HPlan)
    ones_by_bucket_sums: bool = True   # C1: batch addition through the bucket-sum kernels (else MSMs of 1s)
    concurrent_jobs: bool = False      # P1: a phase's independent jobs on concurrent streams
    b_g2_on_host: bool = False         # A4: b_g2 on the CPU, a thread per circuit
    pinned_uploads: bool = False       # B1: the witness uploaded from pinned host memory


@dataclass(frozen=True)
class SynthesisPlan:
    """How circuits are written down (r1cs.py)."""
    flat_terms: bool = True            # A1: linear combinations as flat arrays
    presized_vectors: bool = True      # A2: witness vectors sized ahead


@dataclass(frozen=True)
class HandoffPlan:
    """How the pipeline's workers hand a witness to the provers (pipeline.py)."""
    packed_witness: bool = True        # B2: the witness packed (bits apart) for the hand-off
    packed_shared: bool = True         # B3: the packed witness written to shared memory by the worker
    packed_direct: bool = True         # B4: the circuit writes the packed witness itself (no limbs first)


# --- the one map from toggle codes to fields ---

MSM_KERNELS = {"S1": "squaring_build", "L1": "lazy_rounds", "I1": "called_fp", "I2": "callee_build3",
               "K1": "sort_bucket_bits", "K3": "offsets_from_keys", "K4": "plans_by_entry", "K5": "round_sizes_once",
               "K6": "pass_from_free_memory", "K8": "totals_read_once", "K9": "offsets_by_counts",
               "K10": "reduce_by_groups", "K11": "plans_four_per_thread", "K15": "binary_inverse"}
MSM = {"M1": "affine_g1", "R1": "pair_levels", "R2": "pair_merges", "D4": "window_per_msm", "M2": "multi_msm"}
NTT = {"N1": "register_radix", "N2": "build6_product", "N4": "dif_two_ops", "N8": "full_twiddles",
       "N11": "dif_lazy_differences", "N12": "wide_exchanges", "N17": "swz4_whole", "N13": "odd_short_top",
       "N15": "lazy_stage0", "N10": "natural_order"}
H = {"F1": "fused_tail", "N3": "pointwise_b6", "H2": "skip_c", "N5": "tiled_bitrev", "F2": "spend_abc", "P2": "tables"}
CUDA = {"C1": "ones_by_bucket_sums", "P1": "concurrent_jobs", "A4": "b_g2_on_host", "B1": "pinned_uploads"}
SYNTHESIS = {"A1": "flat_terms", "A2": "presized_vectors"}
HANDOFF = {"B2": "packed_witness", "B3": "packed_shared", "B4": "packed_direct"}


def _take(cls, table: dict, opts, **parts):
    return cls(**{name: bool(opts.enabled(code)) for code, name in table.items()}, **parts)


def msm_kernels_of(codes) -> MsmKernels:
    """The kernel set with exactly these toggle codes on (tests and tools that name kernels by code)."""
    codes = frozenset(codes)
    unknown = codes - set(MSM_KERNELS)
    if unknown:
        raise ValueError(f"not MSM kernel toggles: {sorted(unknown)} (they are {', '.join(MSM_KERNELS)})")
    return MsmKernels(**{name: code in codes for code, name in MSM_KERNELS.items()})


def msm(opts) -> MsmPlan:
    return _take(MsmPlan, MSM, opts, kernels=_take(MsmKernels, MSM_KERNELS, opts))


def h(opts) -> HPlan:
    return _take(HPlan, H, opts, ntt=_take(NttPlan, NTT, opts))


def cuda(opts) -> CudaPlan:
    return _take(CudaPlan, CUDA, opts, msm=msm(opts), h=h(opts))


def synthesis(opts) -> SynthesisPlan:
    return _take(SynthesisPlan, SYNTHESIS, opts)


def handoff(opts) -> HandoffPlan:
    return _take(HandoffPlan, HANDOFF, opts)


def codes_read() -> dict[str, str]:
    """{toggle code: the plan field it sets} over every plan (tests: each toggle sets one field)."""
    out = {}
    for prefix, table in (("msm.kernels", MSM_KERNELS), ("msm", MSM), ("h.ntt", NTT), ("h", H), ("cuda", CUDA),
                          ("synthesis", SYNTHESIS), ("handoff", HANDOFF)):
        out.update({code: f"{prefix}.{name}" for code, name in table.items()})
    return out
