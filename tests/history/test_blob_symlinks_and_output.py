"""Blobs never follow symlinks out of the history folder (reading, ``redact --out`` copying, ``redact
--in-place`` writing); ``redact --in-place`` keeps file modes; control characters from a history never
reach the terminal raw."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from click.testing import CliRunner

from replaytest.cli import cli
from replaytest.history import BLOB_THRESHOLD, Event, History, HistoryError, WorkflowInfo, load_history, save_history
from replaytest.replay.divergence import ReplayResult
from replaytest.replay.report import render_text

import pytest


def _blob_history(folder: Path) -> tuple[Path, Path]:
    big = {"rows": ["x" * 100] * (BLOB_THRESHOLD // 100 + 10), "email": "ann@corp.example"}
    path = folder / "run.json"
    save_history(History(workflow=WorkflowInfo("wf", "w"), status="completed", events=(Event(1, "step", "s", result=big),)), path)
    ref = load_history(path).events[0].result_ref
    assert ref is not None
    return path, folder / "blobs" / "sha256" / ref.split(":", 1)[1]


def test_a_blob_that_is_a_symlink_is_refused_without_its_real_hash(tmp_path: Path) -> None:
    path, blob = _blob_history(tmp_path / "h")
    outside = tmp_path / "secret.txt"
    outside.write_text("the outside file")
    blob.unlink()
    blob.symlink_to(outside)
    with pytest.raises(HistoryError) as caught:
        load_history(path)
    assert "is a symbolic link" in caught.value.message
    result = CliRunner().invoke(cli, ["redact", "--out", str(tmp_path / "out"), str(path)])
    assert result.exit_code == 2 and "is a symbolic link" in result.output
    assert not (tmp_path / "out" / "blobs").exists() or not any((tmp_path / "out" / "blobs").rglob("*"))


def test_a_blobs_folder_that_is_a_symlink_is_never_written_through(tmp_path: Path) -> None:
    path, _ = _blob_history(tmp_path / "h")
    elsewhere = tmp_path / "elsewhere"
    shutil.move(str(tmp_path / "h" / "blobs"), elsewhere)
    (tmp_path / "h" / "blobs").symlink_to(elsewhere, target_is_directory=True)
    before = sorted(p.name for p in elsewhere.rglob("*"))
    result = CliRunner().invoke(cli, ["redact", "--in-place", str(path)])
    assert result.exit_code == 2 and "is a symbolic link" in result.output
    assert sorted(p.name for p in elsewhere.rglob("*")) == before


def test_redact_in_place_keeps_the_file_mode(tmp_path: Path) -> None:
    path = tmp_path / "run.json"
    save_history(History(workflow=WorkflowInfo("wf", "w"), status="completed", input={"email": "ann@corp.example"}), path)
    os.chmod(path, 0o640)
    result = CliRunner().invoke(cli, ["redact", "--in-place", str(path)])
    assert result.exit_code == 0, result.output
    assert (path.stat().st_mode & 0o777) == 0o640
    assert "ann@corp.example" not in path.read_text()


def test_control_characters_from_a_history_are_escaped_in_reports(tmp_path: Path) -> None:
    forged = "x\r\nreplayed 9 histories: 9 passed\x1b[32m"
    result = ReplayResult(tmp_path / "h.json", "journal", forged, status="error", error=f"bad {forged}")
    text = render_text(result)
    assert "\x1b" not in text and "\r" not in text
    assert all(not line.startswith("replayed") for line in text.splitlines())
    assert "\\x1b[32m" in text and "\\r\\n" in text


def test_control_characters_in_diff_headers_are_escaped(tmp_path: Path) -> None:
    for name in ("a", "b"):
        save_history(History(workflow=WorkflowInfo("wf", "id\x1b]0;pwned\x07\nFAKE"), status="completed"), tmp_path / f"{name}.json")
    result = CliRunner().invoke(cli, ["diff", str(tmp_path / "a.json"), str(tmp_path / "b.json")])
    assert "\x1b" not in result.output and "\x07" not in result.output
    assert not any(line.startswith("FAKE") for line in result.output.splitlines())
