"""The engine is the judge on AWS Lambda durable functions: for each kind of change, ``replaytest impact``
predicts what each of the two parked order executions (one on its durable wait, one on its approval callback)
does when it resumes on the changed code, and the testing SDK's local runner then resumes those very
executions on the changed handler (the wait fires; the callback gets the answer the finished big order got,
the one the rehearsal delivered). Each side is (path, the operation run next): ``breaks`` when the SDK fails the
execution with its ``NonDeterministicExecutionError`` (impact: a divergence group holds it, or the SDK refused
its rehearsed resume); ``new`` when the first operation past the recorded ones is the change's, else ``old``.
The SDK has no patch API: no guarded variant. A changed wait (its duration) is held to the SDK on its own, by
the checkpoint updates the SDK sends the runner's service as it resumes each execution."""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

if sys.version_info < (3, 11):  # pragma: no cover - the AWS durable SDK requires 3.11
    pytest.skip("the AWS durable SDK needs Python 3.11", allow_module_level=True)
pytest.importorskip("aws_durable_execution_sdk_python_testing")

from impact_aws_kit import SMALL, V1, Execution, record_finished, scenario  # noqa: E402
from impact_kit import edit_once, predicted_resume, predicted_sleep, run_replaytest  # noqa: E402

PRICE = '    price = context.step(price_order(stock))\n'
BRANCH = '    if price["total"] > 100:\n'
LABEL = '    label = context.step(print_label(event["id"]))\n'
COURIER = '    tracking = context.step(book_courier(event["id"]))\n'
AUDIT = '    context.step(audit_order(event["id"]))\n'
COOL_OFF = '        context.wait(Duration.from_seconds(2), name="cool_off")\n'
# v1 with a callback before the small order's wait: an execution can be parked before the wait or on it.
COOLING = edit_once(V1, COOL_OFF, '        context.wait_for_callback(ask_approver, name="go_ahead")\n' + COOL_OFF)


def _renamed(source: str) -> str:
    return edit_once(edit_once(source, "def print_label(", "def write_label("), LABEL, LABEL.replace("print_label", "write_label"))


# change -> (the code, the operation that tells the new path, what impact and the SDK must both say for
# order-cool (parked on its wait) and order-approval (parked on its callback))
CHANGES: dict[str, tuple[str, str, tuple[tuple[str, str | None], tuple[str, str | None]]]] = {
    "step inserted before the wait": (edit_once(V1, BRANCH, AUDIT + BRANCH), "audit_order",
                                      (("breaks", None), ("breaks", None))),
    "step inserted after the wait": (edit_once(V1, LABEL, AUDIT + LABEL), "audit_order",
                                     (("new", "audit_order"), ("new", "audit_order"))),
    "step renamed": (_renamed(V1), "write_label", (("new", "write_label"), ("new", "write_label"))),
    "two steps swapped": (edit_once(V1, LABEL + COURIER, COURIER.replace("tracking", "label_first") + LABEL
                                    + "    tracking = label_first\n"), "book_courier",
                          (("new", "book_courier"), ("new", "book_courier"))),
    "branch condition changed": (edit_once(V1, BRANCH, BRANCH.replace("100", "20")), "approval",
                                 (("breaks", None), ("old", "print_label"))),
    "timer added after the wait": (edit_once(V1, LABEL, '    context.wait(Duration.from_seconds(1), name="settle")\n' + LABEL),
                                   "settle", (("new", "settle"), ("new", "settle"))),
    "child context added after the wait": (edit_once(V1, LABEL, '    context.run_in_child_context(lambda child: '
                                                     'child.step(audit_order(event["id"])), name="audit")\n' + LABEL),
                                           "audit", (("new", "audit"), ("new", "audit"))),
    "branch on the callback's answer": (edit_once(V1, LABEL, '    if "yes" in approval:\n    ' + AUDIT + LABEL),
                                        "audit_order", (("old", "print_label"), ("new", "audit_order"))),
}


@pytest.fixture(scope="module")
def finished() -> dict[str, Any]:
    return record_finished()


@pytest.fixture
def orders(finished: dict[str, Any], tmp_path: Path) -> Iterator[Any]:
    with scenario(tmp_path / "orders", finished) as project:
        yield project


def _next(workflow: dict, run: str) -> str | None:
    """The operation impact's rehearsal says the SDK runs next for ``run`` (None: a group holds it)."""
    if any(run in group["runs"]["in_flight"] for group in workflow["groups"]):
        return None
    for entry in workflow["resume"]:
        if run in entry["runs"]:
            found = re.search(r"the engine issues \w+ '([^']+)' next", entry["text"])
            return found.group(1) if found else None
    raise AssertionError(f"impact says nothing of {run}: {workflow}")


def _impact(root: Path) -> dict:
    done = run_replaytest(root, "impact", "--output-format", "json")
    assert done.returncode in (0, 1), done.stdout + done.stderr
    [workflow] = json.loads(done.stdout)["workflows"]
    return workflow


