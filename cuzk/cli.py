"""The cuzk command line: bench, keygen, verify; prove, export, export-vk and bench-snarkjs for snarkjs files
(snarkjs_cmds.py)."""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

from . import __version__
from .cli_common import (EXIT_BAD_INPUT, EXIT_INVALID, EXIT_OK, GENERATOR_NAMES, CliError, _kernel_load_times,
                         _load_json, bench_outputs, bench_context, git_commit, keygen_table, phase_table, write_all,
                         write_atomic)


def _need_plots() -> None:
    """matplotlib is there (--timeline, --png), checked before any work starts."""
    from .perf.plots import _plt
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


# --- bench ---


def cmd_bench(args) -> int:
    from .backend import get_backend
    from .groth16 import verify
    from .nvml import gpu_state
    from .opts import resolve
    from .synthesis import make_pool, synthesize
    from .timing import PhaseTimer, peak_rss_bytes

    opts = resolve(args.opt)
    if args.circuits < 1:
        raise CliError("--circuits must be >= 1")
    if args.parallel_synthesis < 0:
        raise CliError("--parallel-synthesis must be >= 0")
    if args.warmup < 0:
        raise CliError("--warmup must be >= 0")
    if args.timeline:
        _need_plots()
    from . import pipeline_bench
    if pipeline_bench.wanted(args):
        if args.warmup:
            raise CliError("--warmup applies to the one-batch bench; --pipeline reports its fill separately")
        return pipeline_bench.bench_pipeline(args, opts)
    args.synthesis_pool = args.synthesis_pool or "thread"
    backend = get_backend(args.backend, opts=opts)
    if args.device_keygen == "on" and backend.name != "cuda":          # before the synthesis, not after
        raise CliError("--device-keygen on needs the cuda backend")
    gpu_before = gpu_state() if backend.name != "cpu" else None
    pool = make_pool(args.synthesis_pool, args.parallel_synthesis) if args.parallel_synthesis else None
    timer = PhaseTimer(device=backend.timer_device(), phase_peaks=True)
    try:
        with timer.phase("synthesis", backend.phase_impl("synthesis")):
            r1cs, assignments = synthesize(args.circuit, args.log_size, opts, seeds=range(1, args.circuits + 1),
                                           assign_fn=backend.assign, executor=pool, timer=timer)
    finally:
        if pool is not None:
            pool.shutdown()
    key_start = time.perf_counter() - timer.origin       # the key's set-up on the run's clock (timeline)
    ctx = bench_context(args, backend, r1cs)
    key_span = {"start_s": key_start, "stop_s": time.perf_counter() - timer.origin, "where": ctx.key.where,
                "label": ctx.key.describe()}
    prover, pk = ctx.prover, ctx.pk
    warmup_s = []
    for _ in range(args.warmup):                  # a throwaway timer: first-use costs stay out of the phases
        t0 = time.perf_counter()
        prover.prove(assignments, PhaseTimer(device=backend.timer_device()))
        warmup_s.append(time.perf_counter() - t0)
    t1 = time.perf_counter()
    from .progress import LARGE_LOG, step_printer
    steps = step_printer(f"proving 2^{pk.log_n} x{len(assignments)}") if pk.log_n >= LARGE_LOG else None
    proofs = prover.prove(assignments, timer, progress=steps)
    prove_wall = time.perf_counter() - t1
    phases = timer.as_dict()
    vk = pk.verifying_key()
    verified = all(verify(vk, a.public, p) for a, p in zip(assignments, proofs))
    total_s = sum(r["host_s"] for r in phases.values())
    report = {
        "cuzk_version": __version__,
        "commit": git_commit(),
        "backend": backend.name,
        "circuit": {"name": args.circuit, "constraints": r1cs.num_constraints, "domain": 1 << pk.log_n,
                    "circuits": args.circuits, "convention": pk.convention, "generator": pk.generator,
                    "parallel_synthesis": args.parallel_synthesis,
                    "synthesis_pool": args.synthesis_pool if args.parallel_synthesis else None},
        "optimizations": opts.as_dict(),
        "phases": phases,
        "total_s": total_s,
        "prove_wall_s": prove_wall,
        "warmup_wall_s": warmup_s,
        "process_peak_host_bytes": max(timer.process_peak_host_bytes, peak_rss_bytes()),
        "setup_s": ctx.key.seconds,
        "key_setup": key_span,
        "keygen": ctx.key.keygen,
        "verified": verified,
        "prep_counts": prover.last_prep.counts,
        "kernel_load_s": _kernel_load_times(),
        "gpu": None if gpu_before is None else {"before": gpu_before, "after": gpu_state()},
    }
    print(f"cuzk bench: {args.circuit} 2^{pk.log_n} ({r1cs.num_constraints} constraints) x {args.circuits}, "
          f"backend {backend.name}, opts {opts.label()}")
    print(phase_table(phases, total_s))
    if ctx.key.keygen is not None:
        print(keygen_table(ctx.key.keygen))
    from .groth16 import VERIFIER
    print(f"verified: {verified} (by {VERIFIER})")
    write_all(bench_outputs(args, report, vk, [a.public for a in assignments], proofs))
    return EXIT_OK if verified else EXIT_INVALID


