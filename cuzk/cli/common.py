"""What the command-line modules share: exit codes, the one-line input error, all-or-nothing output
files, the phase tables, bench's proving context. The parser (main.py) and every subcommand module import
it; it imports none of them."""
from __future__ import annotations

import argparse
import json
import math
import os
import sys

from ..circuits import MAX_CIRCUITS
from ..files import OutputError, check_outputs, read_input, write_outputs
from ..perf.changepoint import MIN_POINTS
from ..perf.plots import _plt

EXIT_OK, EXIT_INVALID, EXIT_BAD_INPUT = 0, 1, 2
GENERATOR_NAMES = {"bellman": 7, "snarkjs": 5, "7": 7, "5": 5}
# The largest vk / public / proof JSON read. A vk's IC point is ~300 bytes pretty-printed (indent 4) and a
# public value ~85, so this holds ~220k public inputs; nPublic is a u32, so the format itself bounds nothing
MAX_JSON_INPUT_BYTES = 64 << 20


class CliError(Exception):
    """A bad-input error: one line, exit code 2."""


def write_atomic(path: str | os.PathLike, text: str) -> None:
    """One output, by the output rule (files.py): no partial file on failure."""
    write_all({path: text})


def check_paths(outputs: dict, inputs: dict | None = None) -> None:
    """A command's outputs (role -> path) checked before any work by the output rule (files.py): each
    writable, none the same file as another output or an input (role -> path). One error line naming
    the path and both roles."""
    try:
        check_outputs(outputs, inputs)
    except OutputError as e:
        raise CliError(str(e)) from e


def to_stderr(msg: str) -> None:
    """A progress or status line, on stderr (stdout keeps the tables)."""
    print(msg, file=sys.stderr)


def write_all(files: dict, say=to_stderr) -> None:
    """Write several outputs all or nothing, by the output rule (files.py: atomic renames for files,
    written through links, direct writes to devices and FIFOs, a lock across a set's renames). Each
    value is text, bytes, a callable that writes to a binary file, or a PathWriter. One line says what
    was written."""
    try:
        done = write_outputs(files)
    except OutputError as e:
        raise CliError(str(e)) from e
    if done and say is not None:
        say("cuzk: wrote " + ", ".join(done))


def _load_json(path: str, what: str, parse=None, limit: int = MAX_JSON_INPUT_BYTES):
    """The JSON document in `path` (through `parse`, when given): every error one line naming the file.
    A file over `limit` bytes is refused on its size, before any of it is read."""
    try:
        doc = json.loads(read_input(path, limit))
    except OSError as e:
        raise CliError(f"{what} {path}: {e.strerror}") from e
    except ValueError as e:              # JSONDecodeError, UnicodeDecodeError, an integer past int's digit limit
        raise CliError(f"{what} {path}: malformed JSON ({e})") from e
    except RecursionError as e:
        raise CliError(f"{what} {path}: malformed JSON (nested too deeply)") from e
    if parse is None:
        return doc
    try:
        return parse(doc)
    except RecursionError as e:
        raise CliError(f"{what} {path}: nested too deeply") from e
    except ValueError as e:
        raise CliError(f"{what} {path}: {e}") from e


def _fmt_s(v) -> str:
    return "-" if v is None else f"{v * 1e3:10.2f}"


def _fmt_mib(v) -> str:
    return "-" if v is None else f"{v / 2**20:.1f}"


def phase_table(phases: dict, total_s: float) -> str:
    """Per phase: times, the host peak RSS (the phase's own where the timer reset the counter at each
    phase, else the process's so far: the column says which), and the device pool's size (its peak:
    the pool keeps what it freed) at the phase's end."""
    own = phases and all(r.get("peak_host_scope") == "phase" for r in phases.values())
    host_col = "phase host MiB" if own else "peak host MiB"
    lines = [f"{'phase':<16}{'impl':<6}{'host ms':>11}{'device ms':>11}{host_col:>16}{'peak dev MiB':>14}"]
    for name, r in phases.items():
        lines.append(f"{name:<16}{r['impl']:<6}{_fmt_s(r['host_s']):>11}{_fmt_s(r['device_s']):>11}"
                     f"{_fmt_mib(r['peak_host_bytes']):>16}{_fmt_mib(r.get('peak_device_bytes')):>14}")
    lines.append(f"{'total':<16}{'':<6}{_fmt_s(total_s):>11}")
    subs = substeps(phases)
    if subs:
        lines.append("sub-steps (ms, summed over circuits; device time where recorded):")
        lines += [f"  {name}: " + ", ".join(f"{lab} {t * 1e3:.2f}" for lab, t in d.items()) for name, d in subs.items()]
    return "\n".join(lines)


