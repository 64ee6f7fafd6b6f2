"""`cuzk ablate`: which optimization does what, measured in one interleaved run.

Configurations: baseline (every optimization of the set off), each optimization alone, each left out
of `all` (leave-one-out), and `all`; optimizations outside `--opt-set` stay off everywhere (`--others
defaults`: at their registry defaults, to measure a change where the others are on). Flag sets
that coincide (with one optimization, `all` is that one alone) are measured once, under every label.

One process holds the proving key resident once (one load on the backend, shared by one Prover per
configuration: at 2^24 a key per configuration would not fit on one GPU) and takes samples round
robin over the configurations, every configuration once per round in a fresh random order (seeded;
kept in the JSON), so drift within a round and bursts of load hit every configuration alike. (A
rotating order is not enough: with fewer rounds than configurations it leaves each configuration
mostly early or mostly late in its rounds, and on the CPU reference later samples run ~1% slower,
which was enough to make `baseline` look slower than everything else.) A sample is one whole run as `cuzk bench` makes it: synthesis (the backend's
a/b/c evaluation included; the witnesses in parallel with --parallel-synthesis), then Prover.prove,
all timed by one PhaseTimer. A phase's value is its CUDA-event time where events were recorded (the
cuda backend) and its host time otherwise. On a GPU every sample is guarded by NVML
(cuzk.perf.sampler: throttled or contended samples are discarded and retaken; too many make the run
untrusted, exit 2).

Samples of one round are paired; effects are Hodges-Lehmann ratios with the exact signed-rank
interval (cuzk.perf.effects). An interaction is reported where, per round, ln(all/baseline) differs
significantly from the sum of the single effects' ln(X/baseline): the combination is not the product
of its parts.
"""
from __future__ import annotations

import gc
import math
import os
import random
import statistics
import sys
import time
from dataclasses import dataclass, field

from ..opts import REGISTRY, OptError, OptSet, resolve
from ..timing import PHASES
from .effects import NO_CHANGE, Effect, effect_from_logs, paired_effect
from .workload import opt_spec

AREAS = PHASES + ("total",)
KINDS = ("baseline", "single", "leave-one-out", "all")


class AblateError(RuntimeError):
    pass


@dataclass
class Config:
    label: str
    kind: str
    opts: OptSet
    aliases: list[str] = field(default_factory=list)

    def as_dict(self) -> dict:
        return {"label": self.label, "kind": self.kind, "aliases": self.aliases, "spec": opt_spec(self.opts),
                "optimizations": self.opts.as_dict()}


OTHERS = ("off", "defaults")   # what the optimizations outside --opt-set are set to


def parse_opt_set(spec: str | None) -> list[str]:
    if not spec or spec.strip() == "all":
        return list(REGISTRY)
    names = []
    for tok in (t.strip() for t in spec.split(",")):
        if not tok:
            continue
        if tok not in REGISTRY:
            raise OptError(f"unknown optimization {tok!r} in --opt-set; known: {', '.join(REGISTRY)}")
        if tok not in names:
            names.append(tok)
    if not names:
        raise OptError("--opt-set names no optimization")
    return names


def configurations(names: list[str], leave_one_out: bool = True, others: str = "off") -> list[Config]:
    """baseline, each alone, each left out of all (unless leave_one_out is False: the founding
    scenario, all against each alone), all; coinciding flag sets measured once. others: the
    optimizations outside names are "off" everywhere, or at their registry "defaults"."""
    if others not in OTHERS:
        raise OptError(f"others must be one of {OTHERS}, got {others!r}")
    base = "none" if others == "off" else ""

    def opts(on) -> OptSet:
        return resolve(",".join([base] + [f"-{n}" for n in names] + [f"+{n}" for n in on]), env=False)
    wanted = [("baseline", "baseline", opts([]))]
    wanted += [(n, "single", opts([n])) for n in names]
    if leave_one_out:
        wanted += [(f"all-{n}", "leave-one-out", opts([m for m in names if m != n])) for n in names]
    wanted += [("all", "all", opts(names))]
    out: dict[tuple, Config] = {}
    for label, kind, o in wanted:
        if o.flags in out:
            out[o.flags].aliases.append(label)
        else:
            out[o.flags] = Config(label, kind, o)
    return list(out.values())


