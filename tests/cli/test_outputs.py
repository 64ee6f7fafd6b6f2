"""The output rule (cuzk/files.py): files are replaced atomically, links are written through, devices and
FIFOs are written in place, long names work, outputs are checked against each other and the inputs before
any work, and a proof and its public inputs land as a pair even when two provers race."""
from __future__ import annotations

import json
import os
import select
import stat
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

from cuzk import circuits
from cuzk.cli import main
from cuzk.formats import write_r1cs, write_wtns, zkey_writer
from cuzk.keygen import setup

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def _cache(monkeypatch, tmp_path_factory):
    monkeypatch.setenv("CUZK_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))
    monkeypatch.delenv("CUZK_OPT", raising=False)


@pytest.fixture(scope="module")
def snark(tmp_path_factory):
    """mulchain 2^4: a .r1cs, its .zkey and vk, and two witnesses with different public inputs."""
    d = tmp_path_factory.mktemp("snark")
    r1cs, inputs, aux = circuits.build("mulchain", 4, seed=1)
    pk = setup(r1cs, "odd_lagrange", 5)
    with open(d / "c.zkey", "wb") as f:
        zkey_writer(pk, r1cs)(f)
    with open(d / "c.r1cs", "wb") as f:
        write_r1cs(f, r1cs)
    with open(d / "w1.wtns", "wb") as f:
        write_wtns(f, np.concatenate([inputs, aux]))
    _, inputs2, aux2 = circuits.build("mulchain", 4, seed=2)
    assert list(inputs2[1:]) != list(inputs[1:])
    with open(d / "w2.wtns", "wb") as f:
        write_wtns(f, np.concatenate([inputs2, aux2]))
    from cuzk.groth16 import vk_to_json
    (d / "vk.json").write_text(json.dumps(vk_to_json(pk.verifying_key())))
    return d


def _err_lines(capsys) -> list[str]:
    return [ln for ln in capsys.readouterr().err.strip().splitlines() if not ln.startswith("cuzk: no GPU")]


def _one_error(capsys) -> str:
    err = _err_lines(capsys)
    assert len(err) == 1 and err[0].startswith("cuzk: error:"), err
    return err[0]


def _prove(snark, proof, public, wtns="w1.wtns") -> int:
    return main(["prove", str(snark / "c.zkey"), str(snark / wtns), str(proof), str(public), "--backend", "cpu"])


def _verifies(snark, proof, public) -> bool:
    p = subprocess.run([sys.executable, "-m", "cuzk", "verify", str(snark / "vk.json"), str(public), str(proof)],
                       capture_output=True, text=True, timeout=60)
    return p.returncode == 0 and "OK" in p.stdout


def _no_temps(d: Path) -> bool:
    return not [p for p in d.iterdir() if p.name.endswith(".tmp")]


# ---------------------------------------------------------------- devices, FIFOs, links, names

@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="mknod needs root")
def test_a_device_node_output_stays_a_node(snark, tmp_path, capsys):
    node = tmp_path / "null"
    os.mknod(node, stat.S_IFCHR | 0o666, os.makedev(1, 3))           # /dev/null's numbers
    assert _prove(snark, node, tmp_path / "public.json") == 0
    assert stat.S_ISCHR(os.lstat(node).st_mode) and os.lstat(node).st_rdev == os.makedev(1, 3)
    assert json.loads((tmp_path / "public.json").read_text())
    assert _no_temps(tmp_path)


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="mknod needs root")
def test_a_full_device_is_one_error_naming_it_and_nothing_else_is_written(snark, tmp_path, capsys):
    full = tmp_path / "full"
    os.mknod(full, stat.S_IFCHR | 0o666, os.makedev(1, 7))           # /dev/full: every write is ENOSPC
    assert _prove(snark, tmp_path / "proof.json", full) == 2
    line = _one_error(capsys)
    assert str(full) in line and "No space left" in line and ".tmp" not in line, line
    assert stat.S_ISCHR(os.lstat(full).st_mode)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["full"]


def test_dev_null_as_output(snark, tmp_path, capsys):
    before = os.stat("/dev/null")
    try:
        assert _prove(snark, "/dev/null", tmp_path / "public.json") == 0
        assert main(["export-vk", str(snark / "c.zkey"), "/dev/null"]) == 0
        after = os.stat("/dev/null")
        assert stat.S_ISCHR(after.st_mode) and after.st_rdev == before.st_rdev
    finally:                                   # the old rule, run as root, made /dev/null a regular file
        if os.geteuid() == 0 and not stat.S_ISCHR(os.lstat("/dev/null").st_mode):
            os.unlink("/dev/null")
            os.mknod("/dev/null", stat.S_IFCHR | 0o666, os.makedev(1, 3))
            os.chmod("/dev/null", 0o666)


