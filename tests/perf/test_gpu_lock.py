"""One measuring job per GPU (cuzk/perf/gpu_lock.py): a second `cuzk gate` or `cuzk history record` on a GPU that
another holds refuses at once with one line, exit 2; a holder that dies leaves no stale lock. The lock lives in a
directory only this user can write, and neither it nor its file is followed through a symlink. The GPU is named by
a fixed key here (no NVML on the CPU)."""
from __future__ import annotations

import os
import signal
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from cuzk.cli import main
from cuzk.perf import gpu_lock
from cuzk.perf.gpu_lock import GpuBusy, hold, lock_dir, lock_path

REPO = Path(__file__).resolve().parents[2]
KEY = "GPU-00000000-test"

HOLDER = """
import sys
from pathlib import Path
from cuzk.perf.gpu_lock import hold
with hold("cuzk gate", key=sys.argv[1], directory=Path(sys.argv[2])):
    print("held", flush=True)
    sys.stdin.readline()
"""


@pytest.fixture
def holder(tmp_path):
    """Another process holding KEY's lock until killed."""
    p = subprocess.Popen([sys.executable, "-c", HOLDER, KEY, str(tmp_path)], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, text=True, cwd=REPO)
    assert p.stdout.readline().strip() == "held"
    yield p
    if p.poll() is None:
        p.kill()
        p.wait()


def test_a_second_holder_is_refused_naming_the_first(tmp_path, holder):
    with pytest.raises(GpuBusy) as e:
        with hold("cuzk gate", key=KEY, directory=tmp_path):
            pytest.fail("two holders of one GPU")
    msg = str(e.value)
    assert f"GPU {KEY} is held by another cuzk job (pid {holder.pid}, `cuzk gate`" in msg and "\n" not in msg
    with hold("cuzk gate", key="GPU-other", directory=tmp_path):      # another GPU is free
        pass


def test_a_killed_holder_leaves_no_stale_lock(tmp_path, holder):
    holder.send_signal(signal.SIGKILL)
    holder.wait()
    assert lock_path(KEY, tmp_path).exists()
    with hold("cuzk gate", key=KEY, directory=tmp_path) as path:
        assert path == lock_path(KEY, tmp_path)


def test_one_process_cannot_hold_it_twice(tmp_path):
    with hold("cuzk gate", key=KEY, directory=tmp_path):
        with pytest.raises(GpuBusy, match=f"pid {os.getpid()}"):
            with hold("cuzk history record", key=KEY, directory=tmp_path):
                pass
    with hold("cuzk gate", key=KEY, directory=tmp_path):              # released on leaving the block
        pass


def test_key_without_nvml_is_cuda_visible_devices(monkeypatch):
    from cuzk import nvml

    def no_nvml(*a, **kw):
        raise nvml.NvmlUnavailable("no driver")
    monkeypatch.setattr(nvml, "Nvml", no_nvml)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "GPU-abc,GPU-def")
    assert gpu_lock.gpu_key() == "GPU-abc"
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES")
    assert gpu_lock.gpu_key() == "0"
    assert lock_path("GPU-a/b c", Path("/x")).name == "cuzk-gpu-GPU-a_b_c.lock"


@pytest.fixture
def private(tmp_path):
    """A lock directory of this user's, mode 0700."""
    d = tmp_path / "locks"
    d.mkdir(mode=0o700)
    return d


def test_a_planted_symlink_is_refused_and_its_target_untouched(tmp_path, private):
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    victim.chmod(0o640)
    lock_path(KEY, private).symlink_to(victim)
    with pytest.raises(GpuBusy) as e:
        with hold("cuzk gate", key=KEY, directory=private):
            pytest.fail("held through a symlink")
    msg = str(e.value)
    assert f"GPU lock file {lock_path(KEY, private)} is a symbolic link" in msg and "\n" not in msg
    assert victim.read_text() == "precious\n" and stat.S_IMODE(victim.stat().st_mode) == 0o640


def test_the_lock_file_is_0600_in_a_0700_directory(tmp_path, monkeypatch):
    d = tmp_path / "made"                   # missing: made by the lock
    with hold("cuzk gate", key=KEY, directory=d) as path:
        assert stat.S_IMODE(os.stat(d).st_mode) == 0o700
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    old = tmp_path / "old"                  # a file left open to others under the old rule is closed
    old.mkdir(mode=0o700)
    lock_path(KEY, old).touch()
    lock_path(KEY, old).chmod(0o666)
    with hold("cuzk gate", key=KEY, directory=old) as path:
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o600


