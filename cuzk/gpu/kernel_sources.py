"""The kernel sources on the host: where kernels/ is, the module builds product code selects (BUILDS), every
file a module's cubin depends on, and the cubin cache's names for them (no CuPy, no device: tools/build_cubins.py,
cubins.py and the kernel checks use these; loader.py compiles and loads through them).

A module is named by its path under kernels/ without the suffix: "msm/g1" is kernels/msm/g1.cu. Includes are
quoted and relative to kernels/ ("ff/field.cuh"), the one -I directory.
"""
from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path


def kernel_dir() -> Path:
    """kernels/ as installed (cuzk.kernels), or beside the package in a source checkout."""
    try:
        from ..kernels import SOURCE_DIR
        return Path(SOURCE_DIR)
    except ImportError:
        return Path(__file__).resolve().parents[2] / "kernels"


# Builds of a module that product code selects at run time (a registry toggle), beside its default build:
# module -> tuples of NAME=VALUE defines. tools/build_cubins.py prebuilds them too.
BUILDS: dict[str, tuple[tuple[str, ...], ...]] = {
    "ntt/reg": (("CUZK_FASTMUL_VARIANT_FR=6",),      # N2: the NTT passes on fastmul build 6 (FP64 pipe)
                ("CUZK_FASTMUL_VARIANT_FR=6", "CUZK_NTT_DIF2=1"),    # N2 and N4: DIF butterflies in two ops
                ("CUZK_FASTMUL_VARIANT_FR=6", "CUZK_NTT_DIF2=1", "CUZK_NTT_LAZY_SUB=1"),    # and N11
                # N12 off: the same builds with the exchanges in 32-bit words
                ("CUZK_FASTMUL_VARIANT_FR=6", "CUZK_NTT_SM128=0"),
                ("CUZK_FASTMUL_VARIANT_FR=6", "CUZK_NTT_DIF2=1", "CUZK_NTT_SM128=0"),
                ("CUZK_FASTMUL_VARIANT_FR=6", "CUZK_NTT_DIF2=1", "CUZK_NTT_LAZY_SUB=1", "CUZK_NTT_SM128=0"),
                # N17 off: the 16-byte exchanges' swizzle computed bit by bit
                ("CUZK_FASTMUL_VARIANT_FR=6", "CUZK_NTT_SWZ4_LUT=0"),
                ("CUZK_FASTMUL_VARIANT_FR=6", "CUZK_NTT_DIF2=1", "CUZK_NTT_SWZ4_LUT=0"),
                ("CUZK_FASTMUL_VARIANT_FR=6", "CUZK_NTT_DIF2=1", "CUZK_NTT_LAZY_SUB=1", "CUZK_NTT_SWZ4_LUT=0")),
    "ntt/ntt": (("CUZK_FASTMUL_VARIANT_FR=6",),),        # N3: the H phase's pointwise passes on fastmul build 6
    "ff/ops": (("CUZK_FASTMUL_VARIANT_FP=6", "CUZK_FASTMUL_VARIANT_FR=6"),),   # cuzk micro --fastmul 6
    "msm/g1": (("CUZK_FASTSQR=1",),                     # S1: squarings by fastmul::mont_sqr
               ("CUZK_FP_CALL=1",),                     # I1: the Fp products called, not inlined
               ("CUZK_FASTSQR=1", "CUZK_FP_CALL=1"),    # S1 and I1
               ("CUZK_FP_CALL=1", "CUZK_FASTMUL_VARIANT_FP=3"),                     # I1 and I2: the callee on build 3
               ("CUZK_FASTSQR=1", "CUZK_FP_CALL=1", "CUZK_FASTMUL_VARIANT_FP=3")),  # S1, I1, I2
    "msm/g2": (("CUZK_FP_CALL=1",),                     # I1 (Fp2 over called Fp products)
               ("CUZK_FP_CALL=1", "CUZK_FASTMUL_VARIANT_FP=3")),   # I1 and I2
}
MUL_BUILDS = {1: (), 6: BUILDS["ff/ops"][0]}    # the field-multiply benchmarks' --fastmul -> field_ops' module build


def defines(extra: tuple[str, ...] = ()) -> tuple[str, ...]:
    """-D options of a module build (`extra`: one of BUILDS, or () for the default). Part of the cubin key."""
    return tuple(f"-D{d}" for d in extra if d)


_INCLUDE = re.compile(rb'^[ \t]*#[ \t]*include[ \t]*"([^"]+)"', re.M)


def module_names() -> list[str]:
    """Every kernel module ("ff/ops", "msm/g1", ...): the .cu files under kernels/ but host/ (the CUB shim, a
    shared library: cub_library.py)."""
    d = kernel_dir()
    return sorted(p.relative_to(d).with_suffix("").as_posix() for p in d.rglob("*.cu")
                  if p.relative_to(d).parts[0] != "host")


def sources(name: str) -> list[Path]:
    """kernels/<name>.cu and every kernels/ header it includes, directly or not (quoted includes,
    conditional ones too): what its cubin depends on."""
    d = kernel_dir()
    return includes(Path(d, f"{name}.cu"), d)


def includes(source: Path, d: Path) -> list[Path]:
    """`source` and every header of directory d it includes, directly or not: source first."""
    out, todo = [], [source]
    while todo:
        p = todo.pop()
        if p in out:
            continue
        out.append(p)
        for m in _INCLUDE.findall(p.read_bytes()):
            # as the preprocessor: the including file's own folder first, then -I kernels/
            hit = next((c for c in (Path(p.parent, m.decode()), Path(d, m.decode())) if c.is_file()), None)
            if hit is not None:
                todo.append(hit)
    return [out[0], *sorted(out[1:])]


def source_key(name: str, arch_name: str, extra: tuple[str, ...] = ()) -> str:
    """Hash of the module's source, the headers it includes, the -D defines and the target."""
    h = hashlib.sha256(arch_name.encode())
    for opt in defines(extra):
        h.update(opt.encode())
    d = kernel_dir()
    for p in sources(name):
        h.update(p.relative_to(d).as_posix().encode())
        h.update(p.read_bytes())
    return h.hexdigest()[:20]


def cubin_dir() -> Path:
    base = os.environ.get("CUZK_CUBIN_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME", os.path.expanduser("~/.cache")), "cuzk", "cubin")
    return Path(base)


def cubin_path(name: str, arch_name: str, extra: tuple[str, ...] = ()) -> Path:
    return cubin_dir() / f"{name.replace('/', '_')}-{arch_name}-{source_key(name, arch_name, extra)}.cubin"
