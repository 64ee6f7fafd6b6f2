"""Other work on the sampling CPU, judged: how much of a phase's threshold it could have moved.

Per sample, gate.json keeps `foreign_ms`: the time the sampling thread waited, runnable, while something that is
not its worker ran on its CPU (gate.foreign_ms). Whoever that was (another job, a process the measured code left
out of the gate's sight) it slowed that sample. The gate judges a phase on medians, so work beside a few samples
moves little; work beside most of one side's samples moves that side's median by up to what it took. The rule:
at the 75th percentile of a side's samples of a phase, the foreign time may be at most `share` of the phase's
threshold, taken of its median sample (a sample's calls, not one call). Past it, the comparison is not the
code's alone, and the workload is untrusted.

An honest H200 runner at porep_partition 2^24 reads at most 0.16% of a phase's median sample there, a quarter of
a 1% threshold being 0.25% (docs/perf-log.md, 2026-12-04).

Work beside fewer than a quarter of a side's samples escapes that rule, yet beside most of one round's samples it
moves that round's median, and one round turned over is enough to lift the signed-rank test's p past alpha (at
8 rounds: 3 of 24 samples). So each round is judged apart too, on what the sampling thread itself read across
its timed calls (sched_window): at a round's median sample, its time held by others' work (and, in a host-timed
phase of a workload without a device, its time away: a stop, a sleep) may be at most the same `share` of the
threshold.

One more thing slows a sample unseen by those reads: a device's interrupt served on the sampling CPU, its handler's
time charged to whatever thread it interrupted (a process on another CPU can cause them: a disk's completions).
The gate counts them around each sample (isolation.device_interrupt_count); at a round's median sample, that count
times a handler's cost (`[trust] irq_cost_us`) may be at most the same `share` of the threshold. An honest H200
serves none beside the median sample (docs/perf-log.md, 2026-12-04); a storm that moves a median by a threshold's
quarter takes thousands a second (14 us each measured on a virtio disk's completions).

On a virtual machine the host may run other work on the sampling CPU while the sampling thread has work (steal):
the thread's reads see it as held or away, and the checks above judge it so; the gate also reads the CPU's steal
around each sample (isolation.steal_ns) and a check's line says so where steal makes up half of what it found.

And on the GPU: work a worker's process queued and left running past its reply (a stopped process's kernels run
on), or a kernel it left resident, is time-sliced with the next sample's and slows it, seen by neither side's
events. Each GPU sample is bracketed by device probes in the worker's harness (device_probe.py: the base's on
both sides); a probe that waits more than `[trust] max_device_wait_us` past its launch found another context's
work ahead of it. Beside more than DEVICE_WAIT_SHARE of a side's samples of a phase (and more than one), the
comparison is not the code's alone. A head that spoils its own figures only voids its own gate.
"""
from __future__ import annotations

import statistics

import numpy as np

from .values import numbers

QUANTILE = 0.75
DEFAULT_SHARE = 0.25
DEFAULT_IRQ_COST_US = 10.0      # a device interrupt's handler, under the 14 us measured (docs/runners.md 4)
# A probe alone on the GPU waits for its launch (tens of us); behind another context's work, for that context's
# time slice (milliseconds). The bound sits between; the device's honest level is in gate.json's device_wait_us.
DEFAULT_DEVICE_WAIT_US = 300.0  # 2.5x the most honest A/A gates read (120 us); a slice: ~2,200 us
DEVICE_WAIT_SHARE = 0.01        # of a side's samples of a phase: a host hiccup now and then is not another context


def foreign_share(rounds: list[dict], side: str, area: str) -> float | None:
    """A side's foreign time at QUANTILE of its samples of area, as a share of its median sample (number calls);
    None where no sample carries the figure (a kernel without run delay, a gate.json from before it)."""
    fs: list[float] = []
    ts: list[float] = []
    for rd in rounds:
        ar = rd.get(side, {}).get("areas", {}).get(area)
        if not ar:
            continue
        ts += [x * ar.get("number", 1) for x in ar["samples"]]     # positive and finite: checked on arrival
        fs += numbers(ar.get("foreign_ms"))
    if not fs or not ts:
        return None
    median_s = statistics.median(ts)
    return float(np.quantile(fs, QUANTILE)) / 1e3 / median_s


