"""Summarize `cuzk bench --pipeline --json` files as one markdown table (tools/gpu_pipeline.sh).

usage: python3 tools/pipeline_table.py RUN.json [RUN.json ...]
       python3 tools/pipeline_table.py --scaling RUN.json [RUN.json ...]   (runs of --devices 1, 2, ...: seconds a
       proof, and the scaling efficiency against the one-GPU run, s/proof(1) / (d x s/proof(d)))
"""
from __future__ import annotations

import json
import sys


def _f(v, fmt="{:.3f}"):
    return "-" if v is None else fmt.format(v)


def row(path: str) -> str:
    with open(path) as f:
        rep = json.load(f)
    p, c = rep["pipeline"], rep["circuit"]
    seq = p.get("sequential") or {}
    return (f"| {path.rsplit('/', 1)[-1]} | 2^{c['domain'].bit_length() - 1} x{p['circuits']} | "
            f"{p['workers']} {p['pool']} / {p['depth']} | {_f(p['wall_s'])} | {_f(p['proofs_per_s'])} | "
            f"{_f(p['s_per_proof'])} | {_f(p['fill_s'])} | {_f(p['gpu_busy_s'])} | {_f(p['gpu_idle_s'])} | "
            f"{_f(seq.get('wall_s'))} | {_f(seq.get('gpu_idle_s'))} | {_f(p.get('speedup'), 'x{:.2f}')} | "
            f"{rep['verified']} |")


def scaling(paths: list[str]) -> int:
    reps = []
    for path in paths:
        with open(path) as f:
            reps.append(json.load(f))
    one = next((r for r in reps if r["pipeline"].get("lanes", 1) == 1), None)
    print("| GPUs | circuits | wall s | s/proof | scaling efficiency | GPU busy per device | failures | verified |")
    print("|---|---|---|---|---|---|---|---|")
    for r in sorted(reps, key=lambda r: r["pipeline"].get("lanes", 1)):
        p = r["pipeline"]
        d = p.get("lanes", 1)
        eff = "-" if one is None else f"{one['pipeline']['s_per_proof'] / (d * p['s_per_proof']):.1%}"
        busy = ", ".join(f"{x['device']}: {_f(x['gpu_busy_fraction'], '{:.0%}')}" for x in p.get("devices", []))
        print(f"| {d} | {p['circuits']} | {_f(p['wall_s'])} | {_f(p['s_per_proof'])} | {eff} | {busy} | "
              f"{len(p.get('device_failures', []))} | {r['verified']} |")
    return 0 if one is not None else 2


def main(paths: list[str]) -> int:
    if paths[:1] == ["--scaling"]:
        return scaling(paths[1:]) if paths[1:] else main([])
    if not paths:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    print("| run | size | workers / depth | pipelined wall s | proofs/s | s/proof | fill s | GPU busy s | "
          "GPU idle s | sequential wall s | seq. GPU idle s | speedup | verified |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    rc = 0
    for path in paths:
        try:
            print(row(path))
        except (OSError, KeyError, ValueError) as e:
            print(f"| {path} | unreadable: {type(e).__name__}: {e} |")
            rc = 2
    return rc


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
