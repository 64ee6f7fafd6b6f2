"""What `cuzk bench` (one batch and --pipeline) writes: --json, --timeline, and with --save the verification
key and each circuit's proof and public inputs (snarkjs names), checked before any work and written as one set."""
from __future__ import annotations

import json
import os
from pathlib import Path

from ..groth16 import vk_to_json
from ..keygen import cache_dir
from ..perf.pipeline_plot import pipeline_png
from ..perf.plots import timeline_png
from .common import CliError, check_paths


def _save_names(i: int) -> tuple[str, str]:
    sfx = "" if i == 0 else f"_{i}"
    return f"proof{sfx}.json", f"public{sfx}.json"


def check_bench_outputs(args) -> None:
    """bench's outputs (--json, --timeline, --save's set for --circuits proofs) checked before any work."""
    outputs = {"--json": args.json, "--timeline": args.timeline}
    if args.save == "":                 # Path("") is the working folder: a set written where nobody asked
        raise CliError("--save '': not a folder name")
    if args.save:
        out = Path(args.save)
        outputs["--save verification_key.json"] = out / "verification_key.json"
        for i in range(args.circuits):
            for name in _save_names(i):
                outputs[f"--save {name}"] = out / name
    check_paths(outputs)
    keys = os.path.realpath(cache_dir())  # the key bench reads is there, made before the outputs are written
    for role, path in outputs.items():
        if path is not None and os.path.commonpath([os.path.realpath(path), keys]) == keys:
            raise CliError(f"{role} {path}: in the key cache {keys}, where bench reads and makes its keys")


def bench_outputs(args, rep) -> dict:
    """What `bench` (and `bench --pipeline`) writes from its report (run.RunReport, pipelined_run.PipelinedReport):
    --json, --timeline, and with --save the verification key and each circuit's proof and public inputs
    (snarkjs names), written as one set."""
    report = rep.to_json()
    outputs = {}
    if args.json:
        outputs[args.json] = json.dumps(report, indent=2) + "\n"
    if args.timeline:
        png = pipeline_png if report.get("pipeline") else timeline_png   # --pipeline: worker, prover, device lanes
        outputs[args.timeline] = png(report)
    if args.save:
        out = Path(args.save)
        outputs[out / "verification_key.json"] = json.dumps(vk_to_json(rep.vk), indent=1) + "\n"
        for i, (pub, pf) in enumerate(zip(rep.publics, rep.proofs)):
            proof_name, public_name = _save_names(i)
            outputs[out / proof_name] = json.dumps(pf.to_json(), indent=1) + "\n"
            outputs[out / public_name] = json.dumps([str(v) for v in pub]) + "\n"
    return outputs
