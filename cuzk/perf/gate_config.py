"""perf-gate.toml: what `cuzk gate` measures and when a change counts as a regression."""
from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from ..circuits import CIRCUITS, check_batch
from ..field import root_of_unity
from ..files import read_input
from ..nvml import THROTTLE_REASONS
from ..qap import CONVENTIONS
from ..timing import PHASES
from .values import is_int, is_number
from .checkout import CheckoutError, git, resolve
from .foreign_work import DEFAULT_DEVICE_WAIT_US, DEFAULT_IRQ_COST_US, DEFAULT_SHARE
from .noise import DEFAULT_WORKER_CPUS, Threshold, spec_key
from .suite import CIRCUIT, GATE_ROUND_S
from .trust import BENIGN_REASONS, WATCHED_VIOLATIONS, TrustPolicy
from .workload import AREAS, DEFAULT_MIN_SAMPLE_S, Spec

DEFAULT_PATH = "perf-gate.toml"


class ConfigError(ValueError):
    pass


MAX_ROUNDS, MAX_SAMPLES = 1000, 10_000     # past these a gate is a typo: days of sampling
MAX_DISCARDS = 100              # retakes a side may have in a round: more is a run that never gives up on a busy GPU
MAX_DEVICE_WAIT_US = 2000.0     # under another context's time slice (~2,200 us): past it the probe's rule never fires
MAX_CONFIG_BYTES = 1 << 20


def min_p_value(rounds: int) -> float:
    """Smallest two-sided p-value the exact Wilcoxon signed-rank test can give with `rounds` pairs."""
    return 2.0 ** (1 - min(rounds, 2000))     # a float power: 2 ** 10**26 as an integer never ends


@dataclass(frozen=True)
class WorkloadConfig:
    spec: Spec
    required: bool = True
    phases: tuple[str, ...] | None = None     # this workload's phases, where not [gate] phases


@dataclass
class GateConfig:
    rounds: int = 10
    samples: int = 5
    alpha: float = 0.01
    threshold: float = 0.05     # the most a phase's threshold may be (and the one in force with no noise record)
    thresholds: dict[str, float] = field(default_factory=dict)     # per phase, where not `threshold`
    threshold_floor: float = 0.01       # the least a threshold derived from measured noise may be (noise.py)
    pins: dict[str, tuple[float, str]] = field(default_factory=dict)   # phase: (threshold, reason), set by hand
    derived: dict = field(default_factory=dict)     # (spec key, phase): noise.Threshold, set by noise.derive
    areas: tuple[str, ...] = PHASES
    min_sample_s: float = DEFAULT_MIN_SAMPLE_S
    min_device_sample_s: float = 0.0    # a device-timed sample repeats its phase until it lasts this long
    worker_timeout_s: float | None = None    # the longest wait for one worker reply; None: per workload
    worker_cpus: int = DEFAULT_WORKER_CPUS  # both workers of a round pinned to these CPUs (gate.worker_cpus); 0: free
    max_discards: int = 3       # per side and round: a head that trips the guard at will chooses as many pairs
    max_discards_apart: int = 1     # in a round, by how many one side's rejected samples may outnumber the other's
    pause_s: float = 1.0
    max_idle_cpu_ms: float = 10.0   # CPU an idle GPU worker the gate cannot stop may run (gate._check_idle)
    max_idle_cpu_ms_host: float = 2.0   # and an idle worker of a host-timed (cpu) workload: no driver thread
    max_foreign_share: float = DEFAULT_SHARE    # of a phase's threshold, other work on the sampling CPU (foreign_work)
    irq_cost_us: float = DEFAULT_IRQ_COST_US    # a device interrupt's handler, charged to the sample (foreign_work)
    max_device_wait_us: float = DEFAULT_DEVICE_WAIT_US     # a device probe's wait past which another context ran
    policy: TrustPolicy = TrustPolicy()
    workloads: list[WorkloadConfig] = field(default_factory=list)
    path: str | None = None
    raw: dict = field(default_factory=dict)     # the parsed document

    def areas_for(self, wc: WorkloadConfig) -> tuple[str, ...]:
        return wc.phases or self.areas

    def timeout_for(self, wc: WorkloadConfig) -> float:
        return self.worker_timeout_s if self.worker_timeout_s is not None else default_worker_timeout_s(wc.spec)

    def idle_cpu_s(self, wc: WorkloadConfig) -> float:
        """The CPU an idle worker of workload wc may run beside one rival sample: a GPU worker's driver thread
        wakes beside its rival's syncs (max_idle_cpu_ms), a host-timed worker's nothing (max_idle_cpu_ms_host)."""
        return (self.max_idle_cpu_ms_host if wc.spec.backend == "cpu" else self.max_idle_cpu_ms) / 1e3

    def threshold_for(self, area: str, wc: WorkloadConfig | None = None) -> float:
        return self.threshold_in_force(area, wc).value

    def threshold_in_force(self, area: str, wc: WorkloadConfig | None = None):
        """The phase's threshold in this workload: derived from measured noise where the gate was given
        records (noise.derive), else a hand pin, else the config's."""
        if wc is not None and (spec_key(wc.spec.as_dict()), area) in self.derived:
            return self.derived[spec_key(wc.spec.as_dict()), area]
        if area in self.pins:
            return Threshold(self.pins[area][0], "pin", f"pinned by hand: {self.pins[area][1]}")
        return Threshold(self.thresholds.get(area, self.threshold), "config", "the config's")