@pytest.mark.parametrize("change", list(CHANGES))
def test_impact_predicts_each_parked_execution_as_the_sdk_resumes_it(orders: Any, change: str) -> None:
    code, new_operation, expected = CHANGES[change]
    orders.write(code)
    workflow = _impact(orders.root)
    names = ("order-cool", "order-approval")
    predictions = []
    for name in names:
        run = orders.run_ids[name]
        path = predicted_resume(workflow, run)
        predictions.append((path, _next(workflow, run)))
    engine = []
    for name in names:
        outcome, first = orders.parked[name].resume(code)
        engine.append((outcome, None) if outcome == "breaks" else ("new" if first == new_operation else "old", first))
    assert (tuple(predictions), tuple(engine)) == (expected, expected), workflow
    # No guard can be written (no patch API): the guidance names the executions that need the old code, the
    # broken ones and those the rehearsal sends down the new path.
    guidance = workflow["guidance"]
    assert "no patch API" in guidance and "qualified ARN" in guidance
    need_old, new_path = guidance.split("; in-flight executions that need it: ")[1], guidance.partition("take the new path")[2]
    for name, (path, _) in zip(names, expected):
        run = orders.run_ids[name]
        assert (run in need_old.split(";")[0], run in new_path) == (path == "breaks", path == "new"), guidance


def test_the_unchanged_handler_resumes_each_parked_execution_on_its_next_step(orders: Any) -> None:
    """Without a change the rehearsal and the SDK agree too: each parked execution goes on to print its label,
    and impact says so as rehearsed on the engine, with the delivered answer."""
    workflow = _impact(orders.root)
    assert workflow["groups"] == []
    for name in ("order-cool", "order-approval"):
        run = orders.run_ids[name]
        (entry,) = [entry for entry in workflow["resume"] if run in entry["runs"]]
        assert (entry["path"], _next(workflow, run)) == ("further", "print_label"), workflow
        assert orders.parked[name].resume(V1) == ("resumed", "print_label")


def _sdk_wait(execution: Execution, name: str) -> str:
    """How long the SDK had the service wait on ``name`` once ``execution`` resumed on the changed code:
    ``recorded`` (the changed code sent no start for it and the service kept the two seconds it scheduled when
    the wait started), ``new`` (the changed code started it with 3600 seconds, and the service scheduled those),
    else what was seen."""
    sent = [update.wait_seconds for update in execution.switch.sent
            if update.invocation > execution.switch.hold_at and (update.operation_type, update.action, update.name) == ("WAIT", "START", name)]
    scheduled = [event["WaitStartedDetails"]["Duration"] for event in execution.events
                 if event["EventType"] == "WaitStarted" and event.get("Name") == name]
    return {((), (2,)): "recorded", ((3600,), (3600,)): "new"}.get((tuple(sent), tuple(scheduled)), f"sent {sent}, scheduled {scheduled}")


def test_a_changed_wait_keeps_the_waiting_executions_end_as_the_sdk_does(tmp_path: Path) -> None:
    """Two small orders on the code whose callback ``go_ahead`` comes before the two-second wait
    ``cool_off``: ``cool-before`` is parked on the callback, ``cool-sleeping`` (answered) on the wait. The code now
    waits an hour. The SDK sends the service a wait's start, with its seconds, only when no checkpoint holds the
    wait; one already started is answered from its checkpoint, and the service ends it when it scheduled it. So
    impact names ``cool-sleeping`` in a note (it keeps two seconds) and says ``cool-before`` issues the wait
    next. The runner, resuming both on the changed handler, agrees: the changed code sends no start for
    ``cool-sleeping``'s wait, which ends as scheduled, and starts ``cool-before``'s with 3600 seconds."""
    longer = COOLING.replace("Duration.from_seconds(2)", "Duration.from_seconds(3600)")
    names = ("cool-sleeping", "cool-before")
    with scenario(tmp_path / "cooling", {}, COOLING, dict.fromkeys(names, SMALL), frozenset({"cool-sleeping"})) as cooling:
        cooling.write(longer)
        done = run_replaytest(cooling.root, "impact", "--output-format", "json")
        assert done.returncode in (0, 1), done.stdout + done.stderr
        document = json.loads(done.stdout)
        [workflow] = document["workflows"]
        line = longer.splitlines().index(COOL_OFF.rstrip("\n").replace("(2)", "(3600)")) + 1
        assert [note for note in document["summary"]["notes"] if "already sleeping on it" in note] == [
            f"wait 'cool_off' at orders_app.py:{line} now sleeps 3600 s, recorded 2 s: this run is already sleeping on "
            "it and keeps the recorded duration (the engine fires it when it was due); runs that reach it later sleep "
            f"the new one; already sleeping on it: {cooling.run_ids['cool-sleeping']}"]
        predicted = tuple((predicted_sleep(document, workflow, cooling.run_ids[name]), _next(workflow, cooling.run_ids[name]))
                          for name in names)

        engine = []
        for name in names:
            execution = cooling.parked[name]
            outcome, first = execution.resume(longer)
            assert outcome == "resumed", name
            engine.append((_sdk_wait(execution, "cool_off"), first))
        assert (predicted, tuple(engine)) == ((("recorded", "print_label"), ("new", "cool_off")),) * 2, workflow
