"""``replaytest redact --in-place`` leaves no unredacted copy of a value in the history's folder: the blob
that held a result now redacted is deleted, unless another history still names it (kept, and said so),
and a redaction killed midway loses no history and leaves nothing the next one does not delete."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from click.testing import CliRunner

from replaytest.cli import cli
from replaytest.history import BLOB_THRESHOLD, Event, History, WorkflowInfo, load_history, save_history

API_KEY = "sk-live4f9Qz7Lp2Xc8Vb1Nm6Kd3Hs"
CUSTOMER = "maria.keller"  # the local part of the address; redaction keeps the domain
PAGES = ["Order 7 was charged twice; the customer wants one refund. " * 4] * (BLOB_THRESHOLD // 200 + 20)


def _transcript() -> dict:
    """A support conversation too large to sit in the history: it goes to a blob."""
    return {"pages": PAGES, "customer": {"email": f"{CUSTOMER}@northwind.example"}, "note": f"agent used {API_KEY}"}


def _catalogue() -> dict:
    """A large result with nothing to redact (its blob stays as it is)."""
    return {"products": [{"sku": f"SKU-{n:05d}", "price": n % 97} for n in range(4000)]}


def _write_run(path: Path, workflow_id: str) -> History:
    history = History(
        workflow=WorkflowInfo("refund_agent", workflow_id),
        status="completed",
        events=(
            Event(1, "step", "load_catalogue", result=_catalogue()),
            Event(2, "step", "fetch_transcript", result=_transcript()),
            Event(3, "model", "decide_refund", result={"refund": 39.0}),
        ),
        result={"refund": 39.0},
    )
    return save_history(history, path)


def _files_holding(folder: Path, text: str) -> list[str]:
    """Every file under ``folder`` (hidden ones and blobs included) whose bytes contain ``text``."""
    found = []
    for directory, _, names in os.walk(folder):
        for name in names:
            path = Path(directory) / name
            if text.encode() in path.read_bytes():
                found.append(str(path.relative_to(folder)))
    return sorted(found)


def _redact(*files: Path) -> tuple[int, str]:
    result = CliRunner().invoke(cli, ["redact", "--in-place", *map(str, files)])
    return result.exit_code, result.output


def test_in_place_leaves_no_unredacted_copy_in_the_folder(tmp_path: Path) -> None:
    run = tmp_path / "refund-7.json"
    saved = _write_run(run, "refund-7")
    transcript_ref, catalogue_ref = saved.events[1].result_ref, saved.events[0].result_ref
    assert transcript_ref and catalogue_ref
    assert _files_holding(tmp_path, API_KEY) == [f"blobs/sha256/{transcript_ref[7:]}"]
    code, out = _redact(run)
    assert code == 0, out
    assert f"{run}: 2 value(s) redacted -> {run}" in out
    assert f"  removed blob {transcript_ref} (it held the value before redaction)" in out
    assert _files_holding(tmp_path, API_KEY) == []
    assert _files_holding(tmp_path, CUSTOMER) == []
    again = load_history(run)
    clean = again.event_result(again.events[1])
    assert clean["pages"] == PAGES and clean["customer"]["email"].endswith("@northwind.example")
    assert again.events[0].result_ref == catalogue_ref  # unchanged result: same blob, still there
    assert (tmp_path / "blobs/sha256" / catalogue_ref[7:]).is_file()


def test_a_blob_another_history_names_is_kept_and_said_so(tmp_path: Path) -> None:
    first, second = tmp_path / "refund-7.json", tmp_path / "refund-8.json"
    ref = _write_run(first, "refund-7").events[1].result_ref
    assert _write_run(second, "refund-8").events[1].result_ref == ref  # one blob, two histories
    code, out = _redact(first)
    assert code == 0, out
    assert (
        f"  kept blob {ref}: still named by {second}, so it holds the value before redaction until that "
        "history is redacted too"
    ) in out
    assert load_history(second).event_result(load_history(second).events[1]) == _transcript()  # still whole
    assert _files_holding(tmp_path, API_KEY) == [f"blobs/sha256/{ref[7:]}"]
    code, out = _redact(second)
    assert code == 0, out
    assert f"  removed blob {ref} (it held the value before redaction)" in out
    assert _files_holding(tmp_path, API_KEY) == [] and _files_holding(tmp_path, CUSTOMER) == []


def test_one_broken_file_does_not_stop_the_others(tmp_path: Path) -> None:
    first, second = tmp_path / "refund-7.json", tmp_path / "refund-8.json"
    _write_run(first, "refund-7")
    _write_run(second, "refund-8")
    broken = tmp_path / "refund-9.json"
    broken.write_text('{"format": "replaytest-history", "format_version": 1, "workflow": {"type": "refund_agent"}}')
    code, out = _redact(first, broken, second)
    assert code == 2
    assert f"error: {broken}: $: missing required key 'status'" in out
    assert f"{second}: 2 value(s) redacted -> {second}" in out
    assert _files_holding(tmp_path, API_KEY) == [] and _files_holding(tmp_path, CUSTOMER) == []


KILLED_AT_FIRST_DELETE = """
import os, signal, sys
from replaytest.history.blobs import BlobStore

