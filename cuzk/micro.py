"""`cuzk micro KERNEL`: pyperf-driven kernel microbenchmarks timed by CUDA events.

pyperf runs calibrated loops in worker processes and writes JSON (`-o FILE`) that
`python -m pyperf compare_to` reads. Workers inherit the whole environment (CUDA and
CuPy variables included): pyperf drops most variables unless told otherwise. After the
run, the ratio of the mean to the kernel's floor (docs/architecture.md, Targets) is printed, and the
floor goes into the JSON's metadata (`cuzk_floor_s`; the ratio is the mean over it).
The MSM floor is the 2^26 floor there scaled by n (a lower bound at smaller sizes, where Pippenger
spends more per point).

-o, --append and --profile are this process's to write, by the output rule (files.py), in any form pyperf's parser
takes (-qo X, --output=X): -o makes a new file, --append adds runs to a pyperf JSON, --profile makes a new file of
the workers' cProfile stats. pyperf would merge them into an existing stats file; here an existing one is refused,
as -o refuses one: merging means unmarshalling the file, and marshal is not safe on a file cuzk did not write.

`--backend cpu` times the CPU reference's NTT and inverse NTT (ntt, intt) with the host
clock instead: the same pyperf path, for machines without a GPU (CI checks it end to end).
"""
from __future__ import annotations

import os
import random
import shutil
import sys
import tempfile
import time
from contextlib import ExitStack, contextmanager, nullcontext

from . import backend as backends
from . import environment
from .field import FR_TWO_ADICITY, R
from .gpu.kernel_sources import MUL_BUILDS
from .poly import Domain, intt, ntt
from .qap import CONVENTIONS, qap

KERNELS = ("ntt", "intt", "h", "spmv", "fp_mul", "fr_mul", "msm", "msm_g2", "batch_add")
MUL_KERNELS = ("fp_mul", "fr_mul")      # the ones --chains and --fastmul shape
NOT_YET: dict = {}
IMAD_MODEL_FP_MUL = 2.8e10     # Fp mul/s: the IMAD rate (docs/architecture.md, Targets) over one product's IMADs
COPY_BW = 4.28e12              # bytes/s, device copy, docs/architecture.md, Targets
NTT27_FLOOR = 0.030            # s
MSM26_FLOOR = 0.26             # s, 2^26 G1 MSM, IMAD floor 0.26-0.36 s


def floor_s(kernel: str, log_size: int, work: int, convention: str = "coeff") -> float | None:
    """The floor for one call, in seconds (None where there is none; docs/architecture.md, Targets)."""
    ntt = NTT27_FLOOR * (2**log_size * log_size) / (2**27 * 27)
    if kernel in ("ntt", "intt"):
        return ntt
    if kernel == "h":
        return ntt * (6 + qap(convention).interpolates)     # three inverse, three forward, one back to coefficients
    if kernel == "fp_mul":
        return work / IMAD_MODEL_FP_MUL
    if kernel == "msm":
        return MSM26_FLOOR * 2.0 ** (log_size - 26)
    if kernel == "spmv":
        return work * (32 + 4 + 32) / COPY_BW          # coefficient, column, gathered witness
    return None


def _make(kernel: str, log_size: int, convention: str, generator: int, chains: int = 4, fastmul: int = 1,
          opts=None, table_gib=None):
    """A GPU kernel's (run, work) (micro_ops); opts: the optimization set (None: this process's, from
    $CUZK_OPT), table_gib: P2's budget (None: $CUZK_TABLE_GIB)."""
    from . import micro_ops as M
    opts = environment.options() if opts is None else opts
    if kernel == "ntt":
        return M.make_ntt(log_size, "ntt", generator, opts=opts)
    if kernel == "intt":
        return M.make_ntt(log_size, "intt", generator, opts=opts)
    if kernel == "h":
        return M.make_h(log_size, convention, generator, opts=opts)
    if kernel == "spmv":
        return M.make_spmv(log_size)
    if kernel in MUL_KERNELS:
        return M.make_mul(kernel[:2], chains=chains, fastmul=fastmul)
    if kernel in ("msm", "msm_g2"):
        gib = environment.table_gib() if table_gib is None else table_gib
        return M.make_msm(log_size, 1 if kernel == "msm" else 2, opts=opts, table_gib=gib)
    if kernel == "batch_add":
        return M.make_batch_add(log_size, opts=opts)
    raise ValueError(kernel)


