"""Azure Durable Functions: code under ``if not context.is_replaying:`` never runs on replay (real apps
guard logging and telemetry so), so nothing there is a finding; the same calls outside the guard, in its
``else`` or in an ``if context.is_replaying:`` body are."""

from __future__ import annotations

import textwrap
from pathlib import Path

from lintkit import findings, line_of, run_replaytest, write_files

APP = textwrap.dedent('''\
    import datetime
    import logging

    import requests

    import azure.durable_functions as df

    app = df.DFApp()


    @app.orchestration_trigger(context_name="context")
    def order_approval(context: df.DurableOrchestrationContext):
        order = context.get_input()
        if not context.is_replaying:
            logging.info("started at %s", datetime.datetime.now())  # guarded clock
            requests.post("https://telemetry.example/started", json=order)  # guarded network
        else:
            requests.post("https://telemetry.example/replayed", json=order)  # else network
        if context.is_replaying:
            requests.post("https://telemetry.example/again", json=order)  # replaying network
        else:
            logging.info("first run at %s", datetime.datetime.now())  # first-run clock
        started = datetime.datetime.now()  # unguarded clock
        result = yield context.call_activity("price_order", order)
        return result
''')


def test_findings_under_a_not_replaying_guard_are_dropped_and_the_rest_kept(tmp_path: Path) -> None:
    project = write_files(tmp_path, {"function_app.py": APP})
    run = run_replaytest("lint", "--format", "json", "--no-cache", ".", cwd=project)
    assert run.returncode == 1, run.describe()
    found = {(line, category) for _, line, category in findings(run.json())}
    assert found == {
        (line_of(APP, "# else network"), "network"),
        (line_of(APP, "# replaying network"), "network"),
        (line_of(APP, "# unguarded clock"), "clock"),
    }, run.describe()


HELPERS = textwrap.dedent('''\
    import os

    import requests


    def log_to_api(level, message):
        base = os.getenv("LOG_API_BASE", "http://localhost")  # helper environment
        requests.post(f"{base}/log", json={"level": level, "message": message})  # helper network
''')

ORCHESTRATOR = textwrap.dedent('''\
    import azure.durable_functions as df

    from telemetry import log_to_api


    def orchestrator(ctx: df.DurableOrchestrationContext):
        if not ctx.is_replaying:
            log_to_api("debug", "starting")  # guarded helper
        result = yield ctx.call_activity("execute_prompt", ctx.get_input())
        log_to_api("info", "done")  # unguarded helper
        return result


    main = df.Orchestrator.create(orchestrator)
''')


def test_a_project_helper_called_under_the_guard_is_not_followed(tmp_path: Path) -> None:
    # Found on a real Azure app: a logging helper (network and environment reads) called only under
    # `if not ctx.is_replaying:` was followed although a direct call there is dropped.
    project = write_files(tmp_path, {"telemetry.py": HELPERS, "orchestrator.py": ORCHESTRATOR})
    run = run_replaytest("lint", "--format", "json", "--no-cache", ".", cwd=project)
    assert run.returncode == 1, run.describe()
    found = {(path, line, category) for path, line, category in findings(run.json())}
    unguarded = line_of(ORCHESTRATOR, "# unguarded helper")
    assert found == {("orchestrator.py", unguarded, "network"), ("orchestrator.py", unguarded, "environment")}, \
        run.describe()