def _refused(directory) -> str:
    with pytest.raises(GpuBusy) as e:
        with hold("cuzk gate", key=KEY, directory=directory):
            pytest.fail(f"held in {directory}")
    msg = str(e.value)
    assert f"GPU lock directory {directory} " in msg and "\n" not in msg
    return msg


def test_a_lock_dir_that_is_a_symlink_is_refused(tmp_path, private):
    link = tmp_path / "link"
    link.symlink_to(private)
    assert "is a symbolic link" in _refused(link)
    assert not lock_path(KEY, private).exists()         # nothing made through it


@pytest.mark.parametrize("mode, who", [(0o770, "group"), (0o707, "others"), (0o1777, "group and others")])
def test_a_lock_dir_others_can_write_is_refused(tmp_path, mode, who):
    d = tmp_path / "shared"
    d.mkdir()
    d.chmod(mode)
    assert f"is writable by {who} (mode {mode:04o})" in _refused(d)
    assert not lock_path(KEY, d).exists()


def test_a_lock_dir_of_another_user_is_refused(private, monkeypatch):
    me = os.getuid()
    st = os.stat(private)
    assert gpu_lock.dir_problem(st, me) is None
    crafted = os.stat_result((st.st_mode, 0, 0, 1, me + 1, 0, 0, 0, 0, 0))
    assert gpu_lock.dir_problem(crafted, me) == f"is owned by uid {me + 1}, not by this user (uid {me})"
    monkeypatch.setattr(os, "getuid", lambda: me + 1)
    assert f"is owned by uid {me}, not by this user (uid {me + 1})" in _refused(private)


def test_a_lock_dir_that_is_a_file_is_refused(tmp_path):
    f = tmp_path / "file"
    f.write_text("")
    assert "is not a directory" in _refused(f)


def test_a_fifo_at_the_lock_path_is_refused_without_hanging(private):
    os.mkfifo(lock_path(KEY, private))
    with pytest.raises(GpuBusy, match="is not a regular file"):
        with hold("cuzk gate", key=KEY, directory=private):
            pytest.fail("held a FIFO")


def test_lock_dir_is_cuzk_lock_dir_else_xdg_runtime_dir_else_tmp_per_user(tmp_path, monkeypatch):
    monkeypatch.setenv("CUZK_LOCK_DIR", str(tmp_path / "admin"))
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))
    assert lock_dir() == tmp_path / "admin"
    monkeypatch.delenv("CUZK_LOCK_DIR")
    assert lock_dir() == tmp_path / "cuzk"
    with hold("cuzk gate", key=KEY) as path:            # made there, 0700
        assert path == tmp_path / "cuzk" / f"cuzk-gpu-{KEY}.lock"
        assert stat.S_IMODE(os.stat(tmp_path / "cuzk").st_mode) == 0o700
    monkeypatch.setenv("XDG_RUNTIME_DIR", "relative/run")        # ignored, as the XDG spec says
    monkeypatch.setattr(os, "getuid", lambda: 4242)
    assert lock_dir() == Path("/tmp/cuzk-locks-4242")
    monkeypatch.delenv("XDG_RUNTIME_DIR")
    assert lock_dir() == Path("/tmp/cuzk-locks-4242")


GPU_GATE = """
[[workload]]
backend = "cuda"
circuit = "porep_like"
log_size = 10
"""


def test_gate_refuses_a_gpu_another_gate_holds(tmp_path, holder, monkeypatch, capsys):
    from cuzk.perf import gate
    cfg = tmp_path / "gate.toml"
    cfg.write_text(GPU_GATE)
    monkeypatch.setenv("CUZK_LOCK_DIR", str(tmp_path))
    monkeypatch.setattr(gpu_lock, "gpu_key", lambda: KEY)
    monkeypatch.setattr(gate, "run", lambda *a, **kw: pytest.fail("the gate ran on a held GPU"))
    out = tmp_path / "out"
    rc = main(["gate", "--base", "HEAD", "--head", "HEAD", "--config", str(cfg), "--out", str(out)])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1 and f"GPU {KEY} is held by another cuzk job (pid {holder.pid}" in err[0]
    assert not out.exists()


