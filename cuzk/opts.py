"""The optimization registry: every optimization is a named, switchable entry.

Switch with `--opt +A1,-A2` on the CLI or `CUZK_OPT` in the environment (the CLI wins).
Spellings: `+NAME` / `NAME` turn on, `-NAME` turns off, `all` and `none` (or `baseline`)
set every entry. Benchmarks iterate over REGISTRY, so a new entry is measured alone
without editing them. What each entry's default rests on (the measured figures, with their
dates in docs/perf-log.md) is in docs/optimizations.md.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Optimization:
    name: str
    phases: tuple[str, ...]
    intent: str
    default: bool
    predicted: str     # written down before measuring
    # the backends whose code reads the toggle: elsewhere its variants would measure `default` again.
    # Synthesis is host code that both run; the CPU reference's phases read no toggle.
    backends: tuple[str, ...] = ("cuda",)


REGISTRY: dict[str, Optimization] = {}


def honoured(name: str, backend: str) -> bool:
    """Whether `backend`'s code reads toggle `name` (a variant of it there differs from `default`)."""
    return backend in REGISTRY[name].backends


def register(opt: Optimization) -> Optimization:
    if opt.name in REGISTRY:
        raise ValueError(f"optimization {opt.name} registered twice")
    REGISTRY[opt.name] = opt
    return opt