CPU_KERNELS = ("ntt", "intt")


def _make_cpu(kernel: str, log_size: int, generator: int):
    """The CPU reference's transforms on random Fr elements, timed by the host clock."""

    d = Domain(log_size, generator)
    rng = random.Random(1)
    x = [rng.randrange(R) for _ in range(d.n)]
    fn = ntt if kernel == "ntt" else intt

    def run(loops: int) -> float:
        t0 = time.perf_counter()
        for _ in range(loops):
            fn(x, d.omega)
        return time.perf_counter() - t0
    return run, d.n


CPU_BYTES_PER_ELEMENT = 320      # _make_cpu's peak an element, input and one transform (tracemalloc at 2^16: 312)


def _bad(msg: str) -> int:
    print(f"cuzk: error: micro: {msg}", file=sys.stderr)
    return 2


MAX_RESULTS_BYTES = 64 << 20     # a pyperf JSON that --append adds to: ~2 KB a benchmark's run


def _read_suite(path: str, pyperf):
    """The pyperf suite in the regular file `path`, judged (a size limit, what it unpacks to, every value a
    measurement), or a line saying what is wrong (str)."""
    import gzip
    import io
    import zlib
    from .files import read_input
    try:
        data = read_input(path, MAX_RESULTS_BYTES, mode="rb")
        if path.endswith(".gz"):                # the limit holds for what it unpacks to: a small gzip can be GBs
            with gzip.GzipFile(fileobj=io.BytesIO(data)) as gz:
                data = gz.read(MAX_RESULTS_BYTES + 1)
            if len(data) > MAX_RESULTS_BYTES:
                return (f"{path}: more than the {MAX_RESULTS_BYTES >> 20} MiB a pyperf JSON may be, "
                        "once decompressed")
        suite = pyperf.BenchmarkSuite.loads(data.decode("utf-8"))
    except OSError as e:
        return f"{path}: {e.strerror or e}"
    except (ValueError, KeyError, TypeError, AttributeError, EOFError, zlib.error,
            RecursionError) as e:               # JSON's, UTF-8's: ValueErrors; RecursionError: nested past the parser
        return f"{path}: not a pyperf JSON ({type(e).__name__}: {str(e)[:120]})"
    from .perf.values import is_number
    for b in suite.get_benchmarks():            # pyperf takes inf and any int > 0: no measurement to add runs to
        for r in b.get_runs():
            v = next((v for v in [*r.values, *(w for _, w in r.warmups)] if not is_number(v)), None)
            if v is not None:
                return f"{path}: {b.get_name()}: value {str(v)[:40]} is not a measurement"
    return suite


@contextmanager
def _held(*paths):
    """Another `micro --append` to the file at paths[0] kept out until the block ends: the writers' lock on the
    folder that holds it (files.folder_held). The file itself cannot carry the lock: a new path has none to lock
    yet (two appends to it would each write a file of their own runs, and the slower would replace the other's),
    and each write replaces the file by a rename. The folder is the one the write lands in: a link's target's
    (resolve_output), as write_outputs locks it. The folders of the other paths written with it (-o) are taken
    too, all in write_outputs' order (sorted): one held first and another waited for later could wait in a cycle
    with a writer that takes the two the other way round."""
    from .files import folder_held, resolve_output
    outs = [resolve_output(p) for p in paths if p]
    folders = sorted({os.path.dirname(os.path.abspath(o.target)) for o in outs if not o.stream})
    with ExitStack() as stack:
        for d in folders:
            stack.enter_context(folder_held(d))
        yield