# --- keygen ---

def _keygen_params(args) -> None:
    """Defaults that depend on the output: a snarkjs .zkey needs odd_lagrange with generator 5."""
    if args.r1cs and (args.circuit is not None or args.log_size is not None):
        raise CliError("keygen: give either --r1cs or --circuit/--log-size, not both")
    args.circuit = args.circuit or "porep_like"
    args.log_size = 12 if args.log_size is None else args.log_size
    if args.zkey:
        if args.convention not in (None, "odd_lagrange") or args.generator not in (None, 5):
            raise CliError("keygen --zkey: snarkjs keys use --convention odd_lagrange with --generator snarkjs (5)")
        args.convention, args.generator = "odd_lagrange", 5
    args.convention = args.convention or "coeff"
    args.generator = args.generator or 7


def cmd_keygen(args) -> int:
    from .groth16 import vk_to_json
    from .keygen import ToxicWaste, cached_setup, setup
    from .opts import resolve
    from . import circuits

    _keygen_params(args)
    if args.r1cs:
        from .snarkjs_cmds import load_circuit_r1cs
        r1cs = load_circuit_r1cs(args.r1cs)
    else:
        r1cs, _, _ = circuits.build(args.circuit, args.log_size, opts=resolve(args.opt))
    if args.out:
        pk = setup(r1cs, args.convention, args.generator, ToxicWaste.from_seed(args.toxic_seed), backend=args.backend)
        path = Path(args.out)
        existed = path.exists()
        pk.save(path)
    else:
        pk, path, hit = cached_setup(r1cs, args.convention, args.generator, args.toxic_seed, backend=args.backend)
        existed = True
    outputs = {}
    if args.vk:
        outputs[args.vk] = json.dumps(vk_to_json(pk.verifying_key()), indent=1) + "\n"
    if args.zkey:
        from .formats import zkey_writer
        outputs[args.zkey] = zkey_writer(pk, r1cs)
    try:
        write_all(outputs)
    except BaseException:
        if not existed:
            path.unlink(missing_ok=True)
        raise
    print(f"{path}  circuit {r1cs.digest()[:16]}  2^{pk.log_n}  {pk.convention}  generator {pk.generator}")
    if args.zkey:
        print(f"{args.zkey}  snarkjs zkey, {r1cs.num_constraints} constraints, {r1cs.num_inputs - 1} public")
    return EXIT_OK


# --- verify ---

def cmd_verify(args) -> int:
    from .groth16 import Proof, public_from_json, verify, vk_from_json
    vk = _load_json(args.vk, "verification key", vk_from_json)
    public = _load_json(args.public, "public inputs", public_from_json)
    proof = _load_json(args.proof, "proof", Proof.from_json)
    if len(public) != vk.num_public:
        raise CliError(f"public inputs {args.public}: {len(public)} values, the verification key {args.vk} "
                       f"expects {vk.num_public}")
    ok = verify(vk, public, proof)
    print("OK: proof is valid" if ok else "INVALID: proof does not verify")
    return EXIT_OK if ok else EXIT_INVALID


class _Parser(argparse.ArgumentParser):
    """Usage errors as one line and exit code 2, like every other bad input."""

    def error(self, message):
        _err(f"{self.prog}: {message}")
        sys.exit(EXIT_BAD_INPUT)


