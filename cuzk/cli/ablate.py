"""`cuzk ablate`: each optimization measured alone and left out (logic in cuzk/perf/ablate.py)."""
from __future__ import annotations

import hashlib
import json
import math
import os
import sys
from contextlib import contextmanager

from .. import __version__
from .. import backend as backends
from ..environment import table_gib
from ..files import OutputError, read_input, resolve_output
from ..perf.values import is_int, is_number
from ..perf import ablate
from ..perf.effects import critical_k
from ..run import git_commit
from .common import EXIT_OK, CliError, _need_plots, check_paths, to_stderr, write_all, write_atomic


MAX_ABLATION_BYTES = 64 << 20       # a saved ablation: every sample of every configuration, megabytes at most


class _Held(Exception):
    """Another ablate run holds the JSON file this one would write."""


def json_lock(path: str):
    """The lock file of the JSON output `path` (its final target's real path, so a link and its target are one
    file), in cuzk's private lock directory (gpu_lock)."""
    from ..perf.gpu_lock import lock_path
    real = os.path.realpath(resolve_output(path).target)
    return lock_path(hashlib.sha256(os.fsencode(real)).hexdigest()[:32], kind="ablate")


@contextmanager
def json_held(path: str | None):
    """The run's JSON output (a regular file or a new path) kept from every other ablate run until the block ends:
    two runs that rewrite one file round by round (two --resume of it) would each replace the other's rounds, and
    only the last writer's would stay. The lock is not the file's own (each round replaces the file by a rename),
    nor its folder's (write_outputs takes that across every cuzk write there: hours of an ablate run would stall
    them), but a lock file named after it in cuzk's private lock directory: flock, dropped by the kernel however the
    holder ends. A lock that cannot be opened safely is a warning: the run goes on unguarded."""
    if path is None or resolve_output(path).stream:
        yield
        return
    from ..perf.gpu_lock import LockBusy, held

    def busy(holder: str) -> _Held:
        return _Held(f"ablate: {path} is held by another ablate run ({holder}): two runs writing it would keep "
                     f"only one's rounds; wait for it, or give this run another --json")
    try:
        with held(json_lock(path), path, "cuzk ablate", busy, label="ablate lock"):
            yield
        return
    except _Held as e:
        raise CliError(str(e)) from None
    except LockBusy as e:
        to_stderr(f"cuzk: warning: {e}; {path} is not guarded against another ablate run writing it")
    yield


def cmd_ablate(args) -> int:
    """Exit 0 measured, 2 bad input or a run that could not be measured (no such backend, untrusted GPU)."""
    # --resume's file is read whole, then written again round by round as --json (by default): --json may
    # be it, --png may not; --from-json writes --json (the result as reported) and --png, never over itself
    json_out = args.json or (None if args.from_json else args.resume)
    check_paths({"--json": json_out, "--png": args.png}, {"--from-json": args.from_json})
    check_paths({"--png": args.png}, {"--resume": args.resume})
    if args.from_json:
        return _report(args)
    names = _options(args)
    with json_held(json_out):             # before --resume's file is read: it is this run's from here on
        return _measure(args, names)


def _report(args) -> int:
    """The report of a saved (possibly cut short) run, judged again at --confidence where asked; --json: that
    result as JSON."""
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
    return _written(args, res)


def _written(args, res: dict) -> int:
    """The result as --json and its plot as --png, written together by the output rule."""
    outputs = {}
    if args.json:
        outputs[args.json] = json.dumps(res, indent=1) + "\n"
    if args.png:
        from ..perf.plots import ablate_png
        outputs[args.png] = ablate_png(res)
    write_all(outputs)
    return EXIT_OK


def _options(args) -> list[str]:
    """The command line's measuring options judged (a saved setup's by Setup.check); the optimizations to ablate."""
    if args.repeat < 2:
        raise CliError("--repeat must be >= 2 (samples are paired by round)")
    if args.repeat > ablate.MAX_REPEAT:
        raise CliError(f"--repeat must be <= {ablate.MAX_REPEAT} (a saved run must be read back by --resume)")
    if not 1 <= args.circuits <= ablate.MAX_CIRCUITS:
        raise CliError(f"--circuits must be in 1..{ablate.MAX_CIRCUITS}")
    if not 0 <= args.parallel_synthesis <= ablate.MAX_CIRCUITS:
        raise CliError(f"--parallel-synthesis must be in 0..{ablate.MAX_CIRCUITS}")
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
    return names


def _is_stream(path: str) -> bool:
    try:
        return resolve_output(path).stream
    except OutputError as e:
        raise CliError(str(e)) from e


def _measure(args, names: list[str]) -> int:
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

    # a stream (a FIFO, /dev/stdout) cannot be replaced: a checkpoint there would add a document every round, or
    # wait for a FIFO's next reader; it gets the one document of the end
    replaceable = bool(args.json) and not _is_stream(args.json)

    def checkpoint(partial):               # the rounds so far, replaced every round: a killed run keeps them
        if replaceable:
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
    return _written(args, res)
