"""The cuzk command line: the parser of every subcommand, and the exit codes (cli/common.py)."""
from __future__ import annotations

import argparse
import functools
import importlib
import os
import signal
import sys

from .. import __version__
from ..backend import BackendError
from ..circuits import CIRCUITS
from ..curve import PointError
from ..files import Interrupted, raise_on_sigterm
from ..gpu.srs import DeviceMemoryError
from ..keys import CONVENTIONS, KeyFormatError
from ..opts import OptError
from ..r1cs import UnsatisfiedError
from .common import (EXIT_BAD_INPUT, MAX_CIRCUITS, CliError, _err, _generator, circuits_arg, magnitude_arg,
                     pvalue_arg, window_arg)


def _command(module: str, name: str):
    """A subcommand whose module is imported when that command runs: each command pays for its own imports
    (the prover's, the measuring layer's), `cuzk --help` and a usage error for none of them."""
    def call(args):
        return getattr(importlib.import_module(f"{__package__}.{module}"), name)(args)
    call.__name__ = name
    return call


class _Parser(argparse.ArgumentParser):
    """Usage errors as one line and exit code 2, like every other bad input."""

    def error(self, message):
        _err(f"{self.prog}: {message}")
        sys.exit(EXIT_BAD_INPUT)


@functools.lru_cache(maxsize=1)
def _parser() -> argparse.ArgumentParser:
    """One parser a process (it reads nothing of the environment; parse_args leaves it as it was): a caller
    that runs many commands in one process (the fuzzers, a test suite) builds it once, not 30 ms a call."""
    return build_parser()


