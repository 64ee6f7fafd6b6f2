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
"""
from __future__ import annotations

import sys

if __name__ == "__main__":
    del sys.path[0]               # run by path: the package's own folder must not shadow the standard library

import glob  # noqa: E402
import os  # noqa: E402
import re  # noqa: E402
import subprocess  # noqa: E402

VAR = "CUZK_CUDA_EXTRA"
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
    args, pip_opts = argv[1:], []
    while args[:1] == ["--constraints-if-present"]:
        if len(args) < 2:
            print(USAGE, file=sys.stderr)
            return 2
        if os.path.isfile(args[1]):
            pip_opts += ["-c", args[1]]
        args = args[2:]
    editable = args[:1] == ["-e"]
    args = args[1:] if editable else args
    if not args:
        print("cuda_extra.py install: no wheel or directory given", file=sys.stderr)
        return 2
    req = requirement(args[0], args[1].split(",") if len(args) > 1 else [], extra)
    shown = "".join(f", constraints {c}" for c in pip_opts[1::2])
    print(f"cuzk: installing {req} ({why}{shown})", file=sys.stderr, flush=True)
    cmd = [sys.executable, "-m", "pip", "install", *pip_opts] + (["-e"] if editable else []) + [req]
    return subprocess.run(cmd).returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