# --- gate (the per-phase performance gate; logic in cuzk/perf/) ---

def cmd_gate(args) -> int:
    """Exit 0 no regression, 1 a regression, 2 anything that could not be judged."""
    try:
        from .perf import gate, gate_config, report
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


def cmd_ablate(args) -> int:
    """Exit 0 measured, 2 bad input or a run that could not be measured (no such backend, untrusted GPU)."""
    from .backend import gpu_status
    from .perf import ablate
    if args.from_json:                     # the report of a saved (possibly cut short) run
        try:
            res = json.loads(Path(args.from_json).read_text())
            if args.confidence is not None and args.confidence != res["setup"]["confidence"]:
                res = ablate.rejudge(res, args.confidence)      # the saved samples, other intervals
            md = ablate.markdown(res)
        except ablate.AblateError as e:
            raise CliError(f"ablate: {e}") from e
        except (OSError, ValueError, KeyError, TypeError) as e:
            raise CliError(f"ablate: cannot report {args.from_json}: {type(e).__name__}: {e}") from e
        print(md)
        if args.png:
            from .perf.plots import ablate_png
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
    from .perf.effects import critical_k
    if critical_k(args.repeat, args.confidence) < 1:
        need = next(n for n in range(2, 64) if critical_k(n, args.confidence) >= 1)
        raise CliError(f"--repeat {args.repeat} cannot give a {args.confidence:.0%} interval; use >= {need}")
    names = ablate.parse_opt_set(args.opt_set)
    if args.max_seconds is not None and args.max_seconds <= 0:
        raise CliError("--max-seconds must be > 0")
    if args.png:
        _need_plots()
    backend = args.backend
    if backend == "auto":
        ok, why = gpu_status()
        backend = "cuda" if ok else "cpu"
        if not ok:
            print(f"cuzk: no GPU backend ({why}); using the CPU reference", file=sys.stderr)
    setup = ablate.Setup(backend=backend, circuit=args.circuit, log_size=args.log_size, circuits=args.circuits,
                         repeat=args.repeat, names=names, confidence=args.confidence,
                         parallel_synthesis=args.parallel_synthesis, synthesis_pool=args.synthesis_pool or "thread",
                         convention=args.convention, generator=args.generator,
                         leave_one_out=not args.no_leave_one_out, max_seconds=args.max_seconds,
                         device_keygen=args.device_keygen, others=args.others)
    resume = None
    if args.resume:                        # the saved run's setup; this command line gives repeat, confidence, time
        try:
            resume = json.loads(Path(args.resume).read_text())
            saved = {k: v for k, v in resume["setup"].items() if k in ablate.Setup.__dataclass_fields__}
            setup = ablate.Setup(**{**saved, "repeat": args.repeat, "confidence": args.confidence,
                                    "max_seconds": args.max_seconds})
        except (OSError, ValueError, KeyError, TypeError) as e:
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
            write_atomic(args.json, json.dumps({**partial, "complete": False}, indent=1) + "\n")
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
        from .perf.plots import ablate_png
        outputs[args.png] = ablate_png(res)
    write_all(outputs)
    return EXIT_OK


def cmd_bisect(args) -> int:
    """`asv find` over GOOD (included) .. BAD for one benchmark: 0 and the first slow commit where every
    commit it judged by was measured; 2 (one error line) for bad input, a failed pre-flight, or anything
    unmeasured."""
    from .perf import asv_private, bisect, bisect_run
    try:
        return bisect_run.run(args.benchmark, args.good, args.bad, args.target, args.opts, args.repo, args.dry_run,
                              args.asv_args)
    except (bisect.BisectError, asv_private.AsvConfigError) as e:
        raise CliError(f"bisect: {e}") from e


