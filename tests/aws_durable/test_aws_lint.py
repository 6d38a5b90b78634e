"""The AWS durable functions lint profile: a hazard in the ``@durable_execution`` handler is reported with
the SDK's remedy; the same calls in a ``@durable_step`` function, a callable given to ``context.step`` or
``run_in_child_context`` are not (their results are checkpointed)."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "lint"))

from lintkit import findings, line_of, run_replaytest, write_files  # noqa: E402

APP = textwrap.dedent('''\
    import random
    import time
    import uuid

    import requests

    from aws_durable_execution_sdk_python import DurableContext, StepContext, durable_execution, durable_step


    @durable_step
    def charge(step_context: StepContext, amount: int) -> dict:
        reference = str(uuid.uuid4())  # step uuid
        return requests.post("https://pay.example/charge", json={"amount": amount, "ref": reference}).json()


    def audit(step_context):
        return {"at": time.time()}  # step-call clock


    @durable_execution
    def handler(event, context: DurableContext):
        jitter = random.random()  # handler random
        receipt = context.step(charge(event["amount"]))
        context.step(audit, name="audit")
        context.step(lambda _: requests.get("https://pay.example/health").status_code, name="health")  # lambda step
        time.sleep(3)  # handler sleep
        if not context.is_replaying():
            print("first run")
        started = time.time()  # handler clock
        return {"receipt": receipt, "jitter": jitter, "started": started}
''')


def test_hazards_in_the_handler_are_found_and_the_same_in_steps_are_not(tmp_path: Path) -> None:
    project = write_files(tmp_path, {"handler.py": APP})
    run = run_replaytest("lint", "--format", "json", "--no-cache", ".", cwd=project)
    assert run.returncode == 1, run.describe()
    found = {(line, category) for _, line, category in findings(run.json())}
    assert found == {
        (line_of(APP, "# handler random"), "random"),
        (line_of(APP, "# handler sleep"), "sleep"),
        (line_of(APP, "# handler clock"), "clock"),
    }, run.describe()


def test_the_fix_texts_name_the_sdks_remedies(tmp_path: Path) -> None:
    project = write_files(tmp_path, {"handler.py": APP})
    report = run_replaytest("lint", "--format", "json", "--no-cache", ".", cwd=project).json()
    messages = {finding["line"]: finding["message"] for finding in report["diagnostics"]}
    assert "context.wait(Duration.from_seconds(n))" in messages[line_of(APP, "# handler sleep")]
    assert "context.step" in messages[line_of(APP, "# handler clock")]


# Unannotated, the handler's context is its second parameter (``handler(event, context)``): ``event`` is
# the input, and what is handed to ``context.step`` is a step.
UNANNOTATED = textwrap.dedent('''\
    import datetime

    import requests

    from aws_durable_execution_sdk_python import durable_execution


    @durable_execution
    def handler(event, context):
        status = context.step(lambda _: requests.get(event["url"]).status_code, name="probe")  # lambda step
        return {"status": status, "at": datetime.datetime.now().isoformat()}  # unannotated clock
''')


def test_an_unannotated_handler_takes_its_second_parameter_as_the_context(tmp_path: Path) -> None:
    project = write_files(tmp_path, {"handler.py": UNANNOTATED})
    run = run_replaytest("lint", "--format", "json", "--no-cache", ".", cwd=project)
    assert run.returncode == 1, run.describe()
    report = run.json()
    assert findings(report) == {("handler.py", line_of(UNANNOTATED, "# unannotated clock"), "clock")}, run.describe()
    assert "context.step" in report["diagnostics"][0]["message"]
