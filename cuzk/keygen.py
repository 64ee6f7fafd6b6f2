"""Test setup for Groth16 with known toxic waste (never for production use).

Scalars are computed with vectorized Fr arithmetic:
  Lagrange values at tau by one inverse NTT of [tau^i];
  u_j(tau), v_j(tau), w_j(tau) by transposed sparse products;
then each scalar becomes a point by fixed-base multiplication. Two backends make the same key
bit for bit: "cpu" (Python ints, one arkworks multiplication per point, with a progress bar at
large sizes) and "cuda" (cuzk/gpu/keygen.py: the scalars and the points on the GPU). "auto" uses
the GPU when one is usable and the domain is at least AUTO_GPU_MIN (below that the CPU is quick
and the first GPU call would spend longer loading kernels). Keys are cached on disk, keyed by
the circuit's hash.
"""
from __future__ import annotations

import fcntl
import glob
import hashlib
import os
import random
import stat
import sys
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from py_arkworks_bls12381 import G1Point, G2Point
from tqdm import tqdm

from . import backend as backends
from .backend import BackendError
from .curve import AffineBases
from .field import R, fr_array, fr_powers
from .gpu import keygen as gpu_keygen
from .key_points import mul_points, single_points  # noqa: F401 (single_points: the keygen API)
from .keys import KeyFormatError, KeyUnreadable, ProvingKey
from .poly import Domain, intt
from .qap import QAP, qap
from .r1cs import CSR, R1CS

PROGRESS_MIN = 1 << 12
AUTO_GPU_MIN = 1 << 12
BACKENDS = ("auto", "cpu", "cuda")


@dataclass(frozen=True)
class ToxicWaste:
    tau: int
    alpha: int
    beta: int
    gamma: int
    delta: int

    @classmethod
    def from_seed(cls, seed: int) -> "ToxicWaste":
        rng = random.Random(f"cuzk-toxic-waste-{seed}")
        return cls(*(rng.randrange(2, R) for _ in range(5)))


def _transpose_eval(m: CSR, lag: np.ndarray, num_vars: int) -> np.ndarray:
    """out[j] = Σ_k M[k, j] · lag[k]: the column polynomials at tau."""
    out = np.zeros(num_vars, dtype=object)
    if m.nnz == 0:
        return out
    order = np.argsort(m.cols, kind="stable")
    cols = m.cols[order]
    prod = m.coeffs[order] * lag[m.row_ids()[order]]
    starts = np.flatnonzero(np.r_[True, cols[1:] != cols[:-1]])
    out[cols[starts]] = np.add.reduceat(prod, starts)
    return out % R


def qap_at_tau(r1cs: R1CS, domain: Domain, tau: int):
    lag = intt(fr_powers(tau, domain.n), domain.omega)
    nv = r1cs.num_vars
    u = _transpose_eval(r1cs.A, lag, nv)
    v = _transpose_eval(r1cs.B, lag, nv)
    w = _transpose_eval(r1cs.C, lag, nv)
    m, ni = r1cs.num_constraints, r1cs.num_inputs
    u[:ni] = (u[:ni] + lag[m:m + ni]) % R          # input_i · 0 = 0 rows
    return u, v, w


def resolve_backend(backend: str, domain_size: int = AUTO_GPU_MIN) -> str:
    """'cpu' or 'cuda' for a keygen backend choice ('auto': the GPU when usable, for domains of
    at least AUTO_GPU_MIN)."""
    if backend not in BACKENDS:
        raise BackendError(f"unknown keygen backend {backend!r}; use {', '.join(BACKENDS)}")
    if backend == "cpu" or (backend == "auto" and domain_size < AUTO_GPU_MIN):
        return "cpu"
    ok, why = backends.gpu_status()
    if ok:
        return "cuda"
    if backend == "cuda":
        raise BackendError(f"keygen backend cuda: {why}")
    return "cpu"


def setup(r1cs: R1CS, convention: str = "coeff", generator: int = 7, toxic: ToxicWaste | None = None,
          progress: bool | None = None, backend: str = "auto") -> ProvingKey:
    """The key of r1cs by its convention's name and its generator: make_key with both resolved."""
    return make_key(r1cs, qap(convention), Domain.for_size(r1cs.qap_rows, generator),
                    toxic or ToxicWaste.from_seed(0), progress, backend)