TIMEOUT_FACTOR = 10.0      # a worker reply may take this many times its expected cost ...
MIN_TIMEOUT_S = 60.0       # ... and never less (process start-up and imports on a loaded runner)
# targets without a figure in suite.GATE_ROUND_S: the nearest measured target of the backend, scaled
# with the domain (the phases are linear in it, up to a log)
_SCALE_FROM = {"cpu": "cpu:10", "cuda": "cuda:18"}


def default_worker_timeout_s(spec: Spec) -> float:
    """How long one worker reply (its set-up, or one sample) may take before the worker counts as hung:
    TIMEOUT_FACTOR x the round cost model's set-up plus one paired sample (suite.GATE_ROUND_S), at least
    MIN_TIMEOUT_S. A CPU phase at 2^10 gets 60 s, not the 900 s a 2^24 partition's set-up needs."""
    target = spec.target(CIRCUIT)
    if target in GATE_ROUND_S:
        setup, pair = GATE_ROUND_S[target]
        expected = setup + pair
    else:
        ref = _SCALE_FROM.get(spec.backend, "cuda:18")
        setup, pair = GATE_ROUND_S[ref]
        expected = (setup + pair) * 2.0 ** (spec.log_size - int(ref.rsplit(":", 1)[1])) * max(spec.batch, 1)
    return max(MIN_TIMEOUT_S, TIMEOUT_FACTOR * expected)


MAX_WORKER_TIMEOUT_S = 86400    # a day: time.monotonic() + it must stay a finite deadline
_GATE_KEYS = {"rounds", "samples", "alpha", "threshold", "threshold_floor", "phases", "min_sample_s",
             "min_device_sample_s", "worker_timeout_s", "worker_cpus"}
_TRUST_KEYS = {"max_discards", "max_discards_apart", "pause_s", "ignore_reasons", "allow_other_processes",
               "max_temperature_c", "max_device_wait_us",
               "max_idle_cpu_ms", "max_idle_cpu_ms_host", "max_foreign_share", "irq_cost_us"}
_WORKLOAD_KEYS = {"backend", "circuit", "log_size", "opts", "batch", "convention", "generator", "required",
                  "phases"}