def _pipe_problem(fd: int) -> str | None:
    """Why --pipe's descriptor cannot take pyperf's results (None: it can): pyperf opens it only once the run is
    done, as an internal error."""
    import fcntl
    import stat
    try:
        flags = fcntl.fcntl(fd, fcntl.F_GETFL)
        mode = os.fstat(fd).st_mode
    except (OSError, OverflowError, ValueError):
        return "is not open"
    if flags & os.O_ACCMODE == os.O_RDONLY:
        return "is open for reading only"
    return None if stat.S_ISFIFO(mode) else "is not a pipe"


def _option_problem(args) -> str | None:
    """A line saying what is wrong with an option pyperf's parser takes but its run cannot (None: nothing): said
    before any work, not as an internal error in a worker or a calibration that never ends."""
    import math
    from pyperf._cpu_utils import parse_cpu_list
    if not (math.isfinite(args.min_time) and args.min_time >= 0):
        return f"--min-time {args.min_time}: seconds, a finite number not below 0"
    for opt, v in (("--loops", args.loops), ("--warmups", args.warmups), ("--worker-task", args.worker_task)):
        if v is not None and type(v) is not int:      # pyperf's X^Y makes 2^-1 a 0.5 that its workers refuse
            return f"{opt} {v}: a whole number, not below 0"
    if args.pipe is not None and (why := _pipe_problem(args.pipe)):
        return f"--pipe {args.pipe}: the descriptor {why} (a pipe open for writing takes the results)"
    if args.affinity is not None:
        try:
            cpus = parse_cpu_list(args.affinity) or []
        except ValueError:
            cpus = None
        if cpus is None or not set(cpus) <= os.sched_getaffinity(0):
            return f"--affinity {args.affinity}: not a list of this process's CPUs ({_cpu_list()})"
    for opt, exe in (("--python", args.python), ("--compare-to", args.compare_to)):
        if exe and shutil.which(os.path.expanduser(exe)) is None:
            return f"{opt} {exe}: no such executable"
    return None


def _cpu_list() -> str:
    return ",".join(str(c) for c in sorted(os.sched_getaffinity(0)))


def _outputs(args, pyperf):
    """pyperf's -o/--output, --append and --profile (args: pyperf's parser's namespace, so every form it takes,
    -qo X, --output=X, counts) judged by the output rule before any work (a new -o, as pyperf makes it; --append:
    a pyperf JSON that reads, or a new path; --profile, as -o, a new path), then
    taken off args: the manager writes them, never pyperf. (-o, --append, the suite --append adds to or None,
    --profile), or a line saying what is wrong (str)."""
    from .files import OutputError, check_outputs
    got = (args.output, args.append, args.profile)
    try:
        outs = check_outputs({"-o": args.output, "--append": args.append, "--profile": args.profile})
    except OutputError as e:
        return str(e)
    exists = {role: out.identity[0] != "new" and not out.stream for role, out in outs.items()}
    if exists.get("-o"):
        return f"{args.output}: exists (-o writes a new file; --append adds to one)"
    if exists.get("--profile"):
        return f"{args.profile}: exists (--profile writes a new file)"
    suite = None
    if exists.get("--append"):
        suite = _read_suite(args.append, pyperf)
        if isinstance(suite, str):
            return suite
    args.output = args.append = args.profile = None
    return got[0], got[1], suite, got[2]


def _profile_written(made: str) -> bytes | None:
    """The workers' stats as pyperf left them (`made`: each worker merged its own there), or None where none ran."""
    try:
        with open(made, "rb") as f:
            return f.read()
    except FileNotFoundError:
        return None


def _dumped(suite, path: str) -> bytes:
    """A pyperf suite as pyperf writes it to `path` (gzip where the name ends .gz)."""
    import gzip
    import io
    buf = io.StringIO()
    suite.dump(buf)
    data = buf.getvalue().encode()
    return gzip.compress(data) if path.endswith(".gz") else data


def mul_name(args) -> str:
    """fp_mul / fr_mul, with the non-default chains and build in the name (so results never mix)."""
    return args.kernel + (f"_c{args.chains}" if args.chains != 4 else "") + \
        (f"_b{args.fastmul}" if args.fastmul != 1 else "")


