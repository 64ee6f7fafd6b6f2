"""A commit of the project as an importable tree, apart from the installed copy, and the gate's workspace.

The commit's files are written from git's own objects (ls-tree, cat-file): not `git archive`, which applies the
commit's own .gitattributes (export-ignore drops a file, export-subst rewrites one) and would let a link in the
tree resolve outside it. Only regular files: a symbolic link or a submodule in the commit is refused. The
package-dir mapping of its pyproject.toml (for example cuzk.kernels -> kernels/) is laid out with symlinks the gate
makes, inside the tree, so `import cuzk` from that root finds that commit's code and nothing else. Worker
processes run with the root first on sys.path.
"""
from __future__ import annotations

import ast
import json
import os
import shutil
import stat
import subprocess
import tempfile
import time
import tomllib
from contextlib import contextmanager
from pathlib import Path

from ..files import read_input
from ..gpu.kernel_sources import assigned_value


class CheckoutError(RuntimeError):
    pass


def _git_env() -> dict:
    """The objects a commit names, never what a replace ref in the repository (which a worker's user could write)
    swaps for them."""
    return {**os.environ, "GIT_NO_REPLACE_OBJECTS": "1"}


def git(repo: str | Path, *args: str, text: bool = True) -> str | bytes:
    p = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=text, env=_git_env())
    if p.returncode != 0:
        err = p.stderr if text else p.stderr.decode(errors="replace")
        raise CheckoutError(f"git {' '.join(args)}: {err.strip().splitlines()[-1] if err.strip() else 'failed'}")
    return p.stdout


def resolve(repo: str | Path, ref: str) -> str:
    """Full SHA of a commit-ish."""
    return git(repo, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}").strip()


MAX_TREE_BYTES = 1 << 30        # a commit's files; the project's are ~4 MB
MAX_TREE_FILES = 100_000


MAX_PATH_PARTS, MAX_PATH_BYTES = 32, 1024
# compiled or native modules would be imported before the source beside them (the base's harness, laid over the
# head's); sitecustomize/usercustomize would run before the worker's boot
_REFUSED_PARTS = {"__pycache__", "sitecustomize", "usercustomize", "sitecustomize.py", "usercustomize.py"}
_REFUSED_SUFFIXES = (".pyc", ".pyo", ".so", ".pyd")


def _tree(repo, sha: str) -> list[tuple[bool, str, int, str]]:
    """(executable, blob id, size, path) of every file of the commit, or CheckoutError: a link, a submodule, a path
    git itself would not write or a worker could be led by, or more than the caps, checked as git lists them (a
    tree that repeats a subtree lists far more than it stores)."""
    out = []
    total = 0
    ls = subprocess.Popen(["git", "-C", str(repo), "ls-tree", "-r", "-z", "-l", "--full-tree", sha],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=_git_env())
    try:
        buf = b""
        while True:
            chunk = ls.stdout.read(1 << 16)
            buf += chunk
            *recs, buf = buf.split(b"\0")
            for rec in recs:
                meta, _, raw = rec.partition(b"\t")
                fields = meta.split()
                if len(fields) != 4:
                    raise CheckoutError(f"git ls-tree gave {rec[:80]!r}")
                mode, _, obj, size = fields
                path = os.fsdecode(raw)
                if mode not in (b"100644", b"100755"):
                    kind = {b"120000": "a symbolic link", b"160000": "a submodule"}.get(mode, f"mode {mode.decode()}")
                    raise CheckoutError(f"{path[:120]!r} is {kind}: the gate measures a tree of regular files")
                parts = path.split("/")
                if any(p in ("", ".", "..", ".git") for p in parts) or len(parts) > MAX_PATH_PARTS \
                        or len(raw) > MAX_PATH_BYTES:
                    raise CheckoutError(f"{path[:120]!r} is no path inside a tree the gate writes")
                if _REFUSED_PARTS.intersection(parts) or parts[-1].endswith(_REFUSED_SUFFIXES):
                    raise CheckoutError(f"{path[:120]!r}: compiled, native or start-up modules are not measured "
                                        f"from a commit")
                if not size.isdigit():
                    raise CheckoutError(f"{path[:120]!r}: its blob {obj.decode()[:40]} is not in the repository")
                total += int(size)
                if total > MAX_TREE_BYTES or len(out) >= MAX_TREE_FILES:
                    raise CheckoutError(f"more than {MAX_TREE_BYTES >> 20} MiB or {MAX_TREE_FILES} files")
                out.append((mode == b"100755", obj.decode(), int(size), path))
            if not chunk:
                break
    except BaseException:
        ls.kill()                       # a cap passed: the rest of the listing is never read
        ls.wait()
        raise
    err = ls.stderr.read().decode(errors="replace").strip()
    if ls.wait() != 0:
        raise CheckoutError(f"git ls-tree {sha[:10]}: {err.splitlines()[-1] if err else 'failed'}")
    return out