def cmd_history(args) -> int:
    """Nightly: record this runner's asv results on the results branch, publish all of them, or list
    the change points (failing on new slowdowns of gated phases with --fail-on-gated)."""
    from .perf import gate_config, history
    if args.action == "record" and not args.machine:
        raise CliError("history record needs --machine NAME (a stable name per runner and GPU)")
    if args.fail_on_gated is not None and args.fail_on_gated < 1:
        raise CliError("--fail-on-gated needs N >= 1 (points at the end of each series)")
    try:
        if args.action == "changes":
            repo, gated = Path(args.repo), None
            if args.fail_on_gated is not None:          # read before the analysis: a bad config fails fast
                try:
                    gated = history.gated_pairs(gate_config.load(args.gate_config or repo / gate_config.DEFAULT_PATH))
                except gate_config.ConfigError as e:
                    raise CliError(f"gate config: {e}") from e
                if not gated:
                    raise CliError("--fail-on-gated: the gate config's workloads x phases match no parameter set "
                                   "of the asv suite")
            results = Path(args.results) if args.results else history.default_results(repo)
            ch = history.changes(results, args.machine, args.bench, args.max_pvalue, args.min_magnitude,
                                 args.window, repo=repo)
            text, failing = history.changes_markdown(ch), []
            if gated is not None:
                if not gated & ch.pairs:        # the gate's series were never measured: no data, not "no change"
                    raise history.HistoryError(f"--fail-on-gated: none of the {len(gated)} gated parameter sets "
                                               f"has a series of >= {history.MIN_POINTS} points in {ch.source}")
                failing = history.gated_regressions(ch.found, gated, args.fail_on_gated)
                text += history.gated_markdown(failing, args.fail_on_gated, len(gated & ch.pairs))
            print(text, end="")
            if args.summary:
                with open(args.summary, "a") as f:
                    f.write(text)
            if args.json:
                write_atomic(args.json, json.dumps(ch.found, indent=1) + "\n")
            return EXIT_INVALID if failing else EXIT_OK
        if args.action == "record":
            return history.record(Path(args.repo), args.machine, args.remote, args.results_branch, args.bench,
                                  push=not args.no_push)
        history.publish(Path(args.repo), args.remote, args.results_branch, args.pages_branch,
                        commit_url=history.commit_url_from_env(), push=not args.no_push,
                        assets=Path(args.assets) if args.assets else None)
        return EXIT_OK
    except history.HistoryError as e:
        _err(f"history: {e}")
        if args.action == "changes" and args.summary:      # the step summary says why, too
            with open(args.summary, "a") as f:
                f.write(f"cuzk history changes: {e}\n")
        return EXIT_BAD_INPUT


def cmd_opts(args) -> int:
    """The registry as a table, then the suite's variants with their meaning."""
    from tabulate import tabulate

    from .perf.opts_page import rows
    from .perf.suite import variant_names
    from .opts import describe
    print(tabulate(rows(), headers=["code", "default", "phases", "what it does"], tablefmt="github"))
    print()
    print(tabulate([(v, describe(v)) for v in variant_names()], headers=["variant", "meaning"], tablefmt="github"))
    return EXIT_OK


def cmd_gpu_state(args) -> int:
    """The run's GPU record (device, driver, clocks) and one state snapshot, as JSON."""
    from .nvml import open_device
    dev = open_device()
    if dev is None:
        print(json.dumps({"gpu": None}))
        return EXIT_OK
    with dev:
        print(json.dumps({"gpu": dev.info().as_dict(), "state": dev.snapshot().as_dict()}, indent=1))
    return EXIT_OK


