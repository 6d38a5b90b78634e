"""Recording the shop for real and importing its runs; replaying the recorded histories through pytest
in a fresh process, against the shop's code as it is or edited (DBOS keeps one registry per process, so
every version of the code gets its own)."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import pytest
from click.testing import CliRunner

from replaytest.cli import cli

HERE = Path(__file__).resolve().parent
APP = (HERE / "dbos_shop/app.py").read_text()
RECORDER = HERE / "record.py"
# The runs each import below selects; bill-1 and keep-note are imported by the tests about them.
IMPORTED_NAMES = ("place_order", "ship", "pack_parcel", "Reports.daily", "Warehouse.restock")


@dataclass(frozen=True)
class Recording:
    database_url: str  # the system database the shop ran on and the histories were imported from
    histories: Path
    effects: Path  # every step body that really ran appended a line here while recording

    @property
    def system_db(self) -> Path:
        """The file of a recording on SQLite."""
        assert self.database_url.startswith("sqlite:///"), f"{self.database_url} is not a SQLite database"
        return Path(self.database_url[len("sqlite:///") :])


def record(directory: Path, portable: bool, database_url: str | None = None, app_database_url: str | None = None) -> Recording:
    """The shop run for real on the system database ``database_url`` and the application database
    ``app_database_url`` (defaults: ``system.sqlite3`` and ``app.sqlite3`` in ``directory``), imported."""
    directory.mkdir(parents=True, exist_ok=True)
    database_url = database_url or f"sqlite:///{directory / 'system.sqlite3'}"
    app_database_url = app_database_url or f"sqlite:///{directory / 'app.sqlite3'}"
    effects = directory / "effects.log"
    command = [sys.executable, str(RECORDER), database_url, app_database_url, str(effects)]
    run = subprocess.run(command + (["--portable"] if portable else []), capture_output=True, text=True, timeout=180, cwd=directory)
    assert run.returncode == 0, run.stdout + run.stderr
    histories = directory / "histories"
    for name in IMPORTED_NAMES if not portable else ("place_order", "ship"):
        result = CliRunner().invoke(cli, ["import", "dbos", "--database-url", database_url, "--name", name, "--out", str(histories)])
        assert result.exit_code == 0, result.output
    return Recording(database_url, histories, effects)


PYPROJECT = """
[tool.pytest.ini_options]
replay_paths = ["histories"]
replay_workflows = ["dbos_shop.replay:CONFIG"]
"""
REPLAY_CONFIG = '''from replaytest.plugins.dbos.replayer import DBOSReplayConfig

CONFIG = DBOSReplayConfig(modules=("dbos_shop.app",))
'''


def edited(*changes: tuple[str, str]) -> str:
    """The shop's source with each ``(old, new)`` replaced; every ``old`` must be there exactly once."""
    text = APP
    for old, new in changes:
        assert text.count(old) == 1, f"{old!r} occurs {text.count(old)} times in dbos_shop/app.py"
        text = text.replace(old, new)
    return text


def project(pytester: pytest.Pytester, histories: Path, app: str = APP, only: Iterable[str] = ()) -> Path:
    """A project with the shop (``app`` as its app.py) and the recorded histories (``only`` these files)."""
    root = pytester.path
    shutil.copytree(HERE / "dbos_shop", root / "dbos_shop", ignore=shutil.ignore_patterns("__pycache__"))
    (root / "dbos_shop/app.py").write_text(app)
    (root / "dbos_shop/replay.py").write_text(REPLAY_CONFIG)
    (root / "pyproject.toml").write_text(PYPROJECT)
    target = root / "histories"
    target.mkdir()
    for path in sorted(histories.glob("*.json")):
        if not only or path.stem in only:
            shutil.copy(path, target / path.name)
    return root


def replay(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    """pytest in a fresh process; step bodies would log to ``effects.log`` and the datasource would
    create ``app.sqlite3`` in the project if replay ever ran one or connected."""
    root = pytester.path
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("SHOP_EFFECTS", str(root / "effects.log"))
        patch.setenv("SHOP_APP_DB", f"sqlite:///{root / 'app.sqlite3'}")
        return pytester.runpytest_subprocess("-p", "no:cacheprovider", *args)


def line_of(app: str, text: str) -> int:
    """The 1-based line of ``app`` holding ``text`` (exactly one)."""
    numbers = [number for number, line in enumerate(app.splitlines(), 1) if text in line]
    assert len(numbers) == 1, f"{text!r} is on lines {numbers}"
    return numbers[0]


def no_effects(root: Path) -> None:
    """Nothing really ran: no step body wrote its effect, no datasource made its database."""
    assert not (root / "effects.log").exists(), (root / "effects.log").read_text()
    assert not (root / "app.sqlite3").exists()


def report(result: pytest.RunResult) -> str:
    return re.sub(r"\s+\n", "\n", result.stdout.str())
