"""`cuzk gate`: the per-phase performance gate of a pull request (logic in cuzk/perf/)."""
from __future__ import annotations

import contextlib
import json
import os
import sys
from pathlib import Path

from .common import (_err, EXIT_BAD_INPUT, CliError, write_all)


def cmd_gate(args) -> int:
    """Exit 0 no regression, 1 a regression, 2 anything that could not be judged."""
    try:
        from ..perf import gate, gate_config, report
        if args.from_json:
            try:
                res = gate.from_dict(json.loads(Path(args.from_json).read_text()))
            except (OSError, ValueError, KeyError, TypeError, IndexError) as e:
                raise CliError(f"gate: {args.from_json}: not a gate.json ({type(e).__name__}: {e})") from e
        else:
            if not (args.base and args.head):
                raise CliError("gate: --base and --head are required (or --from-json GATE.json)")
            cfg = gate_config.load(args.config or Path(args.repo) / gate_config.DEFAULT_PATH)
            if args.rounds is not None:
                cfg = gate_config.parse({**cfg.raw, "gate": {**cfg.raw.get("gate", {}), "rounds": args.rounds}},
                                        cfg.path)
            not_gated = []
            if args.cpu_only:
                cfg, not_gated = gate.cpu_only(cfg)
            from ..perf.gpu_lock import hold
            gpu = any(w.spec.backend == "cuda" for w in cfg.workloads)     # one gate per GPU (gpu_lock.py)
            with hold("cuzk gate") if gpu else contextlib.nullcontext():
                res = gate.run(args.repo, args.base, args.head, cfg, not_gated=not_gated)
    except CliError:
        raise
    except Exception as e:          # whatever went wrong, it is not a pass and not a regression
        _err(f"gate: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}")
        return EXIT_BAD_INPUT
    md = report.markdown(res)
    print(md)
    summary = os.environ.get("GITHUB_STEP_SUMMARY")
    if summary and not args.from_json:
        with open(summary, "a") as f:
            f.write(md)
    if args.out:
        outputs = {Path(args.out) / "report.md": md}
        if not args.from_json:
            outputs[Path(args.out) / "gate.json"] = json.dumps(res.as_dict(), indent=1) + "\n"
        write_all(outputs)
    for o, c in res.regressions():
        print(f"cuzk gate: regression in phase {c.area} ({o.config.spec.label()}): x{c.ratio:.3f} "
              f"[{c.ci_low:.3f}, {c.ci_high:.3f}], p={c.p_value:.2g}", file=sys.stderr)
    return res.exit_code