def test_gate_holds_its_gpu_while_it_runs(tmp_path, monkeypatch, capsys):
    from cuzk.perf import gate
    cfg = tmp_path / "gate.toml"
    cfg.write_text(GPU_GATE)
    monkeypatch.setenv("CUZK_LOCK_DIR", str(tmp_path))
    monkeypatch.setattr(gpu_lock, "gpu_key", lambda: KEY)
    seen = []

    def run(*a, **kw):
        with pytest.raises(GpuBusy):             # held by this gate now
            with hold("probe", key=KEY, directory=tmp_path):
                pass
        seen.append(True)
        raise RuntimeError("stop here")
    monkeypatch.setattr(gate, "run", run)
    rc = main(["gate", "--base", "HEAD", "--head", "HEAD", "--config", str(cfg)])
    assert rc == 2 and seen == [True] and "stop here" in capsys.readouterr().err
    with hold("probe", key=KEY, directory=tmp_path):     # and gave it back
        pass


def test_cpu_only_gate_takes_no_gpu_lock(tmp_path, monkeypatch, holder, capsys):
    from cuzk.perf import gate
    cfg = tmp_path / "gate.toml"
    cfg.write_text(GPU_GATE.replace('"cuda"', '"cpu"'))
    monkeypatch.setenv("CUZK_LOCK_DIR", str(tmp_path))
    monkeypatch.setattr(gpu_lock, "gpu_key", lambda: KEY)
    monkeypatch.setattr(gate, "run", lambda *a, **kw: (_ for _ in ()).throw(RuntimeError("ran")))
    assert main(["gate", "--base", "HEAD", "--head", "HEAD", "--config", str(cfg)]) == 2
    assert "RuntimeError: ran" in capsys.readouterr().err       # it ran, with the GPU held by another


def test_gate_refuses_a_lock_dir_others_can_write(tmp_path, monkeypatch, capsys):
    from cuzk.perf import gate
    cfg = tmp_path / "gate.toml"
    cfg.write_text(GPU_GATE)
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o1777)                # as /tmp is
    monkeypatch.setenv("CUZK_LOCK_DIR", str(shared))
    monkeypatch.setattr(gpu_lock, "gpu_key", lambda: KEY)
    monkeypatch.setattr(gate, "run", lambda *a, **kw: pytest.fail("the gate ran without its lock"))
    rc = main(["gate", "--base", "HEAD", "--head", "HEAD", "--config", str(cfg)])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1 and f"GPU lock directory {shared} is writable by group and others" in err[0]
    assert not any(shared.iterdir())


def test_history_record_refuses_a_held_gpu(tmp_path, holder, monkeypatch, capsys):
    from cuzk.perf import history
    monkeypatch.setenv("CUZK_LOCK_DIR", str(tmp_path))
    monkeypatch.setattr(gpu_lock, "gpu_key", lambda: KEY)
    monkeypatch.setattr(history, "record", lambda *a, **kw: pytest.fail("recorded on a held GPU"))
    rc = main(["history", "record", "--machine", "h200-0", "--repo", str(tmp_path)])
    err = capsys.readouterr().err
    assert rc == 2 and "is held by another cuzk job" in err


@pytest.mark.parametrize("visible, host, why", [
    (None, 1, None), ("GPU-abc", 8, None), ("3", 8, None),
    ("", 1, "is empty"), ("0,1", 8, "names 2 GPUs"), (None, 8, "unset on a host with 8 GPUs"),
    (None, 0, "no GPU"), (None, None, "no GPU"), ("GPU-typo", 0, "finds no such GPU"), ("GPU-abc", None, None),
])
def test_one_gpu_problem(visible, host, why):
    got = gpu_lock.one_gpu_problem(visible, host)
    assert (got is None) if why is None else (why in got)


def test_gpu_state_one_gpu_refuses_without_a_gpu(monkeypatch, capsys):
    from cuzk import nvml
    monkeypatch.setattr(nvml, "open_device", lambda *a, **kw: None)
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    assert main(["gpu-state", "--one-gpu"]) == 2
    assert "gpu-state --one-gpu: no GPU" in capsys.readouterr().err
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,1")
    assert main(["gpu-state", "--one-gpu"]) == 2 and "names 2 GPUs" in capsys.readouterr().err
    assert main(["gpu-state"]) == 0 and '"gpu": null' in capsys.readouterr().out


def test_history_record_refuses_a_symlinked_lock_dir(tmp_path, private, monkeypatch, capsys):
    from cuzk.perf import history
    link = tmp_path / "link"
    link.symlink_to(private)
    monkeypatch.setenv("CUZK_LOCK_DIR", str(link))
    monkeypatch.setattr(gpu_lock, "gpu_key", lambda: KEY)
    monkeypatch.setattr(history, "record", lambda *a, **kw: pytest.fail("recorded without its lock"))
    rc = main(["history", "record", "--machine", "h200-0", "--repo", str(tmp_path)])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1 and f"GPU lock directory {link} is a symbolic link" in err[0]
