"""`cuzk ablate`: each optimization measured alone and left out (logic in cuzk/perf/ablate.py)."""
from __future__ import annotations

import json
import math
import sys

from .. import __version__
from .. import backend as backends
from ..environment import table_gib
from ..files import read_input
from ..perf.values import is_int, is_number
from ..perf import ablate
from ..perf.effects import critical_k
from ..run import git_commit
from .common import EXIT_OK, CliError, _need_plots, check_paths, to_stderr, write_all, write_atomic


MAX_ABLATION_BYTES = 64 << 20       # a saved ablation: every sample of every configuration, megabytes at most


def cmd_ablate(args) -> int:
    """Exit 0 measured, 2 bad input or a run that could not be measured (no such backend, untrusted GPU)."""
    # --resume's file is read whole, then written again round by round as --json (by default): --json may
    # be it, --png may not; --from-json writes only --png
    json_out = None if args.from_json else args.json or args.resume
    check_paths({"--json": json_out, "--png": args.png}, {"--from-json": args.from_json})
    check_paths({"--png": args.png}, {"--resume": args.resume})
    if args.from_json:                     # the report of a saved (possibly cut short) run
        try:
            res = json.loads(read_input(args.from_json, MAX_ABLATION_BYTES))
            ablate.check_samples(res)      # the report below may be the saved one: its samples judged all the same
            if not (res["configurations"] and all(c["samples"]["total"] for c in res["configurations"])):
                raise ValueError("no configuration with a measured round: nothing to report")
            saved = res["setup"]["confidence"]      # the intervals' level as run, read by every table below
            if not (is_number(saved) and 0.5 <= saved < 1):
                raise ValueError(f"setup.confidence {str(saved)[:40]} is not in [0.5, 1)")
            conf = saved if args.confidence is None else args.confidence
            if conf != saved or ablate.needs_rejudging(res):
                res = ablate.rejudge(res, conf)      # the saved samples, other intervals or the correction
            md = ablate.markdown(res)
        except ablate.AblateError as e:
            raise CliError(f"ablate: {e}") from e
        except RecursionError as e:
            raise CliError(f"ablate: cannot report {args.from_json}: JSON nested too deeply") from e
        except OSError as e:
            raise CliError(f"ablate: cannot report {args.from_json}: {e.strerror or e}") from e
        except (ValueError, KeyError, TypeError, AttributeError, IndexError) as e:
            raise CliError(f"ablate: cannot report {args.from_json}: {type(e).__name__}: {e}") from e
        print(md)
        if args.png:
            from ..perf.plots import ablate_png
            write_all({args.png: ablate_png(res)})
        return EXIT_OK
    if args.repeat < 2:
        raise CliError("--repeat must be >= 2 (samples are paired by round)")
    if args.circuits < 1:
        raise CliError("--circuits must be >= 1")
    if args.parallel_synthesis < 0:
        raise CliError("--parallel-synthesis must be >= 0")
    if args.confidence is None:
        args.confidence = 0.99
    if not 0.5 <= args.confidence < 1:
        raise CliError("--confidence must be in [0.5, 1)")
    if critical_k(args.repeat, args.confidence) < 1:
        need = next(n for n in range(2, 64) if critical_k(n, args.confidence) >= 1)
        raise CliError(f"--repeat {args.repeat} cannot give a {args.confidence:.0%} interval; use >= {need}")
    names = ablate.parse_opt_set(args.opt_set)
    if args.max_seconds is not None and not (0 < args.max_seconds < math.inf):    # NaN fails every comparison
        raise CliError("--max-seconds must be a finite number of seconds > 0")
    if args.png:
        _need_plots()
    backend, note = args.backend, None
    if backend == "auto" and not args.resume:       # a resumed run takes its saved backend: no note about this one
        ok, why = backends.gpu_status()
        backend = "cuda" if ok else "cpu"
        if not ok:
            note = f"cuzk: no GPU backend ({why}); using the CPU reference"
    setup = ablate.Setup(backend=backend, circuit=args.circuit, log_size=args.log_size, circuits=args.circuits,
                         repeat=args.repeat, names=names, confidence=args.confidence,
                         parallel_synthesis=args.parallel_synthesis, synthesis_pool=args.synthesis_pool or "thread",
                         convention=args.convention, generator=args.generator,
                         leave_one_out=not args.no_leave_one_out, max_seconds=args.max_seconds,
                         device_keygen=args.device_keygen, others=args.others, table_gib=table_gib())
    if not args.resume:                    # a bad size is one line, before any note
        try:
            setup.check()
        except ValueError as e:
            raise CliError(f"ablate: {e}") from e
        if note:
            print(note, file=sys.stderr)
    resume = None
    if args.resume:                        # the saved run's setup; this command line gives repeat, confidence, time
        try:
            resume = json.loads(read_input(args.resume, MAX_ABLATION_BYTES))
            saved = {k: v for k, v in resume["setup"].items() if k in ablate.Setup.__dataclass_fields__}
            setup = ablate.Setup(**{**saved, "repeat": args.repeat, "confidence": args.confidence,
                                    "max_seconds": args.max_seconds}).check()
            done = resume.get("rounds_done", 0)
            if not is_int(done) or done < 0:
                raise ValueError(f"rounds_done {json.dumps(done)[:40]} is not a count of rounds")
            # what it holds, judged now (even with no round done): a broken file is found before any key is made
            ablate.rejudge(resume, resume["setup"]["confidence"])
            ablate.Ablation(setup, resume=resume).check_saved_configs()     # before any key is made
        except RecursionError as e:
            raise CliError(f"ablate: cannot resume {args.resume}: JSON nested too deeply") from e
        except OSError as e:
            raise CliError(f"ablate: cannot resume {args.resume}: {e.strerror or e}") from e
        except (ablate.AblateError, ValueError, KeyError, TypeError, AttributeError, IndexError) as e:
            raise CliError(f"ablate: cannot resume {args.resume}: {type(e).__name__}: {e}") from e
        if resume.get("rounds_done", 0) >= args.repeat:
            raise CliError(f"ablate: {args.resume} already has {resume.get('rounds_done')} rounds; "
                           f"ask for more with --repeat")
        args.json = args.json or args.resume
        backend = setup.backend
    if setup.device_keygen and backend != "cuda":
        raise CliError("--device-keygen needs the cuda backend")

    def checkpoint(partial):               # the rounds so far, replaced every round: a killed run keeps them
        if args.json:
            try:
                write_atomic(args.json, json.dumps({**partial, "complete": False}, indent=1) + "\n")
            except CliError as e:          # the rounds stay in memory: the run goes on, and its end writes again
                to_stderr(f"cuzk: warning: ablate: the rounds so far were not saved ({e}); a kill now loses them")
    try:
        res = ablate.Ablation(setup, checkpoint=checkpoint, resume=resume).run()
    except ablate.AblateError as e:
        raise CliError(f"ablate: {str(e).splitlines()[0]}") from e
    res["cuzk_version"], res["commit"], res["complete"] = __version__, git_commit(), True
    if res.get("parts"):
        res["parts"][-1]["commit"] = res["commit"]
    print(ablate.markdown(res))
    outputs = {}
    if args.json:
        outputs[args.json] = json.dumps(res, indent=1) + "\n"
    if args.png:
        from ..perf.plots import ablate_png
        outputs[args.png] = ablate_png(res)
    write_all(outputs)
    return EXIT_OK
