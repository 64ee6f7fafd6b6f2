"""Gate thresholds that follow the runner's measured noise.

An A/A gate run (`cuzk gate --calibrate`: base and head the same commit) measures, per workload and phase,
how far the round values (each round's median paired log ratio) spread when nothing changed. Its record
(`gate.aa_record`, one JSON line) lives with the history, in the runner's machine directory
(`<machine>/gate-noise/<commit>.jsonl`, or gate-noise-2/ for samples that average device calls, added by
`cuzk history record --gate-noise`), where a pull request cannot write. The gate derives each phase's
threshold from its machine's newest records (`derive`):

    threshold = min(cap, max(floor, exp(K * 1.2533 * s / sqrt(R)) - 1))

s: the pooled standard deviation of the A/A round values (each record's about its own mean, N - k degrees of
freedom for N rounds in k records: unbiased in s^2, where centring on medians and dividing by N - 1 read s
2-3% low);
1.2533 s / sqrt(R): the standard error of a median of R rounds, which is the gate's ratio; K = 4 puts the
threshold where a normal A/A ratio lands once in 30,000. floor: [gate] threshold_floor; cap: the phase's
[thresholds] value or [gate] threshold. A hand pin ([thresholds] phase = {pin = 0.02, reason = "..."})
stands instead, its reason in the report. Where the records hold fewer than MIN_ROUNDS rounds of a phase,
or none, the cap stands and the report says so.
"""
from __future__ import annotations

import json
import math
import re
import subprocess
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path

from ..files import read_input
from .values import is_int, is_number
from .workload import AREAS, DEFAULT_MIN_SAMPLE_S, Spec, device_timed

