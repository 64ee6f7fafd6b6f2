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
which was enough to make `baseline` look slower than everything else.) The controls (baseline, and
all: what the others are compared with) run once in every block of about Setup.block configurations
of a round, and each comparison pairs the two samples taken closest together: on a shared host the
difference between two samples of identical code grows with the time between them (a full-registry
round lasts seconds), and one control sample a round made every comparison of that round share its
luck. A sample is one whole run as `cuzk bench` makes it: synthesis (the backend's
a/b/c evaluation included; the witnesses in parallel with --parallel-synthesis), then Prover.prove,
all timed by one PhaseTimer. A phase's value is its CUDA-event time where events were recorded (the
cuda backend) and its host time otherwise. On a GPU every sample is guarded by NVML
(cuzk.perf.sampler: throttled or contended samples are discarded and retaken; too many make the run
untrusted, exit 2).

Effects are Hodges-Lehmann ratios with the exact signed-rank interval (cuzk.perf.effects); every test
of the run (each configuration against baseline in every phase, each toggle left out of all, each
interaction) is corrected together by Benjamini-Hochberg, and only those verdicts read faster or
slower. An interaction is X's effect in all (all / all-X) against its effect alone (X / baseline),
per round: two paired differences, so the test stays symmetric under skewed noise (the old test,
all / baseline against the product of every single effect, weighted baseline's sample k-1 times and
read its skew as an interaction). A toggle that the backend does not read, or that acts only with
another that is off, is noted: its rows are controls.
"""
from __future__ import annotations

import gc
import json
import math
import os
import random
import statistics
import sys
import time
from dataclasses import dataclass, field, replace

from ..circuits import MAX_CIRCUITS, check_batch
from ..context import context_for_key
from ..field import root_of_unity
from ..opts import REGISTRY, OptError, OptSet, resolve
from ..qap import CONVENTIONS
from ..run import BackendError, RunError, RunSpec, all_verify, key_context, open_backend, synthesize_batch
from ..synthesis import make_pool
from ..timing import PHASES, PhaseTimer
from . import sampler
from .effects import (NOT_AFTER_CORRECTION, SIGNIFICANT, correct, critical_k, effect_from_logs, min_rounds,
                      rounds_needed, smallest_p)
from .values import is_number
from .workload import opt_spec

AREAS = PHASES + ("total",)
KINDS = ("baseline", "single", "leave-one-out", "all")


class AblateError(RuntimeError):
    pass


# What each backend's code reads on the path ablate measures (synthesis, then Prover.prove), read off the
# code: synthesis's storage (cuzk/r1cs.py: A1, A2) is shared; the CPU reference reads no toggle of its own;
# the cuda backend reads every other toggle except those in OFF_PATH (tests/perf/test_ablate.py checks this
# against the sources). A registry entry's own `backends` field, where it has one, takes precedence.
SHARED_READS = frozenset({"A1", "A2"})
BACKEND_READS: dict[str, frozenset | None] = {"cpu": SHARED_READS, "cuda": None}     # None: all but OFF_PATH
OFF_PATH = {      # toggles read only by code that ablate does not run
    "B2": "bench --pipeline",
    "B3": "bench --pipeline",
    "B4": "bench --pipeline",
    "F2": "bench --pipeline (an assignment spent by its one proof)",
    "N10": "the natural-order NTT helpers (cuzk micro ntt)",
}
# toggles that change nothing unless others are on ("acts only with" in the registry; the code:
# cuzk/plans.NttPlan.variant, cuzk/gpu/msm/options.kernel_build)
REQUIRES = {
    "N2": ("N1",), "N4": ("N1", "N2"), "N8": ("N1", "N2", "N4"), "N11": ("N1", "N2", "N4"),
    "N12": ("N1", "N2"), "N13": ("N1",), "N15": ("N1", "N2"), "N17": ("N1", "N2", "N12"), "I2": ("I1",),
}


def reads(backend: str, name: str) -> bool | None:
    """Whether the backend's code reads the toggle where ablate measures; None where unknown."""
    o = REGISTRY.get(name)
    if o is None:
        return None
    if name in OFF_PATH:
        return False
    listed = getattr(o, "backends", None)
    if listed is not None:
        return backend in listed
    if backend not in BACKEND_READS:
        return None
    table = BACKEND_READS[backend]
    return True if table is None else name in table