def _check_keys(section: str, got: dict, allowed: set) -> None:
    extra = set(got) - allowed
    if extra:
        raise ConfigError(f"[{section}]: unknown keys {', '.join(sorted(extra))}; allowed: {', '.join(sorted(allowed))}")


def _is_str_list(v) -> bool:
    return isinstance(v, list) and all(isinstance(x, str) for x in v)


# each field's type, checked before any is used: a wrong one is named, never a TypeError later
_GATE_TYPES = {"rounds": (is_int, "an integer"), "samples": (is_int, "an integer"), "alpha": (is_number, "a number"),
               "threshold": (is_number, "a number"), "threshold_floor": (is_number, "a number"),
               "min_sample_s": (is_number, "a number of seconds"),
               "min_device_sample_s": (is_number, "a number of seconds"),
               "worker_timeout_s": (is_number, "a number of seconds"), "worker_cpus": (is_int, "an integer"),
               "phases": (_is_str_list, "a list of phase names")}
_TRUST_TYPES = {"max_discards": (is_int, "an integer"), "max_discards_apart": (is_int, "an integer"),
                "pause_s": (is_number, "a number of seconds"),
                "ignore_reasons": (_is_str_list, "a list of reason names"),
                "allow_other_processes": (lambda v: isinstance(v, bool), "true or false"),
                "max_temperature_c": (is_number, "a number"), "max_idle_cpu_ms": (is_number, "a number of ms"),
                "max_idle_cpu_ms_host": (is_number, "a number of ms"),
                "max_foreign_share": (is_number, "a number in [0, 1]"),
                "irq_cost_us": (is_number, "a number of microseconds"),
                "max_device_wait_us": (is_number, "a number of microseconds")}
_WORKLOAD_TYPES = {"backend": (lambda v: isinstance(v, str), "a string"),
                   "circuit": (lambda v: isinstance(v, str), "a string"),
                   "log_size": (lambda v: is_int(v) and 1 <= v <= 32, "an integer in 1..32"),
                   "opts": (lambda v: isinstance(v, str), "a string"),
                   "batch": (lambda v: is_int(v) and v >= 1, "an integer >= 1"),
                   "convention": (lambda v: isinstance(v, str), "a string"),
                   "generator": (lambda v: is_int(v) and v >= 2, "an integer >= 2"),
                   "required": (lambda v: isinstance(v, bool), "true or false"),
                   "phases": (_is_str_list, "a list of phase names")}


def _check_types(g: dict, th, tr: dict, wls) -> None:
    for section, d, types in (("gate", g, _GATE_TYPES), ("trust", tr, _TRUST_TYPES)):
        for k, v in d.items():
            ok, what = types[k]
            if not ok(v):
                raise ConfigError(f"[{section}] {k} = {v!r}: must be {what}")
    if not isinstance(th, dict):
        raise ConfigError("[thresholds] must be a table of phase = fraction")
    for k, v in th.items():
        if isinstance(v, dict):         # a pin: {pin = 0.02, reason = "..."}
            if set(v) != {"pin", "reason"} or not (is_number(v["pin"]) and 0 <= v["pin"] < 1):
                raise ConfigError(f"[thresholds] {k} = {v!r}: a pin is {{pin = FRACTION in [0, 1), reason = \"why\"}}")
            if not (isinstance(v["reason"], str) and 0 < len(v["reason"].strip()) <= 200):
                raise ConfigError(f"[thresholds] {k}: a pin needs its reason (1 to 200 characters)")
        elif not (is_number(v) and v >= 0):
            raise ConfigError(f"[thresholds] {k} = {v!r}: must be a number >= 0 (the phase's most) or a pin "
                              f"{{pin = FRACTION, reason = \"why\"}}")
    if not (isinstance(wls, list) and all(isinstance(w, dict) for w in wls)):
        raise ConfigError("[[workload]] must be an array of tables")
    for i, w in enumerate(wls):
        _check_keys(f"workload {i}", w, _WORKLOAD_KEYS)
        for k, v in w.items():
            ok, what = _WORKLOAD_TYPES[k]
            if not ok(v):
                raise ConfigError(f"[[workload]] {i}: {k} = {v!r}: must be {what}")
        if w.get("circuit", Spec.circuit) not in _circuits():
            raise ConfigError(f"[[workload]] {i}: circuit = {w['circuit']!r}: known: {', '.join(sorted(_circuits()))}")
        # what a worker would refuse after both trees are checked out (its traceback relayed), refused here instead
        try:
            check_batch(w.get("circuit", Spec.circuit), w.get("log_size", Spec.log_size), w.get("batch", Spec.batch),
                        "batch")
        except ValueError as e:
            raise ConfigError(f"[[workload]] {i}: {str(e).replace('--log-size', 'log_size')}") from None
        try:
            root_of_unity(1, w.get("generator", Spec.generator))
        except ValueError as e:
            raise ConfigError(f"[[workload]] {i}: generator: {e}") from None
        if w.get("convention", Spec.convention) not in _conventions():
            raise ConfigError(f"[[workload]] {i}: convention = {w['convention']!r}: known: "
                              f"{', '.join(_conventions())}")
        try:
            from .workload import opt_set
            opt_set(w.get("opts", Spec.opts))
        except (ValueError, KeyError) as e:
            raise ConfigError(f"[[workload]] {i}: opts = {w['opts']!r}: {str(e).splitlines()[0]}") from e


