"""A DBOS workflow replay cannot check (it streams with ``DBOS.write_stream``) beside ordinary ones: the
newsroom ran for real on a SQLite system database and ``replaytest import dbos`` imported every run.
Each face gives the other runs their own verdicts and the streaming run an error (exit 2: it was not
checked); excluding it makes the exit code the others' and the summary says "1 excluded"."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
RECORDER = HERE / "record_newsroom.py"
RUNS = ("brief-markets", "brief-weather", "live-elections")
PYPROJECT = """
[tool.pytest.ini_options]
replay_paths = ["histories"]
replay_workflows = ["newsroom_replay:CONFIG"]
"""
REPLAY_CONFIG = '''from replaytest.plugins.dbos.replayer import DBOSReplayConfig

CONFIG = DBOSReplayConfig(modules=("dbos_newsroom.app",))
'''
UNSUPPORTED = "histories/live-elections.json: live_brief id live-elections: error"
EXCLUDE_LIVE = '\n[tool.replaytest.replay]\nexclude = ["histories/live-*.json"]\n'


@pytest.fixture(scope="module")
def imported(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The newsroom's runs, recorded for real and imported with ``replaytest import dbos``."""
    directory = tmp_path_factory.mktemp("newsroom")
    system_db, effects = directory / "system.sqlite3", directory / "effects.log"
    run = subprocess.run([sys.executable, str(RECORDER), str(system_db), str(effects)], capture_output=True, text=True,
                         timeout=180, cwd=directory)
    assert run.returncode == 0, run.stdout + run.stderr
    assert effects.read_text().count("publish") == 3  # recording really ran the steps
    histories = directory / "histories"
    imported = subprocess.run(
        [sys.executable, "-m", "replaytest", "import", "dbos", "--database-url", f"sqlite:///{system_db}", "--out",
         str(histories)], capture_output=True, text=True, timeout=120,
    )
    # The import refuses nothing: a streaming run is a history like any other.
    assert imported.returncode == 0, imported.stdout + imported.stderr
    assert "imported 3 histories" in imported.stdout
    assert sorted(path.stem for path in histories.glob("*.json")) == list(RUNS)
    return histories


@pytest.fixture
def newsroom(tmp_path: Path, imported: Path) -> Path:
    shutil.copytree(HERE / "dbos_newsroom", tmp_path / "dbos_newsroom", ignore=shutil.ignore_patterns("__pycache__"))
    (tmp_path / "newsroom_replay.py").write_text(REPLAY_CONFIG)
    (tmp_path / "pyproject.toml").write_text(PYPROJECT)
    shutil.copytree(imported, tmp_path / "histories")
    return tmp_path


def replaytest(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    environment = {**os.environ, "NEWSROOM_EFFECTS": str(project / "effects.log")}
    return subprocess.run([sys.executable, "-m", "replaytest", *args], cwd=project, capture_output=True, text=True,
                          timeout=180, env=environment)


def pytest_run(pytester: pytest.Pytester, project: Path) -> pytest.RunResult:
    for entry in project.iterdir():
        target = pytester.path / entry.name
        if entry.is_dir():
            shutil.copytree(entry, target)
        else:
            shutil.copy(entry, target)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("NEWSROOM_EFFECTS", str(pytester.path / "effects.log"))
        return pytester.runpytest_subprocess("-p", "no:cacheprovider")


def test_the_streaming_run_is_an_error_and_the_others_keep_their_verdicts(newsroom: Path) -> None:
    text = replaytest(newsroom, "replay")
    assert text.returncode == 2, text.stdout + text.stderr
    assert UNSUPPORTED in text.stdout
    assert "cannot replay:" in text.stdout and "write_stream" in text.stdout
    assert "histories/brief-markets.json: brief id brief-markets: passed (4 events)" in text.stdout
    assert "histories/brief-weather.json: brief id brief-weather: passed (4 events)" in text.stdout
    assert "replayed 3 histories: 2 passed, 0 diverged, 0 stale, 1 error" in text.stdout
    document = json.loads(replaytest(newsroom, "replay", "--format", "json").stdout)
    assert {Path(item["history"]).stem: item["status"] for item in document["results"]} == {
        "brief-markets": "passed", "brief-weather": "passed", "live-elections": "error",
    }
    assert document["summary"]["excluded"] == 0
    assert not (newsroom / "effects.log").exists()  # replay ran no step body


def test_check_gives_the_same_verdicts(newsroom: Path) -> None:
    run = replaytest(newsroom, "check", "--no-cache", "dbos_newsroom")
    assert run.returncode == 2, run.stdout + run.stderr
    assert UNSUPPORTED in run.stdout
    assert "replayed 3 histories: 2 passed, 0 diverged, 0 stale, 1 error" in run.stdout


def test_pytest_fails_only_the_streaming_run(pytester: pytest.Pytester, newsroom: Path) -> None:
    result = pytest_run(pytester, newsroom)
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(["replayed 3 histories: 2 passed, 0 diverged, 0 stale, 1 error",
                                 "FAILED histories/live-elections.json::replay*"])


@pytest.mark.slow
def test_excluding_the_streaming_run_leaves_the_others_exit_code_in_every_face(
    pytester: pytest.Pytester, newsroom: Path
) -> None:
    pyproject = newsroom / "pyproject.toml"
    pyproject.write_text(PYPROJECT + EXCLUDE_LIVE)
    setting = f"[tool.replaytest.replay] exclude in {pyproject}"
    text = replaytest(newsroom, "replay")
    assert text.returncode == 0, text.stdout + text.stderr
    assert "live-elections" not in text.stdout
    assert "replayed 2 histories: 2 passed, 0 diverged, 0 stale, 0 error" in text.stdout
    assert f"excluded 1 history (by {setting})" in text.stdout
    document = json.loads(replaytest(newsroom, "replay", "--format", "json").stdout)
    assert document["summary"]["excluded"] == 1
    assert document["excluded"] == [{"history": "histories/live-elections.json", "glob": "histories/live-*.json",
                                     "setting": setting}]
    gate = replaytest(newsroom, "check", "--no-cache", "dbos_newsroom")
    assert gate.returncode == 0, gate.stdout + gate.stderr
    assert f"excluded 1 history (by {setting})" in gate.stdout
    result = pytest_run(pytester, newsroom)
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines([f"excluded 1 history (by [[]tool.replaytest.replay] exclude in {pytester.path / 'pyproject.toml'})",
                                 "replayed 2 histories: 2 passed, 0 diverged, 0 stale"])