def inert(backend: str, name: str, on: dict[str, bool]) -> str | None:
    """Why switching the toggle cannot change this run where the others are `on` (None: it can, or unknown)."""
    if name in OFF_PATH:
        return f"{name} acts only in {OFF_PATH[name]}, which ablate does not run"
    if reads(backend, name) is False:
        return f"the {backend} backend does not read {name}"
    missing = [r for r in REQUIRES.get(name, ()) if not on.get(r)]
    if missing:
        return f"{name} acts only with {', '.join(REQUIRES[name])}: {', '.join(missing)} off here"
    return None


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
    # None: the option was not given; an empty string names nothing, as "," does (not the whole registry)
    if spec is None or spec.strip() == "all":
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
        return resolve(",".join([base] + [f"-{n}" for n in names] + [f"+{n}" for n in on]))
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


# Upper bounds of a run's sizes, the command line's and a saved setup's (--resume) alike: past them a run holds
# what no host has, and a number read from a file must fail as one line before any key is made, never as "out of
# host memory" after it.
MAX_REPEAT = 1000              # a full-registry round saves ~40 KB: 1000 rounds still read back (MAX_ABLATION_BYTES)
MAX_DISCARDS = 1000            # retakes before a run is untrusted; more is a run that never gives up on a busy GPU
MAX_PAUSE_S = 60.0             # the pause before a retake; a saved hour would stall every discarded sample


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
    block: int = 8                # configurations per block of a round, each block with every control once (0: one)
    max_seconds: float | None = None   # no new round once the next would end past this (>= 2 rounds run)
    device_keygen: bool = False   # key made on the GPU and kept there (no host key: not with A4)
    others: str = "off"           # the optimizations outside names: "off", or at their registry "defaults"
    table_gib: float | None = None  # P2's table budget in GiB (the CLI's $CUZK_TABLE_GIB); None: half the free memory

    def as_dict(self) -> dict:
        return dict(self.__dict__)

    def check(self) -> "Setup":
        """ValueError naming a field of a saved setup that is not of its kind (a file read back, e.g. --resume)."""
        want = {"backend": str, "circuit": str, "log_size": int, "circuits": int, "repeat": int, "leave_one_out": bool,
                "confidence": float, "parallel_synthesis": int, "synthesis_pool": str, "convention": str,
                "generator": int, "max_discards": int, "pause_s": float, "seed": int, "block": int,
                "device_keygen": bool, "others": str}
        for k, t in want.items():
            v = getattr(self, k)
            ok = isinstance(v, t) and (t is bool or not isinstance(v, bool)) if t is not float else is_number(v)
            if not ok:
                raise ValueError(f"setup.{k} = {json.dumps(v)[:40]} is not {t.__name__}")
        if not (isinstance(self.names, list) and self.names and all(n in REGISTRY for n in self.names)
                and len(set(self.names)) == len(self.names)):
            raise ValueError("setup.names is not a list of the registry's optimization names")
        if self.backend not in ("cpu", "cuda"):       # a saved run holds the backend it measured, never auto
            raise ValueError(f"setup.backend = {json.dumps(self.backend)[:40]} is not cpu or cuda")
        if self.convention not in CONVENTIONS:
            raise ValueError(f"setup.convention = {json.dumps(self.convention)[:40]} is not one of "
                             f"{', '.join(CONVENTIONS)}")
        try:
            root_of_unity(1, self.generator)
        except ValueError as e:
            raise ValueError(f"setup.generator: {e}") from None
        for k in ("max_seconds", "table_gib"):
            if getattr(self, k) is not None and not is_number(getattr(self, k)):
                raise ValueError(f"setup.{k} is not a number")
        # a saved setup is not the command line, whose options are checked: the same ranges, judged here
        ranges = {"circuits": (1, MAX_CIRCUITS), "repeat": (2, MAX_REPEAT),
                  # a worker beyond a batch's circuits has nothing to do
                  "parallel_synthesis": (0, MAX_CIRCUITS), "block": (0, None), "max_discards": (0, MAX_DISCARDS),
                  "pause_s": (0, MAX_PAUSE_S)}
        for k, (low, high) in ranges.items():
            v = getattr(self, k)
            if v < low or (high is not None and v > high):
                shown = json.dumps(v)[:40]
                raise ValueError(f"setup.{k} = {shown} is not in {low}..{high}" if high is not None
                                 else f"setup.{k} = {shown} is below {low}")
        if self.table_gib is not None and self.table_gib <= 0:
            raise ValueError(f"setup.table_gib = {self.table_gib} is not > 0")
        if self.synthesis_pool not in ("thread", "process"):
            raise ValueError(f"setup.synthesis_pool = {json.dumps(self.synthesis_pool)[:40]} is not thread or process")
        check_batch(self.circuit, self.log_size, self.circuits, "setup.circuits")
        return self

    def run_spec(self, opts: OptSet) -> RunSpec:
        """One configuration's run: this setup's circuit and key placement, with `opts`."""
        return RunSpec(opts=opts, circuit=self.circuit, log_size=self.log_size, backend=self.backend,
                       circuits=self.circuits, convention=self.convention, generator=self.generator,
                       device_keygen=bool(self.device_keygen), keygen_backend="auto",
                       parallel_synthesis=self.parallel_synthesis, synthesis_pool=self.synthesis_pool,
                       table_gib=self.table_gib)


