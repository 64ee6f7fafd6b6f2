"""The test run's own rules (tests/conftest.py)."""
import importlib.util
from pathlib import Path


def _conftest():
    """tests/conftest.py by its path: `import conftest` finds whichever folder's conftest came first on sys.path."""
    spec = importlib.util.spec_from_file_location("tests_conftest", Path(__file__).resolve().parents[1] / "conftest.py")
    conftest = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(conftest)
    return conftest


def test_only_gpu_marked_tests_skip_without_a_gpu(monkeypatch):
    """tests/gpu/ holds CPU tests too (models, host builds, plans): the folder's name is a keyword of its tests,
    and it must not skip them."""
    import cuzk.backend
    conftest = _conftest()

    class Item:
        def __init__(self, marked):
            self.keywords, self.marked, self.added = {"gpu": 1, "test_x": 1}, marked, []

        def get_closest_marker(self, name):
            return object() if self.marked and name == "gpu" else None

        def add_marker(self, m):
            self.added.append(m)
    monkeypatch.setattr(cuzk.backend, "gpu_status", lambda: (False, "none here"))
    items = [Item(True), Item(False)]
    conftest.pytest_collection_modifyitems(None, items)
    assert len(items[0].added) == 1 and items[1].added == []


def test_tests_that_need_a_quiet_gpu_are_collected_first(monkeypatch):
    """quiet_gpu tests move to the front (before any test opens a CUDA context here); the rest keep their order."""
    import cuzk.backend
    conftest = _conftest()

    class Item:
        def __init__(self, name, quiet):
            self.name, self.quiet = name, quiet

        def get_closest_marker(self, name):
            return object() if name == "quiet_gpu" and self.quiet else None
    monkeypatch.setattr(cuzk.backend, "gpu_status", lambda: (True, "a GPU"))
    items = [Item("a", False), Item("b", True), Item("c", False), Item("d", True)]
    conftest.pytest_collection_modifyitems(None, items)
    assert [i.name for i in items] == ["b", "d", "a", "c"]


def test_tests_marked_serial_are_collected_last(monkeypatch):
    """serial tests after the others (quiet_gpu ones still first); each group keeps its order."""
    import cuzk.backend
    conftest = _conftest()

    class Item:
        def __init__(self, name, *marks):
            self.name, self.marks = name, marks

        def get_closest_marker(self, name):
            return object() if name in self.marks else None
    monkeypatch.setattr(cuzk.backend, "gpu_status", lambda: (True, "a GPU"))
    items = [Item("a", "serial"), Item("b"), Item("c", "quiet_gpu"), Item("d", "serial"), Item("e")]
    conftest.pytest_collection_modifyitems(None, items)
    assert [i.name for i in items] == ["c", "b", "e", "a", "d"]


def test_a_serial_turn_excludes_every_other_test_and_the_others_share(tmp_path):
    """The lock of tests/conftest.py's run_turn as another xdist worker meets it: while a serial test holds its turn no
    other test may take one; while an ordinary test holds one, another ordinary test may and a serial one may not."""
    import subprocess
    import sys
    conftest = _conftest()
    probe = ("import fcntl, sys\nf = open(sys.argv[1], 'a')\n"
             "try:\n    fcntl.flock(f, (fcntl.LOCK_EX if sys.argv[2] == 'alone' else fcntl.LOCK_SH) | fcntl.LOCK_NB)\n"
             "except BlockingIOError:\n    sys.exit(1)\n")

    def could(how):
        return subprocess.run([sys.executable, "-c", probe, str(tmp_path / "run"), how]).returncode == 0
    with conftest.run_turn(tmp_path, alone=True):
        assert not could("shared") and not could("alone")
    with conftest.run_turn(tmp_path, alone=False):
        assert could("shared") and not could("alone")
    assert could("alone")