def build_parser() -> argparse.ArgumentParser:
    from .circuits import CIRCUITS
    from .keys import CONVENTIONS
    p = _Parser(prog="cuzk", description="CUDA Groth16 prover over BLS12-381")
    p.add_argument("--version", action="version", version=f"cuzk {__version__}")
    sub = p.add_subparsers(dest="cmd", required=True, parser_class=_Parser)

    def circuit_args(sp, opt=True):
        sp.add_argument("--circuit", default="porep_like", choices=sorted(CIRCUITS))
        sp.add_argument("--log-size", type=int, default=12, help="domain 2^K (default 12)")
        sp.add_argument("--convention", default="coeff", choices=CONVENTIONS, help="H convention of the key")
        sp.add_argument("--generator", type=_generator, default=7,
                        help="root-of-unity generator: bellman (7, default) or snarkjs (5)")
        if opt:
            sp.add_argument("--opt", default=None, help="optimizations, e.g. +A1,-A2, all, none (or CUZK_OPT)")

    def synthesis_args(sp):
        sp.add_argument("--parallel-synthesis", type=int, default=0, metavar="N",
                        help="generate the circuits' witnesses in N parallel workers (default 0: one after another)")
        sp.add_argument("--synthesis-pool", default=None, choices=("thread", "process"),
                        help="parallel synthesis in threads (one address space, as bellperson; default) or "
                             "processes (default with --pipeline)")

    b = sub.add_parser("bench", help="set up (cached), synthesize, prove, verify; print the phase table")
    b.add_argument("--backend", default="auto", choices=("auto", "cpu", "cuda"))
    circuit_args(b)
    b.add_argument("--circuits", type=int, default=1, help="circuits proved in one batch")
    b.add_argument("--json", metavar="FILE", help="write the run as JSON (docs/architecture.md, What a run records)")
    b.add_argument("--save", metavar="DIR", help="write proof.json, public.json, verification_key.json")
    b.add_argument("--keygen-backend", default=None, choices=("auto", "cpu", "cuda"),
                   help="where an uncached key is made (default: the GPU with --backend cuda, else the CPU)")
    b.add_argument("--device-keygen", default="auto", choices=("auto", "on", "off"),
                   help="make the key on the GPU and keep it there: no download, no key file, no circuit "
                        "digest (auto: with --backend cuda from a 2^26 domain)")
    b.add_argument("--timeline", metavar="FILE.png", help="draw each phase per circuit on a time axis (host and "
                                                          "device lanes), so overlaps and gaps show")
    b.add_argument("--warmup", type=int, default=0, metavar="N",
                   help="untimed proofs before the timed one, so that first-use costs (kernel module loads, "
                        "CuPy's kernel cache, the memory pool) stay out of the phases; the report keeps their "
                        "wall time (default 0)")
    synthesis_args(b)
    b.add_argument("--pipeline", action="store_true",
                   help="synthesize the next circuits on host workers while the prover proves the current ones "
                        "(key resident; one proof per circuit); reports throughput, GPU busy/idle, overlap")
    b.add_argument("--pipeline-depth", type=int, default=None, metavar="N",
                   help="synthesized circuits that may wait for the prover (default 2; bounds host memory)")
    b.add_argument("--pipeline-workers", type=int, default=None, metavar="N",
                   help="synthesis workers (default: half the CPU cores, at most --circuits, and at most what "
                        "host memory holds: pipeline.plan_workers)")
    b.add_argument("--compare", action="store_true",
                   help="with --pipeline: also prove the same circuits one after another; report the wall ratio")
    b.set_defaults(func=cmd_bench)

    k = sub.add_parser("keygen", help="test setup with known toxic waste (cached unless --out)")
    circuit_args(k)
    k.add_argument("--r1cs", metavar="FILE.r1cs", help="the circuit from a circom .r1cs (bls12381) instead of "
                                                       "--circuit/--log-size")
    k.add_argument("--out", metavar="FILE", help="write the key here instead of the cache")
    k.add_argument("--zkey", metavar="FILE.zkey", help="also write the key as a snarkjs Groth16 .zkey "
                                                       "(implies --convention odd_lagrange --generator snarkjs)")
    k.add_argument("--vk", metavar="FILE", help="also write verification_key.json")
    k.add_argument("--toxic-seed", type=int, default=0)
    k.add_argument("--backend", default="auto", choices=("auto", "cpu", "cuda"),
                   help="keygen on the GPU (cuda), the CPU, or auto: the GPU when usable, for domains "
                        "of 2^12 and up (the same key either way)")
    k.set_defaults(func=cmd_keygen, circuit=None, log_size=None, convention=None, generator=None)

    v = sub.add_parser("verify", help="verify a proof: VK PUBLIC PROOF (snarkjs order)")
    v.add_argument("vk")
    v.add_argument("public")
    v.add_argument("proof")
    v.set_defaults(func=cmd_verify)
    from .snarkjs_cmds import add_parsers
    add_parsers(sub)
    sub.add_parser("micro", add_help=False,
                   help="pyperf kernel microbenchmarks: micro ntt|intt|h|spmv|fp_mul|fr_mul|msm|msm_g2|batch_add "
                        "[--log-size K] [--backend cuda|cpu] [pyperf options, e.g. -o out.json]")


    ab = sub.add_parser("ablate", help="each optimization alone, left out of all, and all, against baseline: "
                                       "per-phase ratios with CIs, interactions, attribution")
    ab.add_argument("--backend", default="auto", choices=("auto", "cpu", "cuda"))
    circuit_args(ab, opt=False)
    ab.set_defaults(log_size=10)
    ab.add_argument("--circuits", type=int, default=1, help="circuits proved in one batch (PoRep: 10)")
    ab.add_argument("--repeat", type=int, default=10, help="interleaved rounds: samples per configuration (default 10)")
    ab.add_argument("--opt-set", default=None, metavar="A1,A2,...",
                    help="the optimizations to ablate (default: the whole registry); the others stay off")
    ab.add_argument("--from-json", metavar="FILE.json",
                    help="measure nothing: print the report (and --png) of a run saved with --json")
    ab.add_argument("--max-seconds", type=float, default=None, metavar="S",
                    help="start no round that would end after S seconds (at least 2 rounds run); with --json the "
                         "file holds the rounds so far after every round, so a run killed by a time limit keeps them")
    ab.add_argument("--device-keygen", action="store_true",
                    help="make the key on the GPU and keep it there (no key file; A4 downloads B_G2 once)")
    ab.add_argument("--resume", metavar="FILE.json",
                    help="go on with a run saved with --json (e.g. cut short by --max-seconds) up to --repeat "
                         "rounds: its setup is reused, its rounds kept; the result goes to --json (default: FILE)")
    ab.add_argument("--others", choices=("off", "defaults"), default="off",
                    help="the optimizations outside --opt-set: off everywhere (default), or at their registry "
                         "defaults (each of the set then measured against the defaults without it)")
    ab.add_argument("--no-leave-one-out", action="store_true",
                    help="skip the leave-one-out configurations: baseline, each alone and all (the founding scenario)")
    ab.add_argument("--confidence", type=float, default=None,
                    help="confidence of the intervals (default 0.99: a run makes ~100 comparisons); with "
                         "--from-json, the saved samples judged again at this confidence")
    synthesis_args(ab)
    ab.add_argument("--json", metavar="FILE", help="write every sample, effect and verdict as JSON")
    ab.add_argument("--png", metavar="FILE.png", help="phase bars per configuration (matplotlib)")
    ab.set_defaults(func=cmd_ablate)

    gt = sub.add_parser("gate", help="per-phase perf gate: base vs head, interleaved; exit 0 ok, 1 regression, 2 error")
    gt.add_argument("--base", help="base commit-ish")
    gt.add_argument("--head", help="head commit-ish")
    gt.add_argument("--cpu-only", action="store_true",
                    help="gate the config's CPU workloads alone (a machine without a GPU); the report says so")
    gt.add_argument("--from-json", metavar="GATE.json",
                    help="judge a saved gate.json afresh and print its report (measures nothing)")
    gt.add_argument("--config", default=None, help="gate config (default: perf-gate.toml in --repo)")
    gt.add_argument("--repo", default=".", help="git repository (default: .)")
    gt.add_argument("--out", metavar="DIR", help="write report.md and gate.json (all samples) here")
    gt.add_argument("--rounds", type=int, default=None, help="override [gate] rounds")
    gt.set_defaults(func=cmd_gate)

    bi = sub.add_parser("bisect", help="asv find: the commit between GOOD and BAD that slowed a benchmark "
                                       "(named only from measured values; exit 0 culprit, 2 otherwise)")
    bi.add_argument("benchmark", help="a phase name (tail_msm, ...; with --target/--opts: one parameter set) "
                                      "or an asv benchmark regex")
    bi.add_argument("--good", required=True, help="a commit where the benchmark was fast (included)")
    bi.add_argument("--bad", required=True, help="a commit where it is slow")
    bi.add_argument("--target", help="the suite's target, e.g. cuda:18 or cuda:porep_partition:24")
    bi.add_argument("--opts", help="the suite's variant: default, default-X / default+X, or baseline (cuzk opts)")
    bi.add_argument("--repo", default=".")
    bi.add_argument("--dry-run", action="store_true",
                    help="print the plan (the asv command, the pre-flight verdict) and measure nothing")
    bi.add_argument("--asv-arg", dest="asv_args", action="append", default=[], metavar="ARG",
                    help="one more asv find argument, e.g. --asv-arg=--invert (repeatable)")
    bi.set_defaults(func=cmd_bisect)

    hi = sub.add_parser("history", help="nightly asv history: record this runner's results, publish all, "
                                        "or list change points (record and publish work in .asv/history, "
                                        "never in asv.conf.json's results_dir or html_dir)")
    hi.add_argument("action", choices=("record", "publish", "changes"))
    hi.add_argument("--machine", help="this runner's stable asv machine name (record); only this machine (changes)")
    hi.add_argument("--repo", default=".")
    hi.add_argument("--remote", default="origin")
    hi.add_argument("--results-branch", default="asv-results")
    hi.add_argument("--pages-branch", default="gh-pages")
    hi.add_argument("--bench", default=None, help="record: asv --bench regex (default: the whole suite); "
                                                 "changes: a regex on 'benchmark(params)'")
    hi.add_argument("--no-push", action="store_true", help="leave the commits local")
    hi.add_argument("--assets", metavar="NODE_MODULES", help="publish: serve asv's scripts from the site, copied "
                                                           "from these npm packages (.ci/node/node_modules)")
    hi.add_argument("--results", metavar="DIR", help="changes: asv results directory (default: the history's "
                                                     "worktree, .asv/history/results, else asv.conf.json's)")
    hi.add_argument("--max-pvalue", type=float, default=0.001, help="changes: t-test threshold (default 0.001)")
    hi.add_argument("--min-magnitude", type=float, default=0.05,
                    help="changes: smallest relative change reported (default 0.05)")
    hi.add_argument("--window", type=int, default=30, help="changes: e-divisive window in commits (default 30)")
    hi.add_argument("--json", metavar="FILE", help="changes: write the change points as JSON")
    hi.add_argument("--summary", metavar="FILE", help="changes: append the Markdown to FILE too "
                                                      "(e.g. $GITHUB_STEP_SUMMARY)")
    hi.add_argument("--fail-on-gated", type=int, metavar="N",
                    help="changes: exit 1 when a phase that perf-gate.toml gates (its workloads x [gate] phases) "
                         "got slower at a change point whose first commit is among the last N points of its "
                         "series; those change points are listed")
    hi.add_argument("--gate-config", metavar="FILE",
                    help="changes: the gate config for --fail-on-gated (default: perf-gate.toml in --repo)")
    hi.set_defaults(func=cmd_history)

    op = sub.add_parser("opts", help="the optimization registry: each toggle's code, default, phases and "
                                     "intent, and the variants the suite measures")
    op.set_defaults(func=cmd_opts)

    gs = sub.add_parser("gpu-state", help="print the GPU's NVML record as JSON (read-only)")
    gs.set_defaults(func=cmd_gpu_state)
    return p


