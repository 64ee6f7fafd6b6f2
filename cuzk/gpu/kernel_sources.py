"""The kernel sources on the host: where kernels/ is, the module builds product code selects (BUILDS), every
file a module's cubin depends on, and the cubin cache's names for them (no CuPy, no device: tools/build_cubins.py,
cubins.py and the kernel checks use these; loader.py compiles and loads through them).

A module is named by its path under kernels/ without the suffix: "msm/g1" is kernels/msm/g1.cu. Includes are
quoted and relative to kernels/ ("ff/field.cuh"), the one -I directory.
"""
from __future__ import annotations

import errno
import hashlib
import os
import re
import stat
import struct
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
_DEFINE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(=[A-Za-z0-9_.+-]*)?")


def assigned_value(source: str, name: str, where: str):
    """The expression (an ast node) last assigned to `name` at the top level of another commit's Python text, which
    is parsed, never run; None where there is none. ValueError, naming `where`, for a text that is not Python."""
    import ast
    try:
        tree = ast.parse(source)
    except SyntaxError as e:
        raise ValueError(f"{where}: not Python ({e.msg}, line {e.lineno})") from None
    except (ValueError, MemoryError, RecursionError) as e:     # null bytes; nesting past the parser's stack
        raise ValueError(f"{where}: not Python ({type(e).__name__})") from None
    value = None
    for node in tree.body:
        targets = node.targets if isinstance(node, ast.Assign) else \
            [node.target] if isinstance(node, ast.AnnAssign) and node.value is not None else []
        if any(isinstance(t, ast.Name) and t.id == name for t in targets):
            value = node.value
    return value


def read_builds(source: str, where: str = "kernel_sources.py") -> dict[str, tuple[tuple[str, ...], ...]]:
    """The BUILDS of another commit's kernel_sources.py, read as data (its text parsed, never run): the dict
    literal assigned to BUILDS at the top level. ValueError, naming `where`, when there is none, or a module name
    or define that is not one."""
    import ast
    value = assigned_value(source, "BUILDS", where)
    if value is None:
        raise ValueError(f"{where}: no BUILDS assigned at the top level")
    try:
        builds = ast.literal_eval(value)
    except (ValueError, TypeError, MemoryError, RecursionError):   # TypeError: a list as a dict key or set member
        raise ValueError(f"{where}: BUILDS is not a literal") from None
    if not isinstance(builds, dict):
        raise ValueError(f"{where}: BUILDS is not a dict")
    out = {}
    for name, bs in builds.items():
        if not (isinstance(name, str) and re.fullmatch(r"[a-z0-9_]+(/[a-z0-9_]+)*", name)):
            raise ValueError(f"{where}: BUILDS has a module name {name!r} that is not one")
        if not isinstance(bs, (tuple, list)) or not all(isinstance(b, (tuple, list)) for b in bs):
            raise ValueError(f"{where}: BUILDS[{name!r}] is not a list of define lists")
        for b in bs:
            bad = [d for d in b if not (isinstance(d, str) and _DEFINE.fullmatch(d))]
            if bad:
                raise ValueError(f"{where}: BUILDS[{name!r}] has a define {bad[0]!r} that is not NAME or NAME=VALUE")
        out[name] = tuple(tuple(b) for b in bs)
    return out


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


EM_CUDA = 190                   # ELF e_machine of a cubin


class BadCubin(OSError):
    """A file in the cubin cache under a build's name that is no whole ELF image: never handed to the driver
    (a FIFO there would block its open for ever; a short file fails deep in a launch, naming no file)."""

    def __init__(self, path, why: str):
        super().__init__(errno.EINVAL, why, os.fspath(path))

    def __str__(self) -> str:
        return (f"{self.filename}: a prebuilt cubin that cannot be loaded ({self.strerror}); remove it, or "
                f"tools/build_cubins.py builds it again")


def cubin_problem(path: Path, machine: int | None = EM_CUDA) -> str | None:
    """Why the file at `path` is not a whole ELF image (of `machine`: a cubin by default; None for any, K1's
    library), or None. The headers only: a file cut short loses its section table, which ELF puts last."""
    try:
        st = os.stat(path)
        if not stat.S_ISREG(st.st_mode):
            return "not a regular file"
        with open(path, "rb") as f:
            head = f.read(64)
    except OSError as e:
        return e.strerror or type(e).__name__
    if head[:4] != b"\x7fELF" or head[4:5] not in (b"\x01", b"\x02") or len(head) < (52 if head[4] == 1 else 64):
        return f"not an ELF image ({st.st_size} bytes)"
    end = "<" if head[5] == 1 else ">"
    (em,) = struct.unpack_from(end + "H", head, 18)
    if head[4] == 2:
        phoff, shoff = struct.unpack_from(end + "QQ", head, 32)
        phsz, phn, shsz, shn = struct.unpack_from(end + "HHHH", head, 54)
    else:
        phoff, shoff = struct.unpack_from(end + "II", head, 28)
        phsz, phn, shsz, shn = struct.unpack_from(end + "HHHH", head, 42)
    if machine is not None and em != machine:
        return f"ELF machine {em}, not a cubin's {machine}"
    if phoff + phsz * phn > st.st_size or shoff + shsz * shn > st.st_size:
        return f"truncated ({st.st_size} bytes, its headers reach past the end)"
    return None