def killed(self, ref):
    os.kill(os.getpid(), signal.SIGKILL)

BlobStore.remove = killed
from replaytest.cli import cli
cli(["redact", "--in-place", sys.argv[1]])
"""


def test_killed_before_deleting_the_old_blob_loses_nothing_and_the_next_run_deletes_it(tmp_path: Path) -> None:
    run = tmp_path / "refund-7.json"
    ref = _write_run(run, "refund-7").events[1].result_ref
    assert ref
    killed = subprocess.run([sys.executable, "-c", KILLED_AT_FIRST_DELETE, str(run)], capture_output=True, text=True, timeout=120)
    assert killed.returncode == -9, killed.stdout + killed.stderr
    history = load_history(run)  # the rewritten history, every blob it names present and matching
    assert history.event_result(history.events[1])["note"].startswith("agent used [redacted-api-key:")
    assert _files_holding(tmp_path, API_KEY) == [f"blobs/sha256/{ref[7:]}"]  # only the old blob, not yet deleted
    code, out = _redact(run)  # the note left in blobs/ names the old blob
    assert code == 0, out
    assert f"  removed blob {ref} (it held the value before redaction)" in out, out
    assert _files_holding(tmp_path, API_KEY) == [] and _files_holding(tmp_path, CUSTOMER) == []
    assert not (tmp_path / "blobs/.pending-removal").exists()


def test_a_name_cut_by_the_read_chunk_boundary_still_keeps_its_blob(tmp_path: Path) -> None:
    run = tmp_path / "refund-7.json"
    ref = _write_run(run, "refund-7").events[1].result_ref
    assert ref
    # An export that names the blob across the first 1 MiB boundary of its reading.
    export = tmp_path / "audit-export.txt"
    export.write_bytes(b"x" * ((1 << 20) - 30) + ref.encode() + b"\n")
    code, out = _redact(run)
    assert code == 0, out
    assert f"  kept blob {ref}: still named by {export}" in out
    assert (tmp_path / "blobs/sha256" / ref[7:]).is_file()


def test_a_file_that_cannot_be_read_keeps_every_blob(tmp_path: Path) -> None:
    run = tmp_path / "refund-7.json"
    ref = _write_run(run, "refund-7").events[1].result_ref
    assert ref
    stream = tmp_path / "live-feed.json"
    os.mkfifo(stream)  # a FIFO is never read: it may name any blob
    code, out = _redact(run)
    assert code == 0, out
    assert f"  kept 1 blob(s) holding values before redaction: {stream} cannot be read and may name them" in out
    assert (tmp_path / "blobs/sha256" / ref[7:]).is_file()


def test_a_blob_many_histories_share_names_three_and_counts_the_rest(tmp_path: Path) -> None:
    run = tmp_path / "refund-7.json"
    ref = _write_run(run, "refund-7").events[1].result_ref
    for n in range(5):
        _write_run(tmp_path / f"refund-{10 + n}.json", f"refund-{10 + n}")
    code, out = _redact(run)
    assert code == 0, out
    assert (
        f"  kept blob {ref}: still named by {tmp_path / 'refund-10.json'}, {tmp_path / 'refund-11.json'}, "
        f"{tmp_path / 'refund-12.json'} and 2 more, so it holds the value before redaction until those histories "
        "are redacted too"
    ) in out
