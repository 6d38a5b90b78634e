"""``replaytest import temporal`` against a real dev server finds no planted secret in what it writes:
secrets in payload keys and values, free text, a failure message, the memo and the workflow id (which
also names the file)."""

from __future__ import annotations

import asyncio
import base64
import importlib
import json
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Iterator

import pytest
from temporal_devserver import DevServer, running_dev_server

pytestmark = [pytest.mark.temporal_server, pytest.mark.slow]

SECRETS = {
    "openai": "sk-proj0123456789abcdefghijKLMN",
    "aws_id": "AKIAIOSFODNN7EXAMPLE",
    "aws_secret": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    "bearer": "Bearer abcdefghijklmnop.qrstuvwx",
    "jwt": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
    "email": "dana.secret@corp.example",
    "card": "4111 1111 1111 1111",
    "password": "hunter2-correct-horse",
}

SOURCE = '''
from datetime import timedelta

from temporalio import activity, workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, ApplicationError


@activity.defn
async def charge(order: dict) -> str:
    raise ApplicationError("card declined for %(card)s, contact %(email)s with %(bearer)s", non_retryable=True)


@workflow.defn(name="SecretOrder")
class SecretOrder:
    @workflow.run
    async def run(self, order: dict) -> str:
        try:
            return await workflow.execute_activity(
                charge, order, start_to_close_timeout=timedelta(seconds=10),
                retry_policy=RetryPolicy(maximum_attempts=1),
            )
        except ActivityError:
            return "declined"


WORKFLOWS = [SecretOrder]
''' % SECRETS


@pytest.fixture(scope="module")
def dev_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevServer]:
    with running_dev_server(tmp_path_factory.mktemp("temporal-server")) as server:
        yield server


async def _run(address: str, module: object) -> str:
    from temporalio.client import Client
    from temporalio.worker import Worker

    client = await Client.connect(address)
    queue = f"secrets-{uuid.uuid4()}"
    order = {
        "openai_api_key": SECRETS["openai"], "aws_access_key_id": SECRETS["aws_id"],
        "aws_secret_access_key": SECRETS["aws_secret"], "X-Api-Key": "plain-looking-key-123",
        "emailAddress": SECRETS["email"], "card_number": SECRETS["card"], "pwd": SECRETS["password"],
        "note": f"call me at {SECRETS['email']}, token {SECRETS['jwt']}, key {SECRETS['openai']}",
        "headers": {"Authorization": SECRETS["bearer"]},
        "unknown": {"nested": [f"card {SECRETS['card']}", SECRETS["aws_id"]]},
    }
    async with Worker(client, task_queue=queue, workflows=module.WORKFLOWS, activities=[module.charge]):
        result = await client.execute_workflow(
            "SecretOrder", order, id=f"order-for-{SECRETS['email']}", task_queue=queue,
            memo={"owner": SECRETS["email"], "api_token": SECRETS["openai"]},
        )
    for _ in range(100):
        if (await client.count_workflows("WorkflowType='SecretOrder'")).count >= 1:
            break
        await asyncio.sleep(0.1)
    return result


def _decoded_payloads(value: object) -> list[str]:
    """The text of every base64 payload ``data`` in a document (secrets could hide there)."""
    found: list[str] = []
    if isinstance(value, dict):
        if isinstance(value.get("data"), str) and isinstance(value.get("metadata"), dict):
            try:
                found.append(base64.b64decode(value["data"]).decode("utf-8", "replace"))
            except ValueError:
                pass
        for item in value.values():
            found.extend(_decoded_payloads(item))
    elif isinstance(value, list):
        for item in value:
            found.extend(_decoded_payloads(item))
    return found


def test_import_writes_no_planted_secret(dev_server: DevServer, tmp_path: Path) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    (project / "secret_workflows.py").write_text(SOURCE, encoding="utf-8")
    sys.path.insert(0, str(project))
    try:
        module = importlib.import_module("secret_workflows")
        assert asyncio.run(_run(dev_server.address, module)) == "declined"
    finally:
        sys.path.remove(str(project))
        sys.modules.pop("secret_workflows", None)

    imported = subprocess.run(
        [sys.executable, "-m", "replaytest", "import", "temporal", "--address", dev_server.address,
         "--query", "WorkflowType='SecretOrder'", "--out", str(project / "histories")],
        cwd=project, capture_output=True, text=True, timeout=60,
    )
    assert imported.returncode == 0, imported.stderr
    [path] = sorted((project / "histories").glob("*.json"))
    assert "dana.secret" not in path.name and path.name.startswith("user-")  # the id is one address here
    text = path.read_text(encoding="utf-8")
    document = json.loads(text)
    everything = "\n".join([text, *_decoded_payloads(document), imported.stdout, imported.stderr])
    for name, secret in {**SECRETS, "x-api-key": "plain-looking-key-123", "card-digits": "4111111111111111"}.items():
        assert secret not in everything, f"{name} survived the import"
    assert "ActivityTaskFailed" in text or "ACTIVITY_TASK_FAILED" in text  # the failure message was there to scrub
    assert document["redacted"]  # the history says it was redacted, and where
