"""`snarkjs groth16 prove` against cuzk on the same files, as a ratio.

For each size 2^k: a built-in circuit is written as .r1cs and .wtns (`cuzk export`), its key is
made by cuzk's test setup and written as a snarkjs .zkey (`cuzk keygen --zkey`); the files are
kept in the work folder and reused while the circuit's digest is unchanged. Then, `repeat` times
each, with the median reported:
  - snarkjs:  `snarkjs groth16 prove ZKEY WTNS proof.json public.json`, wall time of the process;
  - cuzk CLI: `python -m cuzk prove ZKEY WTNS proof.json public.json`, wall time of the process
              (the same work: read both files, prove, write JSON; cuzk also verifies its proof);
  - cuzk resident: in this process, with the key already loaded on the backend: a/b/c from the
              witness, then the proof (what a prover daemon pays per proof).
ratio = snarkjs time / cuzk time. Both proofs are checked: cuzk's by `snarkjs groth16 verify`,
snarkjs's by cuzk's verifier.

skip_snarkjs (a machine without node, e.g. the GPU device): cuzk only; its CLI and resident proofs
are checked by cuzk's verifier against verification_key.json, and the table has no ratio (divide by
a snarkjs time measured elsewhere on files made the same way).
"""
from __future__ import annotations

import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from .. import circuits
from ..backend import get_backend
from ..context import context_for_key
from ..environment import options, table_gib
from ..field import limbs_to_ints
from ..formats import read_wtns, read_zkey, write_r1cs, write_wtns, zkey_writer
from ..groth16 import Proof, public_from_json, verify, vk_from_json, vk_to_json
from ..keygen import cache_dir, cached_setup
from ..nodetools import find_tool
from ..timing import PhaseTimer
from .common import write_all

KEY_PARAMS = ("odd_lagrange", 5)


class ToolMissing(RuntimeError):
    pass


def default_workdir() -> Path:
    return cache_dir().parent / "snarkjs-bench"


def snarkjs_cmd() -> list[str]:
    cmd, why = find_tool("snarkjs")
    if cmd is None:
        raise ToolMissing(why)
    return cmd


def prepare(circuit: str, log_size: int, workdir=None, log=None, keygen_backend: str = "auto") -> dict:
    """The files for one size: {'r1cs', 'wtns', 'zkey', 'vk', 'constraints'} (made once, then reused).
    `keygen_backend`: cuzk keygen's backend (auto: the GPU when usable, from 2^12)."""

    d = Path(workdir or default_workdir()) / f"{circuit}-{log_size}"
    files = {k: d / n for k, n in (("r1cs", "circuit.r1cs"), ("wtns", "witness.wtns"), ("zkey", "circuit.zkey"),
                                   ("vk", "verification_key.json"), ("stamp", "digest"))}
    r1cs, inputs, aux = circuits.build(circuit, log_size, seed=1)
    digest = r1cs.digest()
    out = {k: str(v) for k, v in files.items() if k != "stamp"}
    out["constraints"] = r1cs.num_constraints
    if files["stamp"].is_file() and files["stamp"].read_text() == digest and all(
            files[k].is_file() for k in ("r1cs", "wtns", "zkey", "vk")):
        return out
    if log:
        log(f"bench-snarkjs: making the files for {circuit} 2^{log_size} in {d} (cuzk test setup, "
            f"cached by circuit)")
    pk, _, _ = cached_setup(r1cs, *KEY_PARAMS, backend=keygen_backend)
    z = np.concatenate([inputs, aux])
    write_all({files["r1cs"]: lambda f: write_r1cs(f, r1cs), files["wtns"]: lambda f: write_wtns(f, z),
               files["zkey"]: zkey_writer(pk, r1cs),
               files["vk"]: json.dumps(vk_to_json(pk.verifying_key()), indent=1),
               files["stamp"]: digest})
    return out


def _wall(cmd: list[str], what: str) -> float:
    t0 = time.perf_counter()
    r = subprocess.run(cmd, capture_output=True, text=True)
    dt = time.perf_counter() - t0
    if r.returncode != 0:
        raise RuntimeError(f"{what} failed (exit {r.returncode}): {(r.stderr or r.stdout).strip()[-500:]}")
    return dt


def snarkjs_prove(files: dict, outdir: Path) -> float:
    return _wall(snarkjs_cmd() + ["groth16", "prove", files["zkey"], files["wtns"], str(outdir / "sj_proof.json"),
                                  str(outdir / "sj_public.json")], "snarkjs groth16 prove")


def cuzk_prove_cli(files: dict, outdir: Path, backend: str) -> float:
    return _wall([sys.executable, "-m", "cuzk", "prove", files["zkey"], files["wtns"], str(outdir / "cz_proof.json"),
                  str(outdir / "cz_public.json"), "--backend", backend], "cuzk prove")


