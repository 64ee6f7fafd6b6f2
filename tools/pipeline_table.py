"""Summarize `cuzk bench --pipeline --json` files as one markdown table (tools/gpu_pipeline.sh).

usage: python3 tools/pipeline_table.py RUN.json [RUN.json ...]
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


def main(paths: list[str]) -> int:
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