class _Arm:
    def __init__(self, cfg: Config, backend, prover):
        self.cfg, self.backend, self.prover = cfg, backend, prover


def _value(rec: dict) -> float:
    return rec["device_s"] if rec.get("device_s") is not None else rec["host_s"]


class Ablation:
    def __init__(self, setup: Setup, log=lambda m: print(m, file=sys.stderr), checkpoint=None,
                 resume: dict | None = None, saved: bool = False):
        """checkpoint(result), when given, gets the analysis of the rounds so far after every round
        from the second on (the CLI writes it to --json), so a run cut short keeps what it measured.
        resume: a saved result (possibly cut short) of the same setup; its rounds are kept and the run
        goes on from there up to setup.repeat rounds (every round is paired within itself, so rounds
        from another process or machine still pair; the result lists where each part came from).
        saved: only to judge `resume` again, with its own configurations (toggles since removed included)."""
        self.s, self.log, self.checkpoint, self.resume = setup, log, checkpoint, resume
        self.saved_meta = {o["name"]: {k: o.get(k) for k in ("phases", "intent", "predicted")}
                           for o in (resume or {}).get("optimizations") or []}
        if saved:
            self.configs = [Config(c["label"], c["kind"], OptSet(tuple(c["optimizations"].items())),
                                   list(c.get("aliases") or [])) for c in resume["configurations"]]
        else:
            self.configs = configurations(setup.names, setup.leave_one_out, setup.others)
        self.by_label = {}
        for c in self.configs:
            for lab in [c.label, *c.aliases]:
                self.by_label[lab] = c
        # the configurations the others are compared with (X / baseline, all / all-X): sampled once in
        # every block of a round, so that each comparison pairs samples taken close together
        self.controls = list(dict.fromkeys(self.by_label[lab].label for lab in ("baseline", "all")))

    def round_order(self, rng: random.Random) -> list[str]:
        """One round's order of configuration labels: the others shuffled and cut into blocks of about
        setup.block, each block with one sample of every control at a random place in it (never first in
        a block after the first, so that no control runs twice in a row); one block where block is 0."""
        rest = [c.label for c in self.configs if c.label not in self.controls]
        rng.shuffle(rest)
        nb = max(1, round(len(rest) / self.s.block)) if self.s.block else 1
        order: list[str] = []
        for b in range(nb):
            block = rest[b * len(rest) // nb:(b + 1) * len(rest) // nb]
            for lab in rng.sample(self.controls, len(self.controls)):
                block.insert(rng.randint(1 if order and block else 0, len(block)), lab)
            order += block
        return order

    # --- measuring ---

    def _one_run(self, arm: _Arm, pool):
        timer = PhaseTimer(device=arm.backend.timer_device())
        r1cs, asg = synthesize_batch(self.s.run_spec(arm.cfg.opts), arm.backend, timer, executor=pool)
        proofs = arm.prover.prove(asg, timer, rng=random.Random(0))
        return timer.as_dict(), r1cs, asg, proofs

    def _prepare(self, pool):
        s = self.s
        first_spec = s.run_spec(self.configs[0].opts)
        try:
            first = open_backend(first_spec)
        except (BackendError, RunError) as e:
            raise AblateError(str(e)) from e
        r1cs, _ = synthesize_batch(first_spec, None, seeds=[1])
        # one key, resident once, shared by every configuration
        ctx = key_context(first_spec, first, r1cs, self.log, progress=False)
        self.pk, kh = ctx.pk, ctx.kh
        self.arms = []
        vk = self.pk.verifying_key()
        digest = r1cs.digest()
        checked = set()               # synthesis-side flag sets whose circuit was compared (digests are slow)
        for c in self.configs:
            be = first if c is self.configs[0] else open_backend(replace(first_spec, opts=c.opts))
            arm = _Arm(c, be, ctx.prover if be is first else context_for_key(be, self.pk, kh).prover)
            _, r, asg, proofs = self._one_run(arm, pool)          # warm-up, and a correctness check
            synth_flags = tuple((n, v) for n, v in c.opts.flags if "synthesis" in REGISTRY[n].phases)
            if synth_flags not in checked and r.digest() != digest:
                raise AblateError(f"configuration {c.label} builds another circuit (digest {r.digest()[:16]}); "
                                  f"configurations must share one key")
            checked.add(synth_flags)
            if not all_verify(vk, [a.public for a in asg], proofs):
                raise AblateError(f"configuration {c.label}: the proofs do not verify")
            self.arms.append(arm)
        self.impl = {p: first.phase_impl(p) for p in PHASES}

    def run(self) -> dict:
        s = self.s
        t0 = time.perf_counter()
        pool = make_pool(s.synthesis_pool, s.parallel_synthesis) if s.parallel_synthesis else None
        tests = self.planned_tests()
        need = rounds_needed(tests, s.confidence)
        if s.repeat < need:      # said before the hours a GPU run may take, not only in the report
            self.log(f"  {tests} tests will be corrected together: with {s.repeat} rounds an effect passes only where "
                     f"many tests reach the exact test's floor; one effect alone needs --repeat {need}")
        # the long-lived heap (keys, provers, the caller's objects) moves out of the collector's reach for
        # the rounds: the gc.collect() before each sample then costs little however large the process is
        frozen = gc.get_freeze_count() == 0
        try:
            self._prepare(pool)
            if frozen:
                gc.collect()
                gc.freeze()
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
            arms = {a.cfg.label: a for a in self.arms}
            t_rounds = time.perf_counter()
            for r in range(start, s.repeat):
                if s.max_seconds is not None and r >= 2 and r > start:
                    per_round = (time.perf_counter() - t_rounds) / (r - start)
                    if time.perf_counter() - t0 + per_round > s.max_seconds:
                        self.log(f"  stopping after {r} of {s.repeat} rounds (--max-seconds {s.max_seconds:g})")
                        break
                order = self.round_order(rng)
                self.orders.append(order)
                for lab in self.controls:      # the controls' second and later samples of this round
                    for a in AREAS:
                        self.extra[lab][a].append([])
                seen = set()
                for arm in (arms[lab] for lab in order):
                    got = {}

                    def measure(arm=arm, got=got):
                        gc.collect()
                        recs, *_ = self._one_run(arm, pool)
                        got["recs"] = recs
                        return sum(_value(v) for v in recs.values())
                    ss = sampler.collect(measure, 1, guard, discards=discards, max_discards=s.max_discards,
                                         pause_s=s.pause_s, what=f"ablate {arm.cfg.label}")
                    lab, recs = arm.cfg.label, got["recs"]
                    value = {p: _value(recs[p]) for p in PHASES}
                    value["total"] = sum(value.values())
                    if lab in seen:            # a control's later sample in this round: paired by position
                        for a in AREAS:
                            self.extra[lab][a][-1].append(value[a])
                    else:
                        seen.add(lab)
                        for p in PHASES:
                            self.host[lab][p].append(recs[p]["host_s"])
                        self.host[lab]["total"].append(sum(recs[p]["host_s"] for p in PHASES))
                        for a in AREAS:
                            self.samples[lab][a].append(value[a])
                    self.states[lab] += ss.states
                    self.energy[lab] += ss.energy_j
                self.rounds_done = r + 1
                self.log(f"  round {r + 1}/{s.repeat}: {time.perf_counter() - t0:.1f} s")
                if self.checkpoint is not None and r >= 1:
                    self.checkpoint(self._result(discards, gpu, t0, start))
        except sampler.UntrustedRun as e:
            raise AblateError(str(e)) from e
        finally:
            if frozen:
                gc.unfreeze()
            if pool is not None:
                pool.shutdown(cancel_futures=True)
        return self._result(discards, gpu, t0, start)

    def _new_tables(self) -> None:
        """Empty per-configuration sample tables (device/host per area, GPU states, energy)."""
        self.samples = {c.label: {a: [] for a in AREAS} for c in self.configs}
        self.host = {c.label: {a: [] for a in AREAS} for c in self.configs}
        self.states = {c.label: [] for c in self.configs}
        self.energy = {c.label: [] for c in self.configs}
        self.extra = {lab: {a: [] for a in AREAS} for lab in self.controls}

    def check_saved_configs(self) -> None:
        """AblateError where the resumed run's configurations are not this setup's: one missing has no samples to
        go on from, one extra would be dropped unsaid."""
        got = [c["label"] for c in self.resume["configurations"]]
        want = [c.label for c in self.configs]
        if sorted(got) != sorted(want):
            raise AblateError(f"its configurations ({', '.join(got)[:200]}) are not those its setup gives "
                              f"({', '.join(want)[:200]})")

    def _restore(self, discards: list, rng) -> int:
        """Load the resumed rounds (if any) into the sample tables; the rounds already done."""
        old = self.resume
        self.parts = list((old or {}).get("parts") or [])
        if not old:
            return 0
        check_samples(old)
        done = int(old.get("rounds_done") or 0)
        saved = {c["label"]: c for c in old["configurations"]}
        self.check_saved_configs()
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
            if c.label in self.controls:       # saved before blocks: no later samples in its rounds
                ex = got.get("extra_samples") or {}
                for a in AREAS:
                    rows = ex.get(a) or [[] for _ in range(done)]
                    if len(rows) != done:
                        raise AblateError(f"the resumed run has {len(rows)} rounds of later {c.label} {a} "
                                          f"samples, not {done}")
                    self.extra[c.label][a] = [list(x) for x in rows]
        self.orders = [list(o) for o in old.get("orders") or []]
        discards += old.get("discards") or []
        for _ in range(done):                  # the same order stream as one uninterrupted run
            self.round_order(rng)
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

    def _register(self, fam, pairs):
        """Every comparison of the run into fam (each once: aliases and repeats share a key; pairs(area, x,
        y) gives its per-round differences); their indices: per configuration against baseline, per
        toggle (alone, in all, interaction), and all against baseline."""
        s = self.s
        canon = {lab: c.label for lab, c in self.by_label.items()}

        def ratio(a: str, x: str, y: str) -> int:          # time of x / time of y, paired within each round
            x, y = canon[x], canon[y]
            return fam.add(("ratio", a, x, y), lambda: pairs(a, x, y))

        def interaction(a: str, n: str) -> int:            # X's effect in all / X's effect alone
            plus, minus = (canon["all"], canon["baseline"]), (canon[f"all-{n}"], canon[n])
            return fam.add(("interaction", a, frozenset(plus), frozenset(minus)), lambda: [
                p - q for p, q in zip(pairs(a, plus[0], minus[0]), pairs(a, minus[1], plus[1]))])

        vs_base = {c.label: {a: None if c.label == canon["baseline"] else ratio(a, c.label, "baseline") for a in AREAS}
                   for c in self.configs}
        per_opt = []
        for n in s.names:
            loo = f"all-{n}" in self.by_label
            per_opt.append((n, {a: ratio(a, n, "baseline") for a in AREAS},
                            {a: ratio(a, "all", f"all-{n}") for a in AREAS} if loo else None,
                            {a: interaction(a, n) for a in AREAS} if loo and len(s.names) >= 2 else None))
        totals = {a: ratio(a, "all", "baseline") for a in AREAS}
        return vs_base, per_opt, totals

    def planned_tests(self) -> int:
        """How many tests the run's analysis will correct over (before measuring)."""
        fam = _Family(self.s.confidence, planning=True)
        self._register(fam, None)
        return len(fam)

    def _pairing(self):
        """pairs(area, x, y): per round, ln(x) - ln(y) from the samples of x and y taken closest together in
        that round (a control has one sample a block; equally close choices are averaged). Rounds without a
        usable order (saved before blocks) pair their one sample of each."""
        rounds = len(self.samples[self.configs[0].label]["total"])
        where = []
        for r in range(rounds):
            o = self.orders[r] if r < len(self.orders) else None
            pos: dict[str, list[int]] = {}
            for i, lab in enumerate(o or []):
                pos.setdefault(lab, []).append(i)
            ok = o is not None and all(len(pos.get(lab, ())) == 1 + (len(self.extra[lab]["total"][r])
                                                                    if lab in self.controls else 0)
                                       for lab in self.samples)
            where.append(pos if ok else None)

        def values(lab: str, a: str, r: int) -> list[float]:
            return [self.samples[lab][a][r]] + (self.extra[lab][a][r] if lab in self.controls else [])

        def pairs(a: str, x: str, y: str) -> list[float]:
            out = []
            for r in range(rounds):
                vx, vy = values(x, a, r), values(y, a, r)
                if where[r] is None or (len(vx) == 1 and len(vy) == 1):
                    out.append(math.log(vx[0]) - math.log(vy[0]))
                    continue
                cand = [(abs(px - py), i, j) for i, px in enumerate(where[r][x]) for j, py in enumerate(where[r][y])]
                near = min(c[0] for c in cand)
                ds = [math.log(vx[i]) - math.log(vy[j]) for dist, i, j in cand if dist == near]
                out.append(sum(ds) / len(ds))
            return out
        return pairs

    def meta(self, name: str) -> dict:
        """A toggle's registry entry (phases, intent, prediction); a saved run's copy for one since removed."""
        o = REGISTRY.get(name)
        if o is not None:
            return {"phases": list(o.phases), "intent": o.intent, "predicted": o.predicted}
        return self.saved_meta.get(name) or {"phases": [], "intent": "(not in the registry)", "predicted": ""}

    def analyse(self) -> dict:
        """Every comparison of the run, each made once (aliases share their samples) and judged after one
        Benjamini-Hochberg correction over all of them (cuzk.perf.effects)."""
        s, conf = self.s, self.s.confidence
        fam = _Family(conf)
        vs_base, per_opt, totals = self._register(fam, self._pairing())
        fam.close()
        get = fam.get

        cfgs = []
        for c in self.configs:
            areas = {}
            for a in AREAS:
                v = sorted(self.samples[c.label][a])
                q = statistics.quantiles(v, n=4, method="inclusive") if len(v) > 1 else [v[0]] * 3
                i = vs_base[c.label][a]
                areas[a] = {"median_s": statistics.median(v), "q1_s": q[0], "q3_s": q[2],
                            "vs_baseline": None if i is None else get(i)}
            cfgs.append({**c.as_dict(), "areas": areas, "samples": self.samples[c.label],
                         "host_samples": self.host[c.label], "gpu_states": self.states[c.label],
                         "energy_j": self.energy[c.label],
                         **({"extra_samples": self.extra[c.label]} if c.label in self.controls else {})})
        optimizations, interactions, listed = [], [], {}
        all_on = self.by_label["all"].opts.as_dict()
        for n, alone, in_all, inter in per_opt:
            m = self.meta(n)
            alone_inert = inert(s.backend, n, self.by_label[n].opts.as_dict())
            in_all_inert = inert(s.backend, n, all_on) if in_all else None
            optimizations.append({
                "name": n, **m, "alone": {a: get(i) for a, i in alone.items()},
                "in_all": {a: get(i) for a, i in in_all.items()} if in_all else None,
                "inert_alone": alone_inert, "inert_in_all": in_all_inert,
                "read_by_backend": reads(s.backend, n)})
            for a, i in (inter or {}).items():
                if i in listed:                # two toggles: one test, both names
                    listed[i]["names"].append(n)
                    listed[i]["inert"] = listed[i]["inert"] and bool(alone_inert and in_all_inert)
                    continue
                e = get(i)
                listed[i] = {"names": [n], "area": a, "alone_ratio": optimizations[-1]["alone"][a]["ratio"],
                             "in_all_ratio": optimizations[-1]["in_all"][a]["ratio"], "interaction": e,
                             "significant": e["verdict"] in SIGNIFICANT, "inert": bool(alone_inert and in_all_inert)}
                interactions.append(listed[i])
        attribution = {}
        for a in AREAS:
            tot = get(totals[a])
            if tot["verdict"] not in SIGNIFICANT:
                continue
            # without leave-one-out runs, attribution rests on the single effects alone
            same = {o["name"]: (o["alone"][a]["verdict"] == tot["verdict"],
                                (o["in_all"] or o["alone"])[a]["verdict"] == tot["verdict"])
                    for o in optimizations}
            # attributed: the same significant direction alone and when left out of all; partly: one of the two
            attribution[a] = {"all": tot, "optimizations": [n for n, v in same.items() if all(v)],
                              "partly": [n for n, v in same.items() if any(v) and not all(v)]}
        n_rounds = len(self.samples[self.configs[0].label]["total"])
        # significant effects of a toggle that cannot act here: false discoveries, or a bias in the measurement
        controls = [f"{o['name']} {k.replace('_', ' ')} on `{a}`" for o in optimizations
                    for k in ("alone", "in_all") if o[k] and o[f"inert_{k}"]
                    for a in AREAS if o[k][a]["verdict"] in SIGNIFICANT]
        correction = {"method": "Benjamini-Hochberg", "fdr": round(1 - conf, 12), "tests": len(fam),
                      "discoveries": fam.discoveries(), "rounds": n_rounds, "smallest_p": smallest_p(n_rounds),
                      "rounds_needed": rounds_needed(len(fam), conf), "inert_flagged": controls}
        return {"setup": {**s.as_dict(), "configurations": len(self.configs)}, "areas": list(AREAS),
                "impl": self.impl, "configurations": cfgs, "optimizations": optimizations,
                "interactions": interactions, "attribution": attribution, "correction": correction}


class _Family:
    """The tests of one run: each comparison once (keyed by what it compares), corrected together."""

    def __init__(self, confidence: float, planning: bool = False):
        self.confidence, self.planning, self.keys, self.raw, self.effects = confidence, planning, {}, [], None

    def __len__(self) -> int:
        return len(self.raw)

    def add(self, key, d) -> int:
        """The test's index; d() gives its per-round differences (called once a key, never while planning)."""
        if key not in self.keys:
            self.keys[key] = len(self.raw)
            self.raw.append(None if self.planning else effect_from_logs(d(), self.confidence))
        return self.keys[key]

    def close(self) -> None:
        self.effects = correct(self.raw)

    def get(self, i: int) -> dict:
        return self.effects[i].as_dict()

    def discoveries(self) -> int:
        return sum(e.verdict in SIGNIFICANT for e in self.effects)


def check_samples(res: dict) -> None:
    """ValueError naming a saved sample that is no time in seconds (NaN, an infinity, <= 0, not a number): a NaN's
    log is NaN, which goes through every test as a ratio."""
    for c in res["configurations"]:
        for key in ("samples", "host_samples", "extra_samples"):
            for a, xs in (c.get(key) or {}).items():
                flat = [x for row in xs for x in row] if key == "extra_samples" else xs
                for x in flat:
                    if not (is_number(x) and x > 0):
                        raise ValueError(f"configuration {c['label']}: {key} of {a}: {json.dumps(x)[:40]} "
                                         f"is not a time in seconds")


def rejudge(res: dict, confidence: float) -> dict:
    """A saved result's samples analysed again (at another confidence, or a result saved before the
    correction over all tests existed): intervals, verdicts, interactions, attribution; what was measured
    is unchanged."""
    if not 0.5 <= confidence < 1:
        raise AblateError("--confidence must be in [0.5, 1)")
    n = int(res.get("rounds_done") or len(res["configurations"][0]["samples"]["total"]))
    if critical_k(n, confidence) < 1 and confidence != res["setup"]["confidence"]:
        raise AblateError(f"{n} rounds cannot give a {confidence:.0%} interval")
    saved = {k: v for k, v in res["setup"].items() if k in Setup.__dataclass_fields__}
    ab = Ablation(Setup(**{**saved, "confidence": confidence}), log=lambda m: None, resume=res, saved=True)
    ab._new_tables()
    ab.impl = res["impl"]
    ab._restore([], random.Random(0))
    out = ab.analyse()
    keep = ("orders", "discards", "gpu", "wall_s", "rounds_done", "parts", "cuzk_version", "commit", "complete")
    out.update({k: res[k] for k in keep if k in res})
    if confidence != res["setup"]["confidence"]:
        out["rejudged_from"] = res["setup"]["confidence"]
    return out


def needs_rejudging(res: dict) -> bool:
    """A result saved before every verdict was corrected over the run's tests."""
    return "correction" not in res


# --- the report ---

def _ms(s: float) -> str:
    return f"{s * 1e3:.3f} ms" if s < 1 else f"{s:.3f} s"


def _interval(e: dict, digits: int, need: int) -> str:
    if e["low"] is None or e["high"] is None:       # the rounds run are too few for any interval
        return f"[no interval: needs at least {need} rounds]"
    return f"[{e['low']:.{digits}f}, {e['high']:.{digits}f}]"


def _cell(e: dict | None, need: int) -> tuple[str, str, str, str]:
    if e is None:
        return "1", "", "", ""
    return f"x{e['ratio']:.3f}", _interval(e, 3, need), _q(e), e["verdict"]


def _q(e: dict) -> str:
    q = e.get("q")
    return "" if q is None else (f"{q:.2g}" if q < 0.995 else "1")


def _short(e: dict, need: int) -> str:
    mark = {"faster": " faster", "slower": " slower"}.get(e["verdict"], " ~")
    return f"x{e['ratio']:.3f} {_interval(e, 2, need)}{mark}"


def _correction_lines(res: dict) -> list[str]:
    c, s = res["correction"], res["setup"]
    fdr = f"{c['fdr']:.0%}" if c["fdr"] >= 0.01 else f"{c['fdr']:g}"
    out = [f"**{c['discoveries']} of {c['tests']} tests significant** after the Benjamini-Hochberg correction over "
           f"every test of this run (false discovery rate {fdr}; q in the tables is each test's adjusted p-value). "
           f"Verdicts: faster or slower where q <= {fdr}; \"no effect\" where the interval holds 1; "
           f"\"{NOT_AFTER_CORRECTION}\" where the interval excludes 1 but q does not pass."]
    need = c["rounds_needed"]
    if c["rounds"] < need:
        out.append(f"With {c['rounds']} rounds the exact test's smallest p-value is {c['smallest_p']:.2g}: an effect "
                   f"passes the correction only if about {math.ceil(c['smallest_p'] * c['tests'] / c['fdr'])} or more "
                   f"of the {c['tests']} tests reach it; one effect alone needs at least {need} rounds "
                   f"(--repeat {need}), or fewer tests (--opt-set, --no-leave-one-out).")
    inert_names = [o["name"] for o in res["optimizations"] if o.get("read_by_backend") is False]
    if inert_names:
        out.append(f"Not read by the {s['backend']} backend where ablate measures (their rows are controls: any "
                   f"effect there is noise or a bias of the measurement): {', '.join(inert_names)}.")
    if c["inert_flagged"]:
        out.append("**Warning**: significant effects of toggles that cannot act here (false discoveries, or a bias "
                   "in the measurement): " + "; ".join(c["inert_flagged"]) + ".")
    return out


def markdown(res: dict) -> str:
    from tabulate import tabulate
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
           + ", each in a fresh random order"
           + (f", baseline and all once in every block of about {s['block']} configurations" if s.get("block") else "")
           + ". "
           f"A sample is a whole run (synthesis + prove) timed by PhaseTimer: CUDA-event time where recorded, "
           f"else host time. Ratio to baseline = exp(Hodges-Lehmann estimate of the paired log ratios, "
           f"one pair a round: the two samples taken closest together); {pct} CI of each test alone, from the "
           f"exact signed-rank test"
           + (f" (judged again from the saved samples; the run asked for {res['rejudged_from']:.0%})"
              if res.get("rejudged_from") else "") + ". "
           f"Wall time {res.get('wall_s', 0):.1f} s.", ""] + _correction_lines(res)
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
            r, ci, q, v = _cell(st["vs_baseline"], need)
            lab = c["label"] + (f" (= {', '.join(c['aliases'])})" if c["aliases"] else "")
            rows.append([lab, c["kind"], _ms(st["median_s"]), r, ci, q, v])
        out += ["", f"### `{a}`" + (f" ({res['impl'][a]})" if a in res.get("impl", {}) else ""), "",
                tabulate(rows, headers=["configuration", "kind", "median", "ratio", f"{pct} CI", "q", "verdict"],
                         tablefmt="github", disable_numparse=True)]
    out += ["", "### Each optimization: predicted and measured", "",
            "Alone = X / baseline; in all = all / (all without X), on the phases X touches and on the total; "
            "~: no significant effect after the correction."]
    rows = []
    for o in res["optimizations"]:
        ph = [p for p in o["phases"] if p in o["alone"]] + ["total"]
        notes = sorted({n for n in (o.get("inert_alone"), o.get("inert_in_all")) if n})
        alone = "<br>".join(f"`{p}` {_short(o['alone'][p], need)}" for p in ph)
        if o.get("inert_alone") and o.get("inert_alone") != o.get("inert_in_all"):
            alone += "<br>(inert alone)"
        rows.append([o["name"], alone,
                     "<br>".join(f"`{p}` {_short(o['in_all'][p], need)}" for p in ph) if o["in_all"] else "not run",
                     o["predicted"] + "".join(f"<br>**note**: {n}" for n in notes)])
    out += ["", tabulate(rows, headers=["opt", "measured alone", "measured in all", "predicted (registry)"],
                         tablefmt="github", disable_numparse=True)]
    others = [(o["name"], p, k, o[k][p]) for o in res["optimizations"] for k in ("alone", "in_all")
              if o[k] for p in res["areas"] if p not in o["phases"] and p != "total"
              and o[k][p]["verdict"] in SIGNIFICANT]
    if others:
        out += ["", "Effects outside the phases an optimization names: " + "; ".join(
            f"{n} {k.replace('_', ' ')} on `{p}` {_short(e, need)}" for n, p, k, e in others) + "."]
    inter = [i for i in res["interactions"] if i["significant"]]
    out += ["", "### Interactions", "",
            "Per toggle X and phase: X's effect in all (all / all without X) over its effect alone (X / baseline), "
            "paired within each round; 1 where the effects multiply.", ""]
    if len(s["names"]) < 2:
        out.append("One optimization: no interaction to test.")
    elif not res["interactions"]:
        out.append("Not tested: it needs the leave-one-out configurations (run without --no-leave-one-out).")
    elif not inter:
        out.append("None significant: in every phase, each toggle's effect in all is consistent with its effect alone.")
    for i in inter:
        out.append(f"- {' / '.join(i['names'])} in `{i['area']}`: in all x{i['in_all_ratio']:.3f}, "
                   f"alone x{i['alone_ratio']:.3f}; "
                   f"in all / alone {_short(i['interaction'], need)}" + (" (inert toggle: a false discovery)"
                                                                         if i.get("inert") else ""))
    out += ["", "### Attribution", ""]
    if not res["attribution"]:
        out.append("`all` changes no phase significantly.")
    for a, at in res["attribution"].items():
        who = ", ".join(at["optimizations"]) or "no optimization both alone and left out"
        part = f" (partly: {', '.join(at['partly'])}, significant either alone or left out only)" if at["partly"] else ""
        out.append(f"- `{a}` {at['all']['verdict']} with all ({_short(at['all'], need)}): {who}{part}")
    return "\n".join(out) + "\n"
