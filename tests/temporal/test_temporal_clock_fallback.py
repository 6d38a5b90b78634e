"""RT101 and the "works in and out of a workflow" fallback: a wall-clock read in the ``except`` handler of a
``try`` whose body only calls ``workflow.now()`` is not reported, because that handler never runs in a
workflow. The real engine is the judge: a run on a dev server takes the ``workflow.now()`` branch, and
outside a workflow the same helper takes the fallback (``workflow.now()`` raises there)."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import temporal_wf_clock_fallback as fallback
from temporal_devserver import DevServer, running_dev_server

MODULE = Path(fallback.__file__)


def _lint(project: Path, source: str) -> list[dict]:
    (project / "app").mkdir(parents=True)
    (project / "pyproject.toml").write_text("[tool.replaytest]\n")
    (project / "app" / "__init__.py").write_text("")
    (project / "app" / "wf.py").write_text(source)
    run = subprocess.run([sys.executable, "-m", "replaytest", "lint", "--format", "json", "--no-cache", "."],
                         cwd=project, capture_output=True, text=True, timeout=120)
    assert run.returncode in (0, 1), run.stdout + run.stderr
    return json.loads(run.stdout)["diagnostics"]


def test_lint_does_not_report_the_fallback(tmp_path: Path) -> None:
    assert _lint(tmp_path / "proj", MODULE.read_text()) == []


def test_lint_reports_the_fallback_when_the_try_body_may_fail_in_a_workflow(tmp_path: Path) -> None:
    # Parsing a date can fail inside a workflow too, so there the handler may run and read the clock.
    source = MODULE.read_text().replace("now = workflow.now()", "now = workflow.now().replace(year=int('x'))")
    [finding] = _lint(tmp_path / "proj", source)
    assert finding["rule"] == "RT101"
    assert finding["message"].startswith("stamp() reaches datetime.now(), which reads the wall clock")


def test_outside_a_workflow_the_helper_takes_the_fallback() -> None:
    assert fallback.stamp()[1] == "fallback"


@pytest.fixture(scope="module")
def dev_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevServer]:
    with running_dev_server(tmp_path_factory.mktemp("temporal-server")) as server:
        yield server


async def _run(address: str) -> list[str]:
    from temporalio.client import Client
    from temporalio.worker import Worker

    client = await Client.connect(address)
    queue = f"stamped-{uuid.uuid4()}"
    async with Worker(client, task_queue=queue, workflows=[fallback.Stamped]):
        return await client.execute_workflow("Stamped", id=f"stamped-{uuid.uuid4()}", task_queue=queue)


@pytest.mark.temporal_server
@pytest.mark.slow
def test_in_a_workflow_the_helper_reads_workflow_now(dev_server: DevServer) -> None:
    assert asyncio.run(_run(dev_server.address))[1] == "workflow"
