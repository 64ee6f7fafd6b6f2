"""The test run's own rules (tests/conftest.py)."""


def test_only_gpu_marked_tests_skip_without_a_gpu(monkeypatch):
    """tests/gpu/ holds CPU tests too (models, host builds, plans): the folder's name is a keyword of its tests,
    and it must not skip them."""
    import importlib.util
    from pathlib import Path

    import cuzk.backend
    # by its path: `import conftest` finds whichever folder's conftest came first on sys.path
    spec = importlib.util.spec_from_file_location("tests_conftest", Path(__file__).resolve().parents[1] / "conftest.py")
    conftest = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(conftest)

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
    import importlib.util
    from pathlib import Path

    import cuzk.backend
    spec = importlib.util.spec_from_file_location("tests_conftest", Path(__file__).resolve().parents[1] / "conftest.py")
    conftest = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(conftest)

    class Item:
        def __init__(self, name, quiet):
            self.name, self.quiet = name, quiet

        def get_closest_marker(self, name):
            return object() if name == "quiet_gpu" and self.quiet else None
    monkeypatch.setattr(cuzk.backend, "gpu_status", lambda: (True, "a GPU"))
    items = [Item("a", False), Item("b", True), Item("c", False), Item("d", True)]
    conftest.pytest_collection_modifyitems(None, items)
    assert [i.name for i in items] == ["b", "d", "a", "c"]