def _exit_on_sigterm() -> None:
    """SIGTERM (a timeout, a job scheduler) becomes Interrupted (a SystemExit, 143) in the main thread, so
    finally blocks run: a pipeline removes its /dev/shm witnesses and stops its workers, and no partial
    output is left."""
    from .files import raise_on_sigterm
    raise_on_sigterm()


def main(argv=None) -> int:
    """Exit codes: 0, 1 (a valid input, an invalid proof), 2 (bad input), 128 + signal when interrupted."""
    from .files import Interrupted
    try:
        return _main(argv)
    except (KeyboardInterrupt, Interrupted) as e:
        print("cuzk: interrupted", file=sys.stderr)
        return e.code if isinstance(e, Interrupted) else 130


def _main(argv=None) -> int:
    from .backend import BackendError
    from .curve import PointError
    from .keys import KeyFormatError
    from .opts import OptError
    from .r1cs import UnsatisfiedError

    if argv is None:                 # the program itself (not a caller's argv)
        _exit_on_sigterm()
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["micro"]:
        from .micro import main as micro_main      # pyperf owns the command line there
        return micro_main(argv[1:])
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except (CliError, KeyFormatError, PointError, UnsatisfiedError, OptError, BackendError, ArithmeticError,
            ValueError, OSError) as e:
        _err(str(e).splitlines()[0] if str(e) else type(e).__name__)
        return EXIT_BAD_INPUT
    except MemoryError:
        _err("out of host memory")
        return EXIT_BAD_INPUT


if __name__ == "__main__":
    sys.exit(main())
