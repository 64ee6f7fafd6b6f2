"""The gate's false alarms and power, estimated from the rounds of real A/A gate runs by resampling.

    python -m cuzk.perf.power GATE_JSON... [--effect tail_msm:0.10 ...] [--rounds N] [--alpha A] [--samples S]
                              [--json FILE]

A gate run judges each phase on `rounds` independent rounds (compare.py). Given the rounds of A/A
runs (base and head the same code, e.g. `python -m cuzk.perf.calibrate --json` runs' gate.json), each
trial draws `rounds` of them with replacement, adds ln(1 + f) to the round values of the slowed phase
(a slowdown by the factor 1 + f of every head sample of that phase shifts each paired log ratio, so
each round's median, by exactly that), and judges every phase as the gate does. It reports, per
workload: the false alarms over the phase tests that were not slowed, and per asked effect the rate
at which the slowed phase was flagged. A real injection (calibrate --inject) adds a fixed spin to the
phase, not a factor; near its own size the two agree. The pool is only as varied as the A/A runs it
comes from: a handful of rounds estimate little; the output says how many there were. --rounds and
--alpha judge the same pool as a gate with other settings would (e.g. how many rounds a size needs).
Each phase is judged at the threshold its runs were judged at (derived from noise records, pinned, or
the config's); a threshold derived for the runs' rounds is kept as it was under --rounds, and the output
says so.

--samples S models rounds of S paired samples: each round value is the median of S paired log ratios
drawn from the runs' pairs (each pair's distance from its round's median, pooled). Where the measured
rounds vary more than the model gives at the runs' own sample count, the excess is added as a round offset
that more samples do not shrink; where less, the model is scaled down to them. A threshold that came from
noise records is derived again from the modelled round spread, as the gate would from records of S
samples (so --rounds with --samples derives it for those rounds too). The output shows the measured and
modelled spreads at the runs' own count; the further S is from it the less the model is worth.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import math
import random
import statistics
import sys

import numpy as np

from .. import files
from .compare import REGRESSION, compare
from .gate import GateJsonError, paired_log_ratios, read_json
from .gate_config import MAX_ROUNDS, min_p_value
from .noise import noise_threshold


class PowerInputError(ValueError):
    pass


def load_pools(paths: list[str]) -> dict[str, dict]:
    """{workload label: {"config": GateConfig, "areas", "rounds": [{area: round value}], "files"}} from
    gate.json files, read and valued as the gate reads them (gate.from_dict, paired_log_ratios).
    One clear error (PowerInputError) for a file that is not a judged gate run."""
    pools: dict[str, dict] = {}
    for path in paths:
        try:
            res = read_json(path)
        except GateJsonError as e:
            raise PowerInputError(str(e)) from e
        for oc in res.outcomes:
            if oc.status != "ok":
                continue
            label = oc.config.spec.label()
            pool = pools.setdefault(label, {"config": res.config, "rounds": [], "files": 0, "workload": oc.config,
                                            "areas": res.config.areas_for(oc.config), "pairs": {}})
            if (pool["config"].rounds, pool["config"].alpha) != (res.config.rounds, res.config.alpha):
                raise PowerInputError(f"{path}: {label}: rounds/alpha differ from an earlier file's")
            if thresholds(pool) != thresholds({"config": res.config, "workload": oc.config, "areas": pool["areas"]}):
                raise PowerInputError(f"{path}: {label}: thresholds differ from an earlier file's")
            pool["files"] += 1
            pool["rounds"] += [{a: statistics.median(paired_log_ratios(rd, a)) for a in pool["areas"]}
                               for rd in oc.rounds]
            for rd in oc.rounds:
                for a in pool["areas"]:
                    d = paired_log_ratios(rd, a)
                    m = statistics.median(d)
                    # the median pair itself (an odd count's) is left out: a pool with one exact 0 a round makes
                    # medians of many draws collapse onto 0 (normal pairs: 0.68 of the true spread at 9)
                    pool["pairs"].setdefault(a, []).extend(x - m for x in d if x != m)
    if not pools:
        raise PowerInputError(f"{', '.join(paths)}: no judged workload (status ok) in any file")
    return pools


def thresholds(pool: dict) -> dict[str, tuple[float, str]]:
    """{phase: (threshold, where it came from)} as the pool's runs were judged."""
    out = {}
    for a in pool["areas"]:
        t = pool["config"].threshold_in_force(a, pool["workload"])
        out[a] = (t.value, t.source)
    return out