def main(argv: list[str]) -> int:
    try:
        import pyperf
    except ImportError:
        print("cuzk: error: `cuzk micro` needs pyperf (pip install 'cuzk[perf]')", file=sys.stderr)
        return 2
    cpu = "--backend=cpu" in argv or any(a == "--backend" and argv[i + 1:i + 2] == ["cpu"] for i, a in enumerate(argv))
    kernel = next((a for a in argv if a in KERNELS or a in NOT_YET), None)
    if kernel in NOT_YET:
        print(f"cuzk: error: micro {kernel} arrives with {NOT_YET[kernel]}", file=sys.stderr)
        return 2
    if kernel is None and not any(a in ("-h", "--help") for a in argv):
        return _bad(f"name a kernel: {'|'.join(KERNELS)}")
    if cpu and kernel not in CPU_KERNELS:
        return _bad(f"--backend cpu times {' and '.join(CPU_KERNELS)} only")
    if kernel in KERNELS and "--worker" not in argv and not cpu:
        ok, why = backends.gpu_status()
        if not ok:
            print(f"cuzk: error: micro needs a GPU ({why})", file=sys.stderr)
            return 2
    def add_cmdline_args(cmd, args):
        cmd.extend([args.kernel, "--log-size", str(args.log_size), "--convention", args.convention,
                    "--generator", str(args.generator), "--backend", args.backend])
        if args.kernel in MUL_KERNELS:
            cmd.extend(["--chains", str(args.chains), "--fastmul", str(args.fastmul)])

    runner = pyperf.Runner(add_cmdline_args=add_cmdline_args, program_args=("-m", "cuzk", "micro"))
    p = runner.argparser
    p.error = lambda message: sys.exit(_bad(message))     # one line, as cuzk's own parser (pyperf prints its usage)
    p.allow_abbrev = False      # --out or --app would reach pyperf's own writer, past the output rule above
    p.add_argument("kernel", choices=KERNELS)
    p.add_argument("--log-size", type=int, default=20)
    p.add_argument("--convention", default="coeff", choices=CONVENTIONS)
    p.add_argument("--generator", type=int, default=7, choices=(5, 7))
    p.add_argument("--backend", default="cuda", choices=("cuda", "cpu"),
                   help="cuda (CUDA events; default) or cpu (the reference's ntt/intt, host clock)")
    p.add_argument("--chains", type=int, default=None, choices=(1, 4),
                   help="fp_mul/fr_mul: independent multiplication chains per thread (4: default; 1: 4x the threads)")
    p.add_argument("--fastmul", type=int, default=None, choices=tuple(MUL_BUILDS),
                   help="fp_mul/fr_mul: the multiplier build, 1 (default, IMAD) or 6 (FP64 pipe; "
                        "kernel_sources.BUILDS)")
    # pyperf's own parser, so -o hidden in -qo X or --output=X is found; pyperf then takes the namespace judged
    # here, its outputs taken off
    args = p.parse_args(argv)
    if why := _option_problem(args):
        return _bad(why)
    out = app = suite = prof = None
    if args.worker:
        if args.output or args.append:     # a worker's results go up --pipe to the manager that spawned it
            return _bad("-o and --append are the manager's: --worker sends its results up --pipe")
    else:
        if args.inherit_environ is None:
            args.copy_env = True           # CUDA's and CuPy's variables reach the workers
        got = _outputs(args, pyperf)
        if isinstance(got, str):
            return _bad(got)
        out, app, suite, prof = got
    tmp = None
    if prof:            # pyperf's workers merge their stats into a file of this process's, then written by the rule
        try:
            tmp = tempfile.mkdtemp(prefix="cuzk-profile-")
        except OSError as e:
            return _bad(f"{prof}: no temp folder for the workers' profile ({e.strerror or e})")
        args.profile = os.path.join(tmp, "profile.pstats")
    try:
        return _measure(runner, argv, args, pyperf, out, app, suite, prof)
    finally:
        if tmp:
            shutil.rmtree(tmp, ignore_errors=True)


