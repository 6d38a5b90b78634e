"""``replaytest import dbos`` never writes two runs to one file: ids that differ only in characters unsafe
in file names get names of their own, and a file of another run is refused, never replaced."""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from replaytest.cli import cli

HERE = Path(__file__).resolve().parent
# SHA-256 of each id, first 12 hex digits (worked out once with ``hashlib``, written here by hand).
HASH_SLASH = "f2d593139ad7"  # "order/1"
HASH_COLON = "c8bd69874287"  # "order:1"
NAMES = {"order/1": f"order_1-{HASH_SLASH}.json", "order:1": f"order_1-{HASH_COLON}.json", "order_1": "order_1.json"}
REFUNDS = {"order/1": 39.0, "order:1": 20.82, "order_1": 52.0}  # kettle damaged, lamp less 15 %, toaster damaged


def _record(directory: Path, *runs: str) -> Path:
    system_db = directory / "system.sqlite3"
    command = [sys.executable, str(HERE / "record_returns.py"), str(system_db), *runs]
    done = subprocess.run(command, capture_output=True, text=True, timeout=180, cwd=directory)
    assert done.returncode == 0, done.stdout + done.stderr
    return system_db


@pytest.fixture(scope="module")
def returns_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _record(tmp_path_factory.mktemp("returns"), "order/1:kettle:damaged", "order:1:lamp:changed-mind", "order_1:toaster:damaged")


def _import(system_db: Path, out: Path, *args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, ["import", "dbos", "--database-url", f"sqlite:///{system_db}", "--out", str(out), *args])
    return result.exit_code, result.output


def _recorded(path: Path) -> tuple[str, float]:
    history = json.loads(path.read_text())
    return history["workflow"]["id"], history["result"]["refund"]


def test_three_ids_with_one_safe_spelling_get_three_files(returns_db: Path, tmp_path: Path) -> None:
    code, out = _import(returns_db, tmp_path)
    assert code == 0, out
    assert f"imported 3 histories into {tmp_path} (0 value(s) redacted)" in out
    assert sorted(p.name for p in tmp_path.glob("*.json")) == sorted(NAMES.values())
    for workflow_id, name in NAMES.items():
        assert _recorded(tmp_path / name) == (workflow_id, REFUNDS[workflow_id])


def test_a_reimport_replaces_the_same_runs_file(returns_db: Path, tmp_path: Path) -> None:
    assert _import(returns_db, tmp_path)[0] == 0
    stale = tmp_path / NAMES["order:1"]
    history = json.loads(stale.read_text())
    history["result"]["refund"] = 0.0  # as if an older import had recorded less
    stale.write_text(json.dumps(history))
    code, out = _import(returns_db, tmp_path, "--workflow-id", "order:1")
    assert code == 0, out
    assert "imported 1 history" in out
    assert _recorded(stale) == ("order:1", 20.82)


def test_a_file_of_another_run_is_refused_and_the_other_runs_are_written(returns_db: Path, tmp_path: Path) -> None:
    first = tmp_path / "first"
    assert _import(returns_db, first, "--workflow-id", "order/1")[0] == 0
    target = tmp_path / "histories"
    target.mkdir()
    # order_1.json already holds the run order/1 (copied under the name an older replaytest gave it)
    taken = target / "order_1.json"
    shutil.copy(first / NAMES["order/1"], taken)
    before = taken.read_bytes()
    code, out = _import(returns_db, target)
    assert code == 2
    assert (
        f"refused: {taken}: workflow 'order_1' (process_return) was not written: the file holds workflow 'order/1' "
        "(process_return) from an earlier import; move that file away or import into another folder (--out)"
    ) in out
    assert f"imported 2 histories into {target} (0 value(s) redacted); 1 run(s) refused" in out
    assert taken.read_bytes() == before
    assert _recorded(target / NAMES["order/1"]) == ("order/1", 39.0)
    assert _recorded(target / NAMES["order:1"]) == ("order:1", 20.82)


def test_a_file_that_is_no_dbos_history_is_refused(returns_db: Path, tmp_path: Path) -> None:
    taken = tmp_path / "order_1.json"
    taken.write_text('{"note": "refund policy draft"}\n')
    code, out = _import(returns_db, tmp_path, "--workflow-id", "order_1")
    assert code == 2
    assert (
        f"refused: {taken}: workflow 'order_1' (process_return) was not written: the file is not a history of this "
        "engine; move that file away or import into another folder (--out)"
    ) in out
    assert taken.read_text() == '{"note": "refund policy draft"}\n'


def test_an_id_crafted_to_take_another_runs_name_is_refused(tmp_path: Path) -> None:
    crafted = f"order_1-{HASH_SLASH}"  # safe characters only: kept as it is, the name order/1 gets
    system_db = _record(tmp_path, "order/1:kettle:damaged", f"{crafted}:lamp:damaged")
    out_dir = tmp_path / "histories"
    code, out = _import(system_db, out_dir)
    assert code == 2
    taken = out_dir / NAMES["order/1"]
    assert (
        f"refused: {taken}: workflow '{crafted}' (process_return) was not written: this import already wrote "
        "workflow 'order/1' (process_return) there (their ids give one file name); import it on its own into "
        "another folder (--out)"
    ) in out
    assert f"imported 1 history into {out_dir} (0 value(s) redacted); 1 run(s) refused" in out
    assert [p.name for p in out_dir.glob("*.json")] == [taken.name]
    assert _recorded(taken) == ("order/1", 39.0)


def test_a_redacted_id_names_the_file_as_written(tmp_path: Path) -> None:
    system_db = _record(tmp_path, "return-for-maria.keller@northwind.example:lamp:damaged")
    out_dir = tmp_path / "histories"
    code, out = _import(system_db, out_dir)
    assert code == 0, out
    [path] = out_dir.glob("*.json")
    written_id = json.loads(path.read_text())["workflow"]["id"]
    # the whole id is one address, so it became one pseudonym at the same domain
    assert re.fullmatch(r"user-[0-9a-f]{10}@northwind\.example", written_id), written_id
    digest = hashlib.sha256(written_id.encode()).hexdigest()[:12]  # the documented rule, worked out here
    assert path.name == f"{written_id.replace('@', '_')}-{digest}.json"
    assert "maria.keller" not in out