def build_parser() -> argparse.ArgumentParser:
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
    b.add_argument("--circuits", type=circuits_arg, default=1, metavar="N",
                   help=f"circuits proved in one batch (1 to {MAX_CIRCUITS})")
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
    b.add_argument("--devices", default=None, metavar="all|N|I,J,...",
                   help="with --pipeline: prove on several GPUs, one prover per GPU with its own resident key, the "
                        "synthesis workers feeding whichever is free: all, the first N, or the listed indices "
                        "('2,' for device 2 alone); default: the current device alone")
    b.set_defaults(func=_command("bench", "cmd_bench"))

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
    k.set_defaults(func=_command("keygen", "cmd_keygen"), circuit=None, log_size=None, convention=None, generator=None)

    v = sub.add_parser("verify", help="verify a proof: VK PUBLIC PROOF (snarkjs order)")
    v.add_argument("vk")
    v.add_argument("public")
    v.add_argument("proof")
    v.set_defaults(func=_command("verify", "cmd_verify"))
    _snarkjs_parsers(sub)
    sub.add_parser("micro", add_help=False,
                   help="pyperf kernel microbenchmarks: micro ntt|intt|h|spmv|fp_mul|fr_mul|msm|msm_g2|batch_add "
                        "[--log-size K] [--backend cuda|cpu] [pyperf options, e.g. -o out.json]")


    ab = sub.add_parser("ablate", help="each optimization alone, left out of all, and all, against baseline: "
                                       "per-phase ratios with CIs, interactions, attribution")
    ab.add_argument("--backend", default="auto", choices=("auto", "cpu", "cuda"))
    circuit_args(ab, opt=False)
    ab.set_defaults(log_size=10)
    ab.add_argument("--circuits", type=int, default=1, help="circuits proved in one batch (PoRep: 10; at most 1024)")
    ab.add_argument("--repeat", type=int, default=10,
                    help="interleaved rounds: samples per configuration (default 10, at most 1000)")
    ab.add_argument("--opt-set", default=None, metavar="A1,A2,...",
                    help="the optimizations to ablate (default: the whole registry); the others stay off")
    ab.add_argument("--from-json", metavar="FILE.json",
                    help="measure nothing: print the report (and --png, --json) of a run saved with --json")
    ab.add_argument("--max-seconds", type=float, default=None, metavar="S",
                    help="start no round that would end after S seconds (at least 2 rounds run); with --json to a "
                         "file, it holds the rounds so far after every round, so a run killed by a time limit keeps "
                         "them")
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
    ab.add_argument("--json", metavar="FILE",
                    help="write every sample, effect and verdict as JSON. A file is replaced by the rounds so far "
                         "after every round from the second (\"complete\": false until the end), and no other "
                         "ablate run may write it meanwhile (a second is refused); a stream (a FIFO, /dev/stdout) "
                         "gets one document, at the end. With --from-json: the result as reported")
    ab.add_argument("--png", metavar="FILE.png", help="phase bars per configuration (matplotlib)")
    ab.set_defaults(func=_command("ablate", "cmd_ablate"))

    gt = sub.add_parser("gate", help="per-phase perf gate: base vs head, interleaved; exit 0 ok, 1 regression, 2 error")
    gt.add_argument("--base", help="base commit-ish")
    gt.add_argument("--head", help="head commit-ish")
    gt.add_argument("--cpu-only", action="store_true",
                    help="gate the config's CPU workloads alone (a machine without a GPU); the report says so")
    gt.add_argument("--from-json", metavar="GATE.json",
                    help="judge a saved gate.json afresh and print its report (measures nothing)")
    gt.add_argument("--config", default=None,
                    help="gate config (default: perf-gate.toml as committed in --base, never the head's)")
    gt.add_argument("--repo", default=".", help="git repository (default: .); its tracked files must be committed")
    gt.add_argument("--out", metavar="DIR", help="write report.md and gate.json (all samples) here")
    gt.add_argument("--rounds", type=int, default=None, help="override [gate] rounds")
    gt.add_argument("--comment", metavar="FILE",
                    help="with --from-json: write the pull request's sticky comment (Markdown) to FILE, exit 0")
    gt.add_argument("--run-url", metavar="URL", help="with --comment: the gate run's page (full report, samples)")
    gt.add_argument("--history-url", metavar="URL",
                    help="with --comment: the published asv history, for each regressed phase's graph")
    gt.add_argument("--machine", default=None,
                    help="this runner's asv machine name (default $CUZK_MACHINE): thresholds follow its A/A noise "
                         "records in the history (refs/cuzk/asv-results, then origin/asv-results)")
    gt.add_argument("--noise", action="append", default=[], metavar="PATH",
                    help="A/A noise records to derive thresholds from (a .jsonl file or a directory of them), "
                         "instead of the history's (repeatable)")
    gt.add_argument("--calibrate", action="store_true",
                    help="an A/A run of --base against itself under the config's thresholds; writes its noise "
                         "record, gate-noise.jsonl, to --out (needs --machine) for `cuzk history record "
                         "--gate-noise`")
    gt.set_defaults(func=_command("gate", "cmd_gate"))

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
    bi.add_argument("--no-confirm", dest="confirm", action="store_false",
                    help="name asv find's culprit without measuring it again against its parent in alternation "
                         "(a gate run of the phase's workload; said as not confirmed)")
    bi.add_argument("--asv-arg", dest="asv_args", action="append", default=[], metavar="ARG",
                    help="one more asv find argument, e.g. --asv-arg=--invert (repeatable)")
    bi.set_defaults(func=_command("history", "cmd_bisect"))

    hi = sub.add_parser("history", help="nightly asv history: record this runner's results (or export them), import "
                                        "exported results, publish all, or list change points (record, import and "
                                        "publish work in .asv/history, never in asv.conf.json's results_dir or "
                                        "html_dir; what is not pushed is kept in refs/cuzk/BRANCH)")
    hi.add_argument("action", choices=("record", "import", "publish", "changes"))
    hi.add_argument("dirs", nargs="*", metavar="DIR",
                    help="import: directories written by `record --export`, given right after `import` "
                         "(`history import DIR... [options]`), read as untrusted data (only regular "
                         "*.json and gpu-state/*.jsonl files of that layout, every value plausible); all are judged "
                         "before anything is committed, then one commit per machine")
    hi.add_argument("--machine", help="this runner's stable asv machine name (record); only this machine (changes)")
    hi.add_argument("--repo", default=".")
    hi.add_argument("--remote", default="origin")
    hi.add_argument("--results-branch", default="asv-results")
    hi.add_argument("--pages-branch", default="gh-pages")
    hi.add_argument("--bench", default=None, help="record: asv --bench regex (default: the whole suite); "
                                                 "changes: a regex on 'benchmark(params)'")
    hi.add_argument("--no-push", action="store_true",
                    help="keep the history local: record and import commit onto refs/cuzk/BRANCH (merged with "
                         "the remote's branch where there is one), publish builds the site of that history and "
                         "pushes nothing; no remote, or one that cannot be read, is then no error")
    hi.add_argument("--export", metavar="DIR",
                    help="record: also copy this run's files to DIR (absent or empty): DIR/benchmarks.json and "
                         "DIR/MACHINE/ (machine.json, this commit's results, gpu-state/COMMIT.jsonl), for "
                         "`history import` on a job that may push")
    hi.add_argument("--dir-prefix", metavar="PREFIX",
                    help="import: each DIR is named PREFIX and then the one machine whose files it may hold (the "
                         "nightly's artifacts, asv-results-MACHINE): one runner never writes another's history")
    hi.add_argument("--gate-noise", metavar="FILE",
                    help="record: also keep this A/A noise record (`cuzk gate --calibrate --base HEAD`'s "
                         "gate-noise.jsonl, of this machine and commit) as MACHINE/gate-noise/COMMIT.jsonl, "
                         "from which the gate derives this runner's thresholds")
    hi.add_argument("--assets", metavar="NODE_MODULES", help="publish: serve asv's scripts from the site, copied "
                                                           "from these npm packages (.ci/node/node_modules)")
    hi.add_argument("--results", metavar="DIR", help="changes: asv results directory (default: the history's "
                                                     "worktree, .asv/history/results, else asv.conf.json's)")
    hi.add_argument("--max-pvalue", type=pvalue_arg, default=0.001,
                    help="changes: t-test threshold, 0 < P <= 1 (default 0.001)")
    hi.add_argument("--min-magnitude", type=magnitude_arg, default=0.05,
                    help="changes: smallest relative change reported, >= 0 (default 0.05)")
    hi.add_argument("--window", type=window_arg, default=30,
                    help="changes: e-divisive window in points, >= 4 (default 30)")
    hi.add_argument("--json", metavar="FILE", help="changes: write the change points as JSON")
    hi.add_argument("--summary", metavar="FILE", help="changes: append the Markdown to FILE too "
                                                      "(e.g. $GITHUB_STEP_SUMMARY)")
    hi.add_argument("--fail-on-gated", type=int, metavar="N",
                    help="changes: exit 1 when a phase that perf-gate.toml gates (its workloads x [gate] phases) "
                         "got slower at a change point whose first commit is among the last N points of its "
                         "series; those change points are listed. A gated series whose newest point was not "
                         "measured (failed, skipped, absent) is listed too, and exits 2")
    hi.add_argument("--gate-config", metavar="FILE",
                    help="changes: the gate config for --fail-on-gated (default: perf-gate.toml in --repo)")
    hi.set_defaults(func=_command("history", "cmd_history"))

    op = sub.add_parser("opts", help="the optimization registry: each toggle's code, default, phases and "
                                     "intent, and the variants the suite measures")
    op.set_defaults(func=_command("opts", "cmd_opts"))

    gs = sub.add_parser("gpu-state", help="print the GPU's NVML record as JSON (read-only)")
    gs.add_argument("--one-gpu", action="store_true",
                    help="exit 2 unless this job sees exactly one GPU (CUDA_VISIBLE_DEVICES names one, or the host "
                         "has one): a perf runner's check that benchmarks never share a GPU")
    gs.set_defaults(func=_command("opts", "cmd_gpu_state"))

    _runner_parser(sub)

    pe = sub.add_parser("peer", help="cuzk beside sppark (fetched at a pinned commit, built for this GPU) on the same "
                                     "device inputs, results checked equal: the time ratio per op and size")
    pe.add_argument("--msm", default="20,24,26", help="G1 MSM sizes, log2 (default 20,24,26; '' for none)")
    pe.add_argument("--ntt", default="24,27", help="NTT sizes, log2 (default 24,27; '' for none)")
    pe.add_argument("--runs", type=int, default=5, help="timed calls of each side, in turn (default 5)")
    pe.add_argument("--source", action="append", default=[], metavar="NAME=DIR",
                    help="a local clone holding sppark's (or blst's) pinned commit, for a machine without network")
    pe.add_argument("--json", metavar="FILE", help="also write the rows and the pinned sources as JSON")
    pe.set_defaults(func=_command("peer", "cmd_peer"))
    return p


