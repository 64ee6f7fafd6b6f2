"""What on this machine can slow a worker's samples out of the gate's sight, read once before a gate runs.

The gate stops the idle worker, watches its processes and reads what ran on the sampling CPU; two things stay out
of those reads, and only the runner's set-up removes them (docs/runners.md 4):
- device interrupts routed to the sampling CPU: a process on another CPU can make the device interrupt there (a
  disk's completions, a NIC's packets) and the handler's time is charged to whatever thread it interrupted;
- a tracer: the workers are not dumpable (the gate's boot), so no process of the gate's user may stop them through
  ptrace, unless it holds CAP_SYS_PTRACE: root does.
Each found is one line for the report; none is a verdict (the CI machines that run the tests have both).
"""
from __future__ import annotations

import os
import re
from pathlib import Path

PER_CPU_QUEUE = re.compile(r"nvme\d+q\d+")      # an NVMe queue: per CPU, or shared by several where fewer
_AFFINITY: dict = {}                              # (proc, irq) -> the CPUs it may be served on (root changes it)


def cpu_list(text: str) -> set[int]:
    """"0-3,8" -> {0, 1, 2, 3, 8}; an empty or unreadable list is no CPU."""
    out: set[int] = set()
    for part in text.strip().split(","):
        lo, _, hi = part.partition("-")
        if lo.strip().isdigit() and (not hi or hi.strip().isdigit()):
            out.update(range(int(lo), int(hi or lo) + 1))
    return out


def _affinity(proc: str, irq: str, files: tuple[str, ...]) -> set[int]:
    """An interrupt line's CPUs from the first of /proc/irq/N's files that reads; empty where none does."""
    for f in files:
        try:
            return cpu_list(Path(proc, "irq", irq, f).read_text())
        except OSError:
            continue
    return set()


def _allowed(proc: str, irq: str) -> set[int]:
    """The CPUs an interrupt line may be served on (smp_affinity_list, else effective_affinity_list), read once:
    the per-sample count asks it of every NVMe queue."""
    if (proc, irq) not in _AFFINITY:
        _AFFINITY[(proc, irq)] = frozenset(_affinity(proc, irq, ("smp_affinity_list", "effective_affinity_list")))
    return set(_AFFINITY[(proc, irq)])


def _interrupt_lines(proc: str, own=None) -> list[tuple[str, str, dict[int, int]]] | None:
    """/proc/interrupts' device lines (numbered: not the local timer or the IPIs): [(irq, name, {cpu: served so
    far})]; None where unreadable. An NVMe queue that may be served on none but `own` (the sampling CPUs) is left
    out: it answers requests made there, the worker's own; one shared with other CPUs (fewer queues than CPUs)
    answers theirs too, and is kept."""
    try:
        lines = Path(proc, "interrupts").read_text().splitlines()
    except OSError:
        return None
    if not lines:
        return None
    columns = [int(c[3:]) for c in lines[0].split() if c.startswith("CPU") and c[3:].isdigit()]
    out = []
    for line in lines[1:]:
        head, _, rest = line.partition(":")
        if not head.strip().isdigit():
            continue
        fields = rest.split()
        name = fields[-1] if len(fields) > len(columns) else "?"
        allowed = _allowed(proc, head.strip()) if PER_CPU_QUEUE.fullmatch(name) and own else set()
        if not (allowed and allowed <= set(own)):
            out.append((head.strip(), name, {c: int(n) for c, n in zip(columns, fields[:len(columns)]) if n.isdigit()}))
    return out


def device_interrupts_on(cpus, proc: str = "/proc") -> list[str]:
    """Device interrupt lines (_interrupt_lines) that were served on any of cpus and may be again (their effective
    affinity includes one), busiest first, as "name (irq N, M served there so far)"."""
    want, got = set(cpus), _interrupt_lines(proc, cpus)
    found = []
    for irq, name, counts in got or []:
        served = sum(n for c, n in counts.items() if c in want)
        aff = _affinity(proc, irq, ("effective_affinity_list", "smp_affinity_list"))    # where it is served now
        if served and aff & want:
            found.append((served, f"{name} (irq {irq}, {served} served there so far)"))
    return [text for _, text in sorted(found, key=lambda f: -f[0])]


def device_interrupt_count(cpus, proc: str = "/proc") -> int | None:
    """Device interrupts (_interrupt_lines) served so far on cpus; None where not pinned or unreadable. Read around
    each sample: the kernel here charges a handler's time to the thread it interrupted, so the count is what tells
    of a storm beside one side's samples."""
    got = _interrupt_lines(proc, cpus) if cpus else None
    if got is None:
        return None
    want = set(cpus)
    return sum(n for _, _, counts in got for c, n in counts.items() if c in want)


def steal_ns(cpus, proc: str = "/proc") -> int | None:
    """ns the hypervisor has run other work on cpus so far while they had work of their own (/proc/stat's steal,
    in clock ticks); None where not pinned or unreadable. A virtual machine's vCPU taken away while the sampling
    thread runs is neither its CPU time nor its run delay (the kernel leaves steal out of a task's clock): the
    sample's wall time grows, and the thread's reads call it away or held."""
    if not cpus:
        return None
    try:
        lines = Path(proc, "stat").read_text().splitlines()
    except OSError:
        return None
    want, ticks, seen = {f"cpu{c}" for c in cpus}, 0, 0
    for line in lines:
        fields = line.split()
        if fields and fields[0] in want and len(fields) > 8 and fields[8].isdigit():
            ticks += int(fields[8])
            seen += 1
    if seen != len(want):
        return None
    return ticks * 1_000_000_000 // os.sysconf("SC_CLK_TCK")


def exposure(cpus, proc: str = "/proc", euid: int | None = None) -> list[str]:
    """One line per way this machine lets a sample be slowed unseen; [] where none is found."""
    out = []
    if cpus:
        irqs = device_interrupts_on(cpus, proc)
        if irqs:
            shown = ", ".join(irqs[:4]) + (f" and {len(irqs) - 4} more" if len(irqs) > 4 else "")
            out.append(f"device interrupts are served on the sampling CPU{'s' if len(cpus) > 1 else ''} "
                       f"({', '.join(map(str, cpus))}): {shown}; their handlers' time is not seen by the gate's "
                       f"reads (route them elsewhere: /proc/irq/N/smp_affinity_list)")
    if (os.geteuid() if euid is None else euid) == 0:
        out.append("the gate runs as root: the measured code, run as the same user, may trace and stop a worker "
                   "(CAP_SYS_PTRACE passes its not-dumpable guard); run the gate as a user of its own")
    return out
