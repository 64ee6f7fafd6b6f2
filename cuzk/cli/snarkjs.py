"""The snarkjs-facing commands: prove (snarkjs's argument order and output), export (a built-in
circuit as .r1cs/.wtns), export-vk, the zkey side of keygen, and bench-snarkjs."""
from __future__ import annotations

import json
import sys

import numpy as np

from ..environment import options, table_gib
from ..formats import FormatError


def proof_json(proof) -> str:
    """snarkjs writes its JSON with one-space indent and no final newline; so do we."""
    return json.dumps(proof.to_json(), indent=1)


def public_json(public) -> str:
    return json.dumps([str(int(v)) for v in public], indent=1)


# --- commands ---

def cmd_prove(args) -> int:
    from ..run import prove_files                  # the prover's imports, for this command alone
    from .common import EXIT_OK, check_paths, phase_table, write_all
    check_paths({"PROOF": args.proof, "PUBLIC": args.public}, {"ZKEY": args.zkey, "WTNS": args.wtns})
    res = prove_files(args.zkey, args.wtns, args.backend, opts=options(), table_gib=table_gib())
    write_all({args.proof: proof_json(res.proof), args.public: public_json(res.public)})
    if args.timings:
        phases = res.timer.as_dict()
        print(f"read {res.read_s * 1e3:.1f} ms, key load {res.load_s * 1e3:.1f} ms, prove "
              f"{res.prove_s * 1e3:.1f} ms", file=sys.stderr)
        print(phase_table(phases, sum(r["host_s"] for r in phases.values())), file=sys.stderr)
    return EXIT_OK


def cmd_export(args) -> int:
    """A built-in circuit as circom/snarkjs files."""
    from .. import circuits
    from .common import EXIT_OK, CliError, check_paths, write_all
    from ..formats import write_r1cs, write_wtns
    if not (args.r1cs or args.wtns or args.public):
        raise CliError("export: give at least one of --r1cs, --wtns, --public")
    check_paths({"--r1cs": args.r1cs, "--wtns": args.wtns, "--public": args.public})
    r1cs, inputs, aux = circuits.build(args.circuit, args.log_size, opts=options(args.opt), seed=args.seed)
    out = {}
    if args.r1cs:
        out[args.r1cs] = lambda f: write_r1cs(f, r1cs)
    if args.wtns:
        z = np.concatenate([inputs, aux])
        out[args.wtns] = lambda f: write_wtns(f, z)
    if args.public:
        out[args.public] = public_json(inputs[1:])
    write_all(out)
    print(f"{args.circuit} 2^{args.log_size}: {r1cs.num_constraints} constraints, {r1cs.num_inputs - 1} public, "
          f"{r1cs.num_vars} wires", file=sys.stderr)
    return EXIT_OK


def cmd_export_vk(args) -> int:
    from .common import EXIT_OK, check_paths, write_all
    from ..formats import read_zkey
    from ..groth16 import vk_to_json
    check_paths({"VK": args.vk}, {"ZKEY": args.zkey})
    zk = read_zkey(args.zkey)
    write_all({args.vk: json.dumps(vk_to_json(zk.verifying_key()), indent=1)})
    return EXIT_OK


def load_circuit_r1cs(path):
    """An R1CS from a circom .r1cs file, for keygen."""
    from ..formats import read_r1cs
    return read_r1cs(path).r1cs


def cmd_bench_snarkjs(args) -> int:
    from .common import EXIT_INVALID, EXIT_OK, CliError, check_paths, write_all
    from .bench_snarkjs import ToolMissing, ratio_table, run
    check_paths({"--json": args.json})
    try:
        sizes = [int(s) for s in args.log_sizes.split(",") if s.strip()]
    except ValueError as e:
        raise CliError(f"--log-sizes must be a comma-separated list of integers, got {args.log_sizes!r}") from e
    if not sizes or any(not 4 <= k <= 27 for k in sizes):
        raise CliError("--log-sizes must list sizes in 4..27")
    if args.repeat < 1:
        raise CliError("--repeat must be >= 1")
    try:
        rows = run(sizes, circuit=args.circuit, backend=args.backend, repeat=args.repeat, workdir=args.workdir,
                   log=lambda m: print(m, file=sys.stderr), skip_snarkjs=args.skip_snarkjs,
                   keygen_backend=args.keygen_backend)
    except (ToolMissing, RuntimeError) as e:
        raise CliError(f"bench-snarkjs: {e}") from e
    print(ratio_table(rows))
    if args.json:
        write_all({args.json: json.dumps({"circuit": args.circuit, "rows": rows}, indent=2) + "\n"})
    return EXIT_OK if all(r["verified"] for r in rows) else EXIT_INVALID


def add_parsers(sub) -> None:
    from ..circuits import CIRCUITS
    p = sub.add_parser("prove", help="prove from a snarkjs .zkey and .wtns (snarkjs's argument order and output)")
    p.add_argument("zkey", metavar="ZKEY")
    p.add_argument("wtns", metavar="WTNS")
    p.add_argument("proof", metavar="PROOF.json")
    p.add_argument("public", metavar="PUBLIC.json")
    p.add_argument("--backend", default="auto", choices=("auto", "cpu", "cuda"))
    p.add_argument("--timings", action="store_true", help="print read/load/prove times and the phase table "
                                                         "to stderr")
    p.set_defaults(func=cmd_prove)

    e = sub.add_parser("export", help="write a built-in circuit as circom/snarkjs files (.r1cs, .wtns, public.json)")
    e.add_argument("--circuit", default="porep_like", choices=sorted(CIRCUITS))
    e.add_argument("--log-size", type=int, default=12, help="domain 2^K (default 12)")
    e.add_argument("--seed", type=int, default=1, help="witness seed (default 1)")
    e.add_argument("--opt", default=None, help="optimizations for synthesis (or CUZK_OPT)")
    e.add_argument("--r1cs", metavar="FILE.r1cs")
    e.add_argument("--wtns", metavar="FILE.wtns")
    e.add_argument("--public", metavar="PUBLIC.json")
    e.set_defaults(func=cmd_export)

    v = sub.add_parser("export-vk", help="verification_key.json of a snarkjs .zkey (like `snarkjs zkey export "
                                         "verificationkey`)")
    v.add_argument("zkey", metavar="ZKEY")
    v.add_argument("vk", metavar="VK.json")
    v.set_defaults(func=cmd_export_vk)

    b = sub.add_parser("bench-snarkjs", help="`snarkjs groth16 prove` against `cuzk prove` on the same files; "
                                            "prints the ratio table")
    b.add_argument("--circuit", default="porep_like", choices=sorted(CIRCUITS))
    b.add_argument("--log-sizes", default="12", help="comma-separated, e.g. 12,14,16,18 (default 12)")
    b.add_argument("--repeat", type=int, default=3, help="runs per prover and size; the median is reported")
    b.add_argument("--backend", default="auto", choices=("auto", "cpu", "cuda"))
    b.add_argument("--workdir", default=None, help="where the .r1cs/.wtns/.zkey go (default: the key cache)")
    b.add_argument("--json", metavar="FILE", help="also write the rows as JSON")
    b.add_argument("--skip-snarkjs", action="store_true",
                   help="time cuzk only (no node needed); its proofs are checked by cuzk's verifier")
    b.add_argument("--keygen-backend", default="auto", choices=("auto", "cpu", "cuda"),
                   help="backend of the test setup that makes the .zkey (auto: the GPU when usable, from 2^12)")
    b.set_defaults(func=cmd_bench_snarkjs)


__all__ = ["add_parsers", "FormatError"]
