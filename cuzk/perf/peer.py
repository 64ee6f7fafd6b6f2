"""The gap to a public peer, measured: supranational's sppark beside cuzk on identical device inputs.

sppark and the blst headers its BLS12-381 fields include are fetched at pinned commits when this runs (never
part of this repository), built for the device with a shim of ours (peer_sppark.cu) and loaded through ctypes.
Each size is timed in alternation, cuzk then the peer, a device synchronisation on both sides of every call,
on the same device-resident inputs, and the results are checked equal: a peer that disagrees is an error,
not a ratio. Where the sources cannot be fetched (no network, no mirror), nvcc is missing or there is no GPU,
PeerUnavailable says which: that is no measurement, never a figure.
"""
from __future__ import annotations

import ctypes
import hashlib
import os
import shutil
import statistics
import subprocess
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from py_arkworks_bls12381 import G1Point

from .. import backend as backends
from .. import field as F
from .. import plans
from ..curve import g1_from_ints
from ..gpu import loader
from ..gpu import ntt as gntt
from ..keygen import cache_dir as key_cache_dir
from ..opts import resolve

SOURCES = {     # name: (public repository, pinned commit)
    "sppark": ("https://github.com/supranational/sppark", "17278d74295392f9813f009300b257a688422b7a"),
    "blst": ("https://github.com/supranational/blst", "dece82ea537b422890888bacde4034ca5b5a44d8"),
}
SHIM = Path(__file__).with_name("peer_sppark.cu")
OPS = ("msm_g1", "ntt")
FP_BYTES = 48


class PeerUnavailable(RuntimeError):
    """The peer cannot be measured here, and why."""


def cache_dir() -> Path:
    """Beside the key cache ($CUZK_CACHE_DIR, else ~/.cache/cuzk): the peer's sources and its builds."""
    return key_cache_dir().parent / "peer"


def _git(*args, cwd=None, timeout=300) -> subprocess.CompletedProcess:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, timeout=timeout)


def _pristine(tree: Path, sha: str) -> str | None:
    """Why the checkout at `tree` is not exactly `sha`'s files, or None. Every file is hashed against the
    commit (an index made afresh from it, so no stat cache or index flag hides an edit), anything else in the
    tree (untracked or ignored) counts, and a link of the commit's may not lead out of the tree."""
    if tree.is_symlink() or not (tree / ".git").is_dir() or (tree / ".git").is_symlink():
        return "not a clone of its own"
    if _git("rev-parse", "HEAD", cwd=tree).stdout.strip() != sha:
        return "at another commit"
    index = tree / ".git" / "cuzk-verify-index"
    env = {**os.environ, "GIT_INDEX_FILE": str(index)}
    try:
        read = subprocess.run(["git", "read-tree", sha], cwd=tree, capture_output=True, text=True, env=env)
        st = subprocess.run(["git", "status", "--porcelain", "--untracked-files=all", "--ignored"], cwd=tree,
                            capture_output=True, text=True, env=env)
        links = subprocess.run(["git", "ls-files", "-s", "-z"], cwd=tree, capture_output=True, text=True,
                               env=env)
    finally:
        index.unlink(missing_ok=True)
    if read.returncode or st.returncode or links.returncode:
        return "unreadable by git"
    if st.stdout.strip():
        return f"changed: {st.stdout.splitlines()[0].strip()}"
    root = tree.resolve()
    for entry in filter(None, links.stdout.split("\0")):
        mode, _, path = entry.partition("\t")
        if mode.startswith("120000") and not (tree / path).resolve().is_relative_to(root):
            return f"its link {path} leads out of the tree"
    return None


def fetch(name: str, dest: Path, mirror: Path | None = None) -> Path:
    """The source tree of `name` at its pinned commit under dest (made once, checked file by file each use):
    cloned from `mirror` (a local clone holding the commit) or else from its public repository."""
    url, sha = SOURCES[name]
    tree = dest / f"{name}-{sha[:12]}"
    try:
        if (tree / ".git").exists() and _pristine(tree, sha) is None:
            return tree
    except FileNotFoundError:
        raise PeerUnavailable(f"{name}: git is not on PATH: the peer's sources are checked with it") from None
    if tree.is_symlink():
        tree.unlink()
    elif tree.exists():
        shutil.rmtree(tree)
    dest.mkdir(parents=True, exist_ok=True)
    origin = str(mirror) if mirror is not None else url
    try:
        # --no-local: a local mirror's objects come through git's transport, each hashed on arrival; a plain
        # local clone copies them unread, so a mirror's altered object would be checked out as the pin's
        got = _git("clone", "-q", "--no-local", "--no-checkout", origin, str(tree))
    except subprocess.TimeoutExpired:
        raise PeerUnavailable(f"{name}: git clone {origin} timed out (no network?)") from None
    except FileNotFoundError:
        raise PeerUnavailable(f"{name}: git is not on PATH: the peer's sources are fetched with it") from None
    if got.returncode != 0:
        raise PeerUnavailable(f"{name}: git clone {origin} failed ({got.stderr.strip().splitlines()[-1:]}); "
                              f"without network give a local clone: --source {name}=DIR")
    co = _git("checkout", "-q", "--detach", sha, cwd=tree)
    if co.returncode != 0:
        shutil.rmtree(tree, ignore_errors=True)
        raise PeerUnavailable(f"{name}: {origin} does not hold the pinned commit {sha[:12]}")
    why = _pristine(tree, sha)
    if why is not None:
        shutil.rmtree(tree, ignore_errors=True)
        raise PeerUnavailable(f"{name}: the checkout of {sha[:12]} from {origin} is {why}")
    return tree


