"""What the command-line modules share: exit codes, the one-line input error, all-or-nothing output
files, the phase tables, bench's proving context. The parser (main.py) and every subcommand module import
it; it imports none of them."""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

from ..files import file_mode, new_temp, open_input

EXIT_OK, EXIT_INVALID, EXIT_BAD_INPUT = 0, 1, 2
GENERATOR_NAMES = {"bellman": 7, "snarkjs": 5, "7": 7, "5": 5}


class CliError(Exception):
    """A bad-input error: one line, exit code 2."""


def write_atomic(path: str | os.PathLike, text: str) -> None:
    """One output, written to a temp file beside `path` and renamed: no partial file on failure."""
    write_all({path: text})


def check_paths(outputs: dict, inputs: dict | None = None) -> None:
    """Output paths (what -> path) that coincide with each other or with an input path: one error
    before any work, never an output written over another or over what was read."""
    def key(p):
        return os.path.realpath(os.fspath(p))
    seen: dict[str, str] = {}
    for what, path in (inputs or {}).items():
        if path is not None:
            seen.setdefault(key(path), f"input {what}")
    for what, path in outputs.items():
        if path is None:
            continue
        k = key(path)
        if k in seen:
            raise CliError(f"{path}: given as {what} and as {seen[k]}: one file would overwrite the other")
        seen[k] = f"output {what}"


def write_all(files: dict, say=lambda msg: print(msg, file=sys.stderr)) -> None:
    """Write several outputs all or nothing: temp files first, then renames; on any failure
    remove what was written. Each value is text, bytes, or a callable that writes to a binary file.
    The files get the usual mode (the umask applied: a temp file alone would be 0600), and one line
    says what was written."""
    names, tmps, done, made = [], [], [], []
    mode = file_mode()
    try:
        for path, text in files.items():
            path = Path(path)
            for d in reversed([path.parent, *path.parent.parents]):
                if not d.exists():
                    d.mkdir()
                    made.append(d)
            fd = new_temp(path, names)           # registered before a signal can land
            tmps.append((names[-1], path))
            if callable(text):
                with os.fdopen(fd, "wb") as f:
                    text(f)
            else:
                with os.fdopen(fd, "wb" if isinstance(text, bytes) else "w") as f:
                    f.write(text)
        for tmp, _ in tmps:
            os.chmod(tmp, mode)
        for tmp, path in tmps:
            os.replace(tmp, path)
            done.append(path)
    except BaseException:
        for tmp in names:
            if os.path.exists(tmp):
                os.unlink(tmp)
        for path in done:
            path.unlink(missing_ok=True)
        for d in reversed(made):
            try:
                d.rmdir()
            except OSError:
                pass
        raise
    if done and say is not None:
        say("cuzk: wrote " + ", ".join(str(p) for p in done))


def git_commit() -> str | None:
    """HEAD of the checkout the package runs from; CUZK_COMMIT overrides it (a copied tree whose .git
    is not the source's, e.g. on a device machine: tools/device_setup.sh sets it from ..device-commit)."""
    if os.environ.get("CUZK_COMMIT"):
        return os.environ["CUZK_COMMIT"]
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=Path(__file__).resolve().parent,
                             capture_output=True, text=True, timeout=5)
        return out.stdout.strip() or None if out.returncode == 0 else None
    except Exception:
        return None


def _load_json(path: str, what: str, parse=None):
    """The JSON document in `path` (through `parse`, when given): every error one line naming the file."""
    try:
        with open_input(path, "r") as f:
            doc = json.load(f)
    except OSError as e:
        raise CliError(f"{what} {path}: {e.strerror}") from e
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
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


def _kernel_load_times() -> dict:
    """NVRTC compile/load seconds per kernel module (empty on the CPU backend)."""
    mod = sys.modules.get("cuzk.gpu.loader")
    return dict(mod.load_times) if mod is not None else {}


