"""Test folders are not packages (no ``__init__.py``): pytest puts each folder on ``sys.path`` and imports its
test files, kits and test apps by their own names. Two of one name in different folders collide — two test
files stop the suite's collection ("import file mismatch"), and a test app package of one folder shadows the
other folder's (``from refund_desk import function_app`` importing the wrong one). Caught here, by name,
before a run of the whole suite meets it."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]


def test_every_test_file_name_is_unique_across_the_test_folders() -> None:
    seen: dict[str, list[str]] = defaultdict(list)
    for path in TESTS.rglob("test_*.py"):
        if "__pycache__" in path.parts or (path.parent / "__init__.py").exists():
            continue
        seen[path.name].append(path.relative_to(TESTS).as_posix())
    assert {name: paths for name, paths in seen.items() if len(paths) > 1} == {}


def test_every_module_and_package_a_test_folder_holds_has_a_name_of_its_own() -> None:
    seen: dict[str, list[str]] = defaultdict(list)
    for folder in [TESTS, *(path for path in TESTS.iterdir() if path.is_dir())]:
        if (folder / "__init__.py").exists() or folder.name == "__pycache__":
            continue
        for path in folder.iterdir():
            importable = path.suffix == ".py" or (path.is_dir() and (path / "__init__.py").exists())
            if importable and path.name != "conftest.py":
                seen[path.stem].append(path.relative_to(TESTS).as_posix())
    assert {name: paths for name, paths in seen.items() if len(paths) > 1} == {}
