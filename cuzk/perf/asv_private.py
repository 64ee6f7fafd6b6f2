"""A temporary copy of the project's asv.conf.json whose results and html go to a directory of the
caller's, so that a bisection (asv find saves every commit it steps on) or the history (its own
worktree of the results branch) leaves the user's .asv/results and .asv/html as they were.

asv chdirs to the directory of the config it is given and resolves relative paths there, so the
copy names the repository, the benchmarks and the environments by absolute path. The environments
stay the project's own: they hold builds, not results, and building them is the slow part. Two more
things asv takes from that directory follow the project checkout too: `{conf_dir}` in the build and
install commands (cuzk/cuda_extra.py, constraints.txt) and pyproject.toml (asv installs its
build-system requirements into the environments it builds).

The links of a published site (project_url, show_commit_url) come from the checkout's git remote, or
are left out: asv.conf.json names no host.
"""
from __future__ import annotations

import json
import re
import shlex
import shutil
import signal
import subprocess
import sys
from pathlib import Path

# local paths in asv.conf.json, relative to its directory, with asv's defaults (repo_subdir is relative
# to the repo: left as is)
_LOCAL_PATHS = {"benchmark_dir": "benchmarks", "env_dir": "env"}
# the commands asv interpolates; {conf_dir} in them means the project checkout, not the copy's folder
_COMMANDS = ("install_command", "build_command", "uninstall_command")
_CONF_DIR = re.compile(r"(?<!\{)\{conf_dir\}(?!\})")
# a commit's page under a project's, per host (others: the project's page only)
_COMMIT_PATH = {"github.com": "/commit/", "gitlab.com": "/-/commit/", "codeberg.org": "/commit/"}
# the asv plugin that makes asv's existing environment run each commit's own code (bisect only)
EXISTING_PLUGIN = "cuzk_commit_code"


class AsvConfigError(ValueError):
    pass


ASV_STOP_S = 10.0    # asv's own clean-up: SIGTERM to the benchmark's group, SIGKILL a second later


def stop(p: subprocess.Popen, wait_s: float = ASV_STOP_S) -> None:
    """An asv process that is still running stopped the way that lets it clean up: SIGINT, which asv turns into
    killing the benchmark's process group (asv starts each benchmark in a group of its own), then SIGKILL where it
    does not exit. SIGTERM or SIGKILL would end asv alone and leave that benchmark running, orphaned, beside
    whatever runs next on the machine (on a GPU runner, the next job's measurements)."""
    if p.poll() is not None:
        return
    p.send_signal(signal.SIGINT)
    try:
        p.wait(timeout=wait_s)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()


def run(cmd: list[str], **kw) -> subprocess.CompletedProcess:
    """subprocess.run for an asv command: where this process is interrupted (SIGINT, SIGTERM) or fails while asv
    runs, asv is stopped by stop(), never killed outright."""
    if kw.pop("capture_output", False):
        kw["stdout"] = kw["stderr"] = subprocess.PIPE
    p = subprocess.Popen(cmd, **kw)
    try:
        out, err = p.communicate()
    finally:
        stop(p)
        for f in (p.stdout, p.stderr):
            if f is not None:
                f.close()
    return subprocess.CompletedProcess(cmd, p.returncode, out, err)


def ensure_machine(conf: Path, run=subprocess.run) -> str | None:
    """asv find (unlike asv run) never asks for this host's machine description: with none in
    ~/.asv-machine.json it stops before measuring anything. Where it is missing, `asv machine --yes`
    records asv's own defaults, as asv advises. Returns the name registered, or None where one was there."""
    from asv import util
    from asv.machine import Machine
    name = Machine.get_defaults()["machine"]
    try:
        Machine.load(name)
        return None
    except util.UserError:
        pass
    p = run([sys.executable, "-m", "asv", "machine", "--yes", "--config", str(conf)], capture_output=True,
            text=True)
    if p.returncode:
        raise AsvConfigError(f"asv machine --yes failed (exit {p.returncode}): "
                             f"{(p.stderr or p.stdout).strip().splitlines()[-1:]}")
    return name


def project_conf(repo: Path, conf_name: str = "asv.conf.json") -> dict:
    from asv import util
    path = Path(repo) / conf_name
    try:
        conf = util.load_json(str(path), js_comments=True)
    except (OSError, ValueError, util.UserError, RecursionError) as e:
        raise AsvConfigError(f"cannot read {path}: {str(e).splitlines()[0] if str(e) else type(e).__name__}") from e
    if not isinstance(conf, dict):
        raise AsvConfigError(f"{path}: not a JSON object (asv's configuration is one)")
    return conf


def write_config(repo: Path, tmp: Path, conf_name: str = "asv.conf.json", results: Path | None = None,
                 html: Path | None = None, overrides: dict | None = None) -> tuple[Path, Path]:
    """Write tmp/asv.conf.json; return (its path, the results dir asv will write: `results`, else
    tmp/results)."""
    repo, tmp = Path(repo).resolve(), Path(tmp)
    conf = project_conf(repo, conf_name)
    repo_url = conf.get("repo", ".")
    if (repo / repo_url).is_dir():                         # a local repository, not a URL
        conf["repo"] = str((repo / repo_url).resolve())
    for key, default in _LOCAL_PATHS.items():
        conf[key] = str(repo / conf.get(key, default))
    for key in _COMMANDS:
        if conf.get(key):
            conf[key] = pin_conf_dir(conf[key], repo)
    if conf.get("conda_environment_file"):
        conf["conda_environment_file"] = str(repo / conf["conda_environment_file"])
    conf.update(remote_links(repo))
    results = Path(results) if results is not None else tmp / "results"
    conf["results_dir"], conf["html_dir"] = str(results), str(html if html is not None else tmp / "html")
    conf.update(overrides or {})
    if (repo / "pyproject.toml").is_file():
        shutil.copyfile(repo / "pyproject.toml", tmp / "pyproject.toml")
    path = tmp / "asv.conf.json"
    path.write_text(json.dumps(conf, indent=1) + "\n")
    return path, results