def _snarkjs_parsers(sub) -> None:
    """prove, export, export-vk, bench-snarkjs (cli/snarkjs.py)."""
    p = sub.add_parser("prove", help="prove from a snarkjs .zkey and .wtns (snarkjs's argument order and output)")
    p.add_argument("zkey", metavar="ZKEY")
    p.add_argument("wtns", metavar="WTNS")
    p.add_argument("proof", metavar="PROOF.json")
    p.add_argument("public", metavar="PUBLIC.json")
    p.add_argument("--backend", default="auto", choices=("auto", "cpu", "cuda"))
    p.add_argument("--timings", action="store_true", help="print read/load/prove times and the phase table "
                                                         "to stderr")
    p.set_defaults(func=_command("snarkjs", "cmd_prove"))

    e = sub.add_parser("export", help="write a built-in circuit as circom/snarkjs files (.r1cs, .wtns, public.json)")
    e.add_argument("--circuit", default="porep_like", choices=sorted(CIRCUITS))
    e.add_argument("--log-size", type=int, default=12, help="domain 2^K (default 12)")
    e.add_argument("--seed", type=int, default=1, help="witness seed (default 1)")
    e.add_argument("--opt", default=None, help="optimizations for synthesis (or CUZK_OPT)")
    e.add_argument("--r1cs", metavar="FILE.r1cs")
    e.add_argument("--wtns", metavar="FILE.wtns")
    e.add_argument("--public", metavar="PUBLIC.json")
    e.set_defaults(func=_command("snarkjs", "cmd_export"))

    v = sub.add_parser("export-vk", help="verification_key.json of a snarkjs .zkey (like `snarkjs zkey export "
                                         "verificationkey`)")
    v.add_argument("zkey", metavar="ZKEY")
    v.add_argument("vk", metavar="VK.json")
    v.set_defaults(func=_command("snarkjs", "cmd_export_vk"))

    b = sub.add_parser("bench-snarkjs", help="`snarkjs groth16 prove` against `cuzk prove` on the same files; "
                                            "prints the ratio table")
    b.add_argument("--circuit", default="porep_like", choices=sorted(CIRCUITS))
    b.add_argument("--log-sizes", default="12", help="comma-separated, e.g. 12,14,16,18 (default 12)")
    b.add_argument("--repeat", type=int, default=3, help="runs per prover and size; the median is reported")
    b.add_argument("--backend", default="auto", choices=("auto", "cpu", "cuda"))
    b.add_argument("--workdir", default=None, help="where the .r1cs/.wtns/.zkey go (default: the key cache)")
    b.add_argument("--json", metavar="FILE", help="also write the rows as JSON")
    b.add_argument("--skip-snarkjs", action="store_true",
                   help="time cuzk only (no node needed); its proofs are checked by cuzk's verifier")
    b.add_argument("--keygen-backend", default="auto", choices=("auto", "cpu", "cuda"),
                   help="backend of the test setup that makes the .zkey (auto: the GPU when usable, from 2^12)")
    b.set_defaults(func=_command("snarkjs", "cmd_bench_snarkjs"))