def build(sppark: Path, blst: Path, arch: str, dest: Path) -> Path:
    """The shim built against the two trees for `arch` (one file per shim, tree and arch)."""
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        raise PeerUnavailable("nvcc is not on PATH: the peer is built from its sources for this device")
    # sppark's host-side field code calls blst's arithmetic (mulx_mont_384 and the rest under __ADX__), as its
    # own builds link the blst library: blst's C and assembly are built into the shim
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        raise PeerUnavailable("no C compiler (cc) on PATH: blst is built for the peer's host code")
    # the recipe below is part of what is built: this file's bytes are in the key, and so are the compilers
    # (a toolkit upgrade must not keep timing the old one's build)
    compilers = [subprocess.run([c, "--version"], capture_output=True, text=True, timeout=60).stdout
                 for c in (nvcc, cc)]
    key = hashlib.sha256(SHIM.read_bytes() + Path(__file__).read_bytes()
                         + f"{sppark.name}{blst.name}{arch}{compilers}".encode()).hexdigest()[:16]
    lib = dest / f"libpeer-{arch}-{key}.so"
    if lib.exists():
        return lib
    dest.mkdir(parents=True, exist_ok=True)
    tmp = lib.with_suffix(f".{os.getpid()}.tmp")
    blst_sources = (blst / "src" / "server.c", blst / "build" / "assembly.S")
    objs = [tmp.with_suffix(f".{src.stem}.o") for src in blst_sources]
    cmd = [nvcc, "-std=c++17", "-O3", f"-arch={arch}", "-DFEATURE_BLS12_381", "-D__ADX__", f"-I{sppark}",
           f"-I{blst / 'src'}", "-shared", "-Xcompiler", "-fPIC", str(SHIM), str(sppark / "util" / "all_gpus.cpp"),
           *map(str, objs), "-o", str(tmp)]
    try:
        for src, obj in zip(blst_sources, objs):
            p = subprocess.run([cc, "-O2", "-fPIC", "-fno-builtin", "-D__ADX__", "-c", str(src), "-o", str(obj)],
                               capture_output=True, text=True, timeout=600)
            if p.returncode != 0:
                raise RuntimeError(f"building blst's {src.name} for the peer failed:\n{p.stderr[-3000:]}")
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=1800)
    finally:                                       # the objects are only the link's inputs
        for obj in objs:
            obj.unlink(missing_ok=True)
    if p.returncode != 0:
        tmp.unlink(missing_ok=True)
        raise RuntimeError(f"building the peer failed: {' '.join(cmd)}\n{p.stderr[-3000:]}")
    tmp.replace(lib)
    return lib


def jacobian_to_affine(raw: bytes) -> tuple[int, int] | None:
    """(x, y) of a Jacobian G1 point given as X, Y, Z in Montgomery form (48 bytes each), None at infinity."""
    X, Y, Z = (int.from_bytes(raw[i * FP_BYTES:(i + 1) * FP_BYTES], "little") * F.FP_MONT_RINV % F.P
               for i in range(3))
    if Z == 0:
        return None
    zi = pow(Z, -1, F.P)
    zi2 = zi * zi % F.P
    return X * zi2 % F.P, Y * zi2 * zi % F.P


class Peer:
    """The built shim, loaded: its MSM and NTT on cuzk's device arrays."""

    def __init__(self, lib: Path):
        self.lib = ctypes.CDLL(str(lib))
        self.lib.peer_msm_g1.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t]
        self.lib.peer_ntt.argtypes = [ctypes.c_void_p, ctypes.c_uint32]
        self.lib.peer_point_bytes.restype = ctypes.c_size_t
        self.point_bytes = self.lib.peer_point_bytes()
        if self.point_bytes != 3 * FP_BYTES:
            raise RuntimeError(f"the peer's point is {self.point_bytes} bytes, not a Jacobian G1 point's 144")

    def msm_g1(self, bases, scalars):
        out = ctypes.create_string_buffer(self.point_bytes)
        code = self.lib.peer_msm_g1(out, bases.data.ptr, scalars.data.ptr, scalars.shape[0])
        if code:
            raise RuntimeError(f"the peer's MSM failed: CUDA error {code}")
        xy = jacobian_to_affine(out.raw)
        return G1Point.identity() if xy is None else g1_from_ints(*xy)

    def ntt(self, x, log_n: int):
        code = self.lib.peer_ntt(x.data.ptr, log_n)
        if code:
            raise RuntimeError(f"the peer's NTT failed: CUDA error {code}")
        return x


