"""SASS counts and pipe model for the DFMA-limb experiment (CPU only: nvcc + cuobjdump, no GPU).

    /tmp/venv/bin/python tools/experiments/dfma_sass.py     # CUOBJDUMP=... if cuobjdump is not on PATH

Compiles tools/experiments/dfma_bench.cu (nvcc -cubin -arch=sm_90 -I kernels -Xptxas -v), prints registers /
spills per kernel, the per-opcode counts of the whole dfma_{fp,fr}_mul kernels and of the loop body (one
mont_mul) of dfma_{fp,fr}_bench1 / bench1c, and the bound in clocks per warp-mul per SMSP:
  FP64 pipe (DFMA, DFMA.RM, DADD, DMUL): 16 lanes/SMSP/clk -> 2 clk per warp instruction
  FMA pipe (IMAD*): 2 clk per warp instruction (model A; model B: IMAD.WIDE/HI take 4)
  ALU pipe (IADD3, LOP3, SHF, LEA, ISETP, SEL, MOV, ...): 2 clk per warp instruction
  issue: 1 warp instruction per clk per SMSP (all instructions)
and the rate 132 SMs x 4 SMSPs x 1.98e9 clk/s x 32 / bound.
"""
from __future__ import annotations

import collections
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CUOBJDUMP = os.environ.get("CUOBJDUMP") or shutil.which("cuobjdump") or "cuobjdump"
FP64 = ("DFMA", "DADD", "DMUL")
ALU = ("IADD3", "LOP3", "SHF", "LEA", "ISETP", "SEL", "MOV", "PLOP3", "IABS", "FLO", "PRMT")
SMSP_CLK = 132 * 4 * 1.98e9


def compile_cubin(src: Path, out: Path, defines=()) -> str:
    """nvcc -cubin for sm_90 with -Xptxas -v; returns ptxas's report (RuntimeError with it on failure)."""
    r = subprocess.run(["nvcc", "-cubin", "-arch=sm_90", "-std=c++17", f"-I{ROOT / 'kernels'}", "-Xptxas", "-v",
                        *defines, "-o", str(out), str(src)], capture_output=True, text=True)
    if r.returncode:
        raise RuntimeError(r.stderr)
    return r.stderr


def ptxas_resources(report: str) -> dict[str, dict[str, int]]:
    """Per entry function of a ptxas -v report: regs, stack, spill_stores, spill_loads (bytes)."""
    out, fn = {}, None
    for line in report.splitlines():
        m = re.search(r"Compiling entry function '(\w+)'", line)
        if m:
            fn = m.group(1)
        m = re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads", line)
        if m and fn:
            out.setdefault(fn, {}).update(stack=int(m.group(1)), spill_stores=int(m.group(2)),
                                          spill_loads=int(m.group(3)))
        m = re.search(r"Used (\d+) registers", line)
        if m and fn:
            out.setdefault(fn, {})["regs"] = int(m.group(1))
    return out


def describe(res: dict[str, int]) -> str:
    """One ptxas_resources entry as text."""
    return (f"{res.get('regs', '?')} regs, stack {res.get('stack', '?')} B, "
            f"spill {res.get('spill_stores', '?')}/{res.get('spill_loads', '?')} B")


def sass_lines(cubin: Path, fn: str) -> list[tuple[int, str, str]]:
    out = subprocess.run([CUOBJDUMP, "-sass", "-fun", fn, str(cubin)], capture_output=True, text=True,
                         check=True).stdout
    res = []
    for line in out.splitlines():
        m = re.match(r"\s*/\*([0-9a-f]{4,})\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]*)(.*)", line)
        if m:
            res.append((int(m.group(1), 16), m.group(2), m.group(3)))
    return res


def loop_body(lines):
    """The instructions of the (single) backward branch's loop: [target, branch]."""
    for addr, op, rest in lines:
        if op == "BRA":
            m = re.search(r"0x([0-9a-f]+)", rest)
            if m and int(m.group(1), 16) < addr:
                lo = int(m.group(1), 16)
                return [(a, o, r) for a, o, r in lines if lo <= a <= addr]
    return lines


def count(lines) -> collections.Counter:
    c = collections.Counter(op for _, op, _ in lines)
    c["total"] = len(lines)
    return c


def model(c: collections.Counter) -> dict:
    fp64 = sum(v for k, v in c.items() if k.split(".")[0] in FP64)
    fma = sum(v for k, v in c.items() if k.startswith("IMAD"))
    wide = sum(v for k, v in c.items() if k.startswith(("IMAD.WIDE", "IMAD.HI")))
    alu = sum(v for k, v in c.items() if k.split(".")[0] in ALU)
    nops = c["NOP"]
    issue = c["total"] - nops
    boundA = max(2 * fp64, 2 * fma, 2 * alu, issue)
    boundB = max(2 * fp64, 2 * (fma + wide), 2 * alu, issue)
    return dict(fp64=fp64, fma=fma, wide=wide, alu=alu, issue=issue, boundA=boundA, boundB=boundB,
                rateA=SMSP_CLK * 32 / boundA, rateB=SMSP_CLK * 32 / boundB)


def report(cubin: Path, kern: str, body: bool, resources: str = "") -> str:
    """Opcode counts and the pipe model of one kernel (body: its loop body, one multiplication)."""
    lines = sass_lines(cubin, kern)
    c = count(loop_body(lines) if body else lines)
    m = model(c)
    ops = ", ".join(f"{k} {v}" for k, v in sorted(c.items(), key=lambda kv: -kv[1]) if k != "total")
    return (f"{kern}{' (loop body = 1 mul)' if body else ' (whole kernel)'}: {resources + '; ' if resources else ''}"
            f"{c['total']} instructions\n    {ops}\n    FP64 {m['fp64']}, FMA {m['fma']} (WIDE {m['wide']}), "
            f"ALU {m['alu']}, issue {m['issue']} (NOPs excluded); bound clk/warp-mul A {m['boundA']}, "
            f"B {m['boundB']} -> {m['rateA']:.3g} / {m['rateB']:.3g} mults/s at 100%")


def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        cubin = Path(tmp) / "dfma.cubin"
        try:
            ptxas = compile_cubin(ROOT / "tools/experiments/dfma_bench.cu", cubin)
        except RuntimeError as e:
            print(e)
            return 1
        for fn, res in ptxas_resources(ptxas).items():
            print(f"{fn:<18} {describe(res)}")
        for f in ("fp", "fr"):
            for kern, body in ((f"dfma_{f}_mul", False), (f"dfma_{f}_bench1", True), (f"dfma_{f}_bench1c", True)):
                print("\n" + report(cubin, kern, body))
    return 0


if __name__ == "__main__":
    sys.exit(main())
