"""``replay.reads``: which opens a recording sees (reads, from any thread, only while on) and which read
files can matter to a cached verdict."""

from __future__ import annotations

import importlib.util
import json
import os
import threading
from pathlib import Path

import click

import replaytest.cli
from replaytest.replay.reads import FileReads, relevant, unrecorded


def test_a_recording_sees_reads_from_every_thread_and_nothing_once_off(tmp_path: Path) -> None:
    files = {name: tmp_path / name for name in ("template.txt", "limits.json", "notes.log", "report.csv", "new.txt", "later.txt")}
    for name in ("template.txt", "limits.json", "notes.log", "later.txt"):
        files[name].write_text("7", encoding="utf-8")
    reads = FileReads()
    with reads.recording():
        files["template.txt"].read_text(encoding="utf-8")
        # An engine's worker thread (Temporal runs workflow code on its own threads).
        worker = threading.Thread(target=lambda: json.loads(files["limits.json"].read_text()))
        worker.start()
        worker.join()
        with open(files["notes.log"], "a+", encoding="utf-8") as log:  # appending can read what was there
            log.write("y")
        files["report.csv"].write_text("written, not read", encoding="utf-8")
        with open(files["new.txt"], "x", encoding="utf-8"):
            pass
        # Read and write, but created here: tempfile's own files, nothing there before to read.
        os.close(os.open(tmp_path / "scratch.db", os.O_RDWR | os.O_CREAT | os.O_EXCL))
    files["later.txt"].read_text(encoding="utf-8")
    seen = {name for name in reads.files if Path(name).parent == tmp_path}  # (the test runner reads files too)
    assert seen == {str(files[name]) for name in ("template.txt", "limits.json", "notes.log")}


def test_replaytests_own_reads_are_left_out_on_its_thread_only(tmp_path: Path) -> None:
    """While replaytest parses a workflow source for itself, that read is no input; the workflow code's
    read on another thread meanwhile still is, and so is this thread's after the block."""
    source, prompt, after = (tmp_path / name for name in ("agent.py", "prompt.txt", "after.txt"))
    for file in (source, prompt, after):
        file.write_text("x = 1\n", encoding="utf-8")
    reads = FileReads()
    with reads.recording():
        with unrecorded():
            source.read_text(encoding="utf-8")
            worker = threading.Thread(target=lambda: prompt.read_text(encoding="utf-8"))
            worker.start()
            worker.join()
        after.read_text(encoding="utf-8")
    seen = {name for name in reads.files if Path(name).parent == tmp_path}
    assert seen == {str(prompt), str(after)}


def test_stacks_tell_whose_code_opened_a_file(tmp_path: Path) -> None:
    (tmp_path / "tone.txt").write_text("warm", encoding="utf-8")
    reads = FileReads(stacks=True)
    with reads.recording():
        (tmp_path / "tone.txt").read_text(encoding="utf-8")
    assert __file__ in reads.files[str(tmp_path / "tone.txt")]
    assert reads.during_imports() == set()  # read by a test function, not while importing a module


def test_an_import_under_recording_is_seen_with_what_its_module_read(tmp_path: Path) -> None:
    (tmp_path / "greeting.txt").write_text("hello", encoding="utf-8")
    module_file = tmp_path / "greeter_for_reads_test.py"
    module_file.write_text('from pathlib import Path\nGREETING = (Path(__file__).parent / "greeting.txt").read_text()\n')
    reads = FileReads(stacks=True)
    spec = importlib.util.spec_from_file_location("greeter_for_reads_test", module_file)
    assert spec is not None and spec.loader is not None
    with reads.recording():
        spec.loader.exec_module(importlib.util.module_from_spec(spec))
    assert str(module_file) in reads.files[str(tmp_path / "greeting.txt")]


def test_installed_code_devices_and_left_out_files_cannot_matter(tmp_path: Path) -> None:
    assert relevant(json.__file__) is None  # the standard library
    assert relevant(click.__file__) is None  # site-packages
    assert relevant(replaytest.cli.__file__) is None  # replaytest's own code: its version keys entries
    assert relevant("/dev/urandom") is None
    assert relevant(f"/proc/{os.getpid()}/status") is None
    template = tmp_path / "prompts" / "writer.txt"
    assert relevant(str(template)) == template.resolve()
    assert relevant(str(template), leave_out=[tmp_path / "prompts"]) is None
    assert relevant(str(template), leave_out=[template]) is None


def test_bytecode_stands_for_its_source(tmp_path: Path) -> None:
    source = tmp_path / "rates.py"
    bytecode = importlib.util.cache_from_source(str(source))
    assert Path(bytecode).parent.name == "__pycache__"
    assert relevant(bytecode) == source.resolve()
