"""`cuzk gate`: the per-phase performance gate of a pull request (logic in cuzk/perf/)."""
from __future__ import annotations

import contextlib
import json
import os
import sys
import tempfile
from pathlib import Path

from .. import nvml
from ..files import OutputError, append_output, resolve_output
from ..perf import checkout, gate, gate_config, noise, report
from .common import EXIT_BAD_INPUT, CliError, _err, check_paths, write_all

OUT_FILES = ("report.md", "gate.json")
NOISE_FILE = "gate-noise.jsonl"


def check_out_dir(out: str | Path, names=OUT_FILES, inputs: dict | None = None) -> None:
    """--out must take the gate's files, checked before any sample: by the output rule (cuzk/files.py: kinds,
    links, distinct from the inputs), and by writing (and removing) a probe there, since a permission check
    alone passes for root where nothing can be created (/proc). Nothing is left behind."""
    out = Path(out)
    made = []
    try:
        for d in reversed([out, *out.parents]):
            if not d.exists():
                d.mkdir()
                made.append(d)
        if not out.is_dir():
            raise CliError(f"gate: --out {out}: not a directory")
        check_paths({f"--out {n}": out / n for n in names}, inputs)
        fd, probe = tempfile.mkstemp(dir=out, prefix=".cuzk-probe-")
        os.close(fd)
        os.unlink(probe)
    except OSError as e:
        raise CliError(f"gate: --out {out}: cannot write there ({e.strerror or e})") from e
    finally:
        for d in reversed(made):
            with contextlib.suppress(OSError):
                d.rmdir()


def clear_out_dir(out: str | Path, names) -> None:
    """A measuring run's own files taken out of --out before its first sample: a gate killed, or failing
    before its verdict, must not leave an earlier run's gate.json to be read as this one's. What is removed is what
    the write would replace (the output rule: a link's target, never the link, a FIFO or a device)."""
    for n in names:
        p = Path(out) / n
        try:
            o = resolve_output(p)
            if o.stream:            # a FIFO or device holds no earlier run's file: it stays, to be written
                continue
            os.unlink(o.target)     # a link's target, as the write goes through the link: the link stays
        except FileNotFoundError:
            pass
        except OSError as e:
            raise CliError(f"gate: --out {p}: cannot remove the earlier run's file ({e.strerror or e})") from e


def noise_thresholds(args, cfg) -> None:
    """cfg's thresholds from measured A/A noise: --noise files, else the history's records of --machine;
    neither: the config's stand (the report says so). A record that is not one is exit 2, naming it."""
    try:
        if args.noise:
            records, where = noise.load_paths(args.noise, args.machine), " given by --noise"
        elif args.machine:
            from ..perf.history import NOISE_DIRS, noise_refs
            records, where = [], ""
            for folder in NOISE_DIRS:      # derive() keeps those of the config's sampling
                got, at = noise.from_history(args.repo, args.machine, noise_refs(), folder)
                records, where = records + got, where or at
            where = f" of {args.machine}{where}"
        else:
            return
    except noise.NoiseError as e:
        raise CliError(f"gate: {e}") from e
    gpu = nvml.device_name() if any(w.spec.backend != "cpu" for w in cfg.workloads) else None
    cfg.derived = noise.derive(cfg, records, where, gpu)
    used = sum(t.source == "noise" for t in cfg.derived.values())
    print(f"cuzk gate: {len(records)} A/A noise records{where}; {used} of {len(cfg.derived)} phase thresholds "
          f"derived from them", file=sys.stderr)


