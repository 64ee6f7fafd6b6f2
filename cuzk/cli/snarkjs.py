"""The snarkjs-facing commands: prove (snarkjs's argument order and output), export (a built-in
circuit as .r1cs/.wtns), export-vk, the zkey side of keygen, and bench-snarkjs."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

from .. import circuits
from ..environment import options, table_gib
from ..formats import FormatError, read_r1cs, read_zkey, write_r1cs, write_wtns
from ..groth16 import vk_to_json
from ..run import prove_files
from .bench_snarkjs import ToolMissing, ratio_table, run
from .common import EXIT_INVALID, EXIT_OK, CliError, check_paths, phase_table, write_all


def proof_json(proof) -> str:
    """snarkjs writes its JSON with one-space indent and no final newline; so do we."""
    return json.dumps(proof.to_json(), indent=1)


def public_json(public) -> str:
    return json.dumps([str(int(v)) for v in public], indent=1)


# --- commands ---

def cmd_prove(args) -> int:
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
    check_paths({"VK": args.vk}, {"ZKEY": args.zkey})
    zk = read_zkey(args.zkey)
    write_all({args.vk: json.dumps(vk_to_json(zk.verifying_key()), indent=1)})
    return EXIT_OK


def load_circuit_r1cs(path):
    """An R1CS from a circom .r1cs file, for keygen."""
    return read_r1cs(path).r1cs


def _check_workdir(path) -> None:
    """--workdir: a folder, or a path one can be made at; judged before any circuit or key is made."""
    p = Path(path)
    if p.exists() or p.is_symlink():
        if not p.is_dir():
            raise CliError(f"--workdir {path}: not a folder")
        return
    above = next((a for a in p.absolute().parents if a.exists()), None)
    if above is not None and not above.is_dir():
        raise CliError(f"--workdir {path}: {above} is not a folder")


def cmd_bench_snarkjs(args) -> int:
    check_paths({"--json": args.json})
    if args.workdir:
        _check_workdir(args.workdir)
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


__all__ = ["cmd_prove", "cmd_export", "cmd_export_vk", "cmd_bench_snarkjs", "FormatError"]