register(Optimization(
    "A1", ("synthesis",),
    "linear combinations stored in flat growable buffers, not one heap object per term",
    True,
    "synthesis host time -10..-30% on generator circuits; no effect on other phases",
    backends=("cpu", "cuda"),
))
register(Optimization(
    "A2", ("synthesis",),
    "assignment vectors pre-sized to their final length instead of grown chunk by chunk",
    True,
    "synthesis -5..-15% single circuit; with many circuits in parallel, page-fault cost may eat the gain",
    backends=("cpu", "cuda"),
))
register(Optimization(
    "B1", ("synthesis",),
    "witness staged in pinned (page-locked) host memory before its transfer to the GPU",
    False,
    "host->device copy of z up to 2x faster (pageable ~25 GB/s vs pinned ~50 GB/s); pinning itself costs "
    "~0.1-0.3 s per GiB, so small or one-shot transfers lose",
))
register(Optimization(
    "D4", ("ntt_msm_h", "tail_msm", "b_g2"),
    "MSM window size chosen per MSM from its size and its scalars' popcount, instead of one for all",
    True,     # measured: docs/optimizations.md
    "tail and G2 MSMs (smaller than H) 5-20% faster with smaller windows; H unchanged; batch addition "
    "unaffected",
))
register(Optimization(
    "M1", ("ntt_msm_h", "batch_addition", "tail_msm"),
    "G1 bucket sums by affine pair rounds with block-batched inversion (~6 mults an add) instead of XYZZ "
    "mixed adds (~10), with a parallel window reduction that lets windows grow to c = 20-22",
    True,     # measured: docs/optimizations.md
    "G1 MSM 2^26 ~1.0 s -> ~0.40 s; smaller gains below 2^20; G2 (b_g2) unchanged",
))
register(Optimization(
    "N1", ("ntt_msm_h",),
    "NTT passes with 4 elements per thread in registers (2 stages per shared-memory round trip) and one "
    "table load for most 4-step twiddles, instead of one radix-2 butterfly per thread per stage",
    True,     # measured: docs/optimizations.md
    "NTT 2^27 61 ms -> ~45 ms (fewer barriers, 16 -> 13.9 mults per element); ntt_msm_h -5..-10%",
))
register(Optimization(
    "N2", ("ntt_msm_h",),
    "N1's NTT passes built with fastmul build 6 for Fr (the products on the FP64 pipe, same limbs and "
    "tables) instead of build 1 (IMAD on the FMA pipe); acts only with N1",
    True,     # measured: docs/optimizations.md
    "NTT 2^27 ~55 -> ~52 ms (one gpu_ntt_check run: dif/dit 55.1/54.6 -> 52.7/51.1 ms), so ntt_msm_h about "
    "-1.5% at 2^27 (7 NTTs in a 1.52 s phase) and -3..-5% at 2^20-2^24; other phases unchanged",
))
register(Optimization(
    "N3", ("ntt_msm_h",),
    "the H phase's pointwise passes (the coset scales of a, b, c and of h, the (ab - c)/Z combine) built with "
    "fastmul build 6 for Fr (FP64 pipe), as N2 does for the NTT passes, instead of build 1",
    True,     # measured: docs/optimizations.md
    "2^27 h scalars 392 -> 386-388 ms: the pointwise passes (32 ms: 2 or 3 products an element) are bound by "
    "the Fr product, which build 6 runs at 5.50e10/s against 4.45e10; ntt_msm_h -4..-6 ms a partition; "
    "n.s. below 2^24",
))
register(Optimization(
    "N4", ("ntt_msm_h",),
    "N2's DIF butterfly in two modular ops (d = a - b, a += b), not three (b = a - b, a = a + a - b: written to "
    "save registers in r8); a build of ntt_reg (kernel_sources.BUILDS); acts only with N1 and N2",
    True,     # measured: docs/optimizations.md
    "NTT 2^27 -2.5..-5 ms: the pass's products run at build 6's full rate and the other ~20 ms of instructions "
    "add to them, 13.5 of ~54 modular ops an element go; ntt_msm_h: its DIF NTTs",
))
register(Optimization(
    "N5", ("ntt_msm_h",),
    "bit reversals by tiles through shared memory (kernels/ntt/bitrev.cuh: 16 x 16 elements a block, 512-byte runs "
    "read and written), instead of one thread an element writing each 32-byte element alone; the H phase's last "
    "pass (with F1: its coset scale and bit reversal) and the natural-order NTT helpers",
    True,     # measured: docs/optimizations.md
    "bit reversal 2^27 ~7.7 -> 2.3-3.0 ms (8.6 GB moved at ~3-3.7 TB/s, not ~1.1); cuzk micro ntt 2^27 58.2 -> "
    "52.9-53.6 ms; ntt_msm_h: F1's pass by its scattered writes' share, -1..-4 ms at 2^27",
))
register(Optimization(
    "N8", ("ntt_msm_h",),
    "every 4-step twiddle of the register-radix NTT passes is one table lookup, up to the full domain (a 2^27 "
    "NTT keeps one 2^27-entry table, 4 GiB, for both directions: the inverse reads it at -e), instead of "
    "tw_hi * tw_lo above 2^18; acts only with N1, N2 and N4",
    True,     # measured: docs/optimizations.md
    "NTT 2^27 -1.5..-3 ms: the first pass's 5.1 products an element become 4.1 (~-3 ms of instructions), but its "
    "twiddles are 4 GiB of scattered 32-byte reads (memory is ~10% busy in the pass); ntt_msm_h: its six NTTs, "
    "4 GiB more device memory at 2^27 (the MSM's sort passes follow free memory)",
))
register(Optimization(
    "N10", ("ntt_msm_h",),
    "a natural -> natural NTT's last DIF pass writes its output at bit-reversed positions (block b takes "
    "sub-problem bitrev(b), so blocks running together write neighbouring elements), instead of a separate "
    "bit-reversal pass (N5's tiles); the natural-order NTT helpers (cuzk micro ntt, intt: its 1/n in the small "
    "twiddle table where one pass reads it)",
    True,     # measured: docs/optimizations.md
    "NTT 2^27 -1..-2.5 ms: the ~2.6 ms reversal pass goes; the last pass's 4 GiB of writes become 32-byte pieces "
    "that L2 merges from neighbouring blocks (memory ~10% busy in the pass); the H phase does not use it",
))
register(Optimization(
    "N11", ("ntt_msm_h",),
    "a DIF butterfly's difference that goes into a product is left a - b + p (< 2p: two carry chains, no borrow "
    "test or masked add; build 6's product takes one input < 2p and returns < p), instead of reduced; a build of "
    "ntt_reg; acts only with N1, N2 and N4",
    True,     # measured: docs/optimizations.md
    "NTT 2^27 -0.8..-1.5 ms: 9 of a difference's 25 ALU instructions go in 10.9 butterflies an element; the passes' "
    "non-product work was timed at ~4.7 ms a pass, ALU-bound at ~3 cycles a warp instruction; "
    "ntt_msm_h: its four DIF NTTs",
))
register(Optimization(
    "N12", ("ntt_msm_h",),
    "the register-radix NTT passes exchange each element through shared memory as two 16-byte units (swz4: "
    "every quarter-warp in 8 bank groups) instead of eight 32-bit words: a quarter of the exchanges' LDS/STS; "
    "off: the N2 builds with CUZK_NTT_SM128=0 (without N2 the r4/r8 passes exchange 16-byte units either way); "
    "acts only with N1 and N2",
    True,     # measured: docs/optimizations.md
    "NTT 2^27 -0.5..-1.5 ms: ~100 instructions an element a pass in the exchanges (4 a 9-stage pass), 3/4 of "
    "the LDS/STS go; shared-memory bandwidth unchanged; ntt_msm_h: its six NTTs",
))
register(Optimization(
    "N13", ("ntt_msm_h",),
    "a register-radix DIF pass of odd k runs its one-stage group first (the top stage), not last: stages 1 and 0 "
    "then share the group at b0 = 0, where the w = 1 pairs are skipped, so a 9-stage pass does 19 products a thread "
    "of four elements, not 20 (a run-time kernel flag, variant feature 'o'); acts only with N1",
    True,     # measured: docs/optimizations.md
    "NTT 2^27 ~-2 ms: a quarter product an element fewer in each of its three 9-stage DIF passes (2.62 ms a product "
    "an element at 2^27); ntt_msm_h: its DIF NTTs (the DIT's groups already had this order)",
))
register(Optimization(
    "N15", ("ntt_msm_h",),
    "in a DIF pass with a 4-step twiddle, stage 0 (w = 1) leaves a + b and a - b + p (< 2p) unreduced into the "
    "4-step product, which takes one input < 2p on fastmul build 6 (a run-time kernel flag, variant feature 'z'); "
    "acts only with N1 and N2",
    True,     # measured: docs/optimizations.md
    "NTT 2^27 -0.1..-0.3 ms: ~27 ALU instructions a pair in two of three passes (~0.008 ms an ALU instruction an "
    "element at 2^27); ntt_msm_h: its DIF NTTs",
))
register(Optimization(
    "N17", ("ntt_msm_h",),
    "the register-radix passes' 16-byte exchange swizzle (swz4: slot bits 3..5 XORed into the bank-group bits) "
    "reads its XOR term from an 8-entry table of 4-bit values in one word, ~4 instructions an address, instead of "
    "bit by bit (~12); the same layout. Off: the N2 builds with CUZK_NTT_SWZ4_LUT=0 (variants with a 'b' suffix); "
    "acts only with N1, N2 and N12",
    True,     # measured: docs/optimizations.md
    "NTT 2^27 -0.3..-0.8 ms: ~64 ALU instructions an element a pass fewer (8 addresses a group a thread), 2.5% of "
    "a pass's ~2575; ntt_msm_h: its six NTTs",
))
register(Optimization(
    "H2", ("ntt_msm_h",),
    "coeff convention: the H phase skips C's coset NTT. H(gx) Z(gx) = A(gx) B(gx) - C(gx), Z(gx) = g^n - 1 "
    "mod x^n - 1 and deg H, deg C < n give h = iNTT_coset(a b / Z(g)) - C's coefficients / Z(g): six NTTs, not "
    "seven, only a and b coset-scaled, and C's coefficients (already made by its iNTT) subtracted in the last pass",
    True,     # measured: docs/optimizations.md
    "2^27 h scalars 405.7 -> ~350 ms (one NTT 50.7, a third of the coset scale 5.5 and of the combine's reads ~1 "
    "ms gone; the last pass +2..+4 ms for C's read and one product); 10 x 2^27 ~-50 ms a partition; odd_lagrange "
    "unchanged",
))
register(Optimization(
    "C1", ("batch_addition",),
    "batch addition as segment sums straight over the selected key rows (no gather, digits or sort), "
    "instead of an MSM whose scalars are all 1",
    True,     # measured: docs/optimizations.md
    "batch_addition 2-3x faster (2^26: ~116 ms -> ~45 ms): the MSM path sorts nw*n keys, most of them zero "
    "digits; other phases unchanged",
))
register(Optimization(
    "B2", ("synthesis",),
    "bench --pipeline: each worker packs the witness (one bit per variable plus its entries that are "
    "not 0 or 1) and the GPU expands it, instead of handing over and uploading 32-byte limbs",
    True,     # measured: docs/optimizations.md
    "2^27 PoRep partition (99% bits): ~4 GiB -> ~60 MB over the bus and through /dev/shm; the synthesis "
    "phase's device time 0.5-0.9 s -> <0.1 s a proof; +1-2 s of packing per witness in the workers; "
    "only the pipeline (and its sequential --compare run) packs",
))
register(Optimization(
    "B3", ("ntt_msm_h", "batch_addition", "tail_msm", "b_g2"),
    "bench --pipeline with B2 and process workers: the packed witness's arrays reach the prover in /dev/shm "
    "blocks it maps, instead of pickled through the process pool's result pipe and unpickled in the prover's "
    "process under the GIL",
    True,     # measured: docs/optimizations.md
    "10 x 2^27 pipelined (~60 MB a packed witness): the h msm of proofs during hand-offs (proof 0: 1.03-1.08 s) "
    "near the quiet ones (0.91-0.92 s), if the GIL held by the unpickling is the cause: ntt_msm_h -10..-25 ms a "
    "partition on the mean; no change without B2 or with thread workers",
))
register(Optimization(
    "B4", ("synthesis",),
    "bench --pipeline with B2: a circuit with a packed-witness generator (porep_partition) writes the packed "
    "witness straight from its words, instead of writing every entry's 32-byte limbs and packing them",
    True,     # measured: docs/optimizations.md
    "2^27 PoRep partition: a worker's witness ~4.5 s -> ~1 s and ~4 GiB less written a circuit (measured on 2 "
    "CPUs at 2^25: 0.14-0.29 s against 0.43-4.0 s for limbs then pack, cold first); the first proof of a "
    "10 x 2^27 pipelined run several seconds sooner; the packed witness byte-identical; no GPU phase changes",
))
register(Optimization(
    "P1", ("batch_addition", "tail_msm"),
    "a circuit's batch sums (A, B_G1, B_G2, L) and its tail MSMs (A, B_G1, L) run concurrently, each on its "
    "own CUDA stream from a thread pool, instead of one after another on one stream",
    False,
    "2^18 resident proof: batch_addition 26 -> 10-15 ms and tail_msm 25 -> 10-15 ms (each sum is a few "
    "thousand threads in dependent chains plus as much time again in host round trips, which the others "
    "fill); at 2^24 and above no change (each sum fills the GPU)",
))
register(Optimization(
    "M2", ("batch_addition", "tail_msm"),
    "a circuit's three G1 tail MSMs (A, B_G1, L) run as one multi-MSM: one digit kernel, sort, bucket plan, "
    "bucket sums and window reduction, each MSM with its own buckets in every window; with C1, its three G1 "
    "batch sums share their merges; the G2 sum and MSM stay separate",
    True,     # measured: docs/optimizations.md
    "2^18 resident proof: tail_msm (21 ms) and batch_addition (13.4 ms) each ~2x faster: the fixed latency "
    "(launches, host round trips, dependent chains) paid once instead of three times; at 2^24 and above no "
    "effect (each MSM fills the GPU)",
))
register(Optimization(
    "R1", ("ntt_msm_h", "tail_msm", "b_g2"),
    "window reduction by pair levels (entries 2g, 2g + 1 -> g; A' and T' made by two warps, two adds deep) "
    "after the first level, instead of chunks of 4 by running sums (about 3L = 12 adds deep a level)",
    True,     # measured: docs/optimizations.md
    "2^18 resident proof: window-level kernel time 10.8 -> ~4 ms (G1 4.4 -> ~1.7, G2 6.4 -> ~2.3: the "
    "levels' dependent chain 58 -> 20 adds for 2^10 buckets), proof -4..-7 ms; 2^24 and above no "
    "significant change (the first level, unchanged, is the reduction's work)",
))
register(Optimization(
    "R2", ("ntt_msm_h", "batch_addition", "tail_msm", "b_g2"),
    "partial sums merged in pairs (one full add deep a level, kernel merge_pairs) instead of chains of up to "
    "16 (MSM buckets) or 4 (batch sums) full adds a thread",
    True,     # measured: docs/optimizations.md
    "2^18 resident proof: g2_sum_xyzz + g1_sum_xyzz kernel time 11.6 -> ~6 ms (the G2 batch sum's 7 levels of "
    "4-deep chains -> 14 levels of 1; an MSM bucket's ~6-16 partials: one chain of that depth -> 3-4 levels "
    "of 1), proof -3..-5 ms, more host syncs (one a level in the MSM merges); 2^24 and above no significant "
    "change",
))
register(Optimization(
    "S1", ("ntt_msm_h", "batch_addition", "tail_msm"),
    "the G1 MSM kernels' Fp squarings by a dedicated squaring (fastmul::mont_sqr: the off-diagonal products "
    "once, doubled, then Montgomery's reduction; Fp 78 + 144 products against 288) instead of a "
    "multiplication of a value by itself (kernel build msm_g1 [CUZK_FASTSQR=1]; G2 squares in Fp2 by "
    "products, so its kernels stay as they are)",
    True,     # measured: docs/optimizations.md
    "2^26 G1 MSM x0.97-0.985 (the affine add's lambda^2 is one of its six multiplications, ~18% fewer "
    "instructions for it: the rounds -2..-3%); 2^24 ntt_msm_h x0.98, the other phases not significant (G2 "
    "squares in Fp2, which does not use the Fp squaring); 2^18 resident proof within noise",
))
register(Optimization(
    "L1", ("ntt_msm_h", "batch_addition", "tail_msm"),
    "lazy reduction in the G1 affine rounds: the prefix products, the inverses and lambda are left < 2p "
    "(no final subtraction; Fp has 4p < 2^384, so products of such operands stay below 2p), since each goes "
    "only into further products; lambda^2 and y3's product reduce, so the points stay canonical",
    True,     # measured: docs/optimizations.md
    "2^26 G1 MSM x0.975-0.99 (4 of an add's 6 products skip a ~25-37-instruction conditional subtraction; "
    "static SASS of the round kernel 9831 -> 9679, SEL 148 -> 64); 2^24 ntt_msm_h x0.99, the rest not "
    "significant; 2^18 within noise",
))
register(Optimization(
    "I1", ("ntt_msm_h", "batch_addition", "tail_msm", "b_g2"),
    "the MSM kernels call one copy of the Fp product (the lazy one; the full product adds the final "
    "subtraction inline) and of the squaring instead of inlining ~900 instructions at every use: a round or "
    "XYZZ kernel's loop shrinks from 70-300 KB of code, more than the instruction caches hold, to a few KB "
    "(kernel builds msm_g1 / msm_g2 [CUZK_FP_CALL=1]; G2's Fp2 products over the called Fp product)",
    True,     # measured: docs/optimizations.md
    "2^26 G1 MSM x0.91-0.93 and 2^22 G2 MSM x0.5-0.55 (the experiment define measured so: 533 -> 488 ms, "
    "337 -> 178 ms); 2^24 ntt_msm_h x0.92-0.95, b_g2 x0.6-0.7, batch_addition and tail_msm x0.8-0.95; "
    "the 2^18 resident proof -4..-8 ms (its G2 MSM and batch sums)",
))
register(Optimization(
    "I2", ("ntt_msm_h", "batch_addition", "tail_msm", "b_g2"),
    "with I1 (alone it changes nothing), I1's called Fp product on fastmul build 3 instead of 1: the a*b_i rows "
    "as one carry chain with the addend folded into the products, the m*p rows as two chains. Inside the callee "
    "the rounds are latency-bound, and the shorter dependent path pays (kernel builds msm_g1 / msm_g2 "
    "[CUZK_FP_CALL=1 CUZK_FASTMUL_VARIANT_FP=3])",
    True,     # measured: docs/optimizations.md
    "2^26 G1 MSM x0.97-0.99 (the experiment define: x0.986, x0.972 and x0.971 in three runs); 2^24 ntt_msm_h "
    "x0.97-0.99, b_g2 x0.95-1.0, batch_addition and tail_msm x0.97-1.0",
))
register(Optimization(
    "F1", ("ntt_msm_h",),
    "the H phase's last coset scale (by g^-i / n, in bit-reversed order) and the bit reversal to natural order in "
    "one out-of-place pass (kernel scale_bitrev_powers_out) instead of two passes over n elements",
    True,     # measured: docs/optimizations.md
    "2^27 h scalars -5..-7 ms of 416 (h_profile: coset scale h 6.3 + bit reverse 7.9 ms -> one pass of ~8); "
    "ntt_msm_h x0.995-1.0 at 2^27, n.s. at 2^24",
))
register(Optimization(
    "F2", ("ntt_msm_h",),
    "a pipelined proof consumes its assignment's a, b, c on the GPU in place (the H phase works in place) instead "
    "of copying them first: the pipeline proves each assignment once (Assignment.abc_spendable); a spent "
    "assignment refuses a second proof with a clear error",
    True,     # measured: docs/optimizations.md
    "10 x 2^27 pipelined: ntt_msm_h -13..-16 ms a partition (h_profile: the copy of 3 x 2^27 elements, 12.9 GB, "
    "15.3 ms); no change outside the pipeline (nothing there is spendable)",
))
register(Optimization(
    "K1", ("ntt_msm_h", "batch_addition", "tail_msm", "b_g2"),
    "the MSM's bucket keys sorted by CUB's radix sort over their bucket id bits alone (cub::DeviceRadixSort with a "
    "bit range, kernels/host/cub_sort.cu through ctypes) instead of CuPy's sort of all 64 bits; the order is the "
    "same (the sort is stable, and a bucket's keys come in index order)",
    True,     # measured: docs/optimizations.md
    "2^26 G1 MSM: the sort 50.7 -> ~20 ms (22 key bits: 3 passes of 8 bits instead of 8, plus the histogram "
    "pass), the MSM 472 -> ~444 ms (x0.94); 2^27 H MSM sort 93 -> ~38 ms; 10 x 2^27: -55..-65 ms a partition "
    "(~1.40 s); 2^18 resident proof n.s.",
))
register(Optimization(
    "K3", ("ntt_msm_h", "batch_addition", "tail_msm", "b_g2"),
    "the bucket offsets by a search of the sorted keys themselves for b << 32 instead of a search of a shifted copy "
    "of their high words (a pass that writes and reads 8 bytes a key)",
    True,     # measured: docs/optimizations.md
    "2^27 H MSM: offsets 10.9 -> ~3 ms (-8 ms a partition); 2^26 MSM 5.5 -> ~1.5 ms; small MSMs n.s.",
))
register(Optimization(
    "K4", ("ntt_msm_h", "batch_addition", "tail_msm"),
    "the affine round plans written by input entry (its bucket from the key in the first round, then from ids the "
    "previous plan wrote) instead of a binary search over the bucket offsets for every output",
    True,     # measured: docs/optimizations.md
    "2^26 G1 MSM (c = 20, 34 rounds): round plans ~28 -> ~12 ms (a stream of 8-16 B an entry instead of a 21-step "
    "search an output); 2^27 H MSM ~58 -> ~25 ms",
))
register(Optimization(
    "K5", ("ntt_msm_h", "batch_addition", "tail_msm"),
    "every affine round's size from one device read a pass (msm_round_totals: sum_b ceil(cnt_b / 2^r) for all r) "
    "instead of a read of each round's offsets, so the rounds of a pass queue without waiting on the host",
    True,     # measured: docs/optimizations.md
    "2^26 G1 MSM: round plans -2..-4 ms (34 host round trips of ~60-100 us, the GPU idle in each); 2^27 -3..-6 ms",
))
register(Optimization(
    "K6", ("ntt_msm_h", "batch_addition", "tail_msm", "b_g2"),
    "an MSM sorts as many windows a pass as 3/4 of the free device memory holds (84 B a key at the affine rounds' "
    "peak), balanced over the fewest passes, instead of 2^28 keys a pass: fewer digit passes over the scalars, "
    "fewer small tail rounds, one window reduction",
    True,     # measured: docs/optimizations.md
    "2^26 G1 MSM (13 windows of c = 20): 4 passes -> 1, 432 -> ~410 ms (measured: 434.2 / 427.0 / 419.8 / 410.3 ms at "
    "4 / 3 / 2 / 1 passes); 2^27 (12 windows) 6 passes -> 2, ~843 -> ~805 ms; 10 x 2^27 pipelined: ntt_msm_h "
    "-20..-40 ms a partition, as free memory allows",
))
register(Optimization(
    "K8", ("ntt_msm_h", "batch_addition", "tail_msm"),
    "K5's round totals with each bucket count read once (32 running sums a thread, in registers) instead of one "
    "pass over the offsets for each of the 32 round indices",
    True,     # measured: docs/optimizations.md
    "2^26 G1 MSM (one pass, 6.8e6 buckets): the \"round sizes\" mark from its measured value "
    "to ~0.2 ms: 32 passes over 54 MB of offsets, latency-bound at 528 blocks, become one",
))
register(Optimization(
    "K9", ("ntt_msm_h", "batch_addition", "tail_msm"),
    "each affine round's offsets from one counts kernel (ceil(cnt / 2^shift) straight from the input offsets) and "
    "a cumsum, instead of CuPy's difference, add and shift before the cumsum",
    True,     # measured: docs/optimizations.md
    "2^26 G1 MSM (one pass, 8 rounds over 6.8e6 buckets): the \"round offsets\" mark -0.5..-1 "
    "ms (two fewer passes of ~54 MB a round)",
))
register(Optimization(
    "K10", ("ntt_msm_h", "batch_addition", "tail_msm"),
    "a G1 pass of at least 2^20 buckets reduces its windows by affine groups: digit d = 2^s hi + lo, the window "
    "sum is 2^s sum hi G_hi + sum lo H_lo, G_hi and H_lo summed by more affine rounds (two adds a bucket at ~6 "
    "products, not a running sum's two XYZZ adds at ~14), then two small reductions; the per-bucket XYZZ sums go",
    True,     # measured: docs/optimizations.md
    "2^26 G1 MSM (6.8e6 buckets): bucket sums + window reduction 16.5 -> ~9 ms, the MSM -4..-8 ms; 2^27 (2.5e7 "
    "buckets, 57 ms) -20..-30 ms",
))
register(Optimization(
    "K11", ("ntt_msm_h", "batch_addition", "tail_msm"),
    "K4's round plans with 4 consecutive entries a thread (msm_affine_plan_entry4): the key or id loads, then the "
    "offsets' loads, issued together, instead of one dependent chain a thread",
    True,     # measured: docs/optimizations.md
    "2^26 G1 MSM: round plans (8 rounds over 1.7e9 entries, latency-bound) ~10 -> ~4-5 ms, the MSM -4..-6 ms; 2^27 "
    "~18.5 -> ~8 ms",
))
register(Optimization(
    "K15", ("ntt_msm_h", "batch_addition", "tail_msm"),
    "the affine rounds' one inverse a block (thread 0, while the block waits at its barrier) by the binary "
    "extended Euclid (kernels/ff/inverse.cuh: variable time, the sums are public) instead of Fermat's chain of "
    "~610 dependent products",
    True,     # measured: docs/optimizations.md
    "2^26 G1 MSM: the root inversions cost 6.2 ms (403.7 -> 397.5 ms without them, ~12 rounds); a chain ~5-10x "
    "shorter gives -4..-5.5 ms",
))
register(Optimization(
    "P2", ("ntt_msm_h",),
    "the H MSM over precomputed multiples of its fixed bases (cuzk/gpu/msm/fixed.py): t table blocks 2^(c G j) H, "
    "made on the GPU once the key is resident, let the windows share G = ceil(nw / t) sets of buckets, so the "
    "window grows to c = 22-24 and there are fewer windows to sort and add; tables and one group's sort pass "
    "sized by a memory budget ($CUZK_TABLE_GIB, else half the free device memory)",
    False,
    "2^26 G1 MSM (all 11 blocks, c = 24, one group: 60 GiB of tables) 395 -> 330-350 ms: 11 windows' entries "
    "instead of 13 (the rounds are ~85% of the MSM), the top window's 2^15 crowded buckets cost a little back; "
    "2^27 H MSM next to a resident key and a second proof: 2-3 blocks fit, -2..-6%; the tables cost ~10 s once",
))
register(Optimization(
    "A4", ("b_g2",),
    "B_G2 MSM on the CPU, a thread pool across circuits, instead of the GPU G2 MSM",
    False,
    "b_g2 much slower on a 2-core host than the GPU MSM; frees the GPU only when the G2 MSM is the bottleneck",
))