def _circuits():
    return CIRCUITS


def _conventions():
    return CONVENTIONS


def parse(doc: dict, path: str | None = None) -> GateConfig:
    _check_keys("top level", doc, {"gate", "thresholds", "trust", "workload"})
    for section in ("gate", "thresholds", "trust"):
        if not isinstance(doc.get(section, {}), dict):
            raise ConfigError(f"{section} = {str(doc[section])[:40]!r}: must be a table, [{section}]")
    if not (isinstance(doc.get("workload", []), list) and all(isinstance(w, dict) for w in doc.get("workload", []))):
        raise ConfigError("workload: must be tables, [[workload]]")
    g, th, tr = doc.get("gate", {}), doc.get("thresholds", {}), doc.get("trust", {})
    _check_keys("gate", g, _GATE_KEYS)
    _check_keys("trust", tr, _TRUST_KEYS)
    _check_types(g, th, tr, doc.get("workload", []))
    cfg = GateConfig(path=path, raw=doc)
    for k in ("rounds", "samples", "alpha", "threshold", "threshold_floor", "min_sample_s", "min_device_sample_s",
              "worker_timeout_s", "worker_cpus"):
        if k in g:
            setattr(cfg, k, g[k])
    if "phases" in g:
        cfg.areas = tuple(g["phases"])
    bad = [a for a in cfg.areas if a not in AREAS]
    if bad or not cfg.areas:
        raise ConfigError(f"[gate] phases: unknown {bad}; known: {', '.join(AREAS)}")
    bad = [a for a in th if a not in AREAS]
    if bad:
        raise ConfigError(f"[thresholds]: unknown phases {bad}; known: {', '.join(AREAS)}")
    cfg.thresholds = {a: float(v) for a, v in th.items() if not isinstance(v, dict)}
    cfg.pins = {a: (float(v["pin"]), v["reason"].strip()) for a, v in th.items() if isinstance(v, dict)}
    if not (isinstance(cfg.rounds, int) and 2 <= cfg.rounds <= MAX_ROUNDS and isinstance(cfg.samples, int)
            and 1 <= cfg.samples <= MAX_SAMPLES):
        raise ConfigError(f"[gate] rounds must be an integer in 2..{MAX_ROUNDS} and samples in 1..{MAX_SAMPLES}")
    if cfg.worker_timeout_s is not None and not (isinstance(cfg.worker_timeout_s, (int, float))
                                                 and 0 < cfg.worker_timeout_s <= MAX_WORKER_TIMEOUT_S):
        raise ConfigError(f"[gate] worker_timeout_s must be a number of seconds in (0, {MAX_WORKER_TIMEOUT_S}] "
                          "(leave it out: derived from each workload's size)")
    if not 0 <= cfg.min_sample_s <= 10:        # as a noise record holds it: a record must be writable after the run
        raise ConfigError("[gate] min_sample_s must be a number of seconds in [0, 10]")
    if not (isinstance(cfg.worker_cpus, int) and cfg.worker_cpus >= 0):
        raise ConfigError("[gate] worker_cpus must be an integer >= 0 (0: workers not pinned)")
    if not 0 <= cfg.min_device_sample_s <= 10:
        raise ConfigError("[gate] min_device_sample_s must be a number of seconds in [0, 10] (0: one call a sample)")
    if not 0 < cfg.alpha < 1:
        raise ConfigError("[gate] alpha must be in (0, 1)")
    if min_p_value(cfg.rounds) >= cfg.alpha:
        raise ConfigError(f"[gate] with rounds = {cfg.rounds} the smallest possible p-value is "
                          f"{min_p_value(cfg.rounds):.4g} >= alpha = {cfg.alpha}: the test could never fire. "
                          f"Raise rounds.")
    # a threshold past 1 (twice the base's time) is a typo's extra digits, and would silence the phase for good
    if any(not 0 <= t <= 1 for t in [cfg.threshold, *cfg.thresholds.values()]):
        raise ConfigError("thresholds must be in [0, 1] (1: a phase twice as slow)")
    if not 0 <= cfg.threshold_floor <= min([cfg.threshold, *cfg.thresholds.values()]):
        raise ConfigError(f"[gate] threshold_floor = {cfg.threshold_floor}: must be >= 0 and at most every "
                          f"threshold (the most a derived threshold may be)")
    cfg.max_discards = int(tr.get("max_discards", cfg.max_discards))
    cfg.max_discards_apart = int(tr.get("max_discards_apart", cfg.max_discards_apart))
    if not (0 <= cfg.max_discards <= MAX_DISCARDS and 0 <= cfg.max_discards_apart <= MAX_DISCARDS):
        raise ConfigError(f"[trust] max_discards and max_discards_apart must be in 0..{MAX_DISCARDS} (a side's "
                          f"retakes in a round before it is untrusted)")
    cfg.pause_s = float(tr.get("pause_s", cfg.pause_s))
    if not 0 <= cfg.pause_s <= 60:             # slept after a refused GPU sample: a bad value fails mid-run
        raise ConfigError("[trust] pause_s must be a number of seconds in [0, 60]")
    t = tr.get("max_temperature_c")          # None: no limit
    if t is not None and not 0 < t <= 150:
        raise ConfigError("[trust] max_temperature_c must be in (0, 150] degrees C")
    cfg.max_idle_cpu_ms = float(tr.get("max_idle_cpu_ms", cfg.max_idle_cpu_ms))
    cfg.max_idle_cpu_ms_host = float(tr.get("max_idle_cpu_ms_host", cfg.max_idle_cpu_ms_host))
    for k in ("max_idle_cpu_ms", "max_idle_cpu_ms_host"):
        if not 0 <= getattr(cfg, k) <= 1000:
            raise ConfigError(f"[trust] {k} must be in [0, 1000]: CPU an idle worker may run while its rival "
                              "samples")
    cfg.max_foreign_share = float(tr.get("max_foreign_share", cfg.max_foreign_share))
    if not 0 <= cfg.max_foreign_share <= 1:
        raise ConfigError("[trust] max_foreign_share must be in [0, 1]: the share of a phase's threshold that other "
                          "work on the sampling CPU may take of its median sample")
    cfg.irq_cost_us = float(tr.get("irq_cost_us", cfg.irq_cost_us))
    cfg.max_device_wait_us = float(tr.get("max_device_wait_us", cfg.max_device_wait_us))
    if not 0 <= cfg.max_device_wait_us <= MAX_DEVICE_WAIT_US:
        raise ConfigError(f"[trust] max_device_wait_us must be in [0, {MAX_DEVICE_WAIT_US}] (0: device probes "
                          f"reported, not judged)")
    if not 0 <= cfg.irq_cost_us <= 1000:
        raise ConfigError("[trust] irq_cost_us must be in [0, 1000]: the microseconds one device interrupt served on "
                          "the sampling CPU is taken to cost a sample (0: not judged)")
    extra = tuple(tr.get("ignore_reasons", ()))
    unknown = [r for r in extra if r not in THROTTLE_REASONS.values()]
    if unknown:
        raise ConfigError(f"[trust] ignore_reasons: unknown {unknown}; known: {', '.join(THROTTLE_REASONS.values())}")
    cfg.policy = TrustPolicy(ignore_reasons=BENIGN_REASONS + extra, watched_violations=WATCHED_VIOLATIONS,
                             max_temperature_c=t,
                             allow_other_processes=bool(tr.get("allow_other_processes", False)))
    wls = doc.get("workload", [])
    if not wls:
        raise ConfigError("no [[workload]] given")
    for i, w in enumerate(wls):
        _check_keys(f"workload {i}", w, _WORKLOAD_KEYS)
        w = dict(w)
        required = bool(w.pop("required", True))
        phases = w.pop("phases", None)
        if phases is not None:
            bad = [a for a in phases if a not in AREAS] if isinstance(phases, list) else [phases]
            if bad or not phases:
                raise ConfigError(f"[[workload]] {i}: phases: unknown {bad}; known: {', '.join(AREAS)}")
            phases = tuple(phases)
        try:
            spec = Spec(**w)
        except TypeError as e:
            raise ConfigError(f"[[workload]] {i}: {e}") from e
        if spec.backend not in ("cpu", "cuda"):
            raise ConfigError(f"[[workload]] {i}: backend must be cpu or cuda (never auto: no silent fallback)")
        key = spec_key(spec.as_dict())
        same = [j for j, o in enumerate(cfg.workloads) if spec_key(o.spec.as_dict()) == key]
        if same:                                # measured twice, and an A/A record cannot hold it twice
            raise ConfigError(f"[[workload]] {i}: the same workload as [[workload]] {same[0]}")
        cfg.workloads.append(WorkloadConfig(spec, required, phases))
    return cfg