class Resident:
    """cuzk with the key loaded once (the SRS and, on the GPU, the key's A/B matrices stay on the
    device): each call is a/b/c from the witness, then the proof."""

    def __init__(self, files: dict, backend: str):
        self.zk = read_zkey(files["zkey"])
        self.witness = read_wtns(files["wtns"]).limbs
        self.backend = get_backend(backend, log=lambda m: None, opts=options(), table_gib=table_gib())
        self.prover = context_for_key(self.backend, self.zk.pk).prover

    def prove(self, timer=None):
        """a/b/c (timed as synthesis) and the proof; `timer`: a PhaseTimer for both."""
        timer = timer if timer is not None else PhaseTimer(device=self.backend.timer_device())
        with timer.phase("synthesis", self.backend.phase_impl("synthesis")):
            asg = self.backend.assign_zkey(self.zk, self.witness)
        return asg, self.prover.prove([asg], timer=timer)[0]

    def time(self) -> tuple[float, dict]:
        """Wall seconds of one proof, and its phases ({phase: {'host_s', 'device_s'}})."""
        timer = PhaseTimer(device=self.backend.timer_device())
        t0 = time.perf_counter()
        self.prove(timer)
        dt = time.perf_counter() - t0
        return dt, {p: {"host_s": r["host_s"], "device_s": r.get("device_s")} for p, r in timer.as_dict().items()}


def check_cuzk(files: dict, outdir: Path, resident: Resident) -> bool:
    """cuzk's CLI proof (cz_*.json) and a resident proof through cuzk's verifier, against
    verification_key.json; the public signals must be the witness's."""
    vk = vk_from_json(json.loads(Path(files["vk"]).read_text()))
    pub = public_from_json(json.loads((outdir / "cz_public.json").read_text()))
    cli_ok = verify(vk, pub, Proof.from_json(json.loads((outdir / "cz_proof.json").read_text())))
    asg, proof = resident.prove()
    want = [int(v) for v in limbs_to_ints(resident.witness[1:resident.zk.pk.num_inputs])]
    return bool(cli_ok and verify(vk, asg.public, proof) and list(pub) == want == asg.public)


def check(files: dict, outdir: Path) -> bool:
    """cuzk's proof through `snarkjs groth16 verify`, snarkjs's proof through cuzk's verifier."""
    r = subprocess.run(snarkjs_cmd() + ["groth16", "verify", files["vk"], str(outdir / "cz_public.json"),
                                        str(outdir / "cz_proof.json")], capture_output=True, text=True)
    sj_ok = r.returncode == 0 and "OK!" in r.stdout + r.stderr
    vk = vk_from_json(json.loads(Path(files["vk"]).read_text()))
    pub = public_from_json(json.loads((outdir / "sj_public.json").read_text()))
    cz_ok = verify(vk, pub, Proof.from_json(json.loads((outdir / "sj_proof.json").read_text())))
    same_public = (json.loads((outdir / "sj_public.json").read_text())
                   == json.loads((outdir / "cz_public.json").read_text()))
    return bool(sj_ok and cz_ok and same_public)


def run(sizes, circuit="porep_like", backend="auto", repeat=3, workdir=None, log=None, skip_snarkjs=False,
        keygen_backend="auto") -> list[dict]:
    if not skip_snarkjs:
        snarkjs_cmd()                              # fail early, before any key is made
    backend_name = get_backend(backend, log=lambda m: None, opts=options()).name
    rows = []
    for k in sizes:
        files = prepare(circuit, k, workdir, log, keygen_backend)
        outdir = Path(files["zkey"]).parent
        sj, cli = [], []
        for _ in range(repeat):                    # interleaved, so drift hits both alike
            if not skip_snarkjs:
                sj.append(snarkjs_prove(files, outdir))
            cli.append(cuzk_prove_cli(files, outdir, backend))
        res = Resident(files, backend)
        res.prove()                                # warm-up (first-use conversions, device CSR)
        timed = [res.time() for _ in range(repeat)]
        resident = [t for t, _ in timed]
        ok = check_cuzk(files, outdir, res) and (skip_snarkjs or check(files, outdir))
        row = {"log_size": k, "constraints": files["constraints"], "backend": backend_name,
               "snarkjs_s": statistics.median(sj) if sj else None, "cuzk_cli_s": statistics.median(cli),
               "cuzk_resident_s": statistics.median(resident), "verified": ok,
               "samples": {"snarkjs": sj, "cuzk_cli": cli, "cuzk_resident": resident},
               "resident_phases": sorted(timed, key=lambda tp: tp[0])[len(timed) // 2][1]}   # the median sample's
        sjs = row["snarkjs_s"]
        row["ratio_cli"] = sjs / row["cuzk_cli_s"] if sjs else None
        row["ratio_resident"] = sjs / row["cuzk_resident_s"] if sjs else None
        rows.append(row)
        if log:
            head = "" if skip_snarkjs else f"snarkjs {sjs:.2f} s, "
            log(f"bench-snarkjs: 2^{k} done: {head}cuzk {row['cuzk_cli_s']:.3f} s "
                f"(resident {row['cuzk_resident_s']:.3f} s), verified {ok}")
    return rows


def _s(v) -> str:
    return "-" if v is None else f"{v:.3f}"


def _x(v) -> str:
    return "-" if v is None else f"{v:.2f}x"


def ratio_table(rows: list[dict]) -> str:
    """Seconds are medians; '-' where snarkjs was not run (skip_snarkjs)."""
    head = ("| size | constraints | backend | snarkjs prove s | cuzk prove (CLI) s | ratio | "
            "cuzk resident s | ratio | verified |")
    lines = [head, "|---" * (head.count("|") - 1) + "|"]
    for r in rows:
        lines.append(f"| 2^{r['log_size']} | {r['constraints']} | {r['backend']} | {_s(r['snarkjs_s'])} | "
                     f"{_s(r['cuzk_cli_s'])} | {_x(r['ratio_cli'])} | {_s(r['cuzk_resident_s'])} | "
                     f"{_x(r['ratio_resident'])} | {'yes' if r['verified'] else 'NO'} |")
    return "\n".join(lines)
