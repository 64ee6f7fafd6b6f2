"""`cuzk micro KERNEL`: pyperf-driven kernel microbenchmarks timed by CUDA events.

pyperf runs calibrated loops in worker processes and writes JSON (`-o FILE`) that
`python -m pyperf compare_to` reads. Workers inherit the whole environment (CUDA and
CuPy variables included): pyperf drops most variables unless told otherwise. After the
run, the ratio of the mean to the floor of design §7 is printed.
"""
from __future__ import annotations

import sys

KERNELS = ("ntt", "intt", "h", "spmv", "fp_mul", "fr_mul", "msm", "msm_g2", "batch_add")
NOT_YET: dict = {}
IMAD_MODEL_FP_MUL = 2.8e10     # Fp mul/s, design §7
COPY_BW = 4.28e12              # bytes/s, device copy, design §7
NTT27_FLOOR = 0.030            # s
MSM26_FLOOR = 0.26             # s, 2^26 G1 MSM, IMAD floor 0.26-0.36 s


def floor_s(kernel: str, log_size: int, work: int, convention: str = "coeff") -> float | None:
    """The floor for one call, in seconds (None where design §7 gives none)."""
    ntt = NTT27_FLOOR * (2**log_size * log_size) / (2**27 * 27)
    if kernel in ("ntt", "intt"):
        return ntt
    if kernel == "h":
        return ntt * (7 if convention == "coeff" else 6)
    if kernel == "fp_mul":
        return work / IMAD_MODEL_FP_MUL
    if kernel == "msm" and log_size == 26:
        return MSM26_FLOOR
    if kernel == "spmv":
        return work * (32 + 4 + 32) / COPY_BW          # coefficient, column, gathered witness
    return None


def _make(kernel: str, log_size: int, convention: str, generator: int):
    from .gpu import micro as M
    if kernel == "ntt":
        return M.make_ntt(log_size, "ntt", generator)
    if kernel == "intt":
        from .gpu import ntt as G
        x = M.random_fr(1 << log_size)
        return (lambda loops: M._events(lambda: G.intt(x, log_size, generator), loops)), 1 << log_size
    if kernel == "h":
        return M.make_h(log_size, convention, generator)
    if kernel == "spmv":
        return M.make_spmv(log_size)
    if kernel in ("fp_mul", "fr_mul"):
        return M.make_mul(kernel[:2])
    if kernel == "msm":
        return M.make_msm(log_size, 1)
    if kernel == "msm_g2":
        return M.make_msm(log_size, 2)
    if kernel == "batch_add":
        return M.make_batch_add(log_size)
    raise ValueError(kernel)


def main(argv: list[str]) -> int:
    try:
        import pyperf
    except ImportError:
        print("cuzk: error: `cuzk micro` needs pyperf (pip install 'cuzk[bench]')", file=sys.stderr)
        return 2
    from .backend import gpu_status
    kernel = next((a for a in argv if not a.startswith("-")), None)
    if kernel in NOT_YET:
        print(f"cuzk: error: micro {kernel} arrives with {NOT_YET[kernel]}", file=sys.stderr)
        return 2
    if kernel in KERNELS and "--worker" not in argv:
        ok, why = gpu_status()
        if not ok:
            print(f"cuzk: error: micro needs a GPU ({why})", file=sys.stderr)
            return 2
    if not any(a in argv for a in ("--copy-env", "--inherit-environ")) and "--worker" not in argv:
        argv = [*argv, "--copy-env"]

    def add_cmdline_args(cmd, args):
        cmd.extend([args.kernel, "--log-size", str(args.log_size), "--convention", args.convention,
                    "--generator", str(args.generator)])

    runner = pyperf.Runner(add_cmdline_args=add_cmdline_args, program_args=("-m", "cuzk", "micro"))
    p = runner.argparser
    p.add_argument("kernel", choices=KERNELS)
    p.add_argument("--log-size", type=int, default=20)
    p.add_argument("--convention", default="coeff", choices=("coeff", "odd_lagrange"))
    p.add_argument("--generator", type=int, default=7, choices=(5, 7))
    args = runner.parse_args(argv)
    run, work = _make(args.kernel, args.log_size, args.convention, args.generator)
    name = f"{args.kernel}_2^{args.log_size}" if args.kernel not in ("fp_mul", "fr_mul") else args.kernel
    bench = runner.bench_time_func(name, run)
    if bench is not None and not args.worker:
        mean = bench.mean()
        fl = floor_s(args.kernel, args.log_size, work, args.convention)
        extra = f"; {fl * 1e3:.3f} ms floor, {mean / fl:.2f}x the floor" if fl else ""
        if args.kernel in ("fp_mul", "fr_mul"):
            extra = f"; {work / mean:.3e} mul/s" + (f", {mean / fl:.2f}x the IMAD model" if fl else "")
        print(f"{name}: mean {mean * 1e3:.3f} ms per call{extra}")
    return 0
