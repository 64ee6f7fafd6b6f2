"""Groth16 proofs and verification (py_arkworks_bls12381 pairing_check; pyblst as a second opinion)."""
from __future__ import annotations

import reprlib
from dataclasses import dataclass

from py_arkworks_bls12381 import G1Point, G2Point, GT

from ..curve import g1_to_json, g2_to_json, g1_from_json, g2_from_json, PointError, decimal_below, scalars_to_ark
from ..field import R
from ..keys import VerifyingKey


@dataclass
class Proof:
    a: G1Point
    b: G2Point
    c: G1Point

    def to_json(self) -> dict:
        return {"pi_a": g1_to_json(self.a), "pi_b": g2_to_json(self.b), "pi_c": g1_to_json(self.c),
                "protocol": "groth16", "curve": "bls12381"}

    @classmethod
    def from_json(cls, d) -> "Proof":
        if not isinstance(d, dict) or not {"pi_a", "pi_b", "pi_c"} <= d.keys():
            raise PointError("proof JSON needs pi_a, pi_b and pi_c")
        _check_meta(d, "proof")
        return cls(_field(g1_from_json, d, "pi_a"), _field(g2_from_json, d, "pi_b"), _field(g1_from_json, d, "pi_c"))


def _field(parse, d: dict, key, label=None):
    """parse(d[key]), a PointError naming the field."""
    try:
        return parse(d[key])
    except PointError as e:
        raise PointError(f"{label or key}: {e}") from e


def proof_point_error(proof: Proof) -> str | None:
    """Why `cuzk verify` would refuse this proof's points once written (off the curve, outside the
    subgroup), or None: the proof goes through the JSON it is written as and back."""
    try:
        Proof.from_json(proof.to_json())
    except PointError as e:
        return str(e)
    return None


def _check_meta(d: dict, what: str) -> None:
    if d.get("protocol", "groth16") != "groth16":
        raise PointError(f"{what} protocol is {reprlib.repr(d.get('protocol'))}, not groth16")
    if d.get("curve", "bls12381") != "bls12381":
        raise PointError(f"{what} curve is {reprlib.repr(d.get('curve'))}, not bls12381")


def vk_to_json(vk: VerifyingKey) -> dict:
    return {"protocol": "groth16", "curve": "bls12381", "nPublic": vk.num_public,
            "vk_alpha_1": g1_to_json(vk.alpha_g1), "vk_beta_2": g2_to_json(vk.beta_g2),
            "vk_gamma_2": g2_to_json(vk.gamma_g2), "vk_delta_2": g2_to_json(vk.delta_g2),
            "IC": [g1_to_json(p) for p in vk.ic]}


def vk_from_json(d) -> VerifyingKey:
    if not isinstance(d, dict):
        raise PointError("verification key JSON must be an object")
    _check_meta(d, "verification key")
    try:
        if not isinstance(d["IC"], list):
            raise PointError("IC must be a list of G1 points")
        ic = [_field(g1_from_json, d["IC"], i, f"IC[{i}]") for i in range(len(d["IC"]))]
        vk = VerifyingKey(_field(g1_from_json, d, "vk_alpha_1"), _field(g2_from_json, d, "vk_beta_2"),
                          _field(g2_from_json, d, "vk_gamma_2"), _field(g2_from_json, d, "vk_delta_2"), ic)
    except KeyError as e:
        raise PointError(f"verification key JSON lacks {e.args[0]}") from e
    if not ic:
        raise PointError("verification key has no IC points")
    # Groth16 forbids these at infinity; IC[0] there makes every proof fail
    for label, pt in (("vk_alpha_1", vk.alpha_g1), ("vk_beta_2", vk.beta_g2), ("vk_gamma_2", vk.gamma_g2),
                      ("vk_delta_2", vk.delta_g2), ("IC[0]", ic[0])):
        if not any(pt.to_xy_bytes_le()):
            raise PointError(f"{label} is the point at infinity")
    # type() and not ==: 2.0 and true equal 2 and 1 in Python, and are no count
    if "nPublic" in d and (type(d["nPublic"]) is not int or d["nPublic"] != vk.num_public):
        raise PointError(f"nPublic is {reprlib.repr(d['nPublic'])} but IC has {len(ic)} points")
    return vk


def public_from_json(d) -> list[int]:
    if not isinstance(d, list):
        raise PointError("public inputs JSON must be a list of decimal strings")
    out = []
    for v in d:
        x = decimal_below(v, R) if isinstance(v, str) and v.isascii() and v.isdigit() else None
        if x is None:
            raise PointError(f"public input {reprlib.repr(v)} is not a reduced Fr element")
        out.append(x)
    return out


def _ic_sum(vk: VerifyingKey, public: list[int]) -> G1Point:
    if len(public) != vk.num_public:
        raise ValueError(f"{len(public)} public inputs given, the key expects {vk.num_public}")
    # scalars_to_ark reduces mod r: x + r would pass for x, a proof of another statement
    bad = next((v for v in public if not 0 <= v < R), None)
    if bad is not None:
        raise ValueError(f"public input {reprlib.repr(bad)} is not a reduced Fr element")
    acc = vk.ic[0]
    if public:
        acc = acc + G1Point.multiexp_unchecked(vk.ic[1:], scalars_to_ark(public))
    return acc


VERIFIER = "py_arkworks_bls12381's pairing check of e(A, B) = e(alpha, beta) e(IC(x), gamma) e(C, delta)"


def verify(vk: VerifyingKey, public: list[int], proof: Proof) -> bool:
    """e(A,B) = e(α,β)·e(IC(x),γ)·e(C,δ), as one product of pairings equal to 1, with A, B, C on the
    curve and in their subgroups (the pairing alone does not see a small-order component)."""
    ic = _ic_sum(vk, public)
    if proof_point_error(proof) is not None:
        return False
    return bool(GT.pairing_check([proof.a, -vk.alpha_g1, -ic, -proof.c],
                                 [proof.b, vk.beta_g2, vk.gamma_g2, vk.delta_g2]))


def verify_blst(vk: VerifyingKey, public: list[int], proof: Proof) -> bool:
    """The same equation through blst (pyblst): Miller loops, then one final exponentiation."""
    import pyblst
    ic = _ic_sum(vk, public)
    p1 = lambda p: pyblst.BlstP1Element.uncompress(bytes(p.to_compressed_bytes()))   # noqa: E731
    p2 = lambda p: pyblst.BlstP2Element.uncompress(bytes(p.to_compressed_bytes()))   # noqa: E731
    lhs = pyblst.miller_loop(p1(proof.a), p2(proof.b))
    rhs = pyblst.miller_loop(p1(vk.alpha_g1), p2(vk.beta_g2))
    rhs = rhs * pyblst.miller_loop(p1(ic), p2(vk.gamma_g2))
    rhs = rhs * pyblst.miller_loop(p1(proof.c), p2(vk.delta_g2))
    return bool(pyblst.final_verify(lhs, rhs))