def modelled_rounds(pool: dict, samples: int, n: int, seed: int = 0, scaled: bool = True) -> dict[str, np.ndarray]:
    """{phase: n round values}, each the median of `samples` of the pool's pairs (deviations from their round's
    median) drawn with replacement; scaled: times the measured round spread over the one modelled at the runs'
    own sample count (real pairs, a sharp core with outliers, are not what their pooled deviations resample)."""
    rng = np.random.default_rng(seed)
    out = {}
    for a in pool["areas"]:
        pairs = np.asarray(pool["pairs"].get(a) or [0.0])
        v = np.median(rng.choice(pairs, size=(n, samples)), axis=1)
        if scaled:
            # what the measured rounds vary beyond what their pairs predict at the runs' own count is taken as a
            # round-to-round offset, which more samples do not shrink: it is added, not scaled
            own = float(np.std(np.median(rng.choice(pairs, size=(20000, pool["config"].samples)), axis=1)))
            measured = statistics.pstdev([r[a] for r in pool["rounds"]])
            if measured > own:
                v = v + rng.normal(0.0, math.sqrt(measured ** 2 - own ** 2), size=n)
            elif own > 0:
                v = v * (measured / own)
        out[a] = v
    return out


def model_problem(pool: dict) -> str | None:
    """Why the pool's pairs cannot model other sample counts, or None: a phase with no pair off its round's
    median (rounds of one sample, or all pairs alike) has nothing to resample."""
    empty = [a for a in pool["areas"] if not pool["pairs"].get(a)]
    return (f"no paired sample off its round's median in {', '.join(empty)} (rounds of one sample, or all alike): "
            f"nothing to model other sample counts from") if empty else None


def modelled_thresholds(pool: dict, samples: int, seed: int = 0) -> dict[str, tuple[float, str]]:
    """thresholds(pool), those from noise derived again from the round spread modelled at `samples`."""
    cfg = pool["config"]
    sd = {a: float(np.std(v, ddof=1)) for a, v in modelled_rounds(pool, samples, 20000, seed).items()}
    out = {}
    for a, (v, src) in thresholds(pool).items():
        if src == "noise":
            cap = cfg.thresholds.get(a, cfg.threshold)
            v = min(cap, max(cfg.threshold_floor, noise_threshold(sd[a], cfg.rounds)))
        out[a] = (v, src)
    return out


def simulate(pool: dict, effects: dict[str, float], trials: int, seed: int = 0, samples: int | None = None) -> dict:
    """Gate runs drawn from one workload's pool; effects {area: f} slow those areas by 1 + f. samples: rounds
    modelled from the pool's pairs at that many samples (modelled_rounds), not drawn from its rounds."""
    cfg, rounds, areas = pool["config"], pool["rounds"], pool["areas"]
    rng = random.Random(seed)
    flagged = {a: 0 for a in areas}
    if samples is not None:
        th = {a: v for a, (v, _) in modelled_thresholds(pool, samples, seed).items()}
        model = modelled_rounds(pool, samples, trials * cfg.rounds, seed + 1)
        rounds = [{a: float(model[a][i]) for a in areas} for i in range(trials * cfg.rounds)]
    else:
        th = {a: v for a, (v, _) in thresholds(pool).items()}
    for t in range(trials):
        draw = (rounds[t * cfg.rounds:(t + 1) * cfg.rounds] if samples is not None
                else [rng.choice(rounds) for _ in range(cfg.rounds)])
        for a in areas:
            shift = math.log1p(effects.get(a, 0.0))
            if compare(a, [r[a] + shift for r in draw], th[a], cfg.alpha).verdict == REGRESSION:
                flagged[a] += 1
    others = [a for a in areas if a not in effects]
    return {"trials": trials, "rounds_in_pool": len(rounds), "rounds_a_run": cfg.rounds,
            "phase_tests": trials * len(others),
            "false_alarms": sum(flagged[a] for a in others),
            "false_alarms_by_phase": {a: flagged[a] for a in others}, "thresholds": th,
            "detection_rate": {a: flagged[a] / trials for a in effects if a in flagged}}


