"""SASS counts, registers / spills and the pipe model for fastmul variant 6 vs variant 1 (CPU only: nvcc +
cuobjdump, no GPU). docs/mul-notes.md, "Variant 6".

    CUOBJDUMP=... /tmp/venv/bin/python tools/experiments/v6_sass.py

Builds kernels/ff/ops.cu plus a 1-chain probe loop (x = x * y, `#pragma unroll 1`, so the loop body is
exactly one mont_t multiplication) for: v1 (default), v6 (both fields), and prints registers / spills of
fp_mul / fr_mul / the probes, the per-opcode counts of fp_mul / fr_mul (whole kernels) and of the probe loop
bodies, and the bound in clk per warp-mul per SMSP (dfma_sass.model: FP64, FMA (A: IMAD.WIDE = 1 slot,
B: 2 slots), ALU pipes at 2 clk per warp instruction, issue at 1).
"""
from __future__ import annotations

import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from dfma_sass import compile_cubin, describe, ptxas_resources, report  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
PROBE = r'''
#define CUZK_V6_PROBE(F, name)                                                       \
    extern "C" __global__ void name(uint32_t* data, int iters) {                     \
        long i = blockIdx.x * (long)blockDim.x + threadIdx.x;                        \
        const int W = sizeof(F) / 4;                                                 \
        F x0 = F::load(data + i * W); const F y = x0;                                \
        _Pragma("unroll 1") for (int k = 0; k < iters; k++) x0 = x0 * y;             \
        x0.store(data + i * W);                                                      \
    }
CUZK_V6_PROBE(fp_t, fp_probe1)
CUZK_V6_PROBE(fr_t, fr_probe1)
'''
BUILDS = {"v1": (), "v6": ("-DCUZK_FASTMUL_VARIANT=6",)}


def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "probe.cu"
        src.write_text((ROOT / "kernels/ff/ops.cu").read_text() + PROBE)
        for b, defs in BUILDS.items():
            cubin = Path(tmp) / f"{b}.cubin"
            try:
                res = {fn: describe(r) for fn, r in ptxas_resources(compile_cubin(src, cubin, defs)).items()}
            except RuntimeError as e:
                print(e)
                return 1
            for kern, body in (("fp_mul", False), ("fr_mul", False), ("fp_probe1", True), ("fr_probe1", True)):
                print(f"[{b}] " + report(cubin, kern, body, res.get(kern, "")), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
