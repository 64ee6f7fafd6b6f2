"""`cuzk history` and `cuzk bisect`: change points in the asv history, and asv find over a range."""
from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path

from ..files import append_output
from ..perf import asv_private, bisect, bisect_run, gate_config, history
from .common import EXIT_BAD_INPUT, EXIT_INVALID, EXIT_OK, CliError, _err, check_paths, write_atomic


def cmd_bisect(args) -> int:
    """`asv find` over GOOD (included) .. BAD for one benchmark: 0 and the first slow commit where every
    commit it judged by was measured; 2 (one error line) for bad input, a failed pre-flight, or anything
    unmeasured."""
    try:
        return bisect_run.run(args.benchmark, args.good, args.bad, args.target, args.opts, args.repo, args.dry_run,
                              args.asv_args, confirm=args.confirm)
    except (bisect.BisectError, asv_private.AsvConfigError) as e:
        raise CliError(f"bisect: {e}") from e


def cmd_history(args) -> int:
    """Nightly: record this runner's asv results on the results branch (or export them for `import`),
    import exported results, publish all of them, or list the change points (failing on new slowdowns
    of gated phases with --fail-on-gated). Exit 1 only for a gated regression; 2 for anything bad or
    unmeasured."""
    if args.action == "record" and not args.machine:
        raise CliError("history record needs --machine NAME (a stable name per runner and GPU)")
    if args.fail_on_gated is not None and args.fail_on_gated < 1:
        raise CliError("--fail-on-gated needs N >= 1 (points at the end of each series)")
    if args.action == "import" and not args.dirs:
        raise CliError("history import needs DIR ... (directories written by `history record --export`)")
    if args.action != "import" and args.dirs:
        raise CliError(f"history {args.action} takes no DIR ({' '.join(args.dirs)}): only import does")
    # an option another action reads would be ignored here: `publish --json F` writing nothing is no success
    for flag, value, actions in (("--json", args.json, ("changes",)), ("--summary", args.summary, ("changes",)),
                                 ("--fail-on-gated", args.fail_on_gated, ("changes",)),
                                 ("--gate-config", args.gate_config, ("changes",)),
                                 ("--results", args.results, ("changes",)), ("--assets", args.assets, ("publish",)),
                                 ("--export", args.export, ("record",)), ("--gate-noise", args.gate_noise, ("record",)),
                                 ("--dir-prefix", args.dir_prefix, ("import",)),
                                 ("--bench", args.bench, ("record", "changes")),
                                 ("--machine", args.machine, ("record", "changes"))):
        if value is not None and args.action not in actions:
            raise CliError(f"{flag} goes with history {' or '.join(actions)}, not {args.action}")
    try:
        if args.action == "changes":
            repo, gated = Path(args.repo), None
            check_paths({"--json": args.json, "--summary": args.summary},               # before any work
                        {"--gate-config": args.gate_config})
            if args.fail_on_gated is not None:          # read before the analysis: a bad config fails fast
                try:
                    gated = history.gated_pairs(gate_config.load(args.gate_config or repo / gate_config.DEFAULT_PATH))
                except gate_config.ConfigError as e:
                    raise CliError(f"gate config: {e}") from e
                if not gated:
                    raise CliError("--fail-on-gated: the gate config's workloads x phases match no parameter set "
                                   "of the asv suite")
            results = Path(args.results) if args.results else history.default_results(repo)
            for flag, out in (("--json", args.json), ("--summary", args.summary)):
                # a .json there is read back as asv's by the next `changes` (and publish), which then fails on it
                if out and Path(os.path.realpath(out)).is_relative_to(os.path.realpath(results)):
                    raise CliError(f"{flag} {out}: inside the results it reads ({results})")
            ch = history.changes(results, args.machine, args.bench, args.max_pvalue, args.min_magnitude,
                                 args.window, repo=repo)
            text, failing, unmeasured = history.changes_markdown(ch), [], []
            if gated is not None:
                if not gated & ch.pairs:        # the gate's series were never measured: no data, not "no change"
                    raise history.HistoryError(f"--fail-on-gated: none of the {len(gated)} gated parameter sets "
                                               f"has a series of >= {history.MIN_POINTS} points in {ch.source}")
                failing = history.gated_regressions(ch.found, gated, args.fail_on_gated)
                unmeasured = history.gated_unmeasured(ch, gated)
                short = [s for s in ch.short if (s[1], s[2]) in gated]
                text += history.gated_markdown(failing, args.fail_on_gated, len(gated & ch.pairs), unmeasured, short)
            print(text, end="")
            if args.summary:
                append_output(args.summary, text)
            if args.json:
                write_atomic(args.json, json.dumps(ch.found, indent=1) + "\n")
            if ch.silent:                   # a night that measured nothing is no "no change"
                m, f, n = ch.silent[0]
                _err(f"history: {m} measured none of its {n} analysed series in its newest results file {f}"
                     + (f", and {len(ch.silent) - 1} more machine(s) neither" if len(ch.silent) > 1 else ""))
                return EXIT_BAD_INPUT
            if unmeasured:                  # as the gate: what could not be judged outranks a regression
                u = unmeasured[0]
                _err(f"history: the newest point of {len(unmeasured)} gated series was not measured: "
                     f"{u['benchmark']} on {u['machine']} ({u['why']}) in {u['file']}"
                     + (f", and {len(unmeasured) - 1} more" if len(unmeasured) > 1 else ""))
                return EXIT_BAD_INPUT
            return EXIT_INVALID if failing else EXIT_OK
        if args.action == "record":         # the suite's cuda parameters: one measuring job per GPU
            from ..perf.gpu_lock import GpuBusy, hold
            try:
                with hold(f"cuzk history record --machine {args.machine}"):
                    return history.record(Path(args.repo), args.machine, args.remote, args.results_branch,
                                          args.bench, push=not args.no_push,
                                          export=Path(args.export) if args.export else None,
                                          gate_noise=Path(args.gate_noise) if args.gate_noise else None)
            except GpuBusy as e:
                raise history.HistoryError(str(e)) from e
        if args.action == "import":
            history.import_results(Path(args.repo), [Path(d) for d in args.dirs], args.remote, args.results_branch,
                                   push=not args.no_push, dir_prefix=args.dir_prefix)
            return EXIT_OK
        history.publish(Path(args.repo), args.remote, args.results_branch, args.pages_branch,
                        commit_url=history.commit_url_from_env(), push=not args.no_push,
                        assets=Path(args.assets) if args.assets else None)
        return EXIT_OK
    except history.HistoryError as e:
        _err(f"history: {str(e).splitlines()[0] if str(e) else type(e).__name__}")     # one line; logs hold the rest
        if args.action == "changes" and args.summary:      # the step summary says why, too
            with contextlib.suppress(OSError):          # one that cannot be written was said before any work
                append_output(args.summary, f"cuzk history changes: {e}\n")
        return EXIT_BAD_INPUT
