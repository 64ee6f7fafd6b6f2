"""synthesis: circuit -> Assignment (input and aux witness, and a, b, c over the domain)."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import circuits
from ..opts import OptSet
from ..poly import Domain
from ..r1cs import R1CS


@dataclass
class Assignment:
    inputs: np.ndarray    # object[num_inputs], inputs[0] == 1
    aux: np.ndarray       # object[num_aux]
    a: np.ndarray | None  # object[n]: constraint rows, then one row per input, then zeros
    b: np.ndarray | None
    c: np.ndarray | None
    abc_dev: object = None  # on the GPU backend: device uint32[3, n, 8], Montgomery (a, b, c on host are None)
    z_dev: object = None    # on the GPU backend: the witness z, device uint32[num_vars, 8], Montgomery

    @property
    def z(self) -> np.ndarray:
        return np.concatenate([self.inputs, self.aux])

    @property
    def public(self) -> list[int]:
        return [int(v) for v in self.inputs[1:]]


def assign(r1cs: R1CS, inputs: np.ndarray, aux: np.ndarray, domain: Domain) -> Assignment:
    """Evaluate A z, B z, C z, check a∘b = c, and lay them out over the domain."""
    if len(inputs) != r1cs.num_inputs or len(aux) != r1cs.num_aux:
        raise ValueError(f"witness sizes ({len(inputs)} inputs, {len(aux)} aux) do not match the "
                         f"circuit ({r1cs.num_inputs}, {r1cs.num_aux})")
    if r1cs.qap_rows > domain.n:
        raise ValueError(f"circuit needs {r1cs.qap_rows} rows but the domain has {domain.n}")
    z = np.concatenate([inputs, aux])
    a, b, c = r1cs.evaluate(z)
    r1cs.check(a, b, c)
    m, n = r1cs.num_constraints, domain.n
    out = []
    for v, tail in ((a, inputs), (b, None), (c, None)):
        full = np.zeros(n, dtype=object)
        full[:m] = v
        if tail is not None:
            full[m:m + len(tail)] = tail
        out.append(full)
    return Assignment(inputs, aux, *out)


def synthesize(name: str, log_size: int, opts: OptSet, domain: Domain | None = None,
               seeds=(1,), assign_fn=None) -> tuple[R1CS, list[Assignment]]:
    """Build each circuit of the batch (one witness seed each) and assign it (on the host,
    or with the backend's `assign_fn`)."""
    assign_fn = assign_fn or assign
    r1cs0, result = None, []
    for seed in seeds:
        r1cs, inputs, aux = circuits.build(name, log_size, opts=opts, seed=seed)
        if r1cs0 is None:
            r1cs0 = r1cs
            domain = domain or Domain.for_size(r1cs.qap_rows)
        result.append(assign_fn(r1cs, inputs, aux, domain))
    return r1cs0, result
