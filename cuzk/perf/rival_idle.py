"""Does what the idle rival ran beside a sample explain how slow that sample was?

    python -m cuzk.perf.rival_idle GATE_JSON... [--slow 1.15]

Both workers of a gate round share the sampling CPU, and an idle GPU worker's driver thread wakes beside its
rival's syncs (docs/runners.md 4). gate.json keeps, per sample, the CPU ms the idle rival ran beside it
(`rival_idle_ms`). Per workload and phase this prints: the samples, the share that is slow (more than `--slow`
times its side's round median), the rival's median ms beside slow and beside the other samples, and the rank
correlation (Spearman) of the rival's ms with the sample's log distance from its round median, with its
p-value. A high correlation says the rival's CPU makes the spread (keep it off the sampling CPU); none says
look elsewhere. Exit 2 with one line for a file that is not a gate.json or holds no such figure.
"""
from __future__ import annotations

import argparse
import math
import statistics
import sys

from scipy import stats

from .gate import SIDES, GateJsonError, read_json


class InputError(ValueError):
    pass


def pairs(paths: list[str]) -> dict[tuple[str, str], list[tuple[float, float]]]:
    """{(workload, phase): [(log of the sample over its side's round median, rival ms beside it)]} over the
    files' judged rounds, samples without the figure left out."""
    out: dict[tuple[str, str], list[tuple[float, float]]] = {}
    for path in paths:
        try:
            res = read_json(path)
        except GateJsonError as e:
            raise InputError(str(e)) from None
        for oc in res.outcomes:
            for rd in oc.rounds if oc.status == "ok" else []:
                for s in SIDES:
                    for a, ar in rd[s]["areas"].items():
                        xs, idle = ar["samples"], ar.get("rival_idle_ms") or []
                        med = statistics.median(xs)
                        got = out.setdefault((oc.config.spec.label(), a), [])
                        got += [(math.log(x / med), float(m)) for x, m in zip(xs, idle) if m is not None]
    out = {k: v for k, v in out.items() if v}
    if not out:
        raise InputError(f"{', '.join(paths)}: no sample with rival_idle_ms (a gate.json from before it was kept, "
                         "or no judged round)")
    return out


def summary(got: list[tuple[float, float]], slow: float) -> dict:
    """One phase's figures (module docstring); rho and p are None where either side does not vary."""
    cut = math.log(slow)
    slow_ms = [m for d, m in got if d > cut]
    fast_ms = [m for d, m in got if d <= cut]
    d, m = zip(*got)
    rho = p = None
    if len(got) >= 3 and len(set(d)) > 1 and len(set(m)) > 1:
        r = stats.spearmanr(d, m)
        rho, p = float(r.statistic), float(r.pvalue)
    return {"samples": len(got), "slow_share": len(slow_ms) / len(got),
            "rival_ms_slow": statistics.median(slow_ms) if slow_ms else None,
            "rival_ms_other": statistics.median(fast_ms) if fast_ms else None, "rho": rho, "p": p}


def _ms(v) -> str:
    return "-" if v is None else f"{v:.2f}"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m cuzk.perf.rival_idle", description=__doc__.split("\n\n")[0])
    ap.add_argument("gate_json", nargs="+")
    ap.add_argument("--slow", type=float, default=1.15, help="a sample this many times its round median is slow")
    args = ap.parse_args(argv)
    if not 1 < args.slow < 10:
        print(f"rival_idle: --slow {args.slow}: must be above 1 and below 10", file=sys.stderr)
        return 2
    try:
        got = pairs(args.gate_json)
    except InputError as e:
        print(f"rival_idle: {e}", file=sys.stderr)
        return 2
    print(f"{'workload':34} {'phase':15} {'samples':>7} {'slow':>6} {'rival ms slow':>13} {'other':>6} "
          f"{'rho':>6} {'p':>8}")
    for (label, a), xs in sorted(got.items()):
        s = summary(xs, args.slow)
        rho = "-" if s["rho"] is None else f"{s['rho']:.2f}"
        p = "-" if s["p"] is None else f"{s['p']:.2g}"
        print(f"{label:34} {a:15} {s['samples']:7d} {s['slow_share']:6.0%} {_ms(s['rival_ms_slow']):>13} "
              f"{_ms(s['rival_ms_other']):>6} {rho:>6} {p:>8}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
