"""Test folders are not packages (no ``__init__.py``), so pytest imports each test file by its basename: two test
files of one name in different folders stop collection of the whole suite ("import file mismatch"). Caught
here, by name, before a run of the whole suite meets it."""

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