def _measure(runner, argv, args, pyperf, out, app, suite, prof) -> int:
    """The run pyperf drives (a manager's workers, or a worker's timing) and, in the manager, its outputs."""
    p = runner.argparser
    p.parse_args = lambda *a, **k: args
    runner.parse_args(argv)
    if args.kernel not in MUL_KERNELS and (args.chains is not None or args.fastmul is not None):
        p.error(f"--chains and --fastmul are fp_mul's and fr_mul's: {args.kernel} takes neither")
    args.chains = 4 if args.chains is None else args.chains
    args.fastmul = 1 if args.fastmul is None else args.fastmul
    if not 0 <= args.log_size <= FR_TWO_ADICITY:     # no such domain: said before a worker builds 2^k inputs
        p.error(f"--log-size {args.log_size}: a domain 2^k needs 0 <= k <= {FR_TWO_ADICITY} (Fr's two-adicity)")
    if args.backend == "cpu":          # the reference's inputs are Python ints: said before a worker builds them
        from .pipeline import available_host_bytes
        need, avail = CPU_BYTES_PER_ELEMENT << args.log_size, available_host_bytes()
        if avail is not None and need > avail:
            p.error(f"--log-size {args.log_size} with --backend cpu: the reference's NTT holds ~{need / 2**30:.1f} "
                    f"GiB of Python ints at its peak, more than the {avail / 2**30:.1f} GiB of host memory available")
    name = f"{args.kernel}_2^{args.log_size}" if args.kernel not in MUL_KERNELS else mul_name(args)
    if args.backend == "cpu":
        name = "cpu_" + name
    runner.metadata["cuzk_backend"] = args.backend
    if args.worker or args.in_process:     # inputs (and P2's tables) made where timed: a manager holds no device
        # memory for the workers it spawns
        if args.backend == "cpu":
            run, work = _make_cpu(args.kernel, args.log_size, args.generator)
        else:
            run, work = _make(args.kernel, args.log_size, args.convention, args.generator, args.chains, args.fastmul)
        fl = floor_s(args.kernel, args.log_size, work, args.convention) if args.backend == "cuda" else None
        for var in ("CUDA_VISIBLE_DEVICES", "CUPY_CACHE_DIR"):      # as each worker saw them (--copy-env)
            if var in os.environ:
                runner.metadata[f"cuzk_{var.lower()}"] = os.environ[var]
        runner.metadata["cuzk_work_items"] = work
        if fl:
            runner.metadata["cuzk_floor_s"] = fl
    else:
        def run(loops: int) -> float:
            raise RuntimeError("pyperf's manager process times nothing: its workers do")
    bench = runner.bench_time_func(name, run)
    if bench is not None and not args.worker:
        mean = bench.mean()
        meta = bench.get_metadata()
        work, fl = meta.get("cuzk_work_items"), meta.get("cuzk_floor_s")
        extra = f"; {fl * 1e3:.3f} ms floor, {mean / fl:.2f}x the floor" if fl else ""
        if args.kernel in MUL_KERNELS and work:
            extra = f"; {work / mean:.3e} mul/s" + (f", {mean / fl:.2f}x the IMAD model" if fl else "")
        print(f"{name}: mean {mean * 1e3:.3f} ms per call{extra}")
        from .files import OutputError, resolve_output, write_outputs
        written = {}
        if out:
            written[out] = _dumped(pyperf.BenchmarkSuite([bench]), out)
        try:
            # read again, held: another --append to the file may have landed while this one measured, and its runs
            # stay (the file read before any work was only judged)
            plain = app and not resolve_output(app).stream
            with _held(app, out) if plain else nullcontext():
                if plain and os.path.exists(app):
                    suite = _read_suite(app, pyperf)
                    if isinstance(suite, str):
                        return _bad(suite)
                if app:
                    if suite is None:
                        suite = pyperf.BenchmarkSuite([bench])
                    else:
                        try:
                            suite.add_runs(bench)
                        except ValueError as e:        # pyperf: another benchmark's metadata under this name
                            return _bad(f"{app}: its {name} cannot take these runs ({e})")
                    written[app] = _dumped(suite, app)
                if prof:
                    stats = _profile_written(args.profile)
                    if stats is not None:
                        written[prof] = stats
                write_outputs(written)
        except OutputError as e:
            return _bad(str(e))
    return 0