@dataclass
class Setup:
    backend: str = "cpu"
    circuit: str = "porep_like"
    log_size: int = 10
    circuits: int = 1
    repeat: int = 10
    leave_one_out: bool = True
    names: list[str] = field(default_factory=lambda: list(REGISTRY))
    confidence: float = 0.99
    parallel_synthesis: int = 0
    synthesis_pool: str = "thread"
    convention: str = "coeff"
    generator: int = 7
    max_discards: int = 10
    pause_s: float = 1.0
    seed: int = 0                 # of the per-round orders
    max_seconds: float | None = None   # no new round once the next would end past this (>= 2 rounds run)
    device_keygen: bool = False   # key made on the GPU and kept there (no host key: not with A4)
    others: str = "off"           # the optimizations outside names: "off", or at their registry "defaults"

    def as_dict(self) -> dict:
        return dict(self.__dict__)


class _Arm:
    def __init__(self, cfg: Config, backend, prover):
        self.cfg, self.backend, self.prover = cfg, backend, prover


def _value(rec: dict) -> float:
    return rec["device_s"] if rec.get("device_s") is not None else rec["host_s"]


class Ablation:
    def __init__(self, setup: Setup, log=lambda m: print(m, file=sys.stderr), checkpoint=None,
                 resume: dict | None = None):
        """checkpoint(result), when given, gets the analysis of the rounds so far after every round
        from the second on (the CLI writes it to --json), so a run cut short keeps what it measured.
        resume: a saved result (possibly cut short) of the same setup; its rounds are kept and the run
        goes on from there up to setup.repeat rounds (every round is paired within itself, so rounds
        from another process or machine still pair; the result lists where each part came from)."""
        self.s, self.log, self.checkpoint, self.resume = setup, log, checkpoint, resume
        self.configs = configurations(setup.names, setup.leave_one_out, setup.others)
        self.by_label = {}
        for c in self.configs:
            for lab in [c.label, *c.aliases]:
                self.by_label[lab] = c

    # --- measuring ---

    def _one_run(self, arm: _Arm, pool):
        from ..synthesis import synthesize
        from ..timing import PhaseTimer
        s = self.s
        os.environ["CUZK_OPT"] = opt_spec(arm.cfg.opts)     # code that reads the registry sees this set
        timer = PhaseTimer(device=arm.backend.timer_device())
        with timer.phase("synthesis", arm.backend.phase_impl("synthesis")):
            r1cs, asg = synthesize(s.circuit, s.log_size, arm.cfg.opts, seeds=range(1, s.circuits + 1),
                                   assign_fn=arm.backend.assign, executor=pool, timer=timer)
        proofs = arm.prover.prove(asg, timer, rng=random.Random(0))
        return timer.as_dict(), r1cs, asg, proofs

    def _prepare(self, pool):
        from ..backend import BackendError, get_backend
        from ..context import context_for_key, proving_context
        from ..groth16 import verify
        from ..synthesis import synthesize
        s = self.s
        try:
            first = get_backend(s.backend, log=lambda m: None, opts=self.configs[0].opts)
        except BackendError as e:
            raise AblateError(str(e)) from e
        r1cs, _ = synthesize(s.circuit, s.log_size, self.configs[0].opts, seeds=[1])
        # one key, resident once, shared by every configuration
        ctx = proving_context(first, r1cs, s.convention, s.generator, device_keygen=bool(s.device_keygen),
                              keygen_backend="auto")
        self.log(f"key: {ctx.key.describe()}")
        self.pk, kh = ctx.pk, ctx.kh
        self.arms = []
        vk = self.pk.verifying_key()
        digest = r1cs.digest()
        checked = set()               # synthesis-side flag sets whose circuit was compared (digests are slow)
        for c in self.configs:
            be = first if c is self.configs[0] else get_backend(s.backend, log=lambda m: None, opts=c.opts)
            arm = _Arm(c, be, ctx.prover if be is first else context_for_key(be, self.pk, kh).prover)
            _, r, asg, proofs = self._one_run(arm, pool)          # warm-up, and a correctness check
            synth_flags = tuple((n, v) for n, v in c.opts.flags if "synthesis" in REGISTRY[n].phases)
            if synth_flags not in checked and r.digest() != digest:
                raise AblateError(f"configuration {c.label} builds another circuit (digest {r.digest()[:16]}); "
                                  f"configurations must share one key")
            checked.add(synth_flags)
            if not all(verify(vk, a.public, p) for a, p in zip(asg, proofs)):
                raise AblateError(f"configuration {c.label}: the proofs do not verify")
            self.arms.append(arm)
        self.impl = {p: first.phase_impl(p) for p in PHASES}

    def run(self) -> dict:
        from ..synthesis import make_pool
        from . import sampler
        s = self.s
        t0 = time.perf_counter()
        pool = make_pool(s.synthesis_pool, s.parallel_synthesis) if s.parallel_synthesis else None
        old_env = os.environ.get("CUZK_OPT")
        try:
            self._prepare(pool)
            guard = (sampler.nvml_guard(f"ablate {s.backend} 2^{s.log_size}", own_pids=frozenset({os.getpid()}))
                     if s.backend != "cpu" else None)
            gpu = None
            if guard is not None:
                gpu = guard.nvml.info().as_dict()
            self._new_tables()
            discards: list[str] = []
            self.orders = []
            rng = random.Random(s.seed)
            self.rounds_done = start = self._restore(discards, rng)
            t_rounds = time.perf_counter()
            for r in range(start, s.repeat):
                if s.max_seconds is not None and r >= 2 and r > start:
                    per_round = (time.perf_counter() - t_rounds) / (r - start)
                    if time.perf_counter() - t0 + per_round > s.max_seconds:
                        self.log(f"  stopping after {r} of {s.repeat} rounds (--max-seconds {s.max_seconds:g})")
                        break
                order = list(self.arms)
                rng.shuffle(order)             # a fresh order each round: no configuration keeps a position
                self.orders.append([a.cfg.label for a in order])
                for arm in order:
                    got = {}

                    def measure(arm=arm, got=got):
                        gc.collect()
                        recs, *_ = self._one_run(arm, pool)
                        got["recs"] = recs
                        return sum(_value(v) for v in recs.values())
                    ss = sampler.collect(measure, 1, guard, discards=discards, max_discards=s.max_discards,
                                         pause_s=s.pause_s, what=f"ablate {arm.cfg.label}")
                    lab, recs = arm.cfg.label, got["recs"]
                    for p in PHASES:
                        self.samples[lab][p].append(_value(recs[p]))
                        self.host[lab][p].append(recs[p]["host_s"])
                    self.samples[lab]["total"].append(sum(_value(recs[p]) for p in PHASES))
                    self.host[lab]["total"].append(sum(recs[p]["host_s"] for p in PHASES))
                    self.states[lab] += ss.states
                    self.energy[lab] += ss.energy_j
                self.rounds_done = r + 1
                self.log(f"  round {r + 1}/{s.repeat}: {time.perf_counter() - t0:.1f} s")
                if self.checkpoint is not None and r >= 1:
                    self.checkpoint(self._result(discards, gpu, t0, start))
        except sampler.UntrustedRun as e:
            raise AblateError(str(e)) from e
        finally:
            if pool is not None:
                pool.shutdown()
            if old_env is None:
                os.environ.pop("CUZK_OPT", None)
            else:
                os.environ["CUZK_OPT"] = old_env
        return self._result(discards, gpu, t0, start)

    def _new_tables(self) -> None:
        """Empty per-configuration sample tables (device/host per area, GPU states, energy)."""
        self.samples = {c.label: {a: [] for a in AREAS} for c in self.configs}
        self.host = {c.label: {a: [] for a in AREAS} for c in self.configs}
        self.states = {c.label: [] for c in self.configs}
        self.energy = {c.label: [] for c in self.configs}

    def _restore(self, discards: list, rng) -> int:
        """Load the resumed rounds (if any) into the sample tables; the rounds already done."""
        old = self.resume
        self.parts = list((old or {}).get("parts") or [])
        if not old:
            return 0
        done = int(old.get("rounds_done") or 0)
        saved = {c["label"]: c for c in old["configurations"]}
        missing = [c.label for c in self.configs if c.label not in saved]
        if missing:
            raise AblateError(f"the resumed run has no samples for {', '.join(missing)}")
        for c in self.configs:
            got = saved[c.label]
            for a in AREAS:
                if len(got["samples"][a]) != done:
                    raise AblateError(f"the resumed run has {len(got['samples'][a])} samples of {c.label} "
                                      f"{a}, not one per round ({done})")
                self.samples[c.label][a] = list(got["samples"][a])
                self.host[c.label][a] = list(got["host_samples"][a])
            self.states[c.label] = list(got.get("gpu_states") or [])
            self.energy[c.label] = list(got.get("energy_j") or [])
        self.orders = [list(o) for o in old.get("orders") or []]
        discards += old.get("discards") or []
        for _ in range(done):                  # the same order stream as one uninterrupted run
            rng.shuffle(list(range(len(self.configs))))
        if not self.parts:
            self.parts = [{"rounds": done, "commit": old.get("commit"), "gpu": old.get("gpu"),
                           "wall_s": old.get("wall_s")}]
        self.log(f"  resumed: {done} round(s) from the saved run")
        return done

    def _result(self, discards, gpu, t0, start: int = 0) -> dict:
        res = self.analyse()
        res["orders"] = self.orders
        res["discards"] = discards
        res["gpu"] = gpu
        res["wall_s"] = time.perf_counter() - t0
        res["rounds_done"] = self.rounds_done
        if self.resume:
            res["parts"] = [*self.parts, {"rounds": self.rounds_done - start, "commit": None, "gpu": gpu,
                                          "wall_s": res["wall_s"]}]
        return res

    # --- judging ---

    def _eff(self, a: str, x: str, y: str) -> Effect:
        return paired_effect(self.samples[self.by_label[x].label][a], self.samples[self.by_label[y].label][a],
                             self.s.confidence)

    def analyse(self) -> dict:
        s, conf = self.s, self.s.confidence
        cfgs = []
        for c in self.configs:
            areas = {}
            for a in AREAS:
                v = sorted(self.samples[c.label][a])
                q = statistics.quantiles(v, n=4, method="inclusive") if len(v) > 1 else [v[0]] * 3
                areas[a] = {"median_s": statistics.median(v), "q1_s": q[0], "q3_s": q[2],
                            "vs_baseline": None if c.label == "baseline" else self._eff(a, c.label, "baseline").as_dict()}
            cfgs.append({**c.as_dict(), "areas": areas, "samples": self.samples[c.label],
                         "host_samples": self.host[c.label], "gpu_states": self.states[c.label],
                         "energy_j": self.energy[c.label]})
        optimizations = []
        for n in s.names:
            o = REGISTRY[n]
            optimizations.append({
                "name": n, "phases": list(o.phases), "intent": o.intent, "predicted": o.predicted,
                "alone": {a: self._eff(a, n, "baseline").as_dict() for a in AREAS},
                "in_all": ({a: self._eff(a, "all", f"all-{n}").as_dict() for a in AREAS}
                           if f"all-{n}" in self.by_label else None)})
        interactions = []
        if len(s.names) >= 2:
            for a in AREAS:
                lb = [math.log(x) for x in self.samples["baseline"][a]]
                la = [math.log(x) for x in self.samples[self.by_label["all"].label][a]]
                singles = [[math.log(x) for x in self.samples[self.by_label[n].label][a]] for n in s.names]
                d = [la[i] - lb[i] - sum(sg[i] - lb[i] for sg in singles) for i in range(len(lb))]
                e = effect_from_logs(d, conf)
                all_r = math.exp(statistics.median([la[i] - lb[i] for i in range(len(lb))]))
                prod = math.exp(sum(statistics.median([sg[i] - lb[i] for i in range(len(lb))]) for sg in singles))
                interactions.append({"area": a, "all_ratio": all_r, "product_of_singles": prod,
                                     "interaction": e.as_dict(), "significant": e.verdict != NO_CHANGE})
        attribution = {}
        for a in AREAS:
            tot = self._eff(a, "all", "baseline")
            if tot.verdict == NO_CHANGE:
                continue
            # without leave-one-out runs, attribution rests on the single effects alone
            same = {o["name"]: (o["alone"][a]["verdict"] == tot.verdict,
                                (o["in_all"] or o["alone"])[a]["verdict"] == tot.verdict)
                    for o in optimizations}
            # attributed: the same significant direction alone and when left out of all; partly: one of the two
            attribution[a] = {"all": tot.as_dict(), "optimizations": [n for n, v in same.items() if all(v)],
                              "partly": [n for n, v in same.items() if any(v) and not all(v)]}
        return {"setup": {**s.as_dict(), "configurations": len(self.configs)}, "areas": list(AREAS),
                "impl": self.impl, "configurations": cfgs, "optimizations": optimizations,
                "interactions": interactions, "attribution": attribution}


