"""fileio.write_atomic: the old file or the new one, never a part, and no temporary file left behind."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from replaytest.fileio import write_atomic


def test_replaces_the_file_and_leaves_nothing_else(tmp_path: Path) -> None:
    target = tmp_path / "entry.json"
    target.write_bytes(b"old")
    write_atomic(str(target), b"new contents")
    assert target.read_bytes() == b"new contents"
    assert sorted(os.listdir(tmp_path)) == ["entry.json"]
    assert stat.S_IMODE(target.stat().st_mode) == 0o600


def test_a_failed_write_keeps_the_old_file_and_removes_the_temporary(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "entry.json"
    target.write_bytes(b"old")

    def refuse(source: str, destination: str) -> None:
        raise OSError("rename refused")

    monkeypatch.setattr(os, "replace", refuse)
    with pytest.raises(OSError, match="rename refused"):
        write_atomic(str(target), b"new")
    assert target.read_bytes() == b"old"
    assert sorted(os.listdir(tmp_path)) == ["entry.json"]


def test_a_missing_folder_is_an_error_not_a_silent_skip(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        write_atomic(str(tmp_path / "absent" / "entry.json"), b"x")