def make_key(r1cs: R1CS, q: QAP, domain: Domain, toxic: ToxicWaste, progress: bool | None = None,
             backend: str = "auto") -> ProvingKey:
    """The proving key of r1cs for the QAP convention q over `domain` (the key's:
    Domain.for_size(r1cs.qap_rows, generator)), made on the CPU or the GPU (`backend`: resolve_backend)."""
    if resolve_backend(backend, domain.n) == "cuda":
        from .progress import LARGE_LOG, step_printer
        show = progress if progress is not None else domain.log_n >= LARGE_LOG
        return gpu_keygen.setup(r1cs, q, domain, toxic, step_printer(f"keygen 2^{domain.log_n} on the GPU")
                                if show else None)
    tau, alpha, beta, gamma, delta = toxic.tau, toxic.alpha, toxic.beta, toxic.gamma, toxic.delta
    u, v, w = qap_at_tau(r1cs, domain, tau)
    ni = r1cs.num_inputs
    gi, di = pow(gamma, -1, R), pow(delta, -1, R)
    k = (beta * u + alpha * v + w) % R
    ic = (k[:ni] * gi) % R
    lq = (k[ni:] * di) % R
    h = (q.h_query(domain, tau) * di) % R

    g1, g2 = G1Point(), G2Point()
    total = len(ic) + len(lq) + len(h) + 2 * len(u) + len(v)
    show = progress if progress is not None else total >= PROGRESS_MIN
    bar = None
    if show:
        bar = tqdm(total=total, desc="keygen", unit="pt", leave=False)
    try:
        def G1(xs): return AffineBases.from_ark(1, mul_points(g1, fr_array(xs), bar))
        def G2(xs): return AffineBases.from_ark(2, mul_points(g2, fr_array(xs), bar))
        pts = single_points(alpha, beta, gamma, delta)
        pts.update({"ic": G1(ic), "a": G1(u), "b_g1": G1(v), "b_g2": G2(v), "l": G1(lq), "h": G1(h)})
    finally:
        if bar is not None:
            bar.close()
    key = ProvingKey(q.name, domain.generator, domain.log_n, ni, r1cs.num_aux, r1cs.num_constraints,
                     bytes.fromhex(r1cs.digest()), pts)
    key.check_shapes()
    return key


DEVICE_KEYGEN_MIN = 1 << 26     # `cuzk bench --device-keygen auto`: from here keys are ~20 GB and up


def setup_on_device(r1cs: R1CS, q: QAP, domain: Domain, toxic_seed: int = 0, progress=None):
    """make_key's key made on the GPU and left there for the cuda backend (gpu.keygen.setup_device):
    (host ProvingKey with the verifying key's points, CudaKey, report). The report: seconds, device
    pool bytes and host peak RSS after each step, and the resident key's size. progress(step, seconds):
    called as each step ends (cuzk/progress.py)."""
    from .backend.cuda import CudaKey
    t0 = time.perf_counter()
    pk, dev = gpu_keygen.setup_device(r1cs, q, domain, ToxicWaste.from_seed(toxic_seed), progress)
    kh = CudaKey(pk, dev)
    steps = {name: {"s": t, **gpu_keygen.last_memory.get(name, {})} for name, t in gpu_keygen.last_timings.items()}
    return pk, kh, {"where": "device", "s": time.perf_counter() - t0, "steps": steps,
                    "key_device_bytes": dev.nbytes,
                    "b_points": len(dev["b_g1"]), "num_vars": r1cs.num_vars}


def cache_dir() -> Path:
    base = os.environ.get("CUZK_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME", os.path.expanduser("~/.cache")), "cuzk")
    return Path(base) / "keys"


def cache_path(r1cs: R1CS, convention: str | QAP, generator: int, toxic_seed: int) -> Path:
    tag = hashlib.sha256(f"{r1cs.digest()}|{qap(convention).name}|{generator}|{toxic_seed}".encode()).hexdigest()[:24]
    return cache_dir() / f"{tag}.cuzkkey"


STALE_TEMP_S = 3600.0     # a key temp file with no cache lock, untouched this long, was left by a killed writer
KEEP_CORRUPT = 1          # corrupt cached keys kept aside per key, newest first (they can be GBs each)
_KEY_SUFFIX = ".cuzkkey"


class KeyCacheError(OSError):
    """The key cache cannot be written (a full disk, no permission, a folder where a file goes): one line
    naming the file, not the bare errno of a write that names none."""

    def __init__(self, path, e: OSError):
        super().__init__(e.errno, e.strerror or type(e).__name__, os.fspath(path))

    def __str__(self) -> str:
        return f"{self.filename}: cannot write the key cache ({self.strerror}); CUZK_CACHE_DIR names another folder"


@contextmanager
def _writing(path: Path):
    """OSError in the block as KeyCacheError naming `path`."""
    try:
        yield
    except KeyCacheError:
        raise
    except OSError as e:
        raise KeyCacheError(path, e) from e


def _lock_path(path: Path) -> Path:
    return path.with_name(path.name + ".lock")


@contextmanager
def _locked(path: Path):
    """An exclusive fcntl lock on `path` (created if missing), held for the block; released by the
    kernel if the process dies."""
    cloexec = getattr(os, "O_CLOEXEC", 0)
    with _writing(path):
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | cloexec, 0o666)
        except PermissionError:
            fd = os.open(path, os.O_RDONLY | cloexec)     # another user's lock in a shared cache: flock needs only read
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def _remove_if_writer_gone(tmp: Path, lock: Path) -> bool | None:
    """Remove `tmp` if the cache writer of its key is gone: its lock can be taken now (a writer holds it
    from before its temp file exists until after the rename; the kernel releases a dead one's). False
    when the lock is held (the writer is alive), None when there is no lock file (not a cache writer's)."""
    cloexec = getattr(os, "O_CLOEXEC", 0)
    try:
        try:
            fd = os.open(lock, os.O_RDWR | cloexec)      # never created here; NFS locks need write access
        except PermissionError:
            fd = os.open(lock, os.O_RDONLY | cloexec)    # another user's lock: flock needs only read
    except FileNotFoundError:
        return None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        tmp.unlink()                 # with the lock held: no writer can be starting on it
        return True
    finally:
        os.close(fd)