def steal_share(ars: list[dict]) -> float | None:
    """The hypervisor's steal on the sampling CPU over these samples (one side's, of one phase) as a share of their
    time (number calls each), summed: the count moves in clock ticks, so only a sum reads it fairly; None where a
    sample lacks it (not pinned, no /proc/stat, a gate.json from before it)."""
    stolen, spent = 0.0, 0.0
    for ar in ars:
        xs, st = ar.get("samples") or [], ar.get("steal_ms") or []
        if not xs or len(numbers(st)) != len(xs):
            return None
        stolen += sum(st) / 1e3
        spent += sum(x * ar.get("number", 1) for x in xs)
    return stolen / spent if spent > 0 else None


def _stolen(ars: list[dict], lost: float) -> str:
    """Where the hypervisor's steal makes up half or more of what a check found lost, the clause that says so."""
    s = steal_share(ars)
    if s is None or s < lost / 2:
        return ""
    return (f"; the hypervisor took {s:.2%} of the sampled time from that CPU (steal): this runner is a virtual "
            f"machine whose host ran other work on its CPU (a runner without steal: docs/runners.md 4)")


# the words of the two CPU rules that find the sampling thread's CPU taken by work the gate does not own: a caller
# that must tell these verdicts from others (a test run again where its runner's own work spoke) matches them
FOREIGN_WORDS = "other work took the sampling CPU"
HELD_WORDS = "held by other work"


def foreign_excess(rounds: list[dict], area: str, threshold: float, share: float) -> str | None:
    """Why area's comparison is not the code's alone (one line), or None: the first side whose foreign time
    passes share of threshold."""
    most = share * threshold
    for side in ("base", "head"):
        f = foreign_share(rounds, side, area)
        if f is not None and f > most:
            ars = [ar for rd in rounds if (ar := rd.get(side, {}).get("areas", {}).get(area))]
            return (f"phase {area}: beside {side}'s samples {FOREIGN_WORDS}, "
                    f"{f:.2%} of the median sample at the {QUANTILE * 100:.0f}th percentile (most allowed: {most:.2%}, "
                    f"[trust] max_foreign_share {share:g} of the {threshold:.2%} threshold), not its worker's "
                    f"threads: another job on the runner's CPU, a process out of the gate's sight, or the kernel's "
                    f"work for the worker; its timings are not the code's alone{_stolen(ars, f)}")
    return None


def round_lost(ar: dict, on_device: bool = False) -> list[float] | None:
    """Per sample of one side's round of a phase, the time not its worker's own across the timed calls, as a share
    of the sample: held, and away where the phase is host-timed with no device (on_device: the workload's; its
    thread may sleep on the device, host-timed phases too: measured on the H200, docs/perf-log.md); None where a
    sample lacks the figure (a worker from before it, a kernel without run delay)."""
    held, away = ar.get("held_ms") or [], ar.get("away_ms") or []
    xs = ar["samples"]
    if len(held) != len(xs) or len(numbers(held)) != len(xs):
        return None
    host = ar.get("timed_by") == "host" and not on_device
    if host and len(numbers(away)) != len(xs):
        return None
    n, extra = ar.get("number", 1), away if host else [0.0] * len(xs)
    return [(h + a) / 1e3 / (x * n) for h, a, x in zip(held, extra, xs)]


def round_excess(rounds: list[dict], area: str, threshold: float, share: float, on_device: bool = False) -> str | None:
    """Why area's comparison is not the code's alone (one line), or None: the first round and side whose median
    sample lost more than share of threshold to what was not its worker (on_device: round_lost's)."""
    most = share * threshold
    for r, rd in enumerate(rounds):
        for side in ("base", "head"):
            ar = rd.get(side, {}).get("areas", {}).get(area)
            lost = round_lost(ar, on_device) if ar else None
            if lost and statistics.median(lost) > most:
                what = f"{HELD_WORDS} or away (stopped, interrupted)" \
                    if ar.get("timed_by") == "host" and not on_device else HELD_WORDS
                return (f"phase {area}: in round {r + 1}, {side}'s sampling thread was {what} for "
                        f"{statistics.median(lost):.2%} of its median sample across the timed calls (most allowed: "
                        f"{most:.2%}, [trust] max_foreign_share {share:g} of the {threshold:.2%} threshold): that "
                        f"round's median is not the code's alone{_stolen([ar], statistics.median(lost))}")
    return None