def materialize(repo: str | Path, sha: str, dest: str | Path) -> Path:
    """Write commit `sha` into `dest`; returns the import root (the directory to put on sys.path)."""
    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    try:
        files = _tree(repo, sha)
        if not files:
            raise CheckoutError("no files to measure (an empty tree)")
        cat = subprocess.Popen(["git", "-C", str(repo), "cat-file", "--batch"], stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=_git_env())
        try:
            for executable, obj, size, path in files:
                cat.stdin.write(obj.encode() + b"\n")
                cat.stdin.flush()                   # one object at a time: git flushes each, no pipe fills
                head = cat.stdout.readline().split()
                if len(head) != 3 or head[1] != b"blob" or int(head[2]) != size:
                    raise CheckoutError(f"{path[:120]!r}: git gave {b' '.join(head)[:80]!r}, not its blob")
                target = dest / path
                target.parent.mkdir(parents=True, exist_ok=True)
                flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
                fd = os.open(target, flags, 0o755 if executable else 0o644)
                with open(fd, "wb") as f:
                    left = size
                    while left:
                        chunk = cat.stdout.read(min(left, 1 << 20))
                        if not chunk:
                            raise CheckoutError(f"{path[:120]!r}: git's blob ended early")
                        f.write(chunk)
                        left -= len(chunk)
                cat.stdout.read(1)                  # the newline after each object
        finally:
            cat.stdin.close()
            cat.kill()
            cat.wait()
        root = lay_out_packages(dest)
    except CheckoutError as e:
        raise CheckoutError(f"commit {sha[:10]} of {repo}: {e}") from e
    except (OSError, ValueError, RuntimeError) as e:       # a name too long, a file and a folder of one name
        raise CheckoutError(f"commit {sha[:10]} of {repo}: cannot write its tree ({type(e).__name__}: "
                            f"{str(e)[:160]})") from e
    if not (root / "cuzk" / "__init__.py").is_file():
        raise CheckoutError(f"commit {sha[:10]} of {repo} holds no cuzk package (cuzk/__init__.py): not a tree "
                            f"the gate can measure")
    return root


def _within(tree: Path, rel, what: str) -> Path:
    """tree / rel, where it stays inside tree: the commit's pyproject.toml (the head's own) chooses rel, and the
    gate deletes and writes under the import root it gives (overlay_harness)."""
    if not isinstance(rel, str) or os.path.isabs(rel) or not (tree / rel).resolve().is_relative_to(tree.resolve()):
        raise CheckoutError(f"pyproject.toml: [tool.setuptools.package-dir] {what} = {str(rel)[:80]!r} is not a "
                            f"folder inside the commit's tree")
    return tree / rel


def lay_out_packages(tree: Path) -> Path:
    """Apply [tool.setuptools.package-dir] so the tree imports the way it installs."""
    root = tree
    pp = tree / "pyproject.toml"
    mapping = {}
    if pp.exists():
        try:
            text = read_input(pp, 1 << 20)
            mapping = tomllib.loads(text).get("tool", {}).get("setuptools", {}).get("package-dir", {})
        except (tomllib.TOMLDecodeError, UnicodeDecodeError, AttributeError, OSError, RecursionError) as e:
            raise CheckoutError(f"pyproject.toml: not readable as TOML ({str(e)[:160]})") from e
        if not isinstance(mapping, dict):
            raise CheckoutError("pyproject.toml: [tool.setuptools.package-dir] is not a table")
    if "" in mapping:
        root = _within(tree, mapping.pop(""), '""')
    for pkg, rel in sorted(mapping.items()):
        target = _within(tree, rel, repr(pkg))
        link = _within(root, str(Path(*pkg.split("."))) if pkg.strip(".") else "", repr(pkg))
        if link.exists() or link == root or not target.is_dir():
            continue
        link.parent.mkdir(parents=True, exist_ok=True)
        # from the resolved paths: the text of a path through a link may cancel its `..` elsewhere
        os.symlink(os.path.relpath(target.resolve(), link.parent.resolve()), link, target_is_directory=True)
    return root


# The measuring code: the head's copy is replaced by the base's, so a pull request is judged by the
# harness it was written against: the verdict belongs to the base.
HARNESS = ("cuzk/perf", "cuzk/nvml.py")
RULES = ("perf-gate.toml",)
# also reported when a pull request changes them; they act only after merge (asv's suite) or are part of
# the code under test itself (the phase timer that the backends call)
ALSO_WATCHED = ("benchmarks", "asv.conf.json", "cuzk/timing.py", ".gitattributes")


def overlay_harness(base_root: Path, head_root: Path, within: Path | None = None) -> None:
    """Replace the head tree's measuring code by the base's (copies, not links: the trees stay apart). Nothing is
    deleted or written outside `within` (the head's folder of the workspace; default head_root), wherever the
    head's layout points."""
    inside = Path(within or head_root).resolve()
    for rel in HARNESS:
        src, dst = Path(base_root) / rel, Path(head_root) / rel
        if not dst.parent.resolve().is_relative_to(inside):
            raise CheckoutError(f"the head's {rel} lies outside its tree ({dst.parent.resolve()})")
        if dst.suffix == ".py":          # a package of the module's name would be imported before the file
            shadow = dst.with_suffix("")
            if shadow.is_symlink() or shadow.is_file():
                shadow.unlink()
            elif shadow.exists():
                shutil.rmtree(shadow)
        if dst.is_symlink() or dst.is_file():
            dst.unlink()
        elif dst.exists():
            shutil.rmtree(dst)
        if src.is_dir():
            shutil.copytree(src, dst, symlinks=False)
        elif src.is_file():
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(src, dst)


