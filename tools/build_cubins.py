"""Prebuild the kernel modules (kernels/<concept>/<name>.cu) with nvcc into the cubin cache the loader reads
(CUZK_CUBIN_DIR).

    python tools/build_cubins.py [--arch sm_90] [--out DIR] [--jobs N] [--prune] [--only NAME,...]

Useful where NVRTC compiles are slow (the G2 MSM takes minutes) or on machines that are
started fresh for each job. The file names carry a hash of the sources, so a stale cubin
is never used. It also builds K1's shared library (kernels/host/cub_sort.cu: cuzk/gpu/cub_sort.py).
--prune then removes the directory's other files (stale sources, experiment builds): what a device call carries.
--only builds just those modules (with their BUILDS), e.g. the ones a device run loads.
"""
import argparse
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from cuzk.gpu import cub_sort, loader  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--arch", default="sm_90")
    ap.add_argument("--out", default=None)
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--prune", action="store_true", help="remove every other file from the cubin directory")
    ap.add_argument("--only", default="", help="comma-separated module names, e.g. msm/g1 (default: every module)")
    args = ap.parse_args()
    if args.out:
        os.environ["CUZK_CUBIN_DIR"] = args.out
    out = loader.cubin_dir()
    out.mkdir(parents=True, exist_ok=True)
    names = loader.module_names()
    if args.only and args.prune:
        ap.error("--prune keeps only what this run builds: not with --only")
    if args.only:
        only = set(args.only.split(","))
        if only - set(names):
            ap.error(f"no such modules: {sorted(only - set(names))}")
        names = [n for n in names if n in only]
    jobs = [(n, ()) for n in names] + [(n, b) for n, builds in loader.BUILDS.items() for b in builds if n in names]

    def build(job):
        name, extra = job
        label = name if not extra else f"{name} [{' '.join(extra)}]"
        dst = loader.cubin_path(name, args.arch, extra)
        if dst.exists():
            return label, "cached"
        tmp = dst.with_suffix(".tmp")
        r = subprocess.run(["nvcc", f"-arch={args.arch}", "-cubin", "-std=c++17", "-I", str(loader.kernel_dir()),
                            *loader.defines(extra), "-o", str(tmp), str(loader.kernel_dir() / f"{name}.cu")],
                           capture_output=True, text=True)
        if r.returncode:
            return label, "FAILED\n" + r.stderr
        tmp.rename(dst)
        return label, "built"

    def build_shim():
        dst = cub_sort.library_path(args.arch)
        if dst.exists():
            return cub_sort.SOURCE, "cached"
        try:
            cub_sort.build(args.arch, dst)
        except cub_sort.SortUnavailable as e:
            return cub_sort.SOURCE, f"FAILED\n{e}"
        return cub_sort.SOURCE, "built"

    failed = False
    with ThreadPoolExecutor(args.jobs) as ex:
        for label, status in ex.map(lambda task: task(), [build_shim, *(partial(build, j) for j in jobs)]):
            print(f"{label}: {status}")
            failed |= status.startswith("FAILED")
    if args.prune and not failed:
        keep = {loader.cubin_path(n, args.arch, b).name for n, b in jobs} | {cub_sort.library_path(args.arch).name}
        for f in sorted(out.iterdir()):
            if f.is_file() and f.name not in keep:
                f.unlink()
                print(f"pruned {f.name}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
