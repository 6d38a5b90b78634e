"""AWS durable functions tests: the SDK needs Python 3.11; one recording per session of the orders app's
executions with the testing SDK's local runner, imported with ``replaytest import aws-durable``."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

if sys.version_info < (3, 11):  # pragma: no cover - the SDK requires 3.11
    collect_ignore_glob = ["test_*.py"]
else:
    pytest.importorskip("aws_durable_execution_sdk_python_testing")

sys.path.insert(0, str(Path(__file__).resolve().parent))


@dataclass(frozen=True)
class Imported:
    recording: object
    histories: Path
    stdout: str
    stderr: str


@pytest.fixture(scope="session")
def recording(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    from aws_kit import record_orders

    return record_orders(tmp_path_factory.mktemp("aws-recording"))


@pytest.fixture(scope="session")
def imported(recording, tmp_path_factory: pytest.TempPathFactory) -> Imported:  # type: ignore[no-untyped-def]
    from aws_kit import ROOT, run_cli

    out = tmp_path_factory.mktemp("aws-histories")
    files = [str(path) for path in recording.files.values()]
    done = run_cli("import", "aws-durable", *files, "--out", str(out), cwd=ROOT)
    assert done.returncode == 0, done.stdout + done.stderr
    return Imported(recording, out, done.stdout, done.stderr)
