"""``replaytest import refresh`` of executions imported from saved Lambda API files (the FILES arguments,
relative to the folder the import ran from): the record keeps them after ``--``, and a refresh from another
folder reads the same files again, changing nothing."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from aws_kit import run_cli


def test_a_refresh_of_saved_executions_reads_the_same_files_again(recording, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    saved = tmp_path / "saved"
    saved.mkdir()
    names = []
    for path in recording.files.values():
        shutil.copyfile(path, saved / Path(path).name)
        names.append(f"saved/{Path(path).name}")
    done = run_cli("import", "aws-durable", *names, "--out", "histories", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    histories = tmp_path / "histories"
    [entry] = json.loads((histories / ".replaytest-imports").read_text(encoding="utf-8"))["imports"]
    assert (entry["command"], entry["cwd"]) == (["--", *names], "..")
    before = {path.name: path.read_bytes() for path in histories.glob("*.json")}

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    done = run_cli("import", "refresh", str(histories), cwd=elsewhere)
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"0 added, 0 changed, {len(before)} unchanged, 0 gone" in done.stdout
    assert {path.name: path.read_bytes() for path in histories.glob("*.json")} == before