def rejudge(res: dict, confidence: float) -> dict:
    """A saved result's samples analysed again at another confidence (intervals, verdicts,
    interactions, attribution); what was measured is unchanged."""
    if not 0.5 <= confidence < 1:
        raise AblateError("--confidence must be in [0.5, 1)")
    from .effects import critical_k
    n = int(res.get("rounds_done") or len(res["configurations"][0]["samples"]["total"]))
    if critical_k(n, confidence) < 1:
        raise AblateError(f"{n} rounds cannot give a {confidence:.0%} interval")
    saved = {k: v for k, v in res["setup"].items() if k in Setup.__dataclass_fields__}
    ab = Ablation(Setup(**{**saved, "confidence": confidence}), log=lambda m: None, resume=res)
    ab._new_tables()
    ab.impl = res["impl"]
    ab._restore([], random.Random(0))
    out = ab.analyse()
    keep = ("orders", "discards", "gpu", "wall_s", "rounds_done", "parts", "cuzk_version", "commit", "complete")
    out.update({k: res[k] for k in keep if k in res})
    out["rejudged_from"] = res["setup"]["confidence"]
    return out


# --- the report ---

def _ms(s: float) -> str:
    return f"{s * 1e3:.3f} ms" if s < 1 else f"{s:.3f} s"