def load(path: str | Path) -> GateConfig:
    try:
        doc = tomllib.loads(read_input(path, MAX_CONFIG_BYTES))    # never a FIFO, a device, or GiBs
    except OSError as e:
        raise ConfigError(f"{path}: {e.strerror}") from e
    except UnicodeDecodeError as e:
        raise ConfigError(f"{path}: not UTF-8 text ({e.reason} at byte {e.start})") from e
    except RecursionError as e:
        raise ConfigError(f"{path}: nested too deeply") from e
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"{path}: {e}") from e
    try:
        return parse(doc, str(path))
    except ConfigError as e:
        raise ConfigError(f"{path}: {e}") from e


def load_commit(repo: str | Path, ref: str, path: str = DEFAULT_PATH) -> GateConfig:
    """The config as committed at `ref` (the base): a pull request's own copy never sets its rules."""
    try:
        sha = resolve(repo, ref)
        text = git(repo, "show", f"{sha}:{path}")
    except CheckoutError as e:
        raise ConfigError(f"{ref}:{path}: not readable from the base commit ({e}); give --config FILE") from e
    where = f"{ref} ({sha[:10]}):{path}"
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"{where}: {e}") from e
    try:
        return parse(doc, where)
    except ConfigError as e:
        raise ConfigError(f"{where}: {e}") from e
