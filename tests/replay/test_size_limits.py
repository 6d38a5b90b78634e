"""A history file or a blob larger than its limit (``max-history-bytes``, ``max-blob-bytes`` in
``[tool.replaytest.replay]``; ini ``replay_max_history_bytes``, ``replay_max_blob_bytes``) is refused
before it is read: an ``error`` result naming the file, its size and the limit, exit 2, and every other
history of the run still replays. The 2 GB history is a sparse file (no disk used); that it is not read
is checked with an address-space limit on the replaying child process, far below the file's size."""

from __future__ import annotations

import json
import os
import resource
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import shipping_app
from click.testing import CliRunner
from replaykit import record

from replaytest.cli import cli
from replaytest.fileio import FileTooLargeError, read_regular

TWO_GIB = 2 * 1024**3
CHILD_ADDRESS_SPACE = 1024**3  # a whole-file read of the 2 GiB history cannot fit


def _project(tmp_path: Path, replay_table: str = "", ini: str = "") -> Path:
    """A project with the shipping agent, a small label history and a manifest history whose large
    result lives in the blob store; ``replay_table`` adds lines to [tool.replaytest.replay]."""
    shutil.copy(Path(shipping_app.__file__), tmp_path / "shipping_app.py")
    (tmp_path / "pyproject.toml").write_text(
        '[tool.replaytest.replay]\npaths = ["histories"]\n'
        'workflows = ["shipping_app:label_agent", "shipping_app:manifest_agent"]\n' + replay_table
        + (f"\n[tool.pytest.ini_options]\n{ini}" if ini else "")
    )
    histories = tmp_path / "histories"
    histories.mkdir()
    record(histories, shipping_app.label_agent, {"grams": 1200, "to": "Ann Lee"}, name="label")
    record(histories, shipping_app.manifest_agent, "leeds", name="manifest")
    for journal in histories.glob("*.sqlite3"):
        journal.unlink()
    return histories


def _invoke(cwd: Path, *args: str) -> tuple[int, str]:
    previous = os.getcwd()
    os.chdir(cwd)
    try:
        ran = CliRunner().invoke(cli, list(args))
    finally:
        os.chdir(previous)
        sys.modules.pop("shipping_app", None)
    return ran.exit_code, ran.output


def _limit_address_space() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (CHILD_ADDRESS_SPACE, CHILD_ADDRESS_SPACE))


def _blob_of(histories: Path) -> Path:
    [blob] = (histories / "blobs" / "sha256").iterdir()
    return blob


def test_a_sparse_2_gib_history_is_refused_unread_and_the_others_replay(tmp_path: Path) -> None:
    histories = _project(tmp_path)
    huge = histories / "imported.json"
    with open(huge, "wb") as handle:
        handle.truncate(TWO_GIB)
    ran = subprocess.run(
        [sys.executable, "-m", "replaytest", "replay"], cwd=tmp_path, capture_output=True, text=True,
        preexec_fn=_limit_address_space, timeout=300,
    )
    assert ran.returncode == 2, ran.stdout + ran.stderr
    assert (
        f"  {huge}: history file is 2,147,483,648 bytes, more than the history limit of 536,870,912 bytes; it was "
        "not read. If it is genuine, raise max-history-bytes in [tool.replaytest.replay] (or the pytest ini "
        "option replay_max_history_bytes)\n"
    ) in ran.stdout
    assert "histories/label.json: label_agent id wf-label: passed (2 events)" in ran.stdout
    assert "histories/manifest.json: manifest_agent id wf-manifest: passed (2 events)" in ran.stdout
    assert "replayed 3 histories: 2 passed, 0 diverged, 0 stale, 1 error" in ran.stdout


def test_the_address_space_limit_would_catch_a_whole_read_of_the_file(tmp_path: Path) -> None:
    # The bound above means something only if reading the file whole fails under the same limit.
    huge = tmp_path / "imported.json"
    with open(huge, "wb") as handle:
        handle.truncate(TWO_GIB)
    reader = f"from replaytest.fileio import read_regular; read_regular({str(huge)!r})"
    ran = subprocess.run([sys.executable, "-c", reader], capture_output=True, text=True,
                         preexec_fn=_limit_address_space, timeout=300)
    assert ran.returncode != 0 and "MemoryError" in ran.stderr


