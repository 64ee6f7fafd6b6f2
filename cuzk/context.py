"""The proving context: a backend, a circuit's key on it and the Prover that uses them, built in one place.

`cuzk bench` (one batch and --pipeline), the perf workload (asv and the gate), `cuzk ablate` and the
snarkjs commands all prove through a ProvingContext. The key comes one of two ways:
- made on the GPU and kept there (`device`): production sizes, whose keys are tens of GB and never saved,
  unless a `key_dir` is given (device_key_cache.py: the gate's workers, one folder per commit): then
  loaded from there onto the GPU when a process made it before, else made and saved there;
- through the key cache (`cache`): loaded when this circuit's key was made before, else made (on the CPU
  or the GPU, `keygen_backend`) and saved.
"""
from __future__ import annotations

import time
from dataclasses import dataclass

from . import keygen
from .backend.base import Backend
from .keygen import DEVICE_KEYGEN_MIN
from .keys import ProvingKey
from .poly import Domain
from .progress import LARGE_LOG, step_printer
from .prover import Prover
from .qap import QAP, qap


class ContextError(ValueError):
    """A context that cannot be built as asked (e.g. a key resident on the GPU without the cuda backend)."""


@dataclass
class KeySource:
    where: str                      # "device": made on the GPU and resident; "cache": from the key cache
    seconds: float
    path: str | None = None         # the cache file
    cached: bool = False            # found in the cache (not made now)
    keygen: dict | None = None      # the GPU keygen's report (steps, memory), where it was made there
    saved_s: float | None = None    # of `seconds`, writing it to the device key cache (`path`)

    def describe(self) -> str:
        if self.where == "device" and self.cached:
            return f"loaded onto the GPU from {self.path} in {self.seconds:.1f} s"
        if self.where == "device":
            return f"made on the GPU and kept there in {self.seconds:.1f} s"
        return f"{self.path} ({'cached' if self.cached else f'generated in {self.seconds:.1f} s'})"


@dataclass
class ProvingContext:
    backend: Backend
    pk: ProvingKey
    prover: Prover
    key: KeySource

    @property
    def kh(self):
        """The key as the backend holds it (resident on the GPU for cuda)."""
        return self.prover.kh


def device_keygen_wanted(device_keygen: str | bool, backend: Backend, domain_n: int) -> bool:
    """Whether the key is made on the GPU and kept there: `on`/True (cuda only), `off`/False, or `auto`:
    on the cuda backend from keygen.DEVICE_KEYGEN_MIN (keys too large to save)."""
    if device_keygen in ("on", True) and backend.name != "cuda":
        raise ContextError("a key made on the GPU and kept there needs the cuda backend")
    if device_keygen in ("off", False) or backend.name != "cuda":
        return False
    return device_keygen in ("on", True) or domain_n >= DEVICE_KEYGEN_MIN


def proving_context(backend: Backend, r1cs, convention="coeff", generator: int = 7, *,
                    device_keygen: str | bool = "auto", keygen_backend: str | None = None,
                    progress: bool | None = False, toxic_seed: int = 0, key_dir=None,
                    key_tag=None) -> ProvingContext:
    """The context for proving r1cs on `backend`. keygen_backend: where a cache miss makes the key
    (default: the proving backend's kind). progress: None shows the steps of a large key's making
    (progress.py), False never, True always. key_dir: a folder where a key made on the GPU is kept for
    later processes (device_key_cache.py), its entry named by `key_tag` (the caller's name for the
    circuit; None: the circuit's digest) with the convention, generator, seed and circuit shape;
    ignored where the key is not made on the GPU. The QAP convention and the key's domain are resolved
    here, once, for everything below."""
    t0 = time.perf_counter()
    q, domain = qap(convention), Domain.for_size(r1cs.qap_rows, generator)
    if device_keygen_wanted(device_keygen, backend, domain.n):
        pk, kh, key = _device_key(r1cs, q, domain, toxic_seed, progress, key_dir, key_tag, t0)
    else:
        keygen_backend = keygen_backend or ("cuda" if backend.name == "cuda" else "cpu")
        pk, path, hit = keygen.cached_key(r1cs, q, domain, toxic_seed, progress=progress, backend=keygen_backend)
        kh, key = None, KeySource("cache", time.perf_counter() - t0, path=str(path), cached=hit)
    return ProvingContext(backend, pk, Prover(backend, pk, kh=kh), key)


def _device_key(r1cs, q: QAP, domain: Domain, toxic_seed: int, progress, key_dir, key_tag, t0: float):
    """(pk, kh, KeySource) of the key made on the GPU and kept there (proving_context), or loaded onto it from
    the device key cache in `key_dir` where a process made it before; made now, it is saved there."""
    show = progress if progress is not None else domain.log_n >= LARGE_LOG
    steps = step_printer(f"keygen 2^{domain.log_n} on the GPU") if show else None
    if key_dir is not None:
        from . import device_key_cache as dkc
        ident = dkc.identity(r1cs, q, domain.generator, toxic_seed, key_tag)
        got = dkc.load(key_dir, ident)
        if got is not None:
            pk, kh, info = got
            return pk, kh, KeySource("device", time.perf_counter() - t0, path=str(dkc.entry_path(key_dir, ident)),
                                     cached=True, keygen=info)
    pk, kh, info = keygen.setup_on_device(r1cs, q, domain, toxic_seed, steps)
    key = KeySource("device", time.perf_counter() - t0, keygen=info)
    if key_dir is not None:
        t1 = time.perf_counter()
        path = dkc.save(key_dir, ident, pk, kh, info)
        key = KeySource("device", time.perf_counter() - t0, path=str(path) if path else None, keygen=info,
                        saved_s=time.perf_counter() - t1)
    return pk, kh, key


def context_for_key(backend: Backend, pk: ProvingKey, kh=None, source: KeySource | None = None) -> ProvingContext:
    """The context for a key already in hand (a .zkey read, or one key shared by several backends: `kh`)."""
    return ProvingContext(backend, pk, Prover(backend, pk, kh=kh), source or KeySource("given", 0.0))