def bench_outputs(args, report: dict, vk, publics, proofs) -> dict:
    """What `bench` (and `bench --pipeline`) writes: --json, --timeline, and with --save the
    verification key and each circuit's proof and public inputs (snarkjs names)."""
    from ..groth16 import vk_to_json
    outputs = {}
    if args.json:
        outputs[args.json] = json.dumps(report, indent=2) + "\n"
    if args.timeline:
        if report.get("pipeline"):               # bench --pipeline: worker, prover and device lanes
            from ..perf.pipeline_plot import pipeline_png as png
        else:
            from ..perf.plots import timeline_png as png
        outputs[args.timeline] = png(report)
    if args.save:
        out = Path(args.save)
        outputs[out / "verification_key.json"] = json.dumps(vk_to_json(vk), indent=1) + "\n"
        for i, (pub, pf) in enumerate(zip(publics, proofs)):
            sfx = "" if i == 0 else f"_{i}"
            outputs[out / f"proof{sfx}.json"] = json.dumps(pf.to_json(), indent=1) + "\n"
            outputs[out / f"public{sfx}.json"] = json.dumps([str(v) for v in pub]) + "\n"
    return outputs


def check_device_keygen(args, backend) -> None:
    """--device-keygen as asked can be met on this backend (context.device_keygen_wanted's rule), checked
    before any synthesis."""
    from ..context import ContextError, device_keygen_wanted
    try:
        device_keygen_wanted(getattr(args, "device_keygen", "off"), backend, 0)
    except ContextError as e:
        raise CliError("--device-keygen on needs the cuda backend") from e


def bench_context(args, backend, r1cs, where: str = ""):
    """bench's ProvingContext (context.py): the key made on the GPU and kept there (--device-keygen),
    or set up through the key cache; says which on stderr (`where`: which device). check_device_keygen
    has run."""
    from ..context import proving_context
    ctx = proving_context(backend, r1cs, args.convention, args.generator,
                          device_keygen=getattr(args, "device_keygen", "off"), keygen_backend=args.keygen_backend,
                          progress=None)
    print(f"key{where}: {ctx.key.describe()}", file=sys.stderr)
    return ctx


def _need_plots() -> None:
    """matplotlib is there (--timeline, --png), checked before any work starts."""
    from ..perf.plots import _plt
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


def report_header(args, backend, r1cs, pk, opts, parallel_synthesis: int, synthesis_pool) -> dict:
    """The first fields of bench's JSON, the same for one batch and --pipeline (docs/architecture.md,
    What a run records)."""
    from .. import __version__
    return {"cuzk_version": __version__, "commit": git_commit(), "backend": backend.name,
            "circuit": {"name": args.circuit, "constraints": r1cs.num_constraints, "domain": 1 << pk.log_n,
                        "circuits": args.circuits, "convention": pk.convention, "generator": pk.generator,
                        "parallel_synthesis": parallel_synthesis, "synthesis_pool": synthesis_pool},
            "optimizations": opts.as_dict()}


def device_memory(kh) -> dict | None:
    """The key handle's device memory by use (CudaKey.memory, with P2's table plan), or None off the GPU."""
    mem = getattr(kh, "memory", None)
    if mem is None:
        return None
    out = mem()
    tb = getattr(kh, "tables", None)
    if tb is not None:
        out["tables"] = {"c": tb.plan.c, "blocks": tb.plan.t, "groups": tb.plan.groups, "made_s": kh.tables_s}
    return out


def device_memory_line(mem: dict) -> str:
    """One line: key, tables, work buffers, of the device's total."""
    g = lambda b: f"{b / 2**30:.2f} GiB"          # noqa: E731
    tb = mem.get("tables")
    tables = "no P2 tables" if tb is None else \
        f"P2 tables {g(mem['table_bytes'])} (c = {tb['c']}, {tb['blocks']} blocks, {tb['groups']} groups, made in " \
        f"{tb['made_s']:.1f} s)"
    return (f"device memory: key {g(mem['key_bytes'])}, {tables}, work buffers {g(mem['work_bytes'])} (pool beyond "
            f"them, at its peak), of {g(mem['device_total_bytes'])}")
