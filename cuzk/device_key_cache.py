"""A folder of proving keys made on the GPU (keygen.setup_on_device), so that a later process with the
same circuit uploads the key instead of making it again (the gate's workers: ~17.5 s of keygen at 2^24
on one CPU, each round, each side).

One entry per key: a folder named by the hash of its identity (FORMAT, the caller's tag for the
circuit, the convention, generator and toxic-waste seed, the circuit's shape), holding one .npy file per
array (the host key's points; each device section's limbs, infinity flags and row map, a map shared by
sections saved once) and manifest.json, written last, with the identity, each file's dtype, shape and
CRC-32, the host key's header and the keygen's report. The entry is written into a temporary folder
beside it and renamed into place, so a writer killed midway leaves only a temporary folder, which no
reader opens. An entry whose manifest or files do not match (another identity, a short or altered
file) is removed and the key made again, with one line on stderr: never a wrong key, never silently.
The key itself is also checked by whoever proves with it (the perf workload verifies its first proofs).

Host memory: one array of the key at a time (the save downloads section by section; the load maps
each file and copies it straight to the device).
"""
from __future__ import annotations

import errno
import hashlib
import json
import os
import shutil
import stat
import sys
import tempfile
import zlib
from pathlib import Path

import numpy as np

from .curve import AffineBases
from .files import read_input
from .gpu.srs import DeviceBases, DeviceKey
from .keys import SECTIONS, ProvingKey
from .poly import Domain
from .qap import QAP

FORMAT = 1
MANIFEST = "manifest.json"
_CHUNK = 1 << 26            # bytes per CRC-32 update
_TMP = ".tmp-"              # ENTRY.tmp-PID-XXXX: a writer's folder until its rename
_MANIFEST_MAX = 16 << 20    # a manifest is kilobytes: a larger file is not one


class CacheEntryError(ValueError):
    """An entry that is not the key asked for, or not whole."""


# an entry's files missing, short, malformed (np.load, json: ValueError) or with fields missing or mistyped
_BAD_ENTRY = (CacheEntryError, ValueError, KeyError, TypeError, AttributeError, OSError)


def identity(r1cs, q: QAP, generator: int, toxic_seed: int, tag=None) -> dict:
    """Everything that determines the key (q: its QAP convention). `tag`: the caller's name for the circuit
    (e.g. the perf workload's circuit, size and optimizations), which makes it unnecessary to hash the whole
    constraint system; without one, the circuit's digest."""
    ident = {"format": FORMAT, "tag": tag if tag is not None else {"digest": r1cs.digest()},
             "convention": q.name, "generator": int(generator), "toxic_seed": int(toxic_seed),
             "shape": {"num_inputs": int(r1cs.num_inputs), "num_aux": int(r1cs.num_aux),
                       "num_constraints": int(r1cs.num_constraints), "qap_rows": int(r1cs.qap_rows),
                       "nnz": [int(r1cs.A.nnz), int(r1cs.B.nnz), int(r1cs.C.nnz)]}}
    return json.loads(json.dumps(ident))       # as the manifest will hold it (lists, not tuples)


def entry_path(folder, ident: dict) -> Path:
    tag = hashlib.sha256(json.dumps(ident, sort_keys=True).encode()).hexdigest()[:24]
    return Path(folder) / f"devkey-{tag}"


def _log(msg: str) -> None:
    print(f"cuzk: device key cache: {msg}", file=sys.stderr)


# --- the device side (replaced by numpy stand-ins in tests) ---

def _download(a) -> np.ndarray:
    import cupy
    return cupy.asnumpy(a)


def _upload(host: np.ndarray):
    """A device copy straight from `host` (a memory map: no staging copy of the whole array on the host)."""
    import cupy
    out = cupy.empty(host.shape, host.dtype)
    if host.size:
        out.set(np.ascontiguousarray(host))
    return out


def _key_handle(pk, dev):
    from .backend.cuda import CudaKey
    return CudaKey(pk, dev)


# --- files ---

def _crc(a: np.ndarray) -> int:
    flat = np.ascontiguousarray(a).reshape(-1).view(np.uint8)
    c = 0
    for i in range(0, flat.size, _CHUNK):
        c = zlib.crc32(flat[i:i + _CHUNK], c)
    return c


def _put(folder: Path, files: dict, name: str, a: np.ndarray) -> str:
    fn = f"{name}.npy"
    np.save(folder / fn, a, allow_pickle=False)
    files[fn] = {"dtype": a.dtype.str, "shape": list(a.shape), "crc32": _crc(a)}
    return fn


def _get(entry: Path, files: dict, fn: str) -> np.ndarray:
    """The array of file `fn`, memory-mapped, after its dtype, shape and CRC-32 match the manifest."""
    want = files.get(fn)
    if not isinstance(want, dict):
        raise CacheEntryError(f"{fn}: not in the manifest")
    shape = tuple(want["shape"])
    if not stat.S_ISREG(os.stat(entry / fn).st_mode):      # a FIFO would block np.load's open for ever
        raise CacheEntryError(f"{fn}: not a regular file")
    a = np.load(entry / fn, mmap_mode="r" if int(np.prod(shape)) else None, allow_pickle=False)
    if a.dtype.str != want["dtype"] or a.shape != shape:
        raise CacheEntryError(f"{fn}: {a.dtype.str} {a.shape}, the manifest says {want['dtype']} {shape}")
    if _crc(a) != want["crc32"]:
        raise CacheEntryError(f"{fn}: CRC-32 mismatch (truncated or corrupt)")
    return a


# --- save ---

