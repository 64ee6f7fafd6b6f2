"""The gate's Markdown report (stdout and the GitHub step summary) and its bisect hint."""
from __future__ import annotations

import math
import re
import statistics
from urllib.parse import quote

from tabulate import tabulate

from ..opts import describe
from . import bisect
from .compare import IMPROVEMENT, NOT_RESOLVED, REGRESSION
from .gate import EXIT_ERROR, EXIT_OK, EXIT_REGRESSION, NO_GPU, GateResult, Outcome
from .suite import CIRCUIT, asv_params, time_benchmark
from .values import is_number, numbers

UNDER_TEST = ("cuzk/timing.py",)      # watched files that the head's own code uses (checkout.ALSO_WATCHED)
_VERDICT = {REGRESSION: "**REGRESSION**", IMPROVEMENT: "improvement", NOT_RESOLVED: "*not resolved*"}
_STATUS = {"error": "benchmark error", "untrusted": "UNTRUSTED run", "skipped": "skipped",
           "stopped": "stopped", "running": "not finished"}


def fenced(text: str) -> str:
    """Untrusted text as a code block: the fence is longer than any run of backticks in it, so nothing
    inside can close it, and no line of it becomes a heading, a table or a link."""
    text = _CONTROL.sub("", str(text))
    longest = max((len(m) for m in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}text\n{text}\n{fence}"


def inline(text, limit: int = 200) -> str:
    """Untrusted text on one line, as a code span (delimited by more backticks than any run inside). Not for
    table cells, where a `|` would still split the cell."""
    text = " ".join(_CONTROL.sub("", str(text)).split())
    if len(text) > limit:
        text = text[:limit] + "..."
    longest = max((len(m) for m in re.findall(r"`+", text)), default=0)
    tick = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") or not text else ""
    return f"{tick}{pad}{text}{pad}{tick}"


_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")      # keeps tab and newline
_MARKUP = re.compile(r"([\\`*_\[\]<>#!|~])")


def plain(text, limit: int = 2000) -> str:
    """Untrusted text as running prose on one line: Markdown and HTML shown, never acted on (no heading, link,
    image, comment or mention: a zero-width space after each @)."""
    text = " ".join(_CONTROL.sub("", str(text)).split())
    if len(text) > limit:
        text = text[:limit] + "..."
    return _MARKUP.sub(r"\\\1", text).replace("@", "@\u200b")


def fmt_s(s: float, digits: int = 3) -> str:
    for unit, f in (("s", 1.0), ("ms", 1e3), ("µs", 1e6)):
        if abs(s) * f >= 1:
            return f"{s * f:.{digits}g} {unit}"
    return f"{s * 1e9:.{digits}g} ns"


def _bisect_args(oc: Outcome, area: str) -> tuple[str | None, str | None]:
    """(target, opts) of the suite's parameter set that matches this workload, where there is one."""
    params = asv_params(area, oc.config.spec)
    if params is None or area == "synthesis":
        return None, None
    return oc.config.spec.target(CIRCUIT), oc.config.spec.opts


def asv_find_command(oc: Outcome, area: str, base: str, head: str, repo: str | None = None) -> str:
    """The `asv find` command that bisects base..head for this phase's asv benchmark (what
    `cuzk bisect` runs: both come from cuzk.perf.bisect). For a GPU workload, a comment line first:
    asv's environments get CuPy from the runner's CUDA extra, which prefixes the command where known."""
    target, opts = _bisect_args(oc, area)
    regex = bisect.bench_regex(area, target, opts)
    if area == "synthesis" and asv_params(area, oc.config.spec) is not None:
        regex += re.escape("(" + ", ".join(asv_params(area, oc.config.spec)) + ")") + "$"
    target = target or f"{oc.config.spec.backend}:"
    hint = bisect.gpu_hint(regex, target)
    return (hint + "\n" if hint else "") + bisect.shell_command(regex, base, head, target, repo)


def bisect_command(oc: Outcome, area: str, base: str, head: str) -> str:
    target, opts = _bisect_args(oc, area)
    prefix = bisect.env_prefix(bisect.bench_regex(area, target, opts), target or f"{oc.config.spec.backend}:")
    return prefix + bisect.cuzk_command(area, base, head, target, opts)


def bisect_range(res: GateResult) -> tuple[str | None, str | None, str]:
    """(good, bad, note) for `cuzk bisect`: asv find needs commits between its ends. A pull request's
    gate compares the base with the merge commit (HEAD^1..HEAD, nothing in between), so the range to
    search is the pull request's own commits: merge-base(base, HEAD^2)..HEAD^2. One commit: no search."""
    repo, base, head = res.repo, res.base, res.head
    try:
        merged = bisect.merged_branch(base, head, repo) if repo else None
        n = len(bisect.range_commits(base, head, repo)) - 1 if repo else 0
    except bisect.BisectError:                                   # a saved report away from its repository
        return base, head, ""
    if merged and merged[2] >= 2:
        mb, tip, k = merged
        return mb, tip, f" among the pull request's {k} commits ({mb[:10]}..{tip[:10]}, the merge's second parent)"
    if merged and merged[2] == 1:
        return None, None, f"The pull request is one commit, `{merged[1][:10]}`: it is the change; nothing to bisect."
    if n == 1:
        return None, None, f"Head `{head[:10]}` is the only commit after base: it is the change; nothing to bisect."
    return base, head, ""


ENERGY_TICKED = 0.9      # the share of a side's samples in which NVML's energy counter must have moved


def energy_per_call(oc: Outcome) -> dict[str, tuple[float, float]]:
    """area -> (base, head) median joules per call, where NVML counted energy on both sides and the phase
    outlasts the counter's resolution: a phase shorter than the counter's update interval mostly reads 0 J,
    and a median of zeros says nothing."""
    out = {}
    for area in (oc.rounds[0]["base"]["areas"] if oc.rounds else {}):
        e = {s: [x for rd in oc.rounds for x in rd[s]["areas"][area].get("energy_j", [])] for s in ("base", "head")}
        if e["base"] and e["head"] and all(sum(x > 0 for x in v) >= ENERGY_TICKED * len(v) for v in e.values()):
            out[area] = (statistics.median(e["base"]), statistics.median(e["head"]))
    return out


def energy_too_short(oc: Outcome) -> list[str]:
    """Phases with energy readings that are left out: shorter than the counter's resolution."""
    shown = energy_per_call(oc)
    return [a for a in (oc.rounds[0]["base"]["areas"] if oc.rounds else {})
            if a not in shown and any(rd[s]["areas"][a].get("energy_j") for rd in oc.rounds for s in ("base", "head"))]


def _seconds(v) -> bool:
    """A finite non-negative number: what a damaged or crafted gate.json may not pass off as a time."""
    return is_number(v) and v >= 0


def sampling_cost(oc: Outcome) -> tuple[int, float, float, float, float | None, float | None] | None:
    """(samples, seconds of their round trips, of the phases' calls in them, of the workers' full collections
    before them, of the workers' wall around the calls (set-up, collection and the calls' host time), of their
    NVML checks) over every round and side, where gate.json holds the round trips; None where it does not. The
    last two are None unless every counted sample has them. Values that are not times are left out."""
    n, asked, calls, collected = 0, 0.0, 0.0, 0.0
    parts = {"host_s": 0.0, "guard_s": 0.0}
    num = _seconds
    for rd in oc.rounds:
        for s in ("base", "head"):
            for ar in rd.get(s, {}).get("areas", {}).values():
                k = ar.get("number", 1)
                k = k if num(k) else 1
                gcs = ar.get("gc_s") or []
                hs, gs = ar.get("host_s") or [], ar.get("guard_s") or []
                for i, (t, v) in enumerate(zip(ar.get("asked_s") or [], ar.get("samples") or [])):
                    if num(t) and num(v):
                        n, asked, calls = n + 1, asked + t, calls + v * k
                        g = gcs[i] if i < len(gcs) else None
                        collected += g if num(g) else 0.0
                        for xs, key in ((hs, "host_s"), (gs, "guard_s")):
                            x = xs[i] if i < len(xs) else None
                            if parts[key] is not None:
                                parts[key] = parts[key] + x if num(x) else None
    if not n:
        return None
    return (n, asked, calls, collected, parts["host_s"], parts["guard_s"])


def round_times(oc: Outcome) -> tuple[int, float, float, float, dict] | None:
    """(rounds, seconds until both workers were ready, sampling, their quit and exit, and per side the set-up
    steps the workers timed themselves) over the rounds that kept their times; None where none did. Values that
    are not finite non-negative numbers (a damaged or crafted file) leave their round out."""
    num = _seconds
    n, ready, sampled, closed, setup = 0, 0.0, 0.0, 0.0, {"base": 0.0, "head": 0.0}
    for rd in oc.rounds:
        tm = rd.get("times") if isinstance(rd, dict) else None
        if not isinstance(tm, dict) or not all(num(tm.get(k)) for k in ("ready_s", "sampled_s", "closed_s")):
            continue
        n, ready, sampled, closed = n + 1, ready + tm["ready_s"], sampled + tm["sampled_s"], closed + tm["closed_s"]
        for s in setup:
            steps = (rd.get(s) or {}).get("setup_s") if isinstance(rd.get(s), dict) else None
            setup[s] += sum(v for v in steps.values() if num(v)) if isinstance(steps, dict) else 0.0
    return (n, ready, sampled, closed, setup) if n else None


def rounds_line(n: int, ready: float, sampled: float, closed: float, setup: dict) -> str:
    """Where the rounds' time went: the workers' start and set-up (and of it, the steps they timed), the samples,
    their quit and exit; the gap between the first two is process start, imports and the device's context."""
    return (f"Rounds: {n} in {ready + sampled + closed:.1f} s: the workers' start and set-up {ready:.1f} s (the "
            f"set-up steps they timed: base {setup['base']:.1f} s, head {setup['head']:.1f} s), sampling "
            f"{sampled:.1f} s, their quit and exit {closed:.1f} s.")


def sampling_line(n: int, asked: float, calls: float, collected: float, host: float | None,
                  guard: float | None, guard_outside: bool = False) -> str:
    """Where the sampling time went: the round trips split into the timed calls, the collections, and, where the
    workers said (host_s), their set-up and the calls' host time past the timed one; the NVML checks (guard_s)
    inside the round trips where the worker read them, between them where the gate did (guard_outside; None: a
    workload without them)."""
    head = (f"Sampling: {n} samples in {asked:.1f} s of round trips: the phases' calls {calls:.1f} s, "
            f"the workers' full collections before them {collected:.1f} s, ")
    if guard_outside and host is not None:
        past = max(0.0, host - calls - collected)
        return head + (f"each sample's set-up and the calls' host time past the timed {past:.1f} s, the rest "
                       f"{max(0.0, asked - host):.1f} s (requests and replies)" + (
                           f"; the gate's NVML checks between the samples {guard:.1f} s, retaken samples and their "
                           f"pauses besides." if guard is not None else "."))
    if host is None or guard is None:
        return head + (f"the rest {max(0.0, asked - calls - collected):.1f} s (requests, each sample's set-up and "
                       f"NVML checks, retaken samples and their pauses).")
    past = max(0.0, host - calls - collected)
    return head + (f"each sample's set-up and the calls' host time past the timed {past:.1f}"
                   f" s, NVML checks {guard:.1f} s, the rest {max(0.0, asked - host - guard):.1f} s (requests and "
                   f"replies, retaken samples and their pauses).")


def preempted_samples(oc: Outcome) -> dict[str, tuple[int, int]]:
    """Per phase, (samples whose sampling thread was switched out while timed, samples with a count), over
    every round and side; phases whose workers kept no count are left out."""
    out: dict[str, tuple[int, int]] = {}
    for rd in oc.rounds:
        for s in ("base", "head"):
            for a, ar in rd.get(s, {}).get("areas", {}).items():
                counts = [x for x in ar.get("preempted") or [] if isinstance(x, int) and not isinstance(x, bool)]
                if counts:
                    k, n = out.get(a, (0, 0))
                    out[a] = (k + sum(1 for x in counts if x > 0), n + len(counts))
    return out


def per_sample_ms(oc: Outcome, key: str) -> dict[str, tuple[float, float, int]]:
    """Per phase, (median, most, samples) of a per-sample figure in ms (rival_idle_ms, foreign_ms) over every
    round and side; non-numbers are left out, and so are phases without the figure."""
    got: dict[str, list[float]] = {}
    for rd in oc.rounds:
        for s in ("base", "head"):
            for a, ar in rd.get(s, {}).get("areas", {}).items():
                got.setdefault(a, []).extend(numbers(ar.get(key)))
    return {a: (statistics.median(xs), max(xs), len(xs)) for a, xs in got.items() if xs}


def rival_idle(oc: Outcome) -> tuple[dict[str, tuple[float, float, int]], str | None]:
    """Per phase, what the idle rival ran beside its samples (per_sample_ms of rival_idle_ms), and where the
    most of any round was (its idle_cpu_where)."""
    most, where = -1.0, None
    for rd in oc.rounds:
        for s in ("base", "head"):
            sd = rd.get(s, {})
            m = sd.get("idle_cpu_ms")
            if is_number(m) and m > most and sd.get("idle_cpu_where"):
                most, where = m, sd["idle_cpu_where"]
    return per_sample_ms(oc, "rival_idle_ms"), where


def per_side(oc: Outcome, key: str) -> dict[str, dict[str, tuple[float, float]]]:
    """Per phase and side, (median, most) of a per-sample figure of gate.json (a count or a finite number);
    phases and sides without it are left out."""
    got: dict[str, dict[str, list]] = {}
    for rd in oc.rounds:
        for s in ("base", "head"):
            for a, ar in rd.get(s, {}).get("areas", {}).items():
                xs = numbers(ar.get(key))
                if xs:
                    got.setdefault(a, {}).setdefault(s, []).extend(xs)
    return {a: {s: (statistics.median(xs), max(xs)) for s, xs in sides.items()} for a, sides in got.items()}


def device_interrupts(oc: Outcome) -> dict[str, dict[str, tuple[float, float]]]:
    """Per phase and side, (median, most) of the device interrupts served on the sampling CPU during a sample."""
    return per_side(oc, "irqs")


def _sides_line(figures: dict, fmt: str = "g") -> str:
    """Per phase, `median / most` of the base; of the head ("-" for a side without the figure)."""
    def side(v):
        return "-" if v is None else f"{v[0]:{fmt}} / {v[1]:{fmt}}"
    return "; ".join(f"`{a}` {side(sides.get('base'))}; {side(sides.get('head'))}" for a, sides in figures.items())


def foreign_work(oc: Outcome) -> dict[str, tuple[float, float, int]]:
    """Per phase, what else ran on the sampling CPU while the sampling thread wanted it (foreign_ms)."""
    return per_sample_ms(oc, "foreign_ms")


def idle_stopped(oc: Outcome) -> bool:
    """Whether each side was stopped beside every one of its rival's samples, in every round (gate.json from
    before the stop reads False)."""
    return bool(oc.rounds) and all(rd.get(s, {}).get("idle_stopped") is True for rd in oc.rounds
                                   for s in ("base", "head"))


def _workloads(res: GateResult) -> str:
    return "; ".join(f"{o.config.spec.label()} ({', '.join(res.config.areas_for(o.config))})" for o in res.outcomes)


def _clocked(x) -> bool:
    return math.isfinite(x.clock_p)


def _detectable(x) -> str:
    """The smallest slowdown the run could flag: the larger of what its spread resolves and the threshold."""
    d = x.detectable
    if d != d:                       # a saved run judged before this column existed
        return "-"
    return "never" if d == float("inf") else f"+{max(d, x.threshold):.1%}"


_SOURCE = {"noise": " (noise)", "pin": " (pin)", "config": ""}


def _threshold(x) -> str:
    return f"+{x.threshold:.1%}{_SOURCE.get(x.threshold_source, '')}"


def threshold_notes(oc) -> list[str]:
    """Where each phase's threshold comes from, once per distinct basis."""
    by = {}
    for x in oc.comparisons:
        by.setdefault((x.threshold_source, x.threshold_basis), []).append(x.area)
    if set(by) <= {("config", "")}:
        return []
    return ["> Thresholds: " + "; ".join(f"{', '.join(f'`{a}`' for a in areas)}: {inline(basis or 'the config’s')}"
                                         for (_src, basis), areas in by.items()) + "."]


def _ratio_ci(x) -> str:
    return f"x{x.ratio:.3f} [{x.ci_low:.3f}, {x.ci_high:.3f}]"


def verdict_line(res: GateResult) -> str:
    """The report's first line: the verdict, with the workloads and phases it is about, and what it did not
    measure."""
    line = _verdict(res)
    if res.deps_changed:
        line += (". **Not measured**: the head changes its dependencies (" + ", ".join(
            inline(f) for f in res.deps_changed) + "); both sides ran in the gate's one environment")
    if res.build_changed:
        line += (". **Not measured**: the head changes the kernels' nvcc flags (" + ", ".join(
            inline(f) for f in res.build_changed) + "); both sides' kernels were built with the base's")
    return line


def _verdict(res: GateResult) -> str:
    if res.exit_code == EXIT_OK:
        un = res.unresolved()
        tail = ("; not resolved (too noisy to see its threshold): " + ", ".join(
            f"`{c.area}` in {o.config.spec.label()}" for o, c in un)) if un else ""
        return f"## cuzk gate **PASS**: no phase regressed in {_workloads(res)}{tail}"
    if res.exit_code == EXIT_REGRESSION:
        names = "; ".join(f"`{c.area}` in {o.config.spec.label()}: {_ratio_ci(c)}, p={c.p_value:.2g}"
                          for o, c in res.regressions())
        return f"## cuzk gate **FAIL: regression**: {names}"
    bad = [o for o in res.outcomes if o.status not in ("ok", "stopped")] or \
          [o for o in res.outcomes if o.status != "ok"]
    if any(o.message.startswith(NO_GPU) for o in bad):
        what = "; ".join(f"{o.config.spec.label()}: {inline(o.message)}" for o in bad)
        return (f"## cuzk gate **FAIL: {NO_GPU}**, not judged: {what}. Exit code 2 is never a pass; "
                "`--cpu-only` gates the CPU reference alone.")
    what = "; ".join(f"{_STATUS.get(o.status, o.status)} in {o.config.spec.label()}" for o in bad) or "nothing measured"
    return f"## cuzk gate **FAIL: not judged** ({what}). Exit code 2 is never a pass."


def markdown(res: GateResult, bisect: bool = True) -> str:
    c = res.config
    out = [verdict_line(res), "",
           f"Base {inline(res.base[:10])} ({inline(res.base_ref)}) → head {inline(res.head[:10])} "
           f"({inline(res.head_ref)}). "
           f"{c.rounds} rounds (a fresh base and head worker each) x {c.samples} samples per phase a side, "
           f"base and head samples alternating (AB, BA, ...). Per phase: base and head = medians of all "
           f"their samples; ratio = exp(median over rounds of each round's median paired log ratio "
           f"head/base), with the distribution-free confidence interval of that median (its exact coverage "
           f"is given); p = exact two-sided Wilcoxon signed-rank test over the rounds; regression = ratio > "
           f"1 + threshold and p < alpha = {c.alpha}, or the same on each sample's round trip as the gate timed it "
           f"where the reported ratio is at least that one. Config: {inline(c.path or 'built-in')}. "
           f"Wall time {res.wall_s:.1f} s."]
    if res.isolation:
        out += ["", "> **This runner is not isolated**: " + "; ".join(plain(x) for x in res.isolation[:16])
                + ". A pull request's code "
                "could slow the base's samples there unseen: docs/runners.md 4."]
    if res.not_gated:
        out += ["", "> **Only the CPU reference was gated** (`--cpu-only`): not run: " + "; ".join(
            w.spec.label() for w in res.not_gated) + ". A pull request needs the GPU gate too."]
    if res.rules_changed:
        under_test = [f for f in res.rules_changed if f in UNDER_TEST]
        rules = [f for f in res.rules_changed if f not in UNDER_TEST]
        note = []
        if rules:
            note.append("> **This pull request changes the gate's rules or measuring code**: " + ", ".join(
                inline(f) for f in rules) + ". The head's copies were not used: both sides were measured by the "
                "base's harness under the base's rules; the changes apply after merge.")
        if under_test:
            note.append("> It also changes " + ", ".join(inline(f) for f in under_test) + ", which times the "
                        "phases from inside the code under test: the head's own copy timed the head. Review it.")
        out[2:2] = ["\n>\n".join(note), ""]
    for oc in res.outcomes:
        out += ["", f"### {oc.config.spec.label()}", "",
                f"Variant `{oc.config.spec.opts}`: {describe(oc.config.spec.opts)}."]
        gpus = {(rd[s].get("gpu") or {}).get("name") for rd in oc.rounds for s in ("base", "head")} - {None}
        if gpus:
            rd0 = next(rd[s]["gpu"] for rd in oc.rounds for s in ("base", "head") if rd[s].get("gpu"))
            out.append(f"GPU {inline(rd0.get('name'))}, driver {inline(rd0.get('driver'))}, max SM clock "
                       f"{inline(rd0.get('max_sm_clock_mhz'))} MHz; "
                       f"{oc.discards} samples discarded (throttled or contended) and retaken.")
        if oc.status != "ok":
            out += ["", f"**{_STATUS.get(oc.status, oc.status)}**:", "", fenced(oc.message)]
            if oc.status == "error" and oc.message.startswith("head") and any(
                    f not in UNDER_TEST and f != "perf-gate.toml" for f in res.rules_changed):
                out += ["", "> The head failed under the base's measuring code, which it changes: where the two "
                            "no longer fit, land the harness change on its own first, then this change."]
            continue
        energy = energy_per_call(oc)
        short = energy_too_short(oc)
        if energy or short:
            out.append("Energy per call (NVML, trusted samples): " + ("; ".join(
                f"`{a}` {b:.3g} J → {h:.3g} J" for a, (b, h) in energy.items()) or "none resolved")
                + (f" (not shown, shorter than the counter's resolution: {', '.join(short)})" if short else "")
                + ".")
        spent = round_times(oc)
        if spent:
            out.append(rounds_line(*spent))
        cost = sampling_cost(oc)
        if cost:
            gate_read = getattr(oc, "guard_by", None) == "gate"     # the CPU workload: no NVML read at all
            host_only = oc.config.spec.backend == "cpu"
            out.append(sampling_line(*cost[:5], None if host_only else cost[5], guard_outside=gate_read or host_only))
        idle, where = rival_idle(oc)
        stopped = idle_stopped(oc)
        if idle:
            how = ("stopped (SIGSTOP) beside each of them in every round" if stopped else
                   "not stopped in every round; it waits on its pipe, a GPU worker's driver thread wakes")
            out.append(f"Beside the samples, the idle rival ran (CPU ms, median / most; {how}): "
                       + "; ".join(f"`{a}` {m:.2f} / {x:.2f}" for a, (m, x, _) in idle.items())
                       + (f"; the most of a round beside {inline(where)}." if where else "."))
        other = foreign_work(oc)
        if other:
            out.append("On the sampling CPU, other work ran while the sampling thread waited (ms, median / most; its "
                       "run delay less its worker's other threads): "
                       + "; ".join(f"`{a}` {m:.2f} / {x:.2f}" for a, (m, x, _) in other.items()) + ".")
        held = per_sample_ms(oc, "held_ms")
        if held:
            out.append("Across its timed calls the sampling thread was held by other work (ms, median / most): "
                       + "; ".join(f"`{a}` {m:.2f} / {x:.2f}" for a, (m, x, _) in held.items()) + ".")
        irq = device_interrupts(oc)
        if any(x for sides in irq.values() for _, x in sides.values()):
            out.append("Device interrupts served on the sampling CPU during a sample (median / most, base; head: "
                       "their handlers' time is charged to the sample, seen by no other read): " + _sides_line(irq)
                       + ".")
        steal = per_side(oc, "steal_ms")
        if any(x for sides in steal.values() for _, x in sides.values()):
            out.append("The hypervisor took the sampling CPU during a sample (steal, ms in clock ticks, median / "
                       "most, base; head: this runner is a virtual machine whose host ran other work; the thread's "
                       "reads call it held or away): " + _sides_line(steal, ".0f") + ".")
        waits = per_side(oc, "device_wait_us")
        if waits:
            out.append("Device probes around a GPU sample waited past their launch (us, median / most, base; head: "
                       "another context's work on the GPU, unseen by the sample's events): " + _sides_line(waits, ".0f")
                       + ".")
        elif oc.rounds and oc.config.spec.backend != "cpu":
            out.append("Other contexts' work on the GPU around a sample: **not measured** (the base's harness is from "
                       "before the device probe): kernels a worker left running past its reply cannot be told from "
                       "the code's.")
        if oc.rounds and not other and not held:
            out.append("Other work on the sampling CPU: **not measured** (no per-thread run delay on this kernel): "
                       "work beside one side's samples cannot be told from the code's.")
        pre = preempted_samples(oc)
        if any(k for k, _ in pre.values()):
            out.append("Switched out while timed (the sampling thread preempted on its CPU; a host-paced phase's "
                       "events count the wait): " + "; ".join(f"`{a}` {k} of {n} samples"
                                                            for a, (k, n) in pre.items() if k) + ".")
        level = min((x.ci_level for x in oc.comparisons), default=float("nan"))
        rows = [[f"`{x.area}`", fmt_s(x.base_s), fmt_s(x.head_s), f"{x.ratio:.3f}",
                 f"{x.ci_low:.3f} – {x.ci_high:.3f}", f"{x.p_value:.2g}", _threshold(x),
                 _detectable(x), _VERDICT.get(x.verdict, x.verdict) + (" (gate's clock)" if _clocked(x) else "")]
                for x in oc.comparisons]
        out += ["", tabulate(rows, headers=["phase", "base (median)", "head (median)", "ratio",
                                            f"{level:.1%} CI", "p-value", "threshold", "could flag",
                                            "verdict"],
                             tablefmt="github", disable_numparse=True)]
        notes = threshold_notes(oc)
        if notes:
            out += [""] + notes
        clocked = [x for x in oc.comparisons if _clocked(x)]
        if clocked:
            out += ["", "> " + "; ".join(
                f"`{x.area}`: the reported times read x{x.ratio:.3f} at p={x.p_value:.2g}, the gate's own clock "
                f"(each sample's round trip) x{x.clock_ratio:.3f} at p={x.clock_p:.2g}" for x in clocked) +
                ": past the threshold on both, significant on the clock: a regression, its test the clock's."]
        if any(x.verdict == NOT_RESOLVED for x in oc.comparisons):
            out += ["", "> **not resolved**: no change was seen, but the rounds' spread could not have flagged "
                        "a slowdown as small as the threshold at this alpha (\"could flag\": the smallest one it "
                        "could); more rounds or a quieter runner resolve it."]
        apart = [x for x in oc.comparisons if x.base_s > 0 and not x.ci_low <= x.head_s / x.base_s <= x.ci_high]
        if apart:
            out += ["", "> The two sides' medians disagree with the paired ratio's interval in " + "; ".join(
                f"`{x.area}` (x{x.head_s / x.base_s:.3f})" for x in apart) + ": the rounds differ from each "
                "other (bimodal timings); the verdict follows the paired rounds, gate.json has every sample."]
        mixed = calls_per_sample_differ(oc)
        if mixed:
            out += ["", "> Calls per sample differ between the sides (" + "; ".join(
                f"`{a}` base {b}, head {h}" for a, (b, h) in mixed.items()) + "): a short host phase timed "
                "over more calls runs warmer, so its ratio compares unlike samples."]
    regs = res.regressions()
    if regs and bisect:
        good, bad, note = bisect_range(res)
        out += ["", "### Bisect", ""]
        if good is None:
            out += [note]
        else:
            out += [f"To find the commit{note}, on a runner like this one:", "", "```sh"]
            for o, x in regs:
                out += [bisect_command(o, x.area, good, bad),
                        "# which runs:", asv_find_command(o, x.area, good, bad, res.repo)]
            out += ["```"]
    if res.exit_code == EXIT_ERROR and not any(o.status in ("error", "untrusted") for o in res.outcomes):
        out += ["", "Nothing was judged: every workload was skipped."]
    return "\n".join(out) + "\n"


def calls_per_sample_differ(oc: Outcome) -> dict[str, tuple[int, int]]:
    """area -> (base, head) calls per sample, where the two sides calibrated differently."""
    out = {}
    for rd in oc.rounds:
        for area, a in rd["base"]["areas"].items():
            b, h = a.get("number", 1), rd["head"]["areas"][area].get("number", 1)
            if b != h:
                out[area] = (b, h)
    return out


COMMENT_MARKER = "<!-- cuzk-gate -->"     # the first line of the pull request's one sticky comment
COMMENT_BODY_MAX = 50_000      # of GitHub's 65,536 characters a comment, room left for the links after the report


def _url(url: str | None) -> str | None:
    """A link target from the workflow (https only, nothing that could end the Markdown link)."""
    if not url:
        return None
    if not re.fullmatch(r"https://[^\s()<>\[\]`'\"]+", url):
        raise ValueError(f"not an https URL fit for a link: {url[:100]!r}")
    return url


def graph_url(history_url: str, oc: Outcome, area: str) -> str | None:
    """The published asv graph of this phase at this workload's parameters, where the suite has one."""
    params = asv_params(area, oc.config.spec)
    if params is None or area == "synthesis":
        return None
    try:
        name = time_benchmark(area, oc.config.spec.target(CIRCUIT))
    except KeyError:
        return None
    query = "&".join(f"p-{k}={quote(v, safe='')}" for k, v in zip(("target", "opts"), params))
    return f"{history_url.rstrip('/')}/#{name}?{query}"


def comment(res: GateResult, run_url: str | None = None, history_url: str | None = None) -> str:
    """The pull request's sticky comment: the report without its bisect commands, then links to the full
    run and to each regressed phase's history graph. Rendered from gate.json as data."""
    run_url, history_url = _url(run_url), _url(history_url)
    body = markdown(res, bisect=False).rstrip("\n")
    if len(body) > COMMENT_BODY_MAX:        # GitHub refuses the whole comment: the verdict alone, then the links
        deps = (f". **Not measured**: the head changes {len(res.deps_changed)} dependency files"
                if res.deps_changed else "")
        deps += ". **Not measured**: the head changes the kernels' nvcc flags" if res.build_changed else ""
        body = (f"{_verdict(res)}{deps}\n\nThe full report is {len(body):,} characters, more than a comment holds: it "
                "is in the gate's run.")
    out = [COMMENT_MARKER, body, ""]
    links = []
    if history_url:
        for o, x in res.regressions():
            g = graph_url(history_url, o, x.area)
            if g:
                links.append(f"- `{x.area}` in {o.config.spec.label()}: [its history]({g})")
    if links:
        out += ["Regressed phases on the nightly history:", *links, ""]
    if run_url:
        out += [f"Full report, every sample (gate.json) and the bisect commands: [the gate's run]({run_url})."]
    out.append(f"Judged head {inline(res.head[:10])}; a new push needs the `perf` label again.")
    return "\n".join(out) + "\n"
