"""Per-opcode SASS counts of field-mul kernels (CPU only: nvcc + cuobjdump, no GPU).

    python3 tools/experiments/sass_count.py [VARIANT ...]     # default: 1 5

For each variant: compile kernels/ff/ops.cu and kernels/ntt/reg.cu for sm_90 with
-DCUZK_FASTMUL_VARIANT=V, report registers / spills (-Xptxas -v) and per-opcode counts,
plus the FMA-pipe and ALU-pipe slots under model A (IMAD.WIDE/IMAD.HI = 1 FMA slot) and
model B (2 slots); docs/mul-notes.md explains the models.
"""
from __future__ import annotations

import collections
import os
import shutil
import re
import subprocess
import sys
import tempfile
from pathlib import Path

CUOBJDUMP = os.environ.get("CUOBJDUMP") or shutil.which("cuobjdump") or "cuobjdump"
KERNELS = Path(__file__).resolve().parents[2] / "kernels"
sys.path.insert(0, str(Path(__file__).resolve().parent))
import dfma_sass as S  # noqa: E402  (nvcc and ptxas-report helpers)
FUNCS = {"ff/ops.cu": os.environ.get("SASS_FUNCS", "fp_mul fr_mul fp_mul_bench fr_mul_bench").split(),
         "ntt/reg.cu": [] if os.environ.get("SASS_NO_NTT") else ["ntt_r8_dif", "ntt_r8_dit", "ntt_r4_dif", "ntt_r4_dit"]}
FMA = ("IMAD", "IMAD.WIDE", "IMAD.WIDE.U32", "IMAD.HI", "IMAD.HI.U32", "IMAD.X", "IMAD.MOV", "IMAD.MOV.U32",
       "IMAD.SHL", "IMAD.SHL.U32", "IMAD.IADD", "IMAD.U32")
ALU = ("IADD3", "IADD3.X", "MOV", "SEL", "LOP3.LUT", "ISETP", "SHF", "LEA", "LEA.HI", "PLOP3.LUT", "IABS", "FLO")


def compile_(src: str, variant: int, tmp: Path) -> tuple[Path, str]:
    out = tmp / f"{src}.{variant}.cubin"
    return out, S.compile_cubin(KERNELS / src, out, (f"-DCUZK_FASTMUL_VARIANT={variant}",
                                                     *os.environ.get("SASS_EXTRA", "").split()))


def opcounts(cubin: Path, fn: str) -> collections.Counter:
    sass = subprocess.run([CUOBJDUMP, "-sass", "-fun", fn, str(cubin)], capture_output=True, text=True,
                          check=True).stdout
    c = collections.Counter()
    for line in sass.splitlines():
        m = re.match(r"\s*/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]*)", line)
        if m:
            op = m.group(1)
            if op.startswith("IMAD.WIDE") or op.startswith("IMAD.HI") or op.startswith("IMAD.MOV") or op.startswith("IMAD.X"):
                op = op.split(".")[0] + "." + op.split(".")[1]
            elif op.startswith(("IADD3", "ISETP", "SEL", "LOP3", "SHF", "LEA", "STG", "LDG", "ULDC")):
                op = op if op in ("IADD3.X",) else op.split(".")[0] + ("" if op.split(".")[0] != "LOP3" else "")
            c[op] += 1
    c["total"] = sum(v for k, v in c.items() if k != "total")
    return c


def pipes(c: collections.Counter) -> dict[str, int]:
    wide = c["IMAD.WIDE"] + c["IMAD.HI"]
    fma_other = sum(v for k, v in c.items() if k.startswith("IMAD") and k not in ("IMAD.WIDE", "IMAD.HI"))
    alu = sum(v for k, v in c.items() if k.split(".")[0] in ("IADD3", "MOV", "SEL", "LOP3", "ISETP", "SHF", "LEA",
                                                              "PLOP3", "IABS"))
    return {"fmaA": wide + fma_other, "fmaB": 2 * wide + fma_other, "alu": alu, "issue": c["total"]}


def main() -> None:
    variants = [int(a) for a in sys.argv[1:]] or [1, 5]
    with tempfile.TemporaryDirectory() as tmp:
        for v in variants:
            for src, fns in FUNCS.items():
                cubin, log = compile_(src, v, Path(tmp))
                res = {fn: S.describe(r) for fn, r in S.ptxas_resources(log).items()}
                for fn in fns:
                    c = opcounts(cubin, fn)
                    p = pipes(c)
                    # clocks per warp instruction stream: each pipe takes 2 clk per warp instr
                    bA = max(2 * p["fmaA"], 2 * p["alu"], p["issue"])
                    bB = max(2 * p["fmaB"], 2 * p["alu"], p["issue"])
                    top = ", ".join(f"{k} {c[k]}" for k in ("total", "IMAD.WIDE", "IMAD", "IMAD.HI", "IMAD.X",
                                                             "IMAD.MOV", "MOV", "HFMA2", "IADD3", "IADD3.X",
                                                             "SEL", "LOP3", "ISETP") if c[k])
                    print(f"V{v} {fn:<13} {res.get(fn, '')}\n    {top}\n    FMA slots A {p['fmaA']} B {p['fmaB']}, "
                          f"ALU {p['alu']}, issue {p['issue']}; bound clk A {bA} B {bB}", flush=True)


if __name__ == "__main__":
    main()
