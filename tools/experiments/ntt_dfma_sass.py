"""SASS of the r4d NTT pass (kernels/ntt/dfma.cu) next to r4 (kernels/ntt/reg.cu), and a multiplication-bound
estimate at 2^27 (CPU only: nvcc + cuobjdump).

    CUOBJDUMP=... /tmp/venv/bin/python tools/experiments/ntt_dfma_sass.py

1. Registers / spills and per-opcode counts of the whole kernels ntt_r4{d,m}_{dif,dit} and ntt_r4_{dif,dit}.
2. Probe loops (one operation per iteration, as the passes compose them; the loop body is counted):
   r4d: mul = to_d(x) + a twiddle load and its regrouping + mont_mul_u<Fr, true>; add_u; sub_u;
   r4m: words -> from_u32 + a twiddle + mont_mul_u<Fr, true> + to_u32_u (add/sub: r4's);
   r4:  fr_t * (a twiddle load + the multiplication); fr_t +; fr_t -.
3. Per element at 2^27 (passes 9 + 9 + 9, the r4 plan): 13.875 multiplications, 27 additions or subtractions
   (one of each per butterfly, i.e. one per element per stage), per pass one load and one store conversion
   (r4d) and 4 shared-memory exchanges (r4d: 5 STS.64 + 5 LDS.64, r4: 8 + 8 STS/LDS.32). The pipe model of
   dfma_sass.py (FP64, FMA, ALU: 2 clk per warp instruction, model B: IMAD.WIDE/HI 4; issue: 1) on the SUMS gives a bound per element;
   the r4d time is predicted as r4's measured 55.0 ms x bound(r4d) / bound(r4).
"""
from __future__ import annotations

import collections
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(Path(__file__).resolve().parent))
import dfma_sass as S  # noqa: E402

PROBE_D = r'''
#include "ff/mul_dfma.cuh"
using FR = dfma::Fr; using fe = dfma::elem_u<FR>; using fd = dfma::elem<FR>;
__device__ __forceinline__ fe ld(const uint32_t* p) { uint32_t w[8]; for (int i = 0; i < 8; i++) w[i] = p[i]; return dfma::from_u32_u<FR>(w); }
__device__ __forceinline__ fd ldt(const uint32_t* __restrict__ p) { const uint4* q = (const uint4*)p; uint4 a = q[0], b = q[1];
    uint32_t w[8] = {a.x, a.y, a.z, a.w, b.x, b.y, b.z, b.w}; return dfma::from_u32<FR>(w); }
__device__ __forceinline__ void st(const fe& x, uint32_t* p) { uint32_t w[8]; dfma::to_u32_u<FR>(x, w); for (int i = 0; i < 8; i++) p[i] = w[i]; }
extern "C" __global__ void p_mul(uint32_t* d, const uint32_t* __restrict__ tw, int n) {
    fe x = ld(d + 8 * threadIdx.x);
    _Pragma("unroll 1") for (int i = 0; i < n; i++) x = dfma::mont_mul_u<FR, true>(dfma::to_d<FR>(x), ldt(tw + 8 * (i & 511)));
    st(x, d + 8 * threadIdx.x); }
extern "C" __global__ void p_add(uint32_t* d, int n) {
    fe x = ld(d + 8 * threadIdx.x), y = ld(d + 8 * threadIdx.x + 4096);
    _Pragma("unroll 1") for (int i = 0; i < n; i++) x = dfma::add_u<FR>(x, y);
    st(x, d + 8 * threadIdx.x); }
extern "C" __global__ void p_sub(uint32_t* d, int n) {
    fe x = ld(d + 8 * threadIdx.x), y = ld(d + 8 * threadIdx.x + 4096);
    _Pragma("unroll 1") for (int i = 0; i < n; i++) x = dfma::sub_u<FR>(x, y);
    st(x, d + 8 * threadIdx.x); }
extern "C" __global__ void p_mulm(uint32_t* d, const uint32_t* __restrict__ tw, int n) {   // r4m: words in and out
    uint32_t x[8]; for (int i = 0; i < 8; i++) x[i] = d[8 * threadIdx.x + i];
    _Pragma("unroll 1") for (int i = 0; i < n; i++) dfma::to_u32_u<FR>(dfma::mont_mul_u<FR, true>(dfma::from_u32<FR>(x), ldt(tw + 8 * (i & 511))), x);
    for (int i = 0; i < 8; i++) d[8 * threadIdx.x + i] = x[i]; }
extern "C" __global__ void p_conv(uint32_t* d, int n) {
    _Pragma("unroll 1") for (int i = 0; i < n; i++) { fe x = ld(d + 8 * i); st(x, d + 8 * i + 8); } }
'''
PROBE_R = r'''
#include "ff/field.cuh"
using namespace cuzk;
extern "C" __global__ void p_mul(uint32_t* d, const uint32_t* __restrict__ tw, int n) {
    fr_t x = fr_t::load(d + 8 * threadIdx.x);
    _Pragma("unroll 1") for (int i = 0; i < n; i++) x = x * fr_t::load(tw + 8 * (i & 511));
    x.store(d + 8 * threadIdx.x); }
extern "C" __global__ void p_add(uint32_t* d, int n) {
    fr_t x = fr_t::load(d + 8 * threadIdx.x), y = fr_t::load(d + 8 * threadIdx.x + 4096);
    _Pragma("unroll 1") for (int i = 0; i < n; i++) x = x + y;
    x.store(d + 8 * threadIdx.x); }
extern "C" __global__ void p_sub(uint32_t* d, int n) {
    fr_t x = fr_t::load(d + 8 * threadIdx.x), y = fr_t::load(d + 8 * threadIdx.x + 4096);
    _Pragma("unroll 1") for (int i = 0; i < n; i++) x = x - y;
    x.store(d + 8 * threadIdx.x); }
'''
MEM = ("LDS", "STS", "LDG", "STG", "BAR")