def pin_conf_dir(commands, repo: Path):
    """asv's {conf_dir} is the folder of the config it was given, here the copy's: in the commands it
    stands for the project checkout (its cuzk/cuda_extra.py, its constraints.txt), so it becomes that
    path, quoted for asv's shlex split and escaped for its str.format."""
    literal = shlex.quote(str(Path(repo).resolve())).replace("{", "{{").replace("}", "}}")
    pin = lambda c: _CONF_DIR.sub(lambda m: literal, c) if isinstance(c, str) else c
    return pin(commands) if isinstance(commands, str) else [pin(c) for c in commands]


def web_url(remote: str) -> tuple[str, str] | None:
    """(host, https://host/owner/name) for a git remote on a web host (https, ssh or scp-like); None
    for anything else (a local path, a file: URL). Credentials in the URL are dropped; an http(s)
    remote keeps its scheme and port."""
    m = re.fullmatch(r"(https?|ssh|git)://(?:[^@/]+@)?([A-Za-z0-9.-]+)(:\d+)?/(.+?)(?:\.git)?/?", remote)
    if m:
        scheme, host, port, path = m.groups()
        base = f"{scheme}://{host.lower()}{port or ''}" if scheme.startswith("http") else f"https://{host.lower()}"
    else:
        m = re.fullmatch(r"[A-Za-z0-9._-]+@([A-Za-z0-9.-]+):(?!/)(.+?)(?:\.git)?/?", remote)
        if not m:
            return None
        host, path = m.groups()
        base = f"https://{host.lower()}"
    if ("." not in host or not re.fullmatch(r"[A-Za-z0-9._-]+(?:/[A-Za-z0-9._-]+)+", path)
            or {".", ".."} & set(path.split("/"))):
        return None
    return host.lower(), f"{base}/{path}"


def remote_links(repo: Path) -> dict:
    """project_url and show_commit_url from the checkout's remote (origin, else its only one); {} where
    there is none on a web host (asv then links nowhere)."""
    def git(*args):
        p = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True)
        return p.stdout.split() if p.returncode == 0 else []
    remotes = git("remote")
    name = "origin" if "origin" in remotes else (remotes[0] if len(remotes) == 1 else None)
    url = git("remote", "get-url", name) if name else []
    found = web_url(url[0]) if len(url) == 1 else None
    if found is None:
        return {}
    host, page = found
    links = {"project_url": page}
    if host in _COMMIT_PATH:
        links["show_commit_url"] = page + _COMMIT_PATH[host]
    return links


# --- asv's existing environment, commit by commit ---

# The plugin, a module of its own beside the config: asv imports it in its process, whose sys.path
# starts at the bisected checkout (any cuzk there may be older), so it needs asv alone.
_PLUGIN = '''"""Written by cuzk bisect (cuzk/perf/asv_private.py): asv's existing environment installs nothing,
so every commit would run the one installed cuzk and asv find would bisect noise. Here its install
step checks the commit out (asv's own shared clone) and puts that checkout first on the benchmarks'
sys.path (ASV_PYTHONPATH, and PYTHONPATH): `import cuzk` is the commit's code (pure Python; kernels/
is found beside the package). ASV_COMMIT names the commit. The interpreter's packages (numpy, CuPy,
py_arkworks_bls12381, asv_runner) serve every commit."""
import os

SRC = {src!r}


def _install_project(self, conf, repo, commit_hash=None):
    if commit_hash is None:
        return
    repo.checkout(SRC, commit_hash)
    root = os.path.join(SRC, conf.repo_subdir) if conf.repo_subdir else SRC
    # asv's benchmark script drops PYTHONPATH's entries from sys.path unless ASV_PYTHONPATH is set, and
    # puts ASV_PYTHONPATH's first; PYTHONPATH stays for the processes a benchmark starts
    for var in ("ASV_PYTHONPATH", "PYTHONPATH"):
        rest = [p for p in os.environ.get(var, "").split(os.pathsep) if p and p != root]
        os.environ[var] = os.pathsep.join([root, *rest])
    os.environ["ASV_COMMIT"] = commit_hash


def setup():
    from asv.environment import ExistingEnvironment
    ExistingEnvironment.install_project = _install_project
'''


def add_commit_code_plugin(conf_path: Path, src: Path) -> None:
    """Load, in the asv run of the config at conf_path, a plugin (a module beside it) that makes asv's
    existing environment run each commit's own code, checked out into `src`; environments asv builds
    are left alone."""
    conf_path = Path(conf_path)
    (conf_path.parent / f"{EXISTING_PLUGIN}.py").write_text(_PLUGIN.replace("{src!r}", repr(str(src))))
    conf = json.loads(conf_path.read_text())
    conf["plugins"] = [*conf.get("plugins", []), "." + EXISTING_PLUGIN]
    conf_path.write_text(json.dumps(conf, indent=1) + "\n")
