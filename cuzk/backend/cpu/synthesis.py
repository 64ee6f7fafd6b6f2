"""synthesis on the CPU reference: a, b, c = A z, B z, C z on the host, checked and laid out over the domain.
Witness generation itself is shared host code (cuzk/synthesis.py)."""
from __future__ import annotations

import numpy as np

from ...groth16.assignment import Assignment, aux_ints
from ...poly import Domain
from ...r1cs import R1CS


def assign(r1cs: R1CS, inputs: np.ndarray, aux: np.ndarray, domain: Domain) -> Assignment:
    """Evaluate A z, B z, C z, check a∘b = c, and lay them out over the domain."""
    if len(inputs) != r1cs.num_inputs or len(aux) != r1cs.num_aux:
        raise ValueError(f"witness sizes ({len(inputs)} inputs, {len(aux)} aux) do not match the "
                         f"circuit ({r1cs.num_inputs}, {r1cs.num_aux})")
    aux = aux_ints(aux)
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
