"""The engine is the judge on AWS Lambda durable functions: for each kind of change, ``replaytest impact``
predicts what each of the two parked order executions (one on its durable wait, one on its approval callback)
does when it resumes on the changed code, and the testing SDK's local runner then resumes those very
executions on the changed handler (the wait fires; the callback gets the answer the finished big order got,
the one the rehearsal delivered). Each side is (path, the operation run next): ``breaks`` when the SDK fails the
execution with its ``NonDeterministicExecutionError`` (impact: a divergence group holds it, or the SDK refused
its rehearsed resume); ``new`` when the first operation past the recorded ones is the change's, else ``old``.
The SDK has no patch API: no guarded variant."""

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

from impact_aws_kit import V1, record_finished, scenario  # noqa: E402
from impact_kit import edit_once, predicted_resume, run_replaytest  # noqa: E402

PRICE = '    price = context.step(price_order(stock))\n'
BRANCH = '    if price["total"] > 100:\n'
LABEL = '    label = context.step(print_label(event["id"]))\n'
COURIER = '    tracking = context.step(book_courier(event["id"]))\n'
AUDIT = '    context.step(audit_order(event["id"]))\n'


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