class OptError(ValueError):
    pass


@dataclass(frozen=True)
class OptSet:
    flags: tuple[tuple[str, bool], ...]

    def __getitem__(self, name: str) -> bool:
        return dict(self.flags)[name]

    def enabled(self, name: str) -> bool:
        return dict(self.flags).get(name, False)

    def as_dict(self) -> dict[str, bool]:
        return dict(self.flags)

    def label(self) -> str:
        on = [n for n, v in self.flags if v]
        if not on:
            return "baseline"
        if len(on) == len(self.flags):
            return "all"
        return "+".join(on)


def _apply(state: dict[str, bool], spec: str) -> None:
    for tok in (t.strip() for t in spec.split(",")):
        if not tok:
            continue
        if tok in ("all",):
            state.update({k: True for k in state})
            continue
        if tok in ("none", "baseline"):
            state.update({k: False for k in state})
            continue
        val = True
        if tok[0] in "+-":
            val, tok = tok[0] == "+", tok[1:]
        if tok not in REGISTRY:
            raise OptError(f"unknown optimization {tok!r}; known: {', '.join(REGISTRY)}")
        state[tok] = val


def resolve(spec: str | None = None) -> OptSet:
    """The registry's defaults, then `spec`. The environment's $CUZK_OPT is read where a process starts
    (cuzk/environment.py), never here."""
    state = {k: o.default for k, o in REGISTRY.items()}
    if spec:
        _apply(state, spec)
    return OptSet(tuple(state.items()))


def variants() -> dict[str, OptSet]:
    """What the suite tracks: `default` (exactly what ships); `default` with each toggle flipped:
    `default-X` for a toggle on by default (leave-one-out: X's contribution to the prover as it
    ships) and `default+X` for one off by default (what turning it on would give today); `baseline`
    (every toggle off)."""
    out = {"default": resolve(None)}
    for name, o in REGISTRY.items():
        sign = "-" if o.default else "+"
        out[f"default{sign}{name}"] = resolve(f"{sign}{name}")
    out["baseline"] = resolve("none")
    return out


def describe(variant: str) -> str:
    """One line for a variant name. A flipped toggle says what the variant runs first ("default without A1",
    "default with P2"), then, in parentheses, what the toggle does (its registry intent)."""
    if variant == "default":
        return "what ships: " + ", ".join(n for n, o in REGISTRY.items() if o.default)
    if variant == "baseline":
        return "every toggle off"
    if variant.startswith(("default-", "default+")) and variant[8:] in REGISTRY:
        o = REGISTRY[variant[8:]]
        return f"default {'without' if variant[7] == '-' else 'with'} {o.name} ({o.name}: {o.intent})"
    return variant