def _runner_parser(sub) -> None:
    """runner-check (cli/runner.py)."""
    rc = sub.add_parser("runner-check", help="a GPU runner's readiness: prebuild every kernel module into the cubin "
                                             "cache ($CUZK_CUBIN_DIR), then one proof verified on the GPU, one cuda "
                                             "point measured, NVML read; exit 0 ready, 2 not (or no GPU)")
    rc.add_argument("--target", default="cuda:18", help="the cuda workload proved and measured (default cuda:18, "
                                                        "the gate's; its key lands in the key cache)")
    rc.add_argument("--phase", default="tail_msm", help="the phase measured (default tail_msm)")
    rc.add_argument("--samples", type=int, default=9, help="guarded device timings of the phase (default 9, >= 7)")
    rc.add_argument("--commit", dest="commits", action="append", default=[], metavar="REF",
                    help="also prebuild the kernels of this commit of --repo (repeatable): the gate's base and head, "
                         "so neither side compiles in its workers")
    rc.add_argument("--repo", default=".", help="the git repository of --commit (default: .)")
    rc.add_argument("--jobs", type=int, default=None, metavar="N", help="nvcc processes at a time (default: the CPUs)")
    rc.add_argument("--keep-days", type=float, default=30.0, metavar="D",
                    help="remove cache files that no prebuild has made or used for D days (default 30; "
                         "negative: keep all)")
    rc.add_argument("--deep", metavar="WORKDIR",
                    help="also the suite end to end in WORKDIR (new or empty), as a new runner is commissioned: asv "
                         "measures the phase, asv fails with CuPy broken, the gate passes A/A and flags the phase "
                         "slowed by +100%% (tens of minutes)")
    rc.add_argument("--json", metavar="FILE", help="write the checks as JSON")
    rc.set_defaults(func=_command("runner", "cmd_runner_check"))


