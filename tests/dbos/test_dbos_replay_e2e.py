"""End to end: the shop ran for real on a SQLite system database, its runs were imported, and pytest
replays them against the shop's code, unchanged and edited, in a fresh process each time."""

from __future__ import annotations

import json

import pytest
from dbos_kit import APP, Recording, edited, line_of, no_effects, project, replay, report

ORDERS = ("order-ok", "order-pending")

RENAMED = edited(
    ("def send_receipt(", "def email_receipt("),
    ("        receipt = send_receipt(order_id)", "        receipt = email_receipt(order_id)"),
)
REORDERED = edited(('    save_order(order_id, "paid")\n    DBOS.sleep(0.1)\n', '    DBOS.sleep(0.1)\n    save_order(order_id, "paid")\n'))
ADDED = edited(
    ("@DBOS.workflow()\ndef ship(", '@DBOS.step()\ndef notify_warehouse(order_id: str) -> str:\n    effect(f"notify {order_id}")\n'
     "    return order_id\n\n\n@DBOS.workflow()\ndef ship("),
    ('    return {"stock": stock,', '    notify_warehouse(order_id)\n    return {"stock": stock,'),
)  # fmt: skip
REMOVED = edited(('    save_order(order_id, "paid")\n', ""))
RECV_REMOVED = edited(('    approval = DBOS.recv("approval", timeout_seconds=wait_s)\n', "    approval = None\n"))
CLOCK_READ = edited(("import os\n", "import os\nimport time\n"), ('    stock = reserve_stock("book", 2)\n', '    stock = reserve_stock("book", 2)\n    started = time.time()\n'))
OUTPUT_CHANGED = edited(('"approval": approval}', '"approval": approval, "version": 2}'))


@pytest.mark.slow
def test_unchanged_code_replays_every_recorded_run_and_runs_nothing(pytester: pytest.Pytester, pickled: Recording) -> None:
    root = project(pytester, pickled.histories)
    result = replay(pytester, "-v")
    # place_order x3 (one pending), their ship children, the async parcel, the class-method report and its
    # child, the configured instance's restock
    result.assert_outcomes(passed=10)
    result.stdout.fnmatch_lines(["*histories/order-pending.json::replay PASSED*", "*histories/report-day.json::replay PASSED*",
                                "*histories/restock-1.json::replay PASSED*"])
    # "passed" says what it could not check: DBOS records neither step arguments nor prompt versions.
    result.stdout.fnmatch_lines(["note: 10 histories: DBOS stores no step arguments: step arguments were not compared",
                                 "note: 10 histories: no prompt versions recorded: prompt drift was not checked"])
    no_effects(root)
    assert pickled.effects.read_text().count("charge") == 3  # while recording, the steps did run


@pytest.mark.parametrize(
    ("app", "kind", "function_id", "recorded", "issued", "line"),
    [
        pytest.param(RENAMED, "command-mismatch", 8, "step 'send_receipt'", "step 'email_receipt'", "receipt = email_receipt(", id="renamed-step"),
        pytest.param(REORDERED, "command-mismatch", 3, "step 'save_order'", "timer 'DBOS.sleep'", "    DBOS.sleep(0.1)", id="reordered-pair"),
        pytest.param(REMOVED, "command-mismatch", 3, "step 'save_order'", "timer 'DBOS.sleep'", "    DBOS.sleep(0.1)", id="removed-step"),
        pytest.param(ADDED, "extra-command", 11, "nothing", "step 'notify_warehouse'", "    notify_warehouse(order_id)", id="added-step"),
        pytest.param(RECV_REMOVED, "missing-command", 9, "signal 'DBOS.recv'", "nothing", "receipt = send_receipt(", id="removed-recv"),
        pytest.param(OUTPUT_CHANGED, "result-mismatch", None, None, None, 'approval = DBOS.recv("approval"', id="changed-output"),
        pytest.param(CLOCK_READ, "nondeterministic-call", 2, None, None, "started = time.time()", id="clock-read"),
    ],
)  # fmt: skip
@pytest.mark.slow
def test_each_change_is_caught_with_function_id_both_sides_and_line(
    pytester: pytest.Pytester,
    pickled: Recording,
    app: str,
    kind: str,
    function_id: int | None,
    recorded: str | None,
    issued: str | None,
    line: str,
) -> None:
    root = project(pytester, pickled.histories, app, only=("order-ok",))
    result = replay(pytester)
    result.assert_outcomes(failed=1)
    text = report(result)
    assert "histories/order-ok.json: place_order id order-ok: diverged" in text
    assert f"  {kind}" in text
    if function_id is not None:
        assert f"function id {function_id}" in text
    if recorded is not None:
        assert f"    recorded  {recorded}\n" in text and f"    issued    {issued}\n" in text
    assert f"dbos_shop/app.py:{line_of(app, line)} in place_order" in text
    if kind == "result-mismatch":
        assert "at $.version the history recorded nothing, the code returns 2" in text
    if kind == "nondeterministic-call":
        assert (
            "called time.time() during replay (it returned a real value and the replay went on); "
            "use a @DBOS.step() function that reads the clock" in text
        )
    no_effects(root)