def round_interrupts(rounds: list[dict], area: str, threshold: float, share: float,
                     cost_us: float = DEFAULT_IRQ_COST_US) -> str | None:
    """Why area's comparison is not the code's alone (one line), or None: the first round and side whose median
    sample served device interrupts on its CPU worth more than share of threshold at cost_us each. A round and side
    without the count on every sample is not judged here (the gate untrusts a count lost mid-run)."""
    most = share * threshold
    if cost_us <= 0:
        return None
    for r, rd in enumerate(rounds):
        for side in ("base", "head"):
            ar = rd.get(side, {}).get("areas", {}).get(area)
            xs, irqs = (ar or {}).get("samples") or [], (ar or {}).get("irqs") or []
            if not xs or len(irqs) != len(xs) or not all(isinstance(k, int) and not isinstance(k, bool)
                                                         for k in irqs):
                continue
            n = ar.get("number", 1)
            shares = [k * cost_us / 1e6 / (x * n) for k, x in zip(irqs, xs)]
            if statistics.median(shares) > most:
                k = statistics.median(irqs)
                return (f"phase {area}: in round {r + 1}, {side}'s median sample served {k:g} device interrupts on "
                        f"the sampling CPU, {statistics.median(shares):.2%} of it at {cost_us:g} us each (most "
                        f"allowed: {most:.2%}, [trust] max_foreign_share {share:g} of the {threshold:.2%} threshold, "
                        f"irq_cost_us {cost_us:g}): their handlers' time is charged to the sample; a device's "
                        f"interrupts are routed to the sampling CPU (docs/runners.md 4) and something made them "
                        f"beside that round")
    return None


def device_waits(rounds: list[dict], area: str, most_us: float) -> str | None:
    """Why area's comparison is not the code's alone (one line), or None: a side whose device probes waited more
    than most_us beside more than DEVICE_WAIT_SHARE of its samples (and more than one), those of pairs the guard
    rejected counted too (work left running past a reply may be what tripped it): another context's work was on
    the GPU around them. A side whose figure is missing beside some samples and not others lost them, and one
    side without any where the other has them dropped its probes (both run the base's harness, which reports one
    for every GPU sample or, from before it, none); most_us 0: not judged."""
    if most_us <= 0:
        return None
    read = {}
    for side in ("base", "head"):
        ars = [(rd.get(side, {}).get("areas", {}).get(area) or {}) for rd in rounds]
        waits = [x for ar in ars for x in ar.get("device_wait_us") or []]
        out_all = [x for ar in ars for x in ar.get("rejected_device_wait_us") or []]
        out, got = numbers(out_all), numbers(waits)
        read[side] = bool(got)
        if not got:
            continue
        if len(got) + len(out) != len(waits) + len(out_all):
            lost = len(waits) + len(out_all) - len(got) - len(out)
            return (f"phase {area}: {lost} of {side}'s device probes are missing beside its samples, where the "
                    f"others were read: other work on the GPU beside them cannot be told from the code's")
        over = [x for x in got + out if x > most_us]
        if len(over) > max(1, DEVICE_WAIT_SHARE * (len(got) + len(out))):
            rejected = sum(1 for x in out if x > most_us)
            return (f"phase {area}: {side}'s device probes waited more than {most_us:g} us beside {len(over)} of its "
                    f"{len(got) + len(out)} samples{f' ({rejected} of them rejected by the guard)' if rejected else ''}"
                    f" (most {max(over):.0f} us; allowed: {DEVICE_WAIT_SHARE:.0%} of them, [trust] "
                    f"max_device_wait_us): another context's work was on the GPU around them, a worker's kernels "
                    f"left running past its reply")
    if read["base"] != read["head"]:
        gone = "head" if read["base"] else "base"
        return (f"phase {area}: {gone}'s device probes are missing where the other side's were read (both sides run "
                f"the base's harness): its samples' neighbours on the GPU cannot be told")
    return None