def changed_paths(repo: str | Path, base: str, head: str, paths) -> list[str]:
    """Files under `paths` that differ between two commits."""
    out = git(repo, "diff", "--name-only", "-z", base, head, "--", *paths)
    return sorted(f for f in out.split("\0") if f)


def dirty_files(repo: str | Path) -> list[str]:
    """Tracked files with uncommitted changes (staged or not; a rename by its new name); untracked files do
    not count. Shared by the gate and bisect, which both measure commits only."""
    # --no-optional-locks: a read-only look must not rewrite the index
    entries = iter(git(repo, "--no-optional-locks", "status", "--porcelain=v1", "-z", "--untracked-files=no",
                       text=False).decode(errors="surrogateescape").split("\0"))
    files = []
    for entry in entries:              # "XY path"; a rename or copy is followed by its source path
        if entry:
            files.append(entry[3:])
            if "R" in entry[:2] or "C" in entry[:2]:
                next(entries, None)
    return files


WORKSPACE_PREFIX = "cuzk-gate-"
_OWNER = "owner.json"


def _start_time(pid: int) -> str | None:
    """A process's start time (clock ticks after boot), which a reused PID does not share; None if unknown."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rsplit(")", 1)[1].split()[19]


def _alive(pid: int, start: str | None) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    now = _start_time(pid)
    return start is None or now is None or now == start


def remove_stale(parent: str | Path | None = None, max_orphan_s: float = 3600.0) -> list[Path]:
    """Remove this user's gate workspaces whose gate is gone (killed with SIGKILL, a lost machine): those
    whose owner process no longer runs, and ownerless ones older than max_orphan_s. Returns what it removed."""
    parent = Path(parent or tempfile.gettempdir())
    removed = []
    for d in parent.glob(WORKSPACE_PREFIX + "*"):
        try:
            st = d.lstat()
            if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid():
                continue
            try:
                owner = json.loads((d / _OWNER).read_text())
                stale = not _alive(int(owner["pid"]), owner.get("start"))
            except (OSError, ValueError, KeyError, TypeError):
                stale = time.time() - st.st_mtime > max_orphan_s
            if stale:
                shutil.rmtree(d)
                removed.append(d)
        except OSError:
            continue
    return removed


@contextmanager
def workspace():
    """A temporary directory for the gate's checkouts, marked with its owner so that the next gate can
    remove it if this process dies without cleaning up; removed on every exit this process survives."""
    d = Path(tempfile.mkdtemp(prefix=WORKSPACE_PREFIX))
    try:
        (d / _OWNER).write_text(json.dumps({"pid": os.getpid(), "start": _start_time(os.getpid())}))
        yield d
    finally:
        shutil.rmtree(d, ignore_errors=True)


DEPENDENCY_FILES = ("pyproject.toml", "constraints.txt")


def _dependency_text(repo, sha: str, path: str) -> str | None:
    """What of a commit's file names dependencies: pyproject's dependency lists, a constraints file whole."""
    try:
        text = git(repo, "show", f"{sha}:{path}")
    except CheckoutError:
        return None
    if path != "pyproject.toml":
        return text
    try:
        project = tomllib.loads(text).get("project", {})
    except tomllib.TOMLDecodeError:
        return text
    return json.dumps([project.get("dependencies"), project.get("optional-dependencies")], sort_keys=True)


# What builds the kernels, read by the base's cuzk for both sides (runner-check, the loader's cubin names): a head's
# change to these is not applied to its own kernels.
BUILD_RULES = (("cuzk/gpu/cubins.py", "CUBIN_FLAGS"), ("cuzk/gpu/cub_library.py", "NVCC_FLAGS"))


def _assigned_text(repo, sha: str, path: str, name: str) -> str | None:
    """The source text of the top-level assignment to `name` in a commit's Python file (None: no file; the file
    whole where it cannot be parsed or holds no such assignment, so any edit to it counts)."""
    try:
        text = git(repo, "show", f"{sha}:{path}")
    except CheckoutError:
        return None
    try:
        value = assigned_value(text, name, path)
    except ValueError:
        return text
    return text if value is None else ast.dump(value)


def build_rules_changed(repo: str | Path, base: str, head: str) -> list[str]:
    """The kernels' nvcc flags the head changes ("path NAME"): both sides' kernels are built by the base's rules,
    so such a change is not measured."""
    return [f"{path} {name}" for path, name in BUILD_RULES
            if _assigned_text(repo, base, path, name) != _assigned_text(repo, head, path, name)]


def dependencies_changed(repo: str | Path, base: str, head: str) -> list[str]:
    """Dependency files whose requirements differ: the workers run in the gate's one environment, so such a
    change is not measured."""
    return [f for f in DEPENDENCY_FILES if _dependency_text(repo, base, f) != _dependency_text(repo, head, f)]