def test_a_fifo_output_is_written_into_the_fifo(snark, tmp_path, capsys):
    """Its reader gets the file; the FIFO stays a FIFO. (The reader is open first, and the key is smaller
    than a pipe's buffer, so the write does not wait.)"""
    fifo = tmp_path / "vk.pipe"
    os.mkfifo(fifo)
    rfd = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    try:
        assert main(["export-vk", str(snark / "c.zkey"), str(fifo)]) == 0
        got = b""
        deadline = time.time() + 10
        while time.time() < deadline:
            if select.select([rfd], [], [], 0.05)[0]:
                chunk = os.read(rfd, 1 << 16)
                if not chunk and got:
                    break
                got += chunk
            if not got:
                time.sleep(0.01)
    finally:
        os.close(rfd)
    assert json.loads(got)["protocol"] == "groth16"
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert _no_temps(tmp_path)


def test_dev_stdout_appends_to_what_the_shell_opened(snark, tmp_path):
    """`>> log`: /dev/stdout is the descriptor the shell opened, written as it is (not replaced, not
    rewritten from offset 0)."""
    log = tmp_path / "log.txt"
    log.write_text("first line\n")
    with open(log, "a") as out:
        p = subprocess.run([sys.executable, "-m", "cuzk", "export-vk", str(snark / "c.zkey"), "/dev/stdout"],
                           stdout=out, stderr=subprocess.PIPE, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    text = log.read_text()
    assert text.startswith("first line\n{") and json.loads(text[len("first line\n"):])["protocol"] == "groth16"


@pytest.mark.parametrize("redirect", ["/dev/stdout >> {key}", "/proc/self/fd/7 7<>{key}", "/dev/fd/1 1<>{key}"])
def test_a_descriptor_output_on_an_input_is_refused_and_the_input_kept(snark, tmp_path, redirect):
    """A descriptor the shell opened on the key (`>> c.zkey`, `7<> c.zkey`) is that file: the same-file check
    refuses it before any work, as it does the key's own path, and the key keeps every byte."""
    key = tmp_path / "c.zkey"
    key.write_bytes((snark / "c.zkey").read_bytes())
    before = key.read_bytes()
    cmd = f"exec {sys.executable} -m cuzk export-vk {key} " + redirect.format(key=key)
    p = subprocess.run(["bash", "-c", cmd], capture_output=True, text=True, timeout=60)
    assert p.returncode == 2, (p.returncode, p.stderr)
    err = [ln for ln in p.stderr.splitlines() if not ln.startswith("cuzk: no GPU")]
    assert len(err) == 1 and "given as" in err[0] and "input" in err[0], err
    assert key.read_bytes() == before


def test_a_descriptor_output_on_the_other_output_is_refused(snark, tmp_path):
    """`prove ... /dev/stdout public.json > public.json`: one file for both outputs; the rename of public.json
    would unlink the proof's inode and the proof would be lost with exit 0. Refused before any work."""
    pub = tmp_path / "public.json"
    cmd = (f"exec {sys.executable} -m cuzk prove {snark / 'c.zkey'} {snark / 'w1.wtns'} /dev/stdout {pub} "
           f"--backend cpu > {pub}")
    p = subprocess.run(["bash", "-c", cmd], capture_output=True, text=True, timeout=120)
    assert p.returncode == 2, (p.returncode, p.stderr)
    assert "given as" in p.stderr and pub.read_bytes() == b""


@pytest.mark.parametrize("dangling", [False, True])
def test_a_symlink_output_is_written_through(snark, tmp_path, dangling):
    real = tmp_path / "real"
    real.mkdir()
    target = real / "proof.json"
    if not dangling:
        target.write_text("old\n")
    link = tmp_path / "proof.json"
    link.symlink_to(target)
    assert _prove(snark, link, tmp_path / "public.json") == 0
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert json.loads(target.read_text())["protocol"] == "groth16"
    assert _verifies(snark, link, tmp_path / "public.json")
    assert _no_temps(tmp_path) and _no_temps(real)


def test_keygen_out_through_a_symlink(tmp_path, capsys):
    target = tmp_path / "keys" / "k.cuzkkey"
    target.parent.mkdir()
    link = tmp_path / "k.cuzkkey"
    link.symlink_to(target)
    assert main(["keygen", "--circuit", "mulchain", "--log-size", "4", "--out", str(link)]) == 0
    assert link.is_symlink() and target.stat().st_size > 0
    from cuzk.keys import ProvingKey
    assert ProvingKey.load(link).log_n == 4


def test_a_250_byte_name(snark, tmp_path, capsys):
    name = "p" * 245 + ".json"
    assert len(name) == 250
    assert _prove(snark, tmp_path / name, tmp_path / ("q" * 250)) == 0
    assert _verifies(snark, tmp_path / name, tmp_path / ("q" * 250))
    assert _no_temps(tmp_path)


def test_an_output_under_a_file_is_one_error_naming_the_users_path(snark, tmp_path, capsys):
    (tmp_path / "notes").write_text("a file, not a folder\n")
    out = tmp_path / "notes" / "vk.json"
    assert main(["export-vk", str(snark / "c.zkey"), str(out)]) == 2
    line = _one_error(capsys)
    assert str(out) in line and ".tmp" not in line, line


def test_a_replaced_file_keeps_its_mode(snark, tmp_path, capsys):
    vk = tmp_path / "vk.json"
    vk.write_text("{}")
    vk.chmod(0o600)
    assert main(["export-vk", str(snark / "c.zkey"), str(vk)]) == 0
    assert stat.S_IMODE(vk.stat().st_mode) == 0o600 and json.loads(vk.read_text())["protocol"] == "groth16"


# ---------------------------------------------------------------- checked before any work

def _no_work(monkeypatch):
    """Any keygen, circuit build or .r1cs read fails the test: the outputs are checked before all of it."""
    import cuzk.cli.snarkjs
    import cuzk.keygen
    import cuzk.synthesis

    def work(*a, **k):
        raise AssertionError("work began before the outputs were checked")
    for mod, name in ((cuzk.keygen, "setup"), (cuzk.keygen, "cached_setup"), (circuits, "build"),
                      (cuzk.cli.snarkjs, "load_circuit_r1cs"), (cuzk.synthesis, "synthesize")):
        monkeypatch.setattr(mod, name, work)


@pytest.mark.parametrize("flags, role", [
    (["--zkey", "{in}"], "--zkey"),
    (["--out", "{in}"], "--out"),
    (["--vk", "{in}"], "--vk"),
    (["--zkey", "{hardlink}"], "--zkey"),           # another name of the input: the same inode
    (["--vk", "{symlink}"], "--vk"),
    (["--zkey", "{d}/a", "--vk", "{d}/a"], "--zkey"),
    (["--out", "{d}/k", "--zkey", "{d}/k"], "--zkey"),
    (["--out", "{d}/k", "--vk", "{d}/sub/../k"], "--vk"),
])
def test_keygen_outputs_that_collide_are_refused_before_any_work(snark, tmp_path, capsys, monkeypatch, flags, role):
    r1cs = tmp_path / "c.r1cs"
    r1cs.write_bytes((snark / "c.r1cs").read_bytes())
    os.link(r1cs, tmp_path / "hard.r1cs")
    (tmp_path / "sym.r1cs").symlink_to(r1cs)
    (tmp_path / "sub").mkdir()
    subst = {"in": r1cs, "hardlink": tmp_path / "hard.r1cs", "symlink": tmp_path / "sym.r1cs", "d": tmp_path}
    before = sorted(p.name for p in tmp_path.iterdir())
    _no_work(monkeypatch)
    rc = main(["keygen", "--r1cs", str(r1cs), *[f.format(**subst) for f in flags]])
    line = _one_error(capsys)
    assert rc == 2 and f"given as {role} and as " in line, line
    assert r1cs.read_bytes() == (snark / "c.r1cs").read_bytes()
    assert sorted(p.name for p in tmp_path.iterdir()) == before


def test_bench_outputs_are_checked_before_any_work(tmp_path, capsys, monkeypatch):
    (tmp_path / "save" / "public.json").mkdir(parents=True)
    _no_work(monkeypatch)
    rc = main(["bench", "--backend", "cpu", "--circuit", "mulchain", "--log-size", "4", "--save",
               str(tmp_path / "save"), "--json", str(tmp_path / "r.json")])
    line = _one_error(capsys)
    assert rc == 2 and str(tmp_path / "save" / "public.json") in line and "folder" in line, line
    assert not (tmp_path / "r.json").exists()


@pytest.mark.parametrize("how", ["the key", "a link to it", "a new file there"])
def test_a_bench_output_in_the_key_cache_is_refused_and_the_key_kept(tmp_path, capsys, how):
    """bench reads (and makes) its key in the cache: an output there would replace the key the run proves with."""
    argv = ["bench", "--backend", "cpu", "--circuit", "mulchain", "--log-size", "4"]
    assert main(argv) == 0
    key = next(Path(os.environ["CUZK_CACHE_DIR"]).rglob("*.cuzkkey"))      # the autouse fixture's cache
    before = key.read_bytes()
    out = {"the key": key, "a link to it": tmp_path / "lnk.json", "a new file there": key.parent / "r.json"}[how]
    if how == "a link to it":
        out.symlink_to(key)
    capsys.readouterr()
    assert main([*argv, "--json", str(out)]) == 2
    line = _one_error(capsys)
    assert str(out) in line and "key cache" in line, line
    assert key.read_bytes() == before and not (key.parent / "r.json").exists()


def test_bench_save_empty_is_no_folder(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _no_work(monkeypatch)
    assert main(["bench", "--backend", "cpu", "--circuit", "mulchain", "--log-size", "4", "--save", ""]) == 2
    assert "--save ''" in _one_error(capsys) and not list(tmp_path.iterdir())


def test_ablate_outputs_are_checked_before_any_work(tmp_path, capsys, monkeypatch):
    from cuzk.perf import ablate

    def work(self):
        raise AssertionError("work began before the outputs were checked")
    monkeypatch.setattr(ablate.Ablation, "run", work)
    same = tmp_path / "r.json"
    rc = main(["ablate", "--backend", "cpu", "--circuit", "mulchain", "--log-size", "4", "--repeat", "2",
               "--confidence", "0.5", "--json", str(same), "--png", str(same)])
    line = _one_error(capsys)
    assert rc == 2 and "given as --png and as output --json" in line, line
    assert not same.exists()


# ---------------------------------------------------------------- pairs stay pairs

RACER = textwrap.dedent("""
    # Runs `cuzk ARGS` with a pause between renaming proof.json and public.json (role "first"), or marking
    # when it is about to take a lock (role "second"), so the test can make the second prover land in the
    # first's gap.
    import fcntl, os, sys, time
    role, marks, args = sys.argv[1], sys.argv[2], sys.argv[3:]

    def mark(name):
        open(os.path.join(marks, name), "w").close()

    def seen(*names):
        return any(os.path.exists(os.path.join(marks, n)) for n in names)

    if role == "first":
        real_replace = os.replace

        def replace(src, dst, *a, **k):
            real_replace(src, dst, *a, **k)
            if os.fspath(dst).endswith("proof.json"):
                mark("gap")
                deadline = time.time() + 30
                while time.time() < deadline and not seen("second-done", "second-locking"):
                    time.sleep(0.01)
                time.sleep(0.3)
        os.replace = replace
    else:
        real_flock = fcntl.flock

        def flock(fd, op):
            if op & fcntl.LOCK_EX:
                mark("second-locking")
            return real_flock(fd, op)
        fcntl.flock = flock
    from cuzk.cli import main
    rc = main(args)
    if role == "second":
        mark("second-done")
    sys.exit(rc)
""")


def test_two_provers_racing_into_one_pair_leave_a_pair_that_verifies(snark, tmp_path):
    racer = tmp_path / "racer.py"
    racer.write_text(RACER)
    marks = tmp_path / "marks"
    marks.mkdir()
    out = tmp_path / "out"
    out.mkdir()
    proof, public = out / "proof.json", out / "public.json"
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}

    def start(role, wtns):
        return subprocess.Popen([sys.executable, str(racer), role, str(marks), "prove", str(snark / "c.zkey"),
                                 str(snark / wtns), str(proof), str(public), "--backend", "cpu"],
                                env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    first = start("first", "w1.wtns")
    deadline = time.time() + 60
    while not (marks / "gap").exists():
        assert first.poll() is None and time.time() < deadline, first.stderr.read() if first.poll() else "timeout"
        time.sleep(0.01)
    second = start("second", "w2.wtns")                     # lands while the first is between its renames
    assert second.wait(timeout=60) == 0, second.stderr.read()
    assert first.wait(timeout=60) == 0, first.stderr.read()
    assert _verifies(snark, proof, public), "proof.json and public.json come from different runs"
    assert _no_temps(out)


def test_a_signal_received_by_another_thread_waits_for_the_held_block():
    """A process-directed SIGTERM lands in any thread that does not mask it; CPython then runs the main
    thread's handler at once. Inside signals_held it must still wait for the block's end."""
    import signal
    import threading
    import time
    from cuzk.files import Interrupted, raise_on_sigterm, signals_held
    stop = threading.Event()
    other = threading.Thread(target=stop.wait, daemon=True)      # unmasked: a candidate for the signal
    other.start()
    old = signal.getsignal(signal.SIGTERM)
    raise_on_sigterm()
    done = []
    try:
        with pytest.raises(Interrupted) as ei:
            with signals_held():
                os.kill(os.getpid(), signal.SIGTERM)
                for _ in range(100):                 # bytecodes and calls: where a handler would run
                    time.sleep(0.001)
                done.append(True)
    finally:
        signal.signal(signal.SIGTERM, old)
        stop.set()
    assert done == [True] and ei.value.code == 143


def test_a_signal_after_the_renames_leaves_the_new_file_and_one_between_them_waits(tmp_path, monkeypatch):
    """SIGTERM (ablate's checkpoint under a time limit) while the set's folders are synced: the renames are done, the
    new file stays, and the signal is raised after them; a rename that fails between two of a set puts the first
    output back as it was (a file it replaced, through the link kept of it; a new one removed)."""
    import signal
    from cuzk import files
    out = tmp_path / "ablate.json"
    out.write_text("7 rounds\n")
    monkeypatch.setattr(files, "_fsync_folder", lambda fd: os.kill(os.getpid(), signal.SIGTERM))
    before = signal.getsignal(signal.SIGTERM)
    files.raise_on_sigterm()
    try:
        with pytest.raises(files.Interrupted):
            files.write_outputs({out: "8 rounds\n"})
    finally:
        signal.signal(signal.SIGTERM, before)
    assert out.read_text() == "8 rounds\n" and sorted(p.name for p in tmp_path.iterdir()) == ["ablate.json"]
    monkeypatch.undo()
    a, b, c = tmp_path / "proof.json", tmp_path / "public.json", tmp_path / "new.json"
    a.write_text("old proof")
    b.write_text("old public")
    real, calls = os.replace, []

    def replace(src, dst):
        calls.append(dst)
        if len(calls) == 3:
            raise OSError(28, "No space left on device")
        return real(src, dst)
    monkeypatch.setattr(files.os, "replace", replace)
    with pytest.raises(files.OutputError, match="public.json: cannot write"):
        files.write_outputs({c: "new", a: "new proof", b: "new public"})
    assert a.read_text() == "old proof" and b.read_text() == "old public" and not c.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ablate.json", "proof.json", "public.json"]


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="mknod needs root")
def test_a_device_that_is_not_null_zero_full_or_a_terminal_is_never_an_output(tmp_path):
    """/dev/mem, /dev/port, a SCSI generic node, a serial line, the console: refused by name before any write,
    through a link too; /dev/null's numbers and a terminal's are written as before."""
    from cuzk import files
    for name, (major, minor) in {"mem": (1, 1), "port": (1, 4), "sg0": (21, 0), "mtd0": (90, 0),
                                 "ttyS0": (4, 64), "console": (5, 1)}.items():   # a serial line, the console
        node = tmp_path / name
        os.mknod(node, stat.S_IFCHR | 0o666, os.makedev(major, minor))
        link = tmp_path / f"{name}.json"
        link.symlink_to(node)
        for p in (node, link):
            with pytest.raises(files.OutputError, match=rf"{p}: a character device \({major}:{minor}\) that is not"):
                files.check_outputs({"--out": p})
    for major, minor in ((1, 3), (136, 9), (4, 1), (5, 0)):       # /dev/null, a pty, tty1, /dev/tty
        node = tmp_path / f"ok-{major}-{minor}"
        os.mknod(node, stat.S_IFCHR | 0o666, os.makedev(major, minor))
        assert files.resolve_output(node).stream


def test_a_temp_file_a_killed_writer_left_goes_with_the_next_write_there(tmp_path):
    """SIGKILL leaves a writer's .cuzk-*.tmp; the next output written in that folder removes the ones untouched for a
    day, and leaves a fresh one (a writer in progress), other names, links and a file another name holds alone."""
    from cuzk import files
    old, fresh, other = tmp_path / ".cuzk-deadbeef.tmp", tmp_path / ".cuzk-cafebabe.tmp", tmp_path / "notes.tmp"
    for p in (old, fresh, other):
        p.write_text("x")
    day_ago = time.time() - files.STALE_TEMP_S - 60
    os.utime(old, (day_ago, day_ago))
    os.utime(other, (day_ago, day_ago))
    link = tmp_path / ".cuzk-0badf00d.tmp"
    link.symlink_to(other)
    kept = tmp_path / ".cuzk-12345678.tmp"          # another writer's set in progress: the old file it replaces
    os.link(other, kept)
    files.write_outputs({tmp_path / "out.json": "{}\n"})
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([fresh.name, other.name, link.name, kept.name,
                                                                 "out.json"])