def cmd_gate(args) -> int:
    """Exit 0 no regression, 1 a regression, 2 anything that could not be judged."""
    if args.machine is None:
        args.machine = os.environ.get("CUZK_MACHINE")
    summary = os.environ.get("GITHUB_STEP_SUMMARY")
    if args.comment and not args.from_json:
        raise CliError("gate: --comment renders a saved gate.json: give --from-json GATE.json")
    if args.calibrate:
        if args.from_json or args.noise:
            raise CliError("gate: --calibrate measures A/A under the config's thresholds: no --from-json or --noise")
        if not (args.out and args.machine and args.base):
            raise CliError("gate: --calibrate needs --base, --out DIR and --machine NAME (or $CUZK_MACHINE)")
        if not noise.machine_name_ok(args.machine):    # before the rounds, not after them: the record names it
            raise CliError(f"gate: --machine {args.machine!r}: {noise.MACHINE_RULE}")
        if args.head and args.head != args.base:
            raise CliError("gate: --calibrate measures --base against itself: leave --head out")
        args.head = args.base
    inputs = {"--from-json": args.from_json, "--config": args.config}
    if args.out:
        names = OUT_FILES + ((NOISE_FILE,) if args.calibrate else ()) if not args.from_json else ("report.md",)
        check_out_dir(args.out, names, inputs)
    if args.comment:
        check_paths({"--comment": args.comment}, inputs)
    if summary and not args.from_json:          # appended to, as GitHub expects, so only its kind is checked
        try:
            resolve_output(summary)
        except OutputError as e:
            raise CliError(f"gate: GITHUB_STEP_SUMMARY: {e}") from e
    try:
        if args.from_json:
            try:
                res = gate.read_json(args.from_json)
            except gate.GateJsonError as e:
                raise CliError(f"gate: {e}") from e
        else:
            if not (args.base and args.head):
                raise CliError("gate: --base and --head are required (or --from-json GATE.json)")
            for flag, ref in (("--base", args.base), ("--head", args.head)):    # a typo is named as one
                try:
                    checkout.resolve(args.repo, ref)
                except checkout.CheckoutError as e:
                    raise CliError(f"gate: {flag} {ref}: not a commit in {args.repo} ({e})") from e
            # the rules are the base's: a pull request's own perf-gate.toml never judges it
            cfg = (gate_config.load(args.config) if args.config
                   else gate_config.load_commit(args.repo, args.base))
            if args.rounds is not None:
                try:
                    cfg = gate_config.parse({**cfg.raw, "gate": {**cfg.raw.get("gate", {}), "rounds": args.rounds}},
                                            cfg.path)
                except gate_config.ConfigError as e:      # the command line's value, not the file's
                    raise CliError(f"gate: --rounds {args.rounds}: {e}") from e
            not_gated = []
            if args.cpu_only:
                cfg, not_gated = gate.cpu_only(cfg)
            if not args.calibrate:
                noise_thresholds(args, cfg)
            from ..perf.gpu_lock import hold
            gpu = any(w.spec.backend == "cuda" for w in cfg.workloads)     # one gate per GPU (gpu_lock.py)
            with hold("cuzk gate") if gpu else contextlib.nullcontext():
                names = OUT_FILES + ((NOISE_FILE,) if args.calibrate else ())
                # after the run's own refusals (a refusal measures nothing, so it costs no earlier result)
                res = gate.run(args.repo, args.base, args.head, cfg, not_gated=not_gated,
                               on_start=(lambda: clear_out_dir(args.out, names)) if args.out else None)
    except CliError:
        raise
    except Exception as e:          # whatever went wrong, it is not a pass and not a regression
        _err(f"gate: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}")
        return EXIT_BAD_INPUT
    if args.comment:
        try:
            text = report.comment(res, args.run_url, args.history_url)
        except ValueError as e:
            raise CliError(f"gate: {e}") from e
        write_all({Path(args.comment): text})
        return 0            # the verdict is the gate run's; this only renders it
    md = report.markdown(res)
    print(md)
    if summary and not args.from_json:
        try:
            append_output(summary, md)
        except OutputError as e:
            raise CliError(f"gate: GITHUB_STEP_SUMMARY: {e}") from e
    if args.out:
        outputs = {Path(args.out) / "report.md": md}
        if not args.from_json:
            outputs[Path(args.out) / "gate.json"] = json.dumps(res.as_dict(), indent=1) + "\n"
        if args.calibrate:
            from ..perf.noise import NoiseError, dumps
            try:
                outputs[Path(args.out) / NOISE_FILE] = dumps(gate.aa_record(res, args.machine))
            except NoiseError as e:
                write_all(outputs)
                _err(f"gate: --calibrate: no noise record: {e}")
                return EXIT_BAD_INPUT
        write_all(outputs)
    if args.calibrate:
        # the record is the measurement; an A/A phase flagged is in it and in the report, not a failure here
        return 0
    for o, c in res.regressions():
        print(f"cuzk gate: regression in phase {c.area} ({o.config.spec.label()}): x{c.ratio:.3f} "
              f"[{c.ci_low:.3f}, {c.ci_high:.3f}], p={c.p_value:.2g}", file=sys.stderr)
    return res.exit_code
