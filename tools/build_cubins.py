"""Prebuild the kernel modules (kernels/<concept>/<name>.cu) with nvcc into the cubin cache the loader reads
(CUZK_CUBIN_DIR); the work is cuzk.gpu.cubins, which `cuzk runner-check` also runs on a GPU runner.

    python tools/build_cubins.py [--arch sm_90] [--out DIR] [--jobs N] [--prune] [--only NAME,...]

Useful where NVRTC compiles are slow (the G2 MSM takes minutes) or on machines that are
started fresh for each job. The file names carry a hash of the sources, so a stale cubin
is never used. It also builds K1's shared library (kernels/host/cub_sort.cu: cuzk/gpu/cub_library.py).
--prune then removes the directory's other files (stale sources, experiment builds): what a device call carries.
--only builds just those modules (with their BUILDS), e.g. the ones a device run loads.
Exit 0 when every build is there, 1 when nvcc failed on one, 2 on bad arguments.
"""
import argparse
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from cuzk.gpu import cubins, kernel_sources  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--arch", default="sm_90")
    ap.add_argument("--out", default=None)
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--prune", action="store_true", help="remove every other file from the cubin directory")
    ap.add_argument("--only", default="", help="comma-separated module names, e.g. msm/g1 (default: every module)")
    args = ap.parse_args()
    if args.only and args.prune:
        ap.error("--prune keeps only what this run builds: not with --only")
    if args.out:
        os.environ["CUZK_CUBIN_DIR"] = args.out
    only = set(args.only.split(",")) if args.only else None
    if only and only - set(kernel_sources.module_names()):
        ap.error(f"no such modules: {sorted(only - set(kernel_sources.module_names()))}")

    def say(r):
        print(f"{r.job.label}: {r.status.upper() if r.status == 'failed' else r.status}"
              + (f"\n{r.error}" if r.error else ""), flush=True)
    try:
        results = cubins.build(args.arch, workers=args.jobs, only=only, say=say, note=print)
    except cubins.CubinError as e:
        print(f"build_cubins: {e}", file=sys.stderr)
        return 2
    failed = any(r.status == "failed" for r in results)
    if args.prune and not failed:
        for f in cubins.prune(keep={r.path for r in results} | {kernel_sources.cubin_dir() / cubins.STAMP}):
            print(f"pruned {f.name}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