def pipes(c: collections.Counter) -> collections.Counter:
    m = S.model(c)
    mem = sum(v for k, v in c.items() if k.split(".")[0] in MEM)
    return collections.Counter(fp64=m["fp64"], fma=m["fma"], wide=m["wide"], alu=m["alu"], issue=m["issue"], mem=mem)


def bound(p: collections.Counter, wide_slots: int = 2) -> float:
    """Model B (default): IMAD.WIDE / IMAD.HI take 2 FMA-pipe slots (4 clk); model A: 1 (wide_slots=1)."""
    return max(2 * p["fp64"], 2 * (p["fma"] + (wide_slots - 1) * p["wide"]), 2 * p["alu"], p["issue"])


def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        info = {}
        for name, src in (("ntt_dfma", ROOT / "kernels/ntt/dfma.cu"), ("ntt_reg", ROOT / "kernels/ntt/reg.cu")):
            info.update(S.ptxas_resources(S.compile_cubin(src, tmp / f"{name}.cubin")))
        print("== whole kernels (static counts) ==")
        for cub, kerns in (("ntt_dfma", ("ntt_r4d_dif", "ntt_r4d_dit", "ntt_r4m_dif", "ntt_r4m_dit")), ("ntt_reg", ("ntt_r4_dif", "ntt_r4_dit"))):
            for k in kerns:
                c = S.count(S.sass_lines(tmp / f"{cub}.cubin", k))
                top = ", ".join(f"{o} {v}" for o, v in sorted(c.items(), key=lambda kv: -kv[1])[:22] if o != "total")
                print(f"{k}: {info[k]['regs']} registers, {info[k]['spill_stores']} B spill stores, {c['total']} instructions\n"
                      f"    {top}\n    pipes {dict(pipes(c))}")
        probes = {}
        for tag, src in (("d", PROBE_D), ("r", PROBE_R)):
            (tmp / f"p{tag}.cu").write_text(src)
            S.compile_cubin(tmp / f"p{tag}.cu", tmp / f"p{tag}.cubin")
            for op in ("mul", "add", "sub", "conv", "mulm") if tag == "d" else ("mul", "add", "sub"):
                c = S.count(S.loop_body(S.sass_lines(tmp / f"p{tag}.cubin", f"p_{op}")))
                probes[tag, op] = pipes(c)
        print("\n== probe loop bodies (one operation) ==")
        for (tag, op), p in probes.items():
            print(f"{'r4d' if tag == 'd' else 'r4 '} {op:<4}: {dict(p)}")
        probes["m", "mul"] = probes["d", "mulm"]                  # r4m: dfma multiplication, fr_t add/sub
        probes["m", "add"], probes["m", "sub"] = probes["r", "add"], probes["r", "sub"]
        # per element at 2^27
        mults, addsub, passes, exch = 13.875, 27, 3, 4
        el = {}
        names = {"r": "r4 ", "d": "r4d", "m": "r4m"}
        for tag in ("d", "r", "m"):
            p = collections.Counter()
            for key, v in probes[tag, "mul"].items():
                p[key] += mults * v
            for key in probes[tag, "add"]:
                p[key] += addsub / 2 * (probes[tag, "add"][key] + probes[tag, "sub"][key])
            words = 5 if tag == "d" else 8
            p["issue"] += passes * exch * 2 * words                 # LDS + STS per exchange
            p["mem"] += passes * exch * 2 * words
            if tag == "d":
                for key, v in probes["d", "conv"].items():
                    p[key] += passes * v                            # load + store regrouping per pass
            el[tag] = p
        print("\n== per element at 2^27 (model) ==")
        for tag in ("r", "d", "m"):
            p = el[tag]
            print(f"{names[tag]}: " + ", ".join(f"{k} {v:.0f}" for k, v in p.items())
                  + f"; bound {bound(p):.0f} (model B) / {bound(p, 1):.0f} (model A) clk per warp-element")
        for tag in ("d", "m"):
            for mb, name in ((2, "B"), (1, "A")):
                ratio = bound(el[tag], mb) / bound(el["r"], mb)
                print(f"model {name}: bound ratio {names[tag]} / r4 = {ratio:.3f} -> predicted {names[tag]} at 2^27: "
                      f"{55.0 * ratio:.1f} ms (r4 measured 55.0 ms)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