def test_max_history_bytes_in_the_replay_table_sets_the_limit(tmp_path: Path) -> None:
    histories = _project(tmp_path, "max-history-bytes = 1_000\n")
    label, manifest = histories / "label.json", histories / "manifest.json"
    assert label.stat().st_size < 1000 < manifest.stat().st_size
    code, out = _invoke(tmp_path, "replay", "--format", "json")
    assert code == 2, out
    results = {Path(item["history"]).name: item for item in json.loads(out)["results"]}
    assert results["label.json"]["status"] == "passed"
    assert results["manifest.json"]["status"] == "error"
    assert results["manifest.json"]["error"] == (
        f"{manifest}: history file is {manifest.stat().st_size:,} bytes, more than the history limit of 1,000 bytes; "
        "it was not read. If it is genuine, raise max-history-bytes in [tool.replaytest.replay] (or the pytest ini "
        "option replay_max_history_bytes)"
    )


def test_a_blob_over_max_blob_bytes_is_an_error_naming_the_blob_and_the_event(tmp_path: Path) -> None:
    histories = _project(tmp_path, "max-blob-bytes = 65536\n")
    blob = _blob_of(histories)
    code, out = _invoke(tmp_path, "replay")
    assert code == 2, out
    assert (
        f"  {histories / 'manifest.json'}: $.events[0].result_ref: blob {blob} is {blob.stat().st_size:,} bytes, more "
        "than the blob limit of 65,536 bytes; if it is genuine, raise max-blob-bytes in [tool.replaytest.replay] (or "
        "the pytest ini option replay_max_blob_bytes)\n"
    ) in out
    assert "replayed 2 histories: 1 passed, 0 diverged, 0 stale, 1 error" in out


def test_the_ini_options_win_over_the_replay_table(tmp_path: Path) -> None:
    # The table allows the manifest's blob; the ini option (as pytest would read it) does not.
    histories = _project(tmp_path, "max-blob-bytes = 10_000_000\n", 'replay_max_blob_bytes = "100_000"\n')
    assert _blob_of(histories).stat().st_size > 100_000
    code, out = _invoke(tmp_path, "replay")
    assert code == 2, out
    assert "more than the blob limit of 100,000 bytes" in out
    assert "replayed 2 histories: 1 passed, 0 diverged, 0 stale, 1 error" in out


def test_the_limits_pass_genuine_histories_when_raised(tmp_path: Path) -> None:
    _project(tmp_path, "max-history-bytes = 1_300_000\nmax-blob-bytes = 1_000_000\n")
    code, out = _invoke(tmp_path, "replay")
    assert code == 0, out
    assert "replayed 2 histories: 2 passed, 0 diverged, 0 stale, 0 error" in out


@pytest.mark.parametrize("value", ["0", "-5", "true", '"lots"', "1.5"])
def test_a_limit_that_is_not_a_positive_byte_count_is_a_configuration_error(tmp_path: Path, value: str) -> None:
    _project(tmp_path, f"max-history-bytes = {value}\n")
    code, out = _invoke(tmp_path, "replay")
    assert code == 2
    assert "[tool.replaytest] replay.max-history-bytes: must be a positive whole number of bytes (e.g. 536870912 for 512 MiB), not " in out


def test_pytest_refuses_the_oversized_history_and_replays_the_other(tmp_path: Path) -> None:
    histories = _project(tmp_path, ini='replay_max_history_bytes = "1000"\n')
    manifest = histories / "manifest.json"
    ran = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "histories"], cwd=tmp_path,
                         capture_output=True, text=True, timeout=300)
    assert "1 failed, 1 passed" in ran.stdout, ran.stdout
    assert f"history file is {manifest.stat().st_size:,} bytes, more than the history limit of 1,000 bytes" in ran.stdout


def test_read_regular_refuses_before_reading_and_reads_up_to_the_limit(tmp_path: Path) -> None:
    path = tmp_path / "h.json"
    path.write_bytes(b"x" * 100)
    assert read_regular(path, max_size=100) == b"x" * 100
    with pytest.raises(FileTooLargeError) as raised:
        read_regular(path, max_size=99)
    assert (raised.value.size, raised.value.max_size) == (100, 99)
    assert raised.value.strerror == "is 100 bytes, more than the limit of 99 bytes"