def remove_dead_temps(folder: Path, held: str | None = None) -> list[Path]:
    """Remove the key temp files (KEY.cuzkkey.XXXX.tmp) in `folder` that no live writer will rename: at
    once where KEY's lock is free (its writer died) or is `held` by this caller; after STALE_TEMP_S
    untouched where KEY has no lock file (not written through the cache). Only regular files of this
    user are touched."""
    gone = []
    now = time.time()
    for p in folder.glob(f"*{_KEY_SUFFIX}.*.tmp"):
        try:
            st = os.lstat(p)
            if not stat.S_ISREG(st.st_mode) or st.st_uid != os.getuid():
                continue
            key = p.name[:p.name.index(_KEY_SUFFIX + ".") + len(_KEY_SUFFIX)]
            if key == held:
                p.unlink()
                removed = True
            else:
                removed = _remove_if_writer_gone(p, _lock_path(folder / key))
                if removed is None and now - st.st_mtime > STALE_TEMP_S:
                    p.unlink()
                    removed = True
            if removed:
                gone.append(p)
        except OSError:
            pass                    # raced with its writer's rename or another clean-up
    return gone


def _cached(path: Path, r1cs: R1CS, q: QAP, generator: int) -> tuple[ProvingKey | None, str | None]:
    """(key, None) for a usable cached key; (None, None) when there is none; (None, why) when the file
    there is no usable key (truncated, corrupt, an old format, another circuit's). A file that cannot be
    read at all (KeyUnreadable: permissions, a FIFO) is an error, not a miss."""
    if not path.exists():
        return None, None
    try:
        key = ProvingKey.load(path)
    except KeyUnreadable:
        raise
    except KeyFormatError as e:
        return None, (str(e).splitlines() or ["unreadable key"])[0]
    if key.digest.hex() != r1cs.digest() or key.convention != q.name or key.generator != generator:
        return None, f"{path}: holds the key of another circuit or convention"
    return key, None


def _move_aside(path: Path) -> Path:
    """Rename the bad cached key to KEY.corrupt-TIMESTAMP (kept to look at, not read again), removing
    older ones beyond KEEP_CORRUPT - 1 first."""
    olds = sorted(path.parent.glob(glob.escape(path.name) + ".corrupt-*"), reverse=True)
    for old in olds[max(KEEP_CORRUPT - 1, 0):]:
        try:
            old.unlink()
        except OSError:
            pass                    # another's, or a folder: left for the user
    aside = path.with_name(f"{path.name}.corrupt-{time.strftime('%Y%m%dT%H%M%S')}")
    os.replace(path, aside)
    return aside


def cached_setup(r1cs: R1CS, convention: str = "coeff", generator: int = 7, toxic_seed: int = 0,
                 progress: bool | None = None, backend: str = "auto") -> tuple[ProvingKey, Path, bool]:
    """(key, path, hit) by the convention's name and the generator: cached_key with both resolved."""
    return cached_key(r1cs, qap(convention), Domain.for_size(r1cs.qap_rows, generator), toxic_seed, progress,
                      backend)


def cached_key(r1cs: R1CS, q: QAP, domain: Domain, toxic_seed: int = 0, progress: bool | None = None,
               backend: str = "auto") -> tuple[ProvingKey, Path, bool]:
    """(key, path, hit): load from the cache or make (make_key) and store. Processes sharing a cache make a
    key once: the first takes the key's lock and makes it, the others wait on it and then load the key.
    A cached key that is not usable (truncated, corrupt, an old format) is moved aside and made again,
    with one warning line on stderr; only the process holding the lock does that, so it happens once."""
    path = cache_path(r1cs, q, domain.generator, toxic_seed)
    key, _ = _cached(path, r1cs, q, domain.generator)      # a saved key is complete (renamed into place)
    if key is not None:
        remove_dead_temps(path.parent)
        return key, path, True
    with _writing(path.parent):
        path.parent.mkdir(parents=True, exist_ok=True)
    with _locked(_lock_path(path)):
        key, why = _cached(path, r1cs, q, domain.generator)    # made (or healed) while this process waited
        if key is not None:
            return key, path, True
        if why is not None:
            with _writing(path):
                aside = _move_aside(path)
            print(f"cuzk: warning: cached key {why}; moved to {aside.name}, making it again", file=sys.stderr)
        remove_dead_temps(path.parent, held=path.name)
        key = make_key(r1cs, q, domain, ToxicWaste.from_seed(toxic_seed), progress, backend)
        with _writing(path):           # a full disk's write error names no file
            key.save(path)
    return key, path, False
