"""The proving key resident on the GPU: every point section uploaded once, kept across proofs
(or made there: gpu.keygen.setup_device, whose B sections keep only B's variables).

Before uploading, the key's size is checked against the device's free memory; a key that
does not fit fails with a message naming both sizes and leaves nothing allocated.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..curve import _CLS, canonical_to_ark
from ..field import FP_LIMBS
from .fr import _launch

SECTIONS = ("a", "b_g1", "b_g2", "l", "h")


class DeviceMemoryError(MemoryError):
    pass


@dataclass
class DeviceBases:
    group: int
    limbs: object      # cupy uint32[n, 24 or 48]
    inf: object        # cupy bool[n]
    rows: object = None  # sparse sections: cupy int32[num_vars], variable -> row, -1 where the point is infinity

    def __len__(self) -> int:
        return int(self.inf.shape[0])

    @property
    def nbytes(self) -> int:
        return int(self.limbs.nbytes + self.inf.nbytes + (0 if self.rows is None else self.rows.nbytes))

    def take(self, idx):
        """(limbs, inf, keep) for the variables idx: the bases gathered (contiguous) and, for a
        sparse section, keep = the bool mask over idx of those stored (None: all of them), so a
        caller takes scalars[keep]. Variables left out have infinity as their point."""
        import cupy
        keep = None
        if self.rows is not None:
            r = self.rows[idx]
            keep = r >= 0
            idx = r[keep]
        return cupy.ascontiguousarray(self.limbs[idx]), self.inf[idx], keep

    def to_ark(self) -> list:
        """The section as arkworks points indexed like the key (one per variable; a sparse section's
        missing rows as the identity). Only the stored points are converted, from Montgomery form on
        the GPU (field_ops fp_from_mont), so the host does one unchecked parse per point."""
        import cupy
        canon = cupy.array(self.limbs)                   # (n, 24 or 48) words, Montgomery
        n_fp = canon.size // FP_LIMBS
        if n_fp:
            _launch("fp_from_mont", canon, canon, n_fp)
        pts = canonical_to_ark(self.group, cupy.asnumpy(canon), cupy.asnumpy(self.inf))
        del canon
        if self.rows is None:
            return pts
        rows = cupy.asnumpy(self.rows)
        stored = np.empty(len(pts), dtype=object)
        stored[:] = pts
        out = np.empty(rows.shape[0], dtype=object)
        out.fill(_CLS[self.group].identity())
        have = rows >= 0
        out[have] = stored[rows[have]]
        return out.tolist()


def key_bytes(pk, sections=SECTIONS) -> int:
    return sum(pk.points[s].limbs.nbytes + len(pk.points[s]) for s in sections)


class DeviceKey:
    def __init__(self, pk, sections=SECTIONS, headroom: float = 0.05):
        import cupy
        need = key_bytes(pk, sections)
        free, total = cupy.cuda.runtime.memGetInfo()
        pool = cupy.get_default_memory_pool()
        avail = free + (pool.total_bytes() - pool.used_bytes())
        if need > avail * (1 - headroom):
            raise DeviceMemoryError(f"proving key needs {need / 2**30:.2f} GiB on the GPU but only "
                                    f"{avail / 2**30:.2f} GiB of {total / 2**30:.2f} GiB is free")
        self.sections: dict[str, DeviceBases] = {}
        try:
            for s in sections:
                p = pk.points[s]
                self.sections[s] = DeviceBases(p.group, cupy.asarray(p.limbs), cupy.asarray(p.inf))
        except cupy.cuda.memory.OutOfMemoryError as e:
            self.release()
            raise DeviceMemoryError(f"proving key ({need / 2**30:.2f} GiB) did not fit on the GPU: {e}") from e
        self.nbytes = need

    @classmethod
    def resident(cls, sections: dict) -> "DeviceKey":
        """A key whose sections were made on the device (gpu.keygen.setup_device)."""
        self = cls.__new__(cls)
        self.sections = dict(sections)
        self.nbytes = sum(b.nbytes for b in sections.values())
        return self

    def release(self) -> None:
        import cupy
        self.sections.clear()
        cupy.get_default_memory_pool().free_all_blocks()

    def __getitem__(self, name: str) -> DeviceBases:
        return self.sections[name]