def _interval(e: dict, digits: int, need: int) -> str:
    if e["low"] is None or e["high"] is None:       # the rounds run are too few for any interval
        return f"[no interval: needs at least {need} rounds]"
    return f"[{e['low']:.{digits}f}, {e['high']:.{digits}f}]"


def _cell(e: dict | None, need: int) -> tuple[str, str, str]:
    if e is None:
        return "1", "", ""
    return f"x{e['ratio']:.3f}", _interval(e, 3, need), e["verdict"]


def _short(e: dict, need: int) -> str:
    mark = {"faster": " faster", "slower": " slower"}.get(e["verdict"], " ~")
    return f"x{e['ratio']:.3f} {_interval(e, 2, need)}{mark}"


def markdown(res: dict) -> str:
    from tabulate import tabulate
    from .effects import min_rounds
    s = res["setup"]
    need = min_rounds(s["confidence"])
    pct = f"{s['confidence']:.0%}"
    out = [f"## cuzk ablate: {s['backend']} {s['circuit']} 2^{s['log_size']} x{s['circuits']} circuits"
           + (f", witnesses in {s['parallel_synthesis']} parallel {s['synthesis_pool']}s" if s['parallel_synthesis'] else ""),
           "",
           f"{s['configurations']} configurations (baseline, each of {', '.join(s['names'])} alone, "
           + ("each left out of all, " if s.get("leave_one_out", True) else "")
           + f"all; others {'at their defaults' if s.get('others') == 'defaults' else 'off'}) x "
           + f"{res.get('rounds_done', s['repeat'])} interleaved rounds"
           + (f" (of {s['repeat']} asked: stopped by --max-seconds or cut short)"
              if res.get("rounds_done", s["repeat"]) < s["repeat"] else "")
           + ", each in a fresh random order. "
           f"A sample is a whole run (synthesis + prove) timed by PhaseTimer: CUDA-event time where recorded, "
           f"else host time. Ratio to baseline = exp(Hodges-Lehmann estimate of the per-round paired log "
           f"ratios); {pct} CI from the exact signed-rank test; verdict: the CI excludes 1"
           + (f" (judged again from the saved samples; the run asked for {res['rejudged_from']:.0%})"
              if res.get("rejudged_from") else "") + ". "
           f"Wall time {res.get('wall_s', 0):.1f} s."]
    if res.get("gpu"):
        g = res["gpu"]
        out.append(f"GPU {g.get('name')}, driver {g.get('driver')}; {len(res.get('discards', []))} samples "
                   f"discarded (throttled or contended) and retaken.")
    if res.get("parts"):
        out.append("Resumed run, rounds by part: " + "; ".join(
            f"{p['rounds']} (commit {(p.get('commit') or '?')[:10]}, {(p.get('gpu') or {}).get('name', 'no GPU')})"
            for p in res["parts"]) + ". Each round is paired within itself.")
    for a in res["areas"]:
        rows = []
        for c in res["configurations"]:
            st = c["areas"][a]
            r, ci, v = _cell(st["vs_baseline"], need)
            lab = c["label"] + (f" (= {', '.join(c['aliases'])})" if c["aliases"] else "")
            rows.append([lab, c["kind"], _ms(st["median_s"]), r, ci, v])
        out += ["", f"### `{a}`" + (f" ({res['impl'][a]})" if a in res.get("impl", {}) else ""), "",
                tabulate(rows, headers=["configuration", "kind", "median", "ratio", f"{pct} CI", "verdict"],
                         tablefmt="github", disable_numparse=True)]
    out += ["", "### Each optimization: predicted and measured", "",
            "Alone = X / baseline; in all = all / (all without X), on the phases X touches and on the total."]
    rows = []
    for o in res["optimizations"]:
        ph = [p for p in o["phases"] if p in o["alone"]] + ["total"]
        rows.append([o["name"], "<br>".join(f"`{p}` {_short(o['alone'][p], need)}" for p in ph),
                     "<br>".join(f"`{p}` {_short(o['in_all'][p], need)}" for p in ph) if o["in_all"] else "not run",
                     o["predicted"]])
    out += ["", tabulate(rows, headers=["opt", "measured alone", "measured in all", "predicted (registry)"],
                         tablefmt="github", disable_numparse=True)]
    others = [(o["name"], p, k, o[k][p]) for o in res["optimizations"] for k in ("alone", "in_all")
              if o[k] for p in res["areas"] if p not in o["phases"] and p != "total" and o[k][p]["verdict"] != NO_CHANGE]
    if others:
        out += ["", "Effects outside the phases an optimization names: " + "; ".join(
            f"{n} {k.replace('_', ' ')} on `{p}` {_short(e, need)}" for n, p, k, e in others) + "."]
    inter = [i for i in res["interactions"] if i["significant"]]
    out += ["", "### Interactions", ""]
    if not res["interactions"]:
        out.append("One optimization: no interaction to test.")
    elif not inter:
        out.append("None: in every phase, `all` is consistent with the product of the single effects.")
    for i in inter:
        out.append(f"- interaction in `{i['area']}`: all x{i['all_ratio']:.3f} vs product of the single effects "
                   f"x{i['product_of_singles']:.3f}; all / product {_short(i['interaction'], need)}")
    out += ["", "### Attribution", ""]
    if not res["attribution"]:
        out.append("`all` changes no phase significantly.")
    for a, at in res["attribution"].items():
        who = ", ".join(at["optimizations"]) or "no optimization both alone and left out"
        part = f" (partly: {', '.join(at['partly'])}, significant either alone or left out only)" if at["partly"] else ""
        out.append(f"- `{a}` {at['all']['verdict']} with all ({_short(at['all'], need)}): {who}{part}")
    return "\n".join(out) + "\n"