KIND, VERSION = "cuzk-gate-noise", 1
K = 4.0
MEDIAN_SE = math.sqrt(math.pi / 2)     # a median's standard error over a mean's, for normal rounds
MIN_ROUNDS = 10             # pooled A/A rounds of a phase before its threshold is derived
NEWEST = 5                  # records used: the machine's newest, by date
MAX_RECORD_BYTES = 1 << 20
DEFAULT_WORKER_CPUS = 1     # the gate's default (gate_config), at which records from before the field were made
MAX_LOG_RATIO = 1.0         # |ln(head / base)| of an A/A round beyond e: not a measurement
CLOCK_SLACK = timedelta(days=1)     # a record dated later than now and this: a runner's clock, or a forgery
_SHA = re.compile(r"[0-9a-f]{40}")
# a runner's name is a folder of the results branch: one ending in .json is what asv reads as a results file there
MACHINE_RE = re.compile(r"(?!.*\.json\Z)[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
MACHINE_RULE = "letters, digits, '.', '_', '-', at most 64, starting with a letter or digit, not ending in '.json'"
_SPEC_KEYS = {"backend": str, "circuit": str, "log_size": int, "opts": str, "batch": int, "convention": str,
              "generator": int}


class NoiseError(ValueError):
    pass


@dataclass(frozen=True)
class Threshold:
    value: float
    source: str             # "noise", "pin" or "config"
    basis: str              # what it follows, for the report

    def as_dict(self) -> dict:
        return {"value": self.value, "source": self.source, "basis": self.basis}


def spec_key(spec: dict) -> str:
    """A workload's identity across gate.json and records: its spec with every default filled in."""
    return json.dumps(Spec(**spec).as_dict(), sort_keys=True)


def make_record(machine: str, commit: str, rounds: int, samples: int, workloads: list[tuple[dict, dict]],
                gpu: str | None = None, date: str | None = None, min_device_sample_s: float = 0.0,
                min_sample_s: float = DEFAULT_MIN_SAMPLE_S, worker_cpus: int = DEFAULT_WORKER_CPUS) -> dict:
    """A record of an A/A run (gate.aa_record makes one from a gate run): workloads = [(spec, {phase: the
    rounds' values})]; min_device_sample_s and min_sample_s: the run's, which set how many calls a device-timed
    and a host-timed sample average; worker_cpus: the CPUs its workers sampled on (the round spread follows it).
    Checked as it will be read back."""
    if not workloads:
        raise NoiseError("the A/A run judged no workload: nothing to record")
    rec = {"kind": KIND, "version": VERSION, "machine": machine, "commit": commit,
           "date": date or datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
           "rounds": rounds, "samples": samples, "min_device_sample_s": min_device_sample_s,
           "min_sample_s": min_sample_s, "worker_cpus": worker_cpus, "gpu": gpu,
           "workloads": [{"spec": dict(spec), "phases": {a: list(d) for a, d in ph.items()}} for spec, ph in workloads]}
    return parse_record(dumps(rec), "the A/A record")


def dumps(rec: dict) -> str:
    return json.dumps(rec, separators=(",", ":")) + "\n"


def _now() -> datetime:
    return datetime.now(timezone.utc)


def parse_record(data: bytes | str, where: str, machine: str | None = None) -> dict:
    """One record, read as untrusted data: a NoiseError names `where` and the first thing that is wrong."""

    def bad(what: str) -> NoiseError:
        return NoiseError(f"{where}: {what}")
    if len(data) > MAX_RECORD_BYTES:
        raise bad(f"over {MAX_RECORD_BYTES >> 10} KiB")
    if isinstance(data, bytes):
        try:
            data = data.decode("utf-8")
        except UnicodeDecodeError as e:
            raise bad(f"not UTF-8 (byte {e.start})") from None
    lines = [ln for ln in data.splitlines() if ln.strip()]
    if len(lines) != 1:
        raise bad(f"{len(lines)} lines, not one JSON record")
    try:
        rec = json.loads(lines[0])
    except (ValueError, RecursionError) as e:
        raise bad(f"not JSON ({e})") from e
    if not isinstance(rec, dict) or rec.get("kind") != KIND:
        raise bad(f"not a {KIND} record")
    if rec.get("version") != VERSION:
        raise bad(f"version {rec.get('version')!r}, not {VERSION}")
    if not machine_name_ok(rec.get("machine")):
        raise bad("machine is not a machine name")
    if machine is not None and rec["machine"] != machine:
        raise bad(f"machine {rec['machine']!r}, not {machine!r}")
    if not (isinstance(rec.get("commit"), str) and _SHA.fullmatch(rec["commit"])):
        raise bad("commit is not a full commit id")
    try:
        date = datetime.strptime(rec.get("date"), "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=timezone.utc)
    except (TypeError, ValueError) as e:
        raise bad("date is not YYYY-MM-DDTHH:MM:SSZ") from e
    # derive takes the newest records by date: one dated ahead would stay among them, its spread held for good
    if date > _now() + CLOCK_SLACK:
        raise bad(f"date {rec['date']} is in the future (later than now and {CLOCK_SLACK.days} day)")
    for k, least in (("rounds", 2), ("samples", 1)):      # one round has no spread: centred, it reads 0
        v = rec.get(k)
        if not (is_int(v) and least <= v <= 10_000):
            raise bad(f"{k} is not a count of {least} to 10000")
    m = rec.get("min_device_sample_s", 0.0)        # absent: recorded when every device sample was one call
    if not (is_number(m) and 0 <= m <= 10):
        raise bad("min_device_sample_s is not a number of seconds")
    m = rec.get("min_sample_s", DEFAULT_MIN_SAMPLE_S)
    if not (is_number(m) and 0 <= m <= 10):
        raise bad("min_sample_s is not a number of seconds")
    w = rec.get("worker_cpus", DEFAULT_WORKER_CPUS)
    if not (is_int(w) and 0 <= w <= 4096):
        raise bad("worker_cpus is not a count of CPUs")
    if rec.get("gpu") is not None and not (isinstance(rec["gpu"], str) and len(rec["gpu"]) <= 128):
        raise bad("gpu is not a name")
    wls = rec.get("workloads")
    if not (isinstance(wls, list) and 1 <= len(wls) <= 64):
        raise bad("workloads is not a list of 1 to 64")
    seen: dict[str, int] = {}
    for i, w in enumerate(wls):
        sp = w.get("spec") if isinstance(w, dict) else None
        if not (isinstance(sp, dict) and set(sp) <= set(_SPEC_KEYS) and all(
                type(v) is _SPEC_KEYS[k] and (len(v) <= 64 if isinstance(v, str) else 0 < v < 64)
                for k, v in sp.items())):
            raise bad(f"workload {i}: spec")
        try:
            key = spec_key(sp)
        except (TypeError, ValueError) as e:
            raise bad(f"workload {i}: spec ({e})") from None
        if key in seen:                 # its rounds would be pooled twice
            raise bad(f"workload {i}: the same workload as workload {seen[key]}")
        seen[key] = i
        ph = w.get("phases")
        if not (isinstance(ph, dict) and ph and set(ph) <= set(AREAS)):
            raise bad(f"workload {i}: phases are not a table of known phases")
        for a, d in ph.items():
            if not (isinstance(d, list) and len(d) == rec["rounds"] and all(
                    is_number(x) and abs(x) <= MAX_LOG_RATIO for x in d)):
                raise bad(f"workload {i}: {a}: not {rec['rounds']} finite A/A log ratios")
    return rec


def pooled_sd(groups: list[list[float]]) -> float:
    """The standard deviation of several records' rounds, each group about its own mean (a runner's level may move
    between records; its spread is what the gate needs): sqrt(sum of squares / (N - k))."""
    dof = sum(map(len, groups)) - len(groups)
    if dof < 1:
        raise ValueError("no degree of freedom left: every group holds one value")
    return math.sqrt(sum(math.fsum((x - math.fsum(d) / len(d)) ** 2 for x in d) for d in groups) / dof)


def noise_threshold(round_sd: float, rounds: int) -> float:
    """The slowdown K standard errors of the median of `rounds` round values of this spread (log ratios)."""
    return math.exp(K * MEDIAN_SE * round_sd / math.sqrt(rounds)) - 1


def derive(cfg, records: list[dict], where: str = "", gpu: str | None = None) -> dict[tuple[str, str], Threshold]:
    """{(workload spec key, phase): threshold in force} for every workload and phase of cfg. `records`: parsed
    records of the gate's machine; those of another sample count or worker_cpus than cfg's, or another
    min_device_sample_s (for a phase timed on the device) or min_sample_s (on the host), are not comparable and are
    left out (their rounds' spread differs), as are all but the NEWEST newest of those that hold the workload's
    phase. A record without min_sample_s or worker_cpus was made at the default. `gpu`: the device the gate runs
    on (NVML's name; None where unknown): a GPU workload's records made on another are left out (another GPU,
    another spread: a runner's machine name can outlive its card)."""
    once = {}                   # one record is counted once, however often it is given (a copy, a folder and a file)
    for r in records:
        once.setdefault(json.dumps(r, sort_keys=True), r)
    same = [r for r in once.values() if r["samples"] == cfg.samples
            and r.get("worker_cpus", DEFAULT_WORKER_CPUS) == cfg.worker_cpus]
    other_gpu = {id(r): r["gpu"] for r in same if gpu is not None and r.get("gpu") not in (None, gpu)}
    alike = [r for r in same if r.get("min_device_sample_s", 0.0) == cfg.min_device_sample_s]
    host_alike = [r for r in same if r.get("min_sample_s", DEFAULT_MIN_SAMPLE_S) == cfg.min_sample_s]
    phases = {id(r): {spec_key(w["spec"]): w["phases"] for w in r["workloads"]} for r in same}   # one a workload
    out = {}
    for wc in cfg.workloads:
        key = spec_key(wc.spec.as_dict())
        for area in cfg.areas_for(wc):
            pool = alike if device_timed(wc.spec.backend != "cpu", area) else host_alike
            holds = [r for r in pool if area in phases[id(r)].get(key, {})]
            elsewhere = sorted({other_gpu[id(r)] for r in holds if id(r) in other_gpu}) \
                if wc.spec.backend != "cpu" else []
            holds = [r for r in holds if not elsewhere or id(r) not in other_gpu]
            usable = sorted(holds, key=lambda r: r["date"])[-NEWEST:]      # the newest that measured this phase
            cap = cfg.thresholds.get(area, cfg.threshold)
            if area in cfg.pins:
                value, reason = cfg.pins[area]
                out[key, area] = Threshold(value, "pin", f"pinned by hand: {reason}")
                continue
            groups, n_rec = [phases[id(r)][key][area] for r in usable], len(usable)
            n_rounds = sum(map(len, groups))
            if n_rounds < MIN_ROUNDS:
                why = (f"{n_rounds} A/A rounds{where}, fewer than {MIN_ROUNDS}" if n_rounds
                       else f"no A/A record{where}")
                if elsewhere:
                    why += f"; those made on {', '.join(elsewhere)} left out: this gate runs on {gpu}"
                out[key, area] = Threshold(cap, "config", f"the config's ({why})")
                continue
            s = pooled_sd(groups)
            noise = noise_threshold(s, cfg.rounds)
            value = min(cap, max(cfg.threshold_floor, noise))
            bound = ("the floor" if value == cfg.threshold_floor and noise < value
                     else "the cap" if value == cap and noise > value else "")
            out[key, area] = Threshold(value, "noise", f"{n_rounds} A/A rounds in {n_rec} records{where}, "
                                                       f"round spread {s:.2%}, {K:g} standard errors at "
                                                       f"{cfg.rounds} rounds = {noise:.2%}"
                                                       + (f", held at {bound}" if bound else "")
                                                       + (f"; those made on {', '.join(elsewhere)} left out"
                                                          if elsewhere else ""))
    return out


# --- where records come from: files, or the history (the local ref, then the remote's results branch) ---

def record_files(paths) -> list[Path]:
    """The record files that paths name: a directory's *.jsonl (NoiseError where it holds none), a file itself."""
    out = []
    for p in map(Path, paths):
        files = sorted(p.glob("*.jsonl")) if p.is_dir() else [p]
        if p.is_dir() and not files:
            raise NoiseError(f"{p}: no *.jsonl noise records in it")
        out += files
    return out


def load_paths(paths, machine: str | None = None) -> list[dict]:
    """Records from files or directories of *.jsonl records (a directory: its gate-noise/ or itself)."""
    out = []
    for f in record_files(paths):
        try:
            data = read_input(f, MAX_RECORD_BYTES, mode="rb")
        except OSError as e:
            raise NoiseError(f"{f}: {e.strerror or e}") from e
        out.append(parse_record(data, str(f), machine))
    machines = sorted({r["machine"] for r in out})
    if len(machines) > 1:               # one runner's noise sets its thresholds: never several pooled unasked
        raise NoiseError(f"{', '.join(map(str, paths))}: records of {len(machines)} machines ({', '.join(machines)}): "
                         f"give the gate's machine (--machine) to keep its own")
    return out


def machine_name_ok(machine) -> bool:
    """A runner's name as records and the history's folders hold it."""
    return isinstance(machine, str) and MACHINE_RE.fullmatch(machine) is not None


def from_history(repo, machine: str, refs: list[str], folder: str = "gate-noise") -> tuple[list[dict], str]:
    """The machine's records in the history as git holds it here, in `refs` in turn (history.noise_refs: the
    local ref, then origin's results branch as fetched), one per file name; and where they came from."""
    if not machine_name_ok(machine):
        raise NoiseError(f"machine name {machine!r}: {MACHINE_RULE}")

    def git(*args, check=True):
        p = subprocess.run(["git", "-C", str(repo), *args], capture_output=True)
        if check and p.returncode:
            raise NoiseError(f"git {' '.join(args)}: {p.stderr.decode(errors='replace').strip()}")
        return p
    found, read = {}, []
    for ref in refs:
        if git("rev-parse", "-q", "--verify", f"{ref}^{{commit}}", check=False).returncode:
            continue
        read.append(ref)
        listing = git("ls-tree", "-l", "-z", ref, "--", f"{machine}/{folder}/").stdout.decode(errors="replace")
        for entry in filter(None, listing.split("\0")):
            meta, path = entry.split("\t", 1)
            mode, kind, _obj, size = meta.split()
            name = path.rsplit("/", 1)[-1]
            where = f"{ref}:{path}"
            if kind != "blob" or mode != "100644" or not name.endswith(".jsonl"):
                raise NoiseError(f"{where}: not a regular .jsonl file")
            if int(size) > MAX_RECORD_BYTES:
                raise NoiseError(f"{where}: over {MAX_RECORD_BYTES >> 10} KiB")
            if name not in found:
                rec = parse_record(git("show", where).stdout, where, machine)
                if name != f"{rec['commit']}.jsonl":
                    raise NoiseError(f"{where}: holds the record of {rec['commit'][:10]}")
                found[name] = rec
    return list(found.values()), (" of " + " and ".join(read)) if read else ""