def _exit_on_sigterm() -> None:
    """SIGTERM (a timeout, a job scheduler) becomes Interrupted (a SystemExit, 143) in the main thread, so
    finally blocks run: a pipeline removes its /dev/shm witnesses and stops its workers, and no partial
    output is left."""
    raise_on_sigterm()


def main(argv=None) -> int:
    """Exit codes: 0, 1 (a valid input, an invalid proof), 2 (bad input), 128 + signal when interrupted."""
    try:
        return _main(argv)
    except (KeyboardInterrupt, Interrupted) as e:
        print("cuzk: interrupted", file=sys.stderr)
        return e.code if isinstance(e, Interrupted) else 130


def _main(argv=None) -> int:

    if argv is None:                 # the program itself (not a caller's argv)
        _exit_on_sigterm()
    argv = sys.argv[1:] if argv is None else list(argv)
    try:
        if argv[:1] == ["micro"]:
            from ..micro import main as micro_main  # pyperf owns the command line there
            return micro_main(argv[1:])
    except Exception as e:
        return _internal_error(e)
    args = _parser().parse_args(argv)
    try:
        return args.func(args)
    except BrokenPipeError:
        return _reader_gone()
    except (CliError, KeyFormatError, PointError, UnsatisfiedError, OptError, BackendError, ArithmeticError,
            ValueError, OSError) as e:
        _err(str(e).splitlines()[0] if str(e) else type(e).__name__)
        return EXIT_BAD_INPUT
    except MemoryError as e:
        what = str(e).splitlines()[0] if str(e) else ""     # numpy's and CuPy's say what they could not allocate
        if isinstance(e, DeviceMemoryError) and what:
            _err(what)
        else:                           # CuPy's OutOfMemoryError is a MemoryError too: the device's, not the host's
            where = "device" if type(e).__module__.startswith("cupy") else "host"
            _err(f"out of {where} memory" + (f": {what}" if what else " (the allocation that failed gave no size)"))
        return EXIT_BAD_INPUT
    except Exception as e:
        return _internal_error(e)


def _reader_gone() -> int:
    """stdout's reader closed the pipe (`cuzk opts | head -1`): no input was bad. Exit as a process that SIGPIPE
    ended (141, as `yes | head` does), quietly, with stdout on /dev/null so the interpreter's last flush is silent."""
    try:
        fd = os.open(os.devnull, os.O_WRONLY)
        os.dup2(fd, sys.stdout.fileno())
        os.close(fd)
    except (OSError, ValueError):
        pass
    return 128 + signal.SIGPIPE


def _internal_error(e: Exception) -> int:
    """Anything unforeseen is one line and exit 2: exit 1 keeps its one meaning (an invalid proof, a
    regression), and a traceback is never the answer to an input."""
    what = str(e).splitlines()[0] if str(e) else ""
    print(f"cuzk: internal error: {type(e).__name__}: {what[:300]} (a bug; please report it with this line)",
          file=sys.stderr)
    return EXIT_BAD_INPUT
