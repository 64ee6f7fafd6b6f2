"""Which CUDA extra (cuda12, cuda13 or none) a machine's environments get, and installing with it.

One setting decides it everywhere: `CUZK_CUDA_EXTRA` (cuda12 | cuda13 | none), set in a runner's
environment (its `.env`, beside CUDA_VISIBLE_DEVICES). Unset (or `auto`), the NVIDIA driver decides:
no device -> none (a CPU environment); a driver of 580 or newer -> cuda13; 525 or newer -> cuda12.

asv runs this file by path with the interpreter of the environment it builds, before cuzk is
installed there, so it uses the standard library only:

    python cuzk/cuda_extra.py                         # print the extra (nothing for a CPU machine)
    python cuzk/cuda_extra.py install WHEEL bench     # pip install WHEEL[bench,<extra>]
    python cuzk/cuda_extra.py install -e . perf       # the same, editable
    python cuzk/cuda_extra.py install --constraints-if-present C.txt WHEEL bench   # with pip's -c C.txt,
                                                      # where that file exists (else without)

The install command is taken from the checkout asv runs in, not from the commit it measures, so
older commits are installed the same way.

One dependency set: every install takes `constraints.txt` from the root of the checkout this file
is in (pip's -c), so CI, the workflows and asv's environments get the same numpy, CuPy and tools.
apache-otava, the change-point tool of `cuzk history changes`, pins an older numpy (2.2.0 on
Python < 3.14), so it never joins that set: installing the `test` or `history` extra also makes
an environment of its own for it, `<this environment>/otava` (cuzk/perf/changepoint.py runs it
there), and `history` is installed as `perf` plus that environment.
"""
from __future__ import annotations

import sys

if __name__ == "__main__":
    del sys.path[0]               # run by path: the package's own folder must not shadow the standard library

import glob  # noqa: E402
import os  # noqa: E402
import re  # noqa: E402
import subprocess  # noqa: E402
import tomllib

VAR = "CUZK_CUDA_EXTRA"
CONSTRAINTS = "constraints.txt"
TOOL_ENV = "otava"                 # the change-point tool's environment, inside the one installed into
CHANGE_POINT_EXTRAS = ("test", "history")
EXTRAS = ("cuda12", "cuda13")
# the oldest driver each CuPy wheel runs on (CUDA's minor-version compatibility)
MIN_DRIVER = (("cuda13", 580), ("cuda12", 525))


USAGE = "usage: cuda_extra.py [install [--constraints-if-present FILE] [-e] WHEEL_OR_DIR [EXTRA,...]]"


class ExtraError(ValueError):
    pass


def hidden() -> bool:
    """CUDA_VISIBLE_DEVICES set to hide every device: the owner chose no GPU here."""
    v = os.environ.get("CUDA_VISIBLE_DEVICES")
    return v is not None and v.strip() in ("", "-1", "NoDevFiles")


def driver_devices(root: str = "/") -> tuple[int, str]:
    """(count, where): NVIDIA GPUs the kernel driver lists, from its files alone (no library needed)."""
    gpus = glob.glob(os.path.join(root, "proc/driver/nvidia/gpus/*"))
    if gpus:
        return len(gpus), "/proc/driver/nvidia/gpus"
    nodes = [d for d in glob.glob(os.path.join(root, "dev/nvidia*")) if os.path.basename(d)[6:].isdigit()]
    return len(nodes), "/dev/nvidia*"


def driver_major(root: str = "/") -> int | None:
    """The kernel driver's major version (580 for 580.159.03), or None where it cannot be read."""
    try:
        with open(os.path.join(root, "proc/driver/nvidia/version")) as f:
            m = re.search(r"Kernel Module\s+(?:for \S+\s+)?(\d+)\.\d+", f.read())
        if m:
            return int(m.group(1))
    except OSError:
        pass
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=30).stdout
        m = re.match(r"\s*(\d+)\.", out)
        return int(m.group(1)) if m else None
    except (OSError, subprocess.SubprocessError):
        return None


def choose(env: dict | None = None, root: str = "/") -> tuple[str | None, str]:
    """(extra or None, why). Raises ExtraError for a setting it cannot honour."""
    env = os.environ if env is None else env
    v = env.get(VAR, "").strip().lower()
    if v in EXTRAS:
        return v, f"{VAR}={v}"
    if v in ("none", "cpu"):
        return None, f"{VAR}={v}"
    if v not in ("", "auto"):
        raise ExtraError(f"{VAR} must be cuda12, cuda13 or none, not {v!r}")
    if hidden():
        return None, "CUDA_VISIBLE_DEVICES hides every device"
    n, where = driver_devices(root)
    if n == 0:
        return None, "no NVIDIA device"
    major = driver_major(root)
    if major is None:
        raise ExtraError(f"{n} NVIDIA device(s) in {where} but the driver version cannot be read: "
                         f"set CUZK_CUDA_EXTRA=cuda12 or cuda13")
    for extra, least in MIN_DRIVER:
        if major >= least:
            return extra, f"{n} NVIDIA device(s), driver {major}"
    raise ExtraError(f"NVIDIA driver {major} is older than any supported CUDA extra needs "
                     f"({', '.join(f'{e}: {d}' for e, d in MIN_DRIVER)})")


