"""A lint run using its cache takes its configuration file's table from the record the last run kept of it
(``config.txt`` in the lint folder of the default cache folder) while the file's bytes stay the same, and parses
no TOML then; whatever the file says, the findings, output and exit code are those of a run that parses it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from lintkit import CLOCK_WORKFLOW, write_files

# Runs the console script's ``main`` in a fresh process; the last stderr line says whether tomllib was imported.
RUNNER = """
import sys
sys.argv = ["replaytest", *sys.argv[1:]]
from replaytest.cli import main
try:
    main()
finally:
    sys.stdout.flush()
    print(f"tomllib imported: {'tomllib' in sys.modules or 'tomli' in sys.modules}", file=sys.stderr)
"""


def _run(project: Path, *arguments: str) -> tuple[int, str, str, bool]:
    done = subprocess.run([sys.executable, "-c", RUNNER, "lint", "--format", "json", *arguments], cwd=project,
                          capture_output=True, text=True, timeout=120)
    *stderr, flag = done.stderr.rstrip("\n").split("\n")
    return done.returncode, done.stdout, "\n".join(stderr), flag == "tomllib imported: True"


def _record(project: Path) -> Path:
    return project / ".replaytest_cache" / "lint" / "config.txt"


def _paths(run: tuple[int, str, str, bool]) -> set[str]:
    return {finding["path"] for finding in json.loads(run[1])["diagnostics"]}


@pytest.fixture()
def project(tmp_path: Path) -> Path:
    return write_files(tmp_path / "proj", {
        "pyproject.toml": '[project]\nname = "proj"\n\n[tool.replaytest]\nexclude = ["generated"]\n',
        "app/__init__.py": "",
        "app/clock.py": CLOCK_WORKFLOW,
        "generated/skip.py": CLOCK_WORKFLOW,
    })


def test_a_cached_run_takes_the_table_from_the_record_and_parses_no_toml(project: Path) -> None:
    first, second = _run(project, "."), _run(project, ".")
    assert first[3] and _record(project).is_file(), "the first run parses the file and keeps its table"
    assert not second[3], "the second run parsed the TOML again"
    assert second[:3] == first[:3] == _run(project, "--no-cache", ".")[:3]
    assert _paths(second) == {"app/clock.py"}  # the recorded exclude still holds


def test_an_edited_file_is_parsed_again(project: Path) -> None:
    _run(project, "."), _run(project, ".")
    (project / "pyproject.toml").write_text('[project]\nname = "proj"\n\n[tool.replaytest]\n', encoding="utf-8")
    edited = _run(project, ".")
    assert edited[3] and _paths(edited) == {"app/clock.py", "generated/skip.py"}
    assert edited[:3] == _run(project, "--no-cache", ".")[:3]
    assert not _run(project, ".")[3]


@pytest.mark.parametrize("text", ['[tool.replaytest]\nexclude = "generated\n', '[tool.replaytest]\nselect = ["XX9"]\n'])
def test_a_file_in_error_is_the_same_error_every_run(project: Path, text: str) -> None:
    _run(project, ".")
    (project / "pyproject.toml").write_text(text, encoding="utf-8")
    runs = [_run(project, "."), _run(project, "."), _run(project, "--no-cache", ".")]
    assert runs[0][0] == 2 and "pyproject.toml" in runs[0][2]
    assert runs[0][:3] == runs[1][:3] == runs[2][:3]


def test_the_record_is_trusted_as_the_cache_is_and_no_cache_ignores_it(project: Path) -> None:
    _run(project, ".")
    key, top_level, _ = _record(project).read_text(encoding="ascii").split(" ", 2)
    # A record naming these very bytes is what the last run read in them: the cache folder is trusted input.
    _record(project).write_text(f'{key} {top_level} {{"exclude":["app","generated"]}}', encoding="ascii")
    assert _run(project, ".")[0] == 2  # nothing left to check: the record's exclude was used
    uncached = _run(project, "--no-cache", ".")
    assert uncached[3] and _paths(uncached) == {"app/clock.py"}


def test_no_cache_keeps_no_record(project: Path) -> None:
    _run(project, "--no-cache", ".")
    assert not (project / ".replaytest_cache").exists()


def test_a_file_naming_another_cache_folder_is_read_every_run(project: Path) -> None:
    (project / "pyproject.toml").write_text('[tool.replaytest]\nexclude = ["generated"]\ncache-dir = ".lintcache"\n',
                                            encoding="utf-8")
    first, second = _run(project, "."), _run(project, ".")
    assert first[3] and second[3] and second[:3] == first[:3]
    assert not _record(project).exists() and (project / ".lintcache").is_dir()


def test_a_damaged_record_is_read_as_none(project: Path) -> None:
    _run(project, ".")
    _record(project).write_bytes(b"not a record")
    run = _run(project, ".")
    assert run[3] and _paths(run) == {"app/clock.py"}
    assert not _run(project, ".")[3]  # kept again
