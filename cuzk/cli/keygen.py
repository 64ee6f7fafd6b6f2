"""`cuzk keygen`: a circuit's test setup, saved as a cuzk key (and `--zkey`: as a snarkjs .zkey)."""
from __future__ import annotations

import json

from .. import circuits, keygen
from ..environment import options
from ..groth16 import vk_to_json
from ..keygen import ToxicWaste, cached_setup
from .common import EXIT_OK, CliError, check_paths, write_all


def _keygen_params(args) -> None:
    """Defaults that depend on the output: a snarkjs .zkey needs odd_lagrange with generator 5."""
    if args.r1cs and (args.circuit is not None or args.log_size is not None):
        raise CliError("keygen: give either --r1cs or --circuit/--log-size, not both")
    args.circuit = args.circuit or "porep_like"
    args.log_size = 12 if args.log_size is None else args.log_size
    if args.zkey:
        if args.convention not in (None, "odd_lagrange") or args.generator not in (None, 5):
            raise CliError("keygen --zkey: snarkjs keys use --convention odd_lagrange with --generator snarkjs (5)")
        args.convention, args.generator = "odd_lagrange", 5
    args.convention = args.convention or "coeff"
    args.generator = args.generator or 7


def cmd_keygen(args) -> int:

    _keygen_params(args)
    check_paths({"--out": args.out, "--vk": args.vk, "--zkey": args.zkey}, {"--r1cs": args.r1cs})
    if args.r1cs:
        from .snarkjs import load_circuit_r1cs
        r1cs = load_circuit_r1cs(args.r1cs)
    else:
        r1cs, _, _ = circuits.build(args.circuit, args.log_size, opts=options(args.opt))
    outputs = {}
    if args.out:
        from ..files import PathWriter
        pk = keygen.setup(r1cs, args.convention, args.generator, ToxicWaste.from_seed(args.toxic_seed),
                          backend=args.backend)
        path = args.out
        outputs[path] = PathWriter(pk.save)          # the key file's own writer, at the temp file's path
    else:
        pk, path, hit = cached_setup(r1cs, args.convention, args.generator, args.toxic_seed, backend=args.backend)
    if args.vk:
        outputs[args.vk] = json.dumps(vk_to_json(pk.verifying_key()), indent=1) + "\n"
    if args.zkey:
        from ..formats import zkey_writer
        outputs[args.zkey] = zkey_writer(pk, r1cs)
    write_all(outputs)
    print(f"{path}  circuit {r1cs.digest()[:16]}  2^{pk.log_n}  {pk.convention}  generator {pk.generator}")
    if args.zkey:
        print(f"{args.zkey}  snarkjs zkey, {r1cs.num_constraints} constraints, {r1cs.num_inputs - 1} public")
    return EXIT_OK