@dataclass
class Row:
    op: str
    log_n: int
    cuzk_s: float | None       # median seconds of one call; None where the results differ (not timed)
    peer_s: float | None
    ratio: float | None        # cuzk / peer: below 1, cuzk is faster
    runs: int
    equal: bool

    def as_dict(self) -> dict:
        return asdict(self)


def _timed(cupy, fn) -> tuple[float, object]:
    cupy.cuda.Device().synchronize()
    t0 = time.perf_counter()
    out = fn()
    cupy.cuda.Device().synchronize()
    return time.perf_counter() - t0, out


def measure(peer: Peer, op: str, log_n: int, runs: int = 5) -> Row:
    """op at 2^log_n: cuzk and the peer in turn, `runs` times each after one untimed call each, on the same
    inputs; where the results differ, a row with equal False and no times (one of the two is wrong: no ratio)."""
    import cupy                                  # a GPU run: prepare() found the GPU

    from ..gpu.msm import phase_msm
    from ..micro_ops import independent_bases, random_fr
    plan = plans.cuda(resolve())
    if op == "msm_g1":
        bases, inf = independent_bases(log_n, 1)
        scalars = random_fr(1 << log_n, seed=log_n + 7)

        def ours():
            return phase_msm.run_msm(1, bases, inf, scalars, 1 << log_n, plan.msm)

        def theirs():
            return peer.msm_g1(bases, scalars)
    elif op == "ntt":
        x = random_fr(1 << log_n, seed=log_n + 11)
        work_a, work_b = cupy.empty_like(x), cupy.empty_like(x)

        def ours():
            work_a[...] = x                      # a fresh copy each call, inside the clock on both sides;
            v = plan.h.ntt.variant               # each side may then overwrite it (the peer's NTT is in place)
            return gntt.ntt(work_a, log_n, 7, variant=v, natural=True, overwrite_x=True)

        def theirs():
            work_b[...] = x
            return peer.ntt(work_b, log_n)
    else:
        raise ValueError(f"op must be one of {OPS}, not {op!r}")
    a, b = ours(), theirs()                      # warm: kernels loaded, pools grown
    equal = (a == b) if op == "msm_g1" else bool(cupy.array_equal(a, b))
    if not equal:
        return Row(op, log_n, None, None, None, 0, False)
    ts_a, ts_b = [], []
    for _ in range(runs):
        ts_a.append(_timed(cupy, ours)[0])
        ts_b.append(_timed(cupy, theirs)[0])
    ca, cb = statistics.median(ts_a), statistics.median(ts_b)
    return Row(op, log_n, ca, cb, ca / cb, runs, equal)


def prepare(mirrors: dict | None = None, arch: str | None = None) -> Peer:
    """The peer fetched, built and loaded on this machine's GPU; PeerUnavailable says what is missing."""
    ok, why = backends.gpu_status()
    if not ok:
        raise PeerUnavailable(f"no GPU to measure on: {why}")
    arch = arch or loader.arch()
    root = cache_dir()
    trees = {n: fetch(n, root / "src", (mirrors or {}).get(n)) for n in SOURCES}
    return Peer(build(trees["sppark"], trees["blst"], arch, root / "lib"))


def measure_all(sizes: dict[str, list[int]], runs: int = 5, mirrors: dict | None = None) -> list[Row]:
    peer = prepare(mirrors)
    return [measure(peer, op, k, runs) for op, ks in sizes.items() for k in ks]


def table(rows: list[Row]) -> str:
    lines = [f"{'op':<8}{'size':>6}{'cuzk ms':>11}{'sppark ms':>11}{'cuzk/sppark':>13}{'runs':>6}"]
    for r in rows:
        if not r.equal:
            lines.append(f"{r.op:<8}{'2^' + str(r.log_n):>6}  results differ: not timed, no ratio")
            continue
        lines.append(f"{r.op:<8}{'2^' + str(r.log_n):>6}{r.cuzk_s * 1e3:>11.2f}{r.peer_s * 1e3:>11.2f}"
                     f"{r.ratio:>13.3f}{r.runs:>6}")
    return "\n".join(lines)
