"""`cuzk verify`: a proof against a verification key and public inputs (snarkjs JSON)."""
from __future__ import annotations

from ..groth16 import Proof, public_from_json, verify, vk_from_json
from .common import EXIT_INVALID, EXIT_OK, CliError, _load_json


def cmd_verify(args) -> int:
    vk = _load_json(args.vk, "verification key", vk_from_json)
    public = _load_json(args.public, "public inputs", public_from_json)
    proof = _load_json(args.proof, "proof", Proof.from_json)
    if len(public) != vk.num_public:
        raise CliError(f"public inputs {args.public}: {len(public)} values, the verification key {args.vk} "
                       f"expects {vk.num_public}")
    ok = verify(vk, public, proof)
    print("OK: proof is valid" if ok else "INVALID: proof does not verify")
    return EXIT_OK if ok else EXIT_INVALID