@pytest.mark.slow
@pytest.mark.parametrize("app", [ADDED, OUTPUT_CHANGED], ids=["added-step", "changed-output"])
def test_the_pending_run_stops_where_it_would_resume(pytester: pytest.Pytester, pickled: Recording, app: str) -> None:
    """order-pending waits in recv (function id 9): changes after that point do not concern it."""
    root = project(pytester, pickled.histories, app, only=ORDERS)
    result = replay(pytester, "-v")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*order-ok.json::replay FAILED*", "*order-pending.json::replay PASSED*"])
    no_effects(root)


def test_a_change_before_the_resume_point_fails_the_pending_run(pytester: pytest.Pytester, pickled: Recording) -> None:
    project(pytester, pickled.histories, RENAMED, only=("order-pending",))
    result = replay(pytester)
    result.assert_outcomes(failed=1)
    assert "command-mismatch at event #8" in report(result)


def test_portable_json_runs_replay_and_diverge_the_same_way(pytester: pytest.Pytester, portable: Recording) -> None:
    root = project(pytester, portable.histories)
    result = replay(pytester)
    result.assert_outcomes(passed=6)  # ok, declined, pending and their children
    no_effects(root)
    document = json.loads((portable.histories / "order-declined.json").read_text())
    declined = next(event for event in document["events"] if event["name"] == "charge_card")
    assert declined["error"] == {"type": "PaymentDeclined", "message": "card declined for 500.0"}


def test_portable_json_renamed_step(pytester: pytest.Pytester, portable: Recording) -> None:
    root = project(pytester, portable.histories, RENAMED, only=("order-ok",))
    result = replay(pytester)
    result.assert_outcomes(failed=1)
    assert "command-mismatch at event #8" in report(result)
    no_effects(root)


def test_the_shop_source_is_what_the_variants_edit() -> None:
    assert "receipt = send_receipt(order_id)" in APP and RENAMED != APP


def test_async_workflows_and_instance_methods_diverge_too(pytester: pytest.Pytester, pickled: Recording) -> None:
    app = edited(
        ("async def weigh(", "async def measure("),
        ("    parcel = await weigh(order_id)", "    parcel = await measure(order_id)"),
        ('        stock = reserve_stock(f"{self.site}:{item}", 5)', '        stock = {"reserved": send_receipt(item)}'),
    )
    root = project(pytester, pickled.histories, app, only=("parcel-1", "restock-1"))
    result = replay(pytester)
    result.assert_outcomes(failed=2)
    text = report(result)
    assert "the code issued step 'measure' where the history recorded step 'weigh' (function id 1)" in text
    assert f"dbos_shop/app.py:{line_of(app, 'parcel = await measure(order_id)')} in pack_parcel" in text
    assert "the code issued step 'send_receipt' where the history recorded step 'reserve_stock' (function id 1)" in text
    assert f"dbos_shop/app.py:{line_of(app, 'stock = {')} in restock" in text
    no_effects(root)