def save(folder, ident: dict, pk, kh, info: dict) -> Path | None:
    """Write the key (the host ProvingKey, kh.dev's sections, the keygen's report) as the entry of
    `ident`; its path, or None (one line on stderr) where it could not be written: the key in hand
    stays usable, the next process makes it again."""
    folder = Path(folder)
    final = entry_path(folder, ident)
    tmp = None
    try:
        folder.mkdir(parents=True, exist_ok=True)
        _remove_dead_temps(folder, final.name)
        tmp = Path(tempfile.mkdtemp(dir=folder, prefix=f"{final.name}{_TMP}{os.getpid()}-"))
        files: dict = {}
        host = {name: {"group": p.group, "limbs": _put(tmp, files, f"host.{name}.limbs", np.asarray(p.limbs)),
                       "inf": _put(tmp, files, f"host.{name}.inf", np.asarray(p.inf))}
                for name, p in pk.points.items()}
        device, shared = {}, {}        # shared: id of a device array saved already -> its file
        for name, sec in kh.dev.sections.items():
            d = {"group": sec.group}
            for part in ("limbs", "inf", "rows"):
                arr = getattr(sec, part)
                if arr is None:
                    d[part] = None
                elif id(arr) in shared:
                    d[part] = shared[id(arr)]
                else:
                    a = _download(arr)
                    d[part] = shared[id(arr)] = _put(tmp, files, f"dev.{name}.{part}", a)
                    del a           # one array of the key on the host at a time
            device[name] = d
        manifest = {"identity": ident, "files": files, "host": host, "device": device,
                    "pk": {"convention": pk.convention, "generator": pk.generator, "log_n": pk.log_n,
                           "num_inputs": pk.num_inputs, "num_aux": pk.num_aux,
                           "num_constraints": pk.num_constraints, "digest": pk.digest.hex()},
                    "info": info}
        (tmp / MANIFEST).write_text(json.dumps(manifest, default=_plain))
        # no fsync: the entry lives as long as the gate's workspace, and a crash ends the gate with it
        try:
            os.rename(tmp, final)
        except OSError as e:
            if e.errno not in (errno.EEXIST, errno.ENOTEMPTY) or not final.is_dir():
                raise
            shutil.rmtree(tmp, ignore_errors=True)      # a process beside this one saved the same key first
        return final
    except BaseException as e:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
        if not isinstance(e, Exception):
            raise
        _log(f"{final}: not saved ({type(e).__name__}: {e}); the next process makes the key again")
        return None


def _plain(o):
    """JSON for numpy scalars in the keygen's report."""
    return o.item() if hasattr(o, "item") else str(o)


def _remove_dead_temps(folder: Path, name: str) -> None:
    """Remove the temporary folders of `name` whose writer (the PID in the name) is gone."""
    for p in folder.glob(f"{name}{_TMP}*"):
        try:
            pid = int(p.name[len(name) + len(_TMP):].split("-", 1)[0])
            os.kill(pid, 0)
        except ProcessLookupError:
            shutil.rmtree(p, ignore_errors=True)
        except (ValueError, OSError):
            pass                    # not ours to judge, or its writer is alive


# --- load ---

def load(folder, ident: dict):
    """(pk, kh, info) from the entry of `ident`, or None where there is none. An entry that does not
    match or is not whole is removed (one line on stderr) and None returned: the caller makes the key."""
    entry = entry_path(folder, ident)
    if not entry.is_dir():
        return None
    try:
        return _load(entry, ident)
    except _BAD_ENTRY as e:         # the files' fault; a device error (out of memory) propagates, entry kept
        _log(f"{entry}: not used ({type(e).__name__}: {e}); removed, making the key again")
        shutil.rmtree(entry, ignore_errors=True)
        return None


def _load(entry: Path, ident: dict):
    m = json.loads(read_input(entry / MANIFEST, _MANIFEST_MAX))     # a regular file only: a FIFO would hang
    if m.get("identity") != ident:
        raise CacheEntryError("the entry holds another key (identity mismatch)")
    files, h = m["files"], m["pk"]
    # the header and groups are not under a CRC: an altered digit there would be a wrong key, used silently
    shape = ident["shape"]
    want = {"convention": ident["convention"], "generator": ident["generator"],
            "log_n": Domain.for_size(shape["qap_rows"]).log_n, "num_inputs": shape["num_inputs"],
            "num_aux": shape["num_aux"], "num_constraints": shape["num_constraints"]}
    wrong = [f"{k} {h.get(k)!r}, not {v!r}" for k, v in want.items() if h.get(k) != v]
    if wrong:
        raise CacheEntryError(f"the manifest's key header does not match its identity: {', '.join(wrong)}")
    groups = dict(SECTIONS)
    for name, d in [*m["host"].items(), *m["device"].items()]:
        if d["group"] != groups.get(name):
            raise CacheEntryError(f"section {name}: group {d['group']}, expected {groups.get(name)}")
    pk = ProvingKey(h["convention"], h["generator"], h["log_n"], h["num_inputs"], h["num_aux"],
                    h["num_constraints"], bytes.fromhex(h["digest"]))
    for name, d in m["host"].items():
        pk.points[name] = AffineBases(d["group"], np.array(_get(entry, files, d["limbs"])),
                                      np.array(_get(entry, files, d["inf"])))
    uploaded: dict = {}             # file -> device array: a shared row map uploaded once

    def dev(fn):
        if fn is None:
            return None
        if fn not in uploaded:
            uploaded[fn] = _upload(_get(entry, files, fn))
        return uploaded[fn]
    sections = {name: DeviceBases(d["group"], dev(d["limbs"]), dev(d["inf"]), dev(d["rows"]))
                for name, d in m["device"].items()}
    return pk, _key_handle(pk, DeviceKey.resident(sections)), m["info"]
