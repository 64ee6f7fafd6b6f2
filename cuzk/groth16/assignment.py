"""A proof's witness and its a, b, c over the domain: what synthesis hands the other phases, on either backend."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..field import limbs_to_ints


@dataclass
class Assignment:
    inputs: np.ndarray    # object[num_inputs], inputs[0] == 1
    aux: np.ndarray       # object[num_aux], or canonical limbs uint32[num_aux, 8] (large circuits)
    a: np.ndarray | None  # object[n]: constraint rows, then one row per input, then zeros
    b: np.ndarray | None
    c: np.ndarray | None
    abc_dev: object = None  # on the GPU backend: device uint32[3, n, 8], Montgomery (a, b, c on host are None)
    z_dev: object = None    # on the GPU backend: the witness z, device uint32[num_vars, 8], Montgomery
    aux_packed: object = None  # instead of aux: a witness_pack.PackedWitness (handed to the GPU packed, B2)
    abc_spendable: bool = False  # its proof may consume abc_dev in place (F2): the pipeline's, proved once

    @property
    def num_aux(self) -> int:
        return len(self.aux) if self.aux is not None else self.aux_packed.n

    @property
    def z(self) -> np.ndarray:
        """The witness as Fr ints (converted from limbs: small sizes only)."""
        aux = self.aux
        if aux is None:
            from ..witness_pack import unpack_host
            aux = unpack_host(self.aux_packed)
        return np.concatenate([self.inputs, aux_ints(aux)])

    @property
    def public(self) -> list[int]:
        return [int(v) for v in self.inputs[1:]]


def is_limbs(aux: np.ndarray) -> bool:
    return isinstance(aux, np.ndarray) and aux.dtype == np.uint32 and aux.ndim == 2


def aux_ints(aux: np.ndarray) -> np.ndarray:
    return limbs_to_ints(aux) if is_limbs(aux) else aux