def _effect(text: str) -> tuple[str, float]:
    try:
        area, frac = text.split(":")
        f = float(frac)
    except ValueError:
        raise argparse.ArgumentTypeError(f"bad effect {text!r}; expected PHASE:FRACTION, e.g. tail_msm:0.10")
    if not f > 0:
        raise argparse.ArgumentTypeError(f"bad effect {text!r}: the fraction must be > 0")
    return area, f


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m cuzk.perf.power", description=__doc__.split("\n\n")[0])
    ap.add_argument("gate_json", nargs="+", help="gate.json files of A/A runs (base and head the same code)")
    ap.add_argument("--effect", action="append", type=_effect, default=[], metavar="PHASE:FRACTION",
                    help="a slowdown to estimate the power for (repeatable), e.g. tail_msm:0.10")
    ap.add_argument("--rounds", type=int, help="judge resampled runs of this many rounds (default: the runs' own)")
    ap.add_argument("--alpha", type=float, help="and at this alpha (default: the runs' own)")
    ap.add_argument("--samples", type=int, help="model rounds of this many paired samples from the runs' pairs")
    ap.add_argument("--trials", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", metavar="FILE")
    args = ap.parse_args(argv)
    if args.alpha is not None and not 0 < args.alpha < 1:       # NaN too: the gate's own rule for [gate] alpha
        print(f"power: --alpha {args.alpha:g}: must be in (0, 1)", file=sys.stderr)
        return 2
    try:       # --json by the output rule, before any work: never one of the inputs, never a device or link clobbered
        files.check_outputs({"--json": args.json}, {f"gate_json {i + 1}": p for i, p in enumerate(args.gate_json)})
    except files.OutputError as e:
        print(f"power: {e}", file=sys.stderr)
        return 2
    try:
        pools = load_pools(args.gate_json)
    except PowerInputError as e:
        print(f"power: {e}", file=sys.stderr)
        return 2
    out = {}
    for label, pool in pools.items():
        over = {k: v for k, v in (("rounds", args.rounds), ("alpha", args.alpha)) if v is not None}
        cfg = pool["config"] = dataclasses.replace(pool["config"], **over)
        if not 2 <= cfg.rounds <= MAX_ROUNDS:
            print(f"power: {cfg.rounds} rounds: must be 2 to {MAX_ROUNDS}", file=sys.stderr)
            return 2
        if min_p_value(cfg.rounds) >= cfg.alpha:
            print(f"power: {cfg.rounds} rounds can never reach p < alpha = {cfg.alpha}", file=sys.stderr)
            return 2
        known = set(pool["areas"])
        bad = [a for a, _ in args.effect if a not in known]
        if bad:
            print(f"power: unknown phase {', '.join(bad)}; the runs have {', '.join(sorted(known))}", file=sys.stderr)
            return 2
        if args.samples is not None and not 1 <= args.samples <= 1000:
            print(f"power: --samples {args.samples}: must be 1 to 1000", file=sys.stderr)
            return 2
        if not 1 <= args.trials <= 100_000:
            print(f"power: --trials {args.trials}: must be 1 to 100000", file=sys.stderr)
            return 2
        if args.samples is not None and (why := model_problem(pool)):
            print(f"power: {label}: {why}", file=sys.stderr)
            return 2
        res = {"aa": simulate(pool, {}, args.trials, args.seed, args.samples)}
        for area, f in args.effect:
            res[f"{area}:{f:g}"] = simulate(pool, {area: f}, args.trials, args.seed, args.samples)
        out[label] = {"files": pool["files"], **res}
        aa = res["aa"]
        print(f"{label}: {len(pool['rounds'])} real rounds from {pool['files']} A/A runs, "
              f"{args.trials} resampled gate runs of {aa['rounds_a_run']} rounds")
        th = thresholds(pool) if args.samples is None else modelled_thresholds(pool, args.samples, args.seed)
        print("  thresholds: " + ", ".join(f"{a} {v:.2%} ({s})" for a, (v, s) in th.items())
              + (f" (from noise: derived again at {args.samples} samples)" if args.samples is not None else ""))
        if args.samples is not None:
            own = pool["config"].samples
            at_own = modelled_rounds(pool, own, 20000, args.seed, scaled=False)
            at_new = modelled_rounds(pool, args.samples, 20000, args.seed)
            print("  round spread, measured / modelled at the runs' " + f"{own} samples / modelled at {args.samples}, "
                  "scaled by the two before: "
                  + ", ".join(f"{a} {statistics.pstdev([r[a] for r in pool['rounds']]):.2%} / "
                              f"{float(np.std(at_own[a], ddof=1)):.2%} / {float(np.std(at_new[a], ddof=1)):.2%}"
                              for a in pool["areas"]))
            out[label]["modelled_samples"] = args.samples
        if args.rounds is not None and args.samples is None and any(s == "noise" for _, s in th.values()):
            print(f"  (thresholds from noise records were derived for the runs' own rounds and are kept; a gate "
                  f"of {cfg.rounds} rounds would derive others)")
        print(f"  A/A: {aa['false_alarms']} false alarms in {aa['phase_tests']} phase tests "
              f"({aa['false_alarms'] / max(1, aa['phase_tests']):.4f})")
        for key, r in res.items():
            if key != "aa":
                (area, rate), = r["detection_rate"].items()
                print(f"  {key}: detected in {rate:.1%} of the runs")
    if args.json:
        try:
            files.write_outputs({args.json: json.dumps(out, indent=1) + "\n"})
        except files.OutputError as e:
            print(f"power: {e}", file=sys.stderr)
            return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
