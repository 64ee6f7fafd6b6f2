"""synthesis on the GPU: the host's witness uploaded (or expanded there from its packed form, B2), then
a, b, c by the SpMV kernel ('mixed'); a snarkjs key's circuit likewise (gpu/zkey.py)."""
from __future__ import annotations

import numpy as np

from ...field import FR_LIMBS
from ...gpu import fr as gfr
from ...gpu import spmv
from ...gpu import zkey as gzkey
from ...groth16.assignment import Assignment


def assign(be, r1cs, inputs, aux, domain, z_limbs=None, z_packed=None):
    """`z_limbs`: z as canonical limbs (field.ints_to_limbs of fr_array), converted elsewhere;
    `z_packed`: aux as a witness_pack.PackedWitness (then `aux` may be None), expanded on the GPU."""
    n_aux = z_packed.n if z_packed is not None else len(aux)
    if len(inputs) != r1cs.num_inputs or n_aux != r1cs.num_aux:
        raise ValueError(f"witness sizes ({len(inputs)} inputs, {n_aux} aux) do not match the "
                         f"circuit ({r1cs.num_inputs}, {r1cs.num_aux})")
    pinned = be.plan.pinned_uploads
    if z_packed is not None:
        z = gfr.upload_packed(inputs, z_packed)
        abc = spmv.evaluate(spmv.DeviceR1CS.of(r1cs), z, domain.n)
        return Assignment(inputs, None, None, None, None, abc_dev=abc, z_dev=z, aux_packed=z_packed)
    if z_limbs is not None:
        if z_limbs.shape != (len(inputs) + len(aux), FR_LIMBS):
            raise ValueError(f"z_limbs has shape {z_limbs.shape}, expected ({len(inputs) + len(aux)}, {FR_LIMBS})")
        z = gfr.upload_limbs(z_limbs, pinned=pinned)
    elif aux.dtype == np.uint32 and aux.ndim == 2:          # canonical limbs: no ints on the way
        z = gfr.upload_split(inputs, aux)
    else:
        z = gfr.upload(np.concatenate([inputs, aux]), pinned=pinned)
    abc = spmv.evaluate(spmv.DeviceR1CS.of(r1cs), z, domain.n)
    return Assignment(inputs, aux, None, None, None, abc_dev=abc, z_dev=z)


def assign_zkey(zk, values):
    """On the GPU: z uploaded once, A·z and B·z by the SpMV kernel, c = a∘b (gpu/zkey.py)."""
    return gzkey.assign(zk, values)


def device_z(asg: Assignment):
    """The witness z on the device (uploaded once, where synthesis left it on the host)."""
    if asg.z_dev is None:
        asg.z_dev = gfr.upload(asg.z)
    return asg.z_dev
