"""ntt_msm_h on the GPU: the H scalars by the key's QAP convention through the NTT variant the registry
selects (gpu/h.py), then their G1 MSM over the resident H bases."""
from __future__ import annotations

import sys

import cupy
import numpy as np

from ...field import FR_LIMBS
from ...gpu import fr as gfr
from ...gpu import h as gh
from ...gpu import msm as gmsm
from ...gpu import msm_fixed as gmsm_fixed
from ...gpu import srs as gsrs
from ...timing import circuit
from .msm import msm_kw, window


def ntt_variant(opts) -> str:
    """N1 on: register-radix NTT passes (r4; with N2, built on fastmul build 6; with N2 and N4, its DIF butterfly
    in two modular ops; and N8: full-domain twiddle tables; N11: DIF differences left < 2p into products; N12 off:
    32-bit exchanges, "w"; N17 off: swz4 bit by bit, "b"); after a "+", the run-time features N13 ("o": odd DIF
    passes' short group at the top) and N15 ("z": stage 0 lazy into the 4-step product; build 6 only); off: radix-2
    (r2)."""
    if not opts.enabled("N1"):
        return "r2"
    odd = "o" if opts.enabled("N13") else ""
    if not opts.enabled("N2"):                              # N15 needs build 6's product
        return "r4" + ("+" + odd if odd else "")
    feats = odd + ("z" if opts.enabled("N15") else "")
    feats = "+" + feats if feats else ""
    w = "" if opts.enabled("N12") else "w"
    w = w or ("" if opts.enabled("N17") else "b")          # N17 acts on the 16-byte exchanges (N12) only
    if not opts.enabled("N4"):
        return "r4b6" + w + feats
    return "r4b6d" + ("t" if opts.enabled("N8") else "") + ("s" if opts.enabled("N11") else "") + w + feats


def h_options(opts) -> dict:
    """h_scalars' keyword arguments under these options (N1, N2, N4, F1, N3, H2, N5)."""
    return {"variant": ntt_variant(opts), "fused_tail": opts.enabled("F1"), "pointwise_b6": opts.enabled("N3"),
            "skip_c": opts.enabled("H2"), "tiled_bitrev": opts.enabled("N5")}


def abc_for(be, asg, n: int):
    """The a, b, c the H pipeline may work on in place: the assignment's own under F2 when it may be spent,
    else a copy (or an upload of host a, b, c)."""
    if asg.abc_dev is not None:
        if asg.abc_spendable and be.opts.enabled("F2"):
            abc, asg.abc_dev = asg.abc_dev, None     # F2: consumed in place, no copy
            return abc
        return asg.abc_dev.copy()
    return gfr.upload(np.concatenate([asg.a, asg.b, asg.c])).reshape(3, n, FR_LIMBS)


def run(be, kh, assignments) -> list:
    hb = kh.dev["h"]
    out = []
    for i, asg in enumerate(assignments):
        with circuit(i, label="h scalars"):          # sub-steps: device time of each in the bench report
            h = gh.h_scalars(abc_for(be, asg, kh.domain.n), kh.domain, kh.pk.qap, **h_options(be.opts))
            h = cupy.ascontiguousarray(h)
        with circuit(i, label="h msm"):
            tb = tables(be, kh) if be.opts.enabled("P2") else None
            if tb is not None:
                try:
                    out.append(gmsm_fixed.msm_g1(tb, h, **msm_kw(be.opts, 1)))
                    continue
                except cupy.cuda.memory.OutOfMemoryError:
                    kh.drop_tables()
                    print("cuzk: P2: the H tables were freed: the device ran out of memory in the H MSM; "
                          "proving goes on without them", file=sys.stderr)
            out.append(gmsm.msm_g1(hb.limbs, hb.inf, h, window(kh, h, be.opts), **msm_kw(be.opts, 1)))
    return out


def tables(be, kh):
    """P2's tables of the H bases (CudaKey.h_tables) within the backend's budget (table_gib), or None where it holds
    none; a budget that cannot hold even the plain MSM's sort pass is an error naming both sizes."""
    try:
        return kh.h_tables(be.table_gib)
    except ValueError as e:
        raise gsrs.DeviceMemoryError(f"P2: {e}") from e