def substeps(phases: dict) -> dict:
    """{phase: {label: seconds}} from the labelled per-circuit spans (device duration where both
    events were read, else host), in first-seen order."""
    out = {}
    for name, r in phases.items():
        d = {}
        for c in r.get("circuits", []):
            lab = c.get("label")
            if lab is None:
                continue
            if c.get("device_start_s") is not None and c.get("device_stop_s") is not None:
                t = c["device_stop_s"] - c["device_start_s"]
            elif c.get("stop_s") is not None:
                t = c["stop_s"] - c["start_s"]
            else:
                continue
            d[lab] = d.get(lab, 0.0) + t
        if d:
            out[name] = d
    return out


def keygen_table(info: dict) -> str:
    """GPU keygen's steps: seconds, device pool and host peak after each."""
    lines = [f"{'keygen step':<26}{'s':>9}{'dev pool MiB':>14}{'peak host MiB':>15}"]
    for name, r in info["steps"].items():
        lines.append(f"{name:<26}{r['s']:9.2f}{_fmt_mib(r.get('device_bytes')):>14}"
                     f"{_fmt_mib(r.get('peak_host_bytes')):>15}")
    lines.append(f"{'keygen total':<26}{info['s']:9.2f}   key on the GPU: {info['key_device_bytes'] / 2**30:.2f} GiB, "
                 f"B points {info['b_points']} of {info['num_vars']}")
    return "\n".join(lines)


def _need_plots() -> None:
    """matplotlib is there (--timeline, --png), checked before any work starts."""
    try:
        _plt()
    except RuntimeError as e:
        raise CliError(str(e)) from e


def _err(msg: str) -> None:
    print(f"cuzk: error: {msg}", file=sys.stderr)


def _generator(s: str) -> int:
    if s not in GENERATOR_NAMES:
        raise argparse.ArgumentTypeError(f"generator must be one of {', '.join(GENERATOR_NAMES)}")
    return GENERATOR_NAMES[s]


def device_memory_line(mem: dict) -> str:
    """One line: key, tables, work buffers, of the device's total."""
    g = lambda b: f"{b / 2**30:.2f} GiB"          # noqa: E731
    tb = mem.get("tables")
    tables = "no P2 tables" if tb is None else \
        f"P2 tables {g(mem['table_bytes'])} (c = {tb['c']}, {tb['blocks']} blocks, {tb['groups']} groups, made in " \
        f"{tb['made_s']:.1f} s)"
    return (f"device memory: key {g(mem['key_bytes'])}, {tables}, work buffers {g(mem['work_bytes'])} (pool beyond "
            f"them, at its peak), of {g(mem['device_total_bytes'])}")


# --- argument types shared by the parsers ---

def pvalue_arg(text: str) -> float:
    """--max-pvalue: 0 < P <= 1 (a NaN threshold passes no test: "no change points")."""
    x = _float_arg(text)
    if not 0 < x <= 1:
        raise argparse.ArgumentTypeError(f"{text!r}: needs 0 < P <= 1")
    return x


def magnitude_arg(text: str) -> float:
    """--min-magnitude: finite and >= 0."""
    x = _float_arg(text)
    if not (math.isfinite(x) and x >= 0):
        raise argparse.ArgumentTypeError(f"{text!r}: needs a finite M >= 0")
    return x


def window_arg(text: str) -> int:
    """--window: an integer >= MIN_POINTS (a shorter window cannot hold a change)."""
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: not an integer") from None
    if n < MIN_POINTS:
        raise argparse.ArgumentTypeError(f"{text!r}: needs an integer >= {MIN_POINTS}")
    return n


def circuits_arg(text: str) -> int:
    """--circuits: an integer from 1 to MAX_CIRCUITS, refused at parse time."""
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: not an integer") from None
    if not 1 <= n <= MAX_CIRCUITS:
        raise argparse.ArgumentTypeError(f"{text!r}: needs 1 <= N <= {MAX_CIRCUITS} (one batch's witnesses are "
                                         f"held at once)")
    return n


def _float_arg(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: not a number") from None