def requirement(target: str, extras: list[str], extra: str | None) -> str:
    """WHEEL or DIR with its extras: '/x/cuzk.whl[bench,cuda13]'."""
    names = [e for e in extras if e] + ([extra] if extra else [])
    return f"{target}[{','.join(names)}]" if names else target


def checkout_root() -> str:
    """The checkout this file belongs to (for an installed copy: its site-packages, which has no constraints)."""
    return os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def constraints_file(root: str | None = None) -> str | None:
    path = os.path.join(root or checkout_root(), CONSTRAINTS)
    return path if os.path.isfile(path) else None


def otava_requirement(root: str | None = None) -> str:
    """The apache-otava requirement of pyproject.toml's `history` extra (the one place it is pinned)."""
    path = os.path.join(root or checkout_root(), "pyproject.toml")
    try:
        with open(path, "rb") as f:
            extras = tomllib.load(f)["project"]["optional-dependencies"]
    except (OSError, ValueError, KeyError) as e:
        raise ExtraError(f"cannot read the history extra of {path}: {e}") from e
    reqs = [r for r in extras.get("history", []) if re.match(r"apache-otava\b", r, re.I)]
    if len(reqs) != 1:
        raise ExtraError(f"{path}: the history extra names apache-otava {len(reqs)} times, not once")
    return reqs[0]


def tool_env(prefix: str | None = None) -> str:
    """The change-point tool's environment beside the packages of `prefix` (default: this interpreter's)."""
    return os.path.join(prefix or sys.prefix, TOOL_ENV)


def install_commands(target: str, extras: list[str], extra: str | None, editable: bool, root: str | None = None,
                     python: str | None = None, prefix: str | None = None) -> list[list[str]]:
    """The commands of one install: pip with the constraints, then the change-point tool's own environment
    where the extras want it."""
    python = python or sys.executable
    wanted = [e for e in extras if e]
    main_extras = list(dict.fromkeys("perf" if e == "history" else e for e in wanted))
    cmd = [python, "-m", "pip", "install"] + (["-e"] if editable else []) + [requirement(target, main_extras, extra)]
    c = constraints_file(root)
    cmds = [cmd + (["-c", c] if c else [])]
    if set(wanted) & set(CHANGE_POINT_EXTRAS):
        env = tool_env(prefix)
        cmds += [[python, "-m", "venv", env],
                 [os.path.join(env, "bin", "python"), "-m", "pip", "install", otava_requirement(root)]]
    return cmds


def main(argv: list[str]) -> int:
    try:
        extra, why = choose()
    except ExtraError as e:
        print(f"cuzk: {e}", file=sys.stderr)
        return 2
    if not argv:
        print(extra or "")
        return 0
    if argv[0] != "install" or len(argv) < 2:
        print(USAGE, file=sys.stderr)
        return 2
    args, root = argv[1:], None
    while args[:1] == ["--constraints-if-present"]:      # asv's install command names the checkout's file
        if len(args) < 2:
            print(USAGE, file=sys.stderr)
            return 2
        root = os.path.dirname(os.path.abspath(args[1]))
        args = args[2:]
    editable = args[:1] == ["-e"]
    args = args[1:] if editable else args
    if not args:
        print("cuda_extra.py install: no wheel or directory given", file=sys.stderr)
        return 2
    try:
        cmds = install_commands(args[0], args[1].split(",") if len(args) > 1 else [], extra, editable, root=root)
    except ExtraError as e:
        print(f"cuzk: {e}", file=sys.stderr)
        return 2
    c = constraints_file(root)
    what = next(a for a in cmds[0][4:] if a != "-e")
    pins = f"constraints {c}" if c else f"no {CONSTRAINTS} in {root or checkout_root()}"
    print(f"cuzk: installing {what} ({why}; {pins})", file=sys.stderr, flush=True)
    tool = None
    if len(cmds) > 1:
        # the tool's environment shares nothing with the main install: made beside it (each pip mostly keeps one
        # core busy), its output held back and shown after the main install's
        print(f"cuzk: the change-point tool ({cmds[2][-1]}, which pins an older numpy) in its own "
              f"environment, {cmds[1][-1]}, made meanwhile", file=sys.stderr, flush=True)
        tool = _Beside(cmds[1:])
    rc = subprocess.run(cmds[0]).returncode
    if tool is not None:
        rc_tool = tool.wait()
        return rc or rc_tool
    return rc


class _Beside:
    """Commands run one after the other in a thread, their output kept in a file until wait()."""

    def __init__(self, cmds: list[list[str]]):
        import tempfile
        import threading
        self.cmds, self.rc = cmds, 1
        self.out = tempfile.TemporaryFile()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        for cmd in self.cmds:
            self.rc = subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=self.out, stderr=subprocess.STDOUT).returncode
            if self.rc:
                return

    def wait(self) -> int:
        self.thread.join()
        self.out.seek(0)
        sys.stdout.flush()
        sys.stdout.buffer.write(self.out.read())
        sys.stdout.flush()
        if self.rc:
            print(f"cuzk: the change-point tool's environment failed (exit {self.rc}): {' '.join(self.cmds[-1])}",
                  file=sys.stderr, flush=True)
        return self.rc


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
